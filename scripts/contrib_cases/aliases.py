"""ORT's contrib ops (com.microsoft) that are ONNX ops under another domain or
name, from before ONNX had them: TransposeMatMul (FusedMatMul's old name),
Trilu, GatherND, GridSample, Pad and Range (whose delta is optional)."""
import numpy as np
from onnx import TensorProto

from . import Case, node_model, rand

F = TensorProto.FLOAT


def _case(op, feeds, out_type=F, attrs=None, consts=None, inputs=None):
    return lambda: (node_model(op, feeds, [("Y", out_type)], attrs, consts, inputs), feeds)


def _range(start, limit, delta, dtype, out_type):
    consts = {"start": np.array(start, dtype), "limit": np.array(limit, dtype)}
    names = ["start", "limit"]
    if delta is not None:
        consts["delta"] = np.array(delta, dtype)
        names.append("delta")
    return lambda: (node_model("Range", {}, [("Y", out_type)], consts=consts, inputs=names), {})


_grid = rand((2, 5, 6, 2), 41, low=-1.2, high=1.2)
_image = rand((2, 3, 7, 8), 42, low=-2, high=2)

CASES = [
    Case("TransposeMatMul_transB_alpha", _case("TransposeMatMul", {"A": rand((2, 3, 5), 31), "B": rand((2, 4, 5), 32)},
                                               attrs={"transB": 1, "alpha": 0.5})),
    Case("TransposeMatMul_transA", _case("TransposeMatMul", {"A": rand((5, 3), 33), "B": rand((5, 4), 34)},
                                         attrs={"transA": 1})),
    Case("Trilu_upper_k", _case("Trilu", {"X": rand((2, 4, 5), 35)}, consts={"k": np.array(1, np.int64)})),
    Case("Trilu_lower", _case("Trilu", {"X": rand((3, 6), 36)}, attrs={"upper": 0})),
    Case("GatherND_int64", _case("GatherND", {"data": rand((3, 4, 5), 37)},
                                 consts={"indices": np.array([[0, 1], [2, 3], [1, 0]], np.int64)})),
    Case("GatherND_int32_slices", _case("GatherND", {"data": rand((3, 4, 5), 38)},
                                        consts={"indices": np.array([[[2], [0]]], np.int32)})),
    Case("GridSample_default", _case("GridSample", {"X": _image, "grid": _grid})),
    Case("GridSample_nearest_border_aligned", _case("GridSample", {"X": _image, "grid": _grid},
                                                    attrs={"mode": "nearest", "padding_mode": "border",
                                                           "align_corners": 1})),
    Case("GridSample_bicubic_reflection", _case("GridSample", {"X": _image, "grid": _grid},
                                                attrs={"mode": "bicubic", "padding_mode": "reflection"}),
         rtol=1e-4, atol=1e-5),
    Case("Pad_constant_value", _case("Pad", {"X": rand((2, 3, 4), 43)},
                                     consts={"pads": np.array([0, 1, 2, 1, 0, 1], np.int64),
                                             "value": np.array([1.5], np.float32)})),
    Case("Pad_reflect_2d_pads", _case("Pad", {"X": rand((3, 5), 44)}, attrs={"mode": "reflect"},
                                      consts={"pads": np.array([[1, 2, 1, 0]], np.int64)}, inputs=["X", "pads"])),
    Case("Pad_edge", _case("Pad", {"X": rand((2, 4), 45)}, attrs={"mode": "edge"},
                           consts={"pads": np.array([2, 0, 0, 3], np.int64)}, inputs=["X", "pads"])),
    Case("Range_float_delta", _range(1.0, 4.2, 0.5, np.float32, F)),
    Case("Range_int64_no_delta", _range(-3, 4, None, np.int64, TensorProto.INT64)),
    Case("Range_int32_negative", _range(10, 1, -3, np.int32, TensorProto.INT32)),
    Case("Range_int16", _range(2, 9, 2, np.int16, TensorProto.INT16)),
    Case("Range_double_no_delta", _range(0.5, 3.0, None, np.float64, TensorProto.DOUBLE)),
]
