"""ONNX's experimental ops of opsets 1-9, removed at opset 10 and still in
models of that time (tiny-YOLOv2's ImageScaler, CNTK's ScaledTanh, ...),
which onnxruntime keeps: ImageScaler, Crop, Affine, Scale, ScaledTanh,
ParametricSoftplus, ThresholdedRelu-1, DynamicSlice; and MVN-1's
across_channels / normalize_variance."""
import numpy as np
from onnx import TensorProto

from . import Case, node_model, rand

Y = [("Y", TensorProto.FLOAT)]


def _op(op, opset, attrs=None, x=None, consts=None):
    x = rand((2, 3, 7, 9), 11, low=-3, high=3) if x is None else x
    return lambda: (node_model(op, {"X": x}, Y, attrs, consts, domain="", opset=opset), {"X": x})


def _dynamic_slice(axes):
    def build():
        x = rand((3, 5, 6), 12)
        consts = {"starts": np.array([1, -4], np.int64), "ends": np.array([100, -1], np.int64)}
        if axes:
            consts["axes"] = np.array([2, 0], np.int64)
        return node_model("DynamicSlice", {"X": x}, Y, consts=consts, domain="", opset=9), {"X": x}
    return build


CASES = [
    Case("ImageScaler", _op("ImageScaler", 8, {"scale": 0.5, "bias": [1.0, -2.0, 0.25]})),
    Case("ImageScaler_opset7", _op("ImageScaler", 7, {"scale": 2.0, "bias": [0.0, 0.5, -0.5]})),
    Case("Crop_border", _op("Crop", 9, {"border": [1, 2, 3, 1]})),
    Case("Crop_scale", _op("Crop", 9, {"border": [2, 1, 0, 0], "scale": [4, 5]})),
    Case("Affine", _op("Affine", 9, {"alpha": -1.5, "beta": 0.25})),
    Case("Affine_defaults", _op("Affine", 7)),
    Case("Scale", _op("Scale", 9, {"scale": 3.0})),
    Case("ScaledTanh", _op("ScaledTanh", 9, {"alpha": 1.7, "beta": 0.66})),
    Case("ParametricSoftplus", _op("ParametricSoftplus", 9, {"alpha": 0.5, "beta": 2.0})),
    Case("ThresholdedRelu_opset7", _op("ThresholdedRelu", 7, {"alpha": 0.4})),
    Case("DynamicSlice_axes", _dynamic_slice(True)),
    Case("DynamicSlice_no_axes", _dynamic_slice(False)),
    *[Case(f"MVN1_across{a}_variance{v}",
           _op("MeanVarianceNormalization", 7, {"across_channels": a, "normalize_variance": v},
               x=rand((2, 3, 5, 4), 13, low=-2, high=5)))
      for a in (0, 1) for v in (0, 1)],
]
