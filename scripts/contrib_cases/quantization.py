"""Quantized contrib ops (ORT's QOperator format): QLinearAdd, QLinearMul,
QLinearGlobalAveragePool, QGemm, QLinearConcat, QLinearSigmoid,
QLinearLeakyRelu, QLinearWhere. Integer outputs must equal ORT's exactly."""
import numpy as np
from onnx import TensorProto, helper

from . import MS, Case, node_model, rand

_TP = {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8}


def _q(shape, seed, dt):
    info = np.iinfo(dt)
    return rand(shape, seed, dt, info.min, info.max)


def _scalar(v, dt):
    return np.array(v, dtype=dt)


def _binary(op, a_shape, b_shape, dt, seed, scales=(0.05, 0.02, 0.07), zps=(3, -5, 7)):
    def build():
        zp = [(z + 128 if dt == np.uint8 else z) for z in zps]
        a, b = _q(a_shape, seed, dt), _q(b_shape, seed + 1, dt)
        feeds = {"A": a, "B": b}
        consts = {"As": _scalar(scales[0], np.float32), "Az": _scalar(zp[0], dt),
                  "Bs": _scalar(scales[1], np.float32), "Bz": _scalar(zp[1], dt),
                  "Cs": _scalar(scales[2], np.float32), "Cz": _scalar(zp[2], dt)}
        names = ["A", "As", "Az", "B", "Bs", "Bz", "Cs", "Cz"]
        return node_model(op, feeds, [("C", _TP[dt])], consts=consts, inputs=names), feeds
    return build


def _gap(shape, dt, channels_last, seed):
    def build():
        x = _q(shape, seed, dt)
        z = 100 if dt == np.uint8 else -3
        consts = {"xs": _scalar(0.04, np.float32), "xz": _scalar(z, dt),
                  "ys": _scalar(0.013, np.float32), "yz": _scalar(z + 5, dt)}
        return node_model("QLinearGlobalAveragePool", {"X": x}, [("Y", _TP[dt])], consts=consts,
                          attrs={"channels_last": channels_last}), {"X": x}
    return build


def _qgemm(M, K, N, adt, bdt, seed, trans_a=0, trans_b=0, alpha=1.0, per_col=False, c_shape=None,
           out_dt="same", b_const=True):
    def build():
        a = _q((K, M) if trans_a else (M, K), seed, adt)
        b = _q((N, K) if trans_b else (K, N), seed + 1, bdt)
        az = 120 if adt == np.uint8 else -4
        bz = (rand((N,), seed + 2, bdt, 100, 140) if bdt == np.uint8 else rand((N,), seed + 2, bdt, -6, 6)) \
            if per_col else _scalar(128 if bdt == np.uint8 else 2, bdt)
        bs = rand((N,), seed + 3, np.float32, 0.001, 0.004) if per_col else _scalar(0.003, np.float32)
        feeds = {"A": a}
        consts = {"as": _scalar(0.02, np.float32), "az": _scalar(az, adt), "B": b, "bs": bs, "bz": bz}
        names = ["A", "as", "az", "B", "bs", "bz"]
        if c_shape is not None:
            consts["C"] = rand(c_shape, seed + 4, np.int32, -3000, 3000)
            names.append("C")
        else:
            names.append("")
        otype = TensorProto.FLOAT
        if out_dt is not None:
            ydt = adt if out_dt == "same" else out_dt
            consts["ys"] = _scalar(0.11, np.float32)
            consts["yz"] = _scalar(130 if ydt == np.uint8 else 3, ydt)
            names += ["ys", "yz"]
            otype = _TP[ydt]
        if not b_const:
            feeds["B"] = consts.pop("B")
        attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha}
        return node_model("QGemm", feeds, [("Y", otype)], consts=consts, inputs=names, attrs=attrs), feeds
    return build


CASES = [
    Case("QLinearAdd_u8_same", _binary("QLinearAdd", (2, 3, 37), (2, 3, 37), np.uint8, 1)),
    Case("QLinearAdd_i8_same", _binary("QLinearAdd", (2, 3, 37), (2, 3, 37), np.int8, 2)),
    Case("QLinearAdd_u8_scalarB", _binary("QLinearAdd", (3, 41), (1,), np.uint8, 3)),
    Case("QLinearAdd_i8_scalarA", _binary("QLinearAdd", (), (5, 19), np.int8, 4)),
    Case("QLinearAdd_u8_perchannel", _binary("QLinearAdd", (2, 5, 7, 9), (5, 1, 1), np.uint8, 5)),
    Case("QLinearAdd_i8_rowbcast", _binary("QLinearAdd", (4, 1, 13), (6, 1), np.int8, 6)),
    Case("QLinearAdd_u8_bothbcast", _binary("QLinearAdd", (3, 1, 5), (1, 4, 1), np.uint8, 7)),
    # Lower-rank A with a trailing unit dimension the output also ends in (once read out of bounds).
    Case("QLinearAdd_u8_trailing_unit", _binary("QLinearAdd", (3, 1), (4, 1, 1), np.uint8, 9)),
    Case("QLinearAdd_u8_bigratio", _binary("QLinearAdd", (300,), (300,), np.uint8, 8, scales=(0.5, 0.001, 0.004))),
    Case("QLinearMul_u8_same", _binary("QLinearMul", (2, 3, 37), (2, 3, 37), np.uint8, 11)),
    Case("QLinearMul_i8_same", _binary("QLinearMul", (2, 3, 37), (2, 3, 37), np.int8, 12, scales=(0.05, 0.02, 0.5))),
    Case("QLinearMul_u8_perchannel", _binary("QLinearMul", (2, 5, 7, 9), (5, 1, 1), np.uint8, 13,
                                             scales=(0.05, 0.02, 0.3))),
    Case("QLinearMul_i8_trailing_unit", _binary("QLinearMul", (4, 1, 1), (3, 1), np.int8, 15, scales=(0.05, 0.02, 0.3))),
    Case("QLinearMul_i8_scalarB", _binary("QLinearMul", (3, 41), (), np.int8, 14, scales=(0.05, 0.02, 0.3))),
    # Squeeze-excitation scales, large enough to split over threads: planes against one value
    # (planar), rows of channels (channel-last), and a scalar A (the operands swapped).
    Case("QLinearMul_u8_se_planar", _binary("QLinearMul", (1, 24, 40, 40), (1, 24, 1, 1), np.uint8, 16,
                                            scales=(0.05, 0.004, 0.04))),
    Case("QLinearMul_i8_se_channels_last", _binary("QLinearMul", (2, 30, 30, 24), (2, 1, 1, 24), np.int8, 17,
                                                   scales=(0.05, 0.01, 0.03))),
    Case("QLinearMul_u8_scalarA", _binary("QLinearMul", (1,), (3, 77), np.uint8, 18, scales=(0.05, 0.02, 0.3))),
    Case("QLinearAdd_u8_se_planar", _binary("QLinearAdd", (1, 24, 40, 40), (1, 24, 1, 1), np.uint8, 19)),
    Case("QLinearAdd_i8_scalarA_large", _binary("QLinearAdd", (), (2, 16, 48, 48), np.int8, 20)),
    Case("QLinearGlobalAveragePool_u8_nchw", _gap((2, 5, 7, 7), np.uint8, 0, 21)),
    Case("QLinearGlobalAveragePool_i8_nchw", _gap((1, 3, 13, 11), np.int8, 0, 22)),
    Case("QLinearGlobalAveragePool_u8_nhwc", _gap((2, 6, 5, 9), np.uint8, 1, 23)),
    Case("QLinearGlobalAveragePool_i8_3d", _gap((3, 4, 17), np.int8, 0, 24)),
    # channels last with 8-channel vector steps and a tail
    Case("QLinearGlobalAveragePool_u8_nhwc_wide", _gap((2, 7, 7, 37), np.uint8, 1, 25)),
    Case("QLinearGlobalAveragePool_i8_nhwc_wide", _gap((1, 3, 5, 20), np.int8, 1, 26)),
    Case("QGemm_u8s8_basic", _qgemm(5, 37, 11, np.uint8, np.int8, 31)),
    Case("QGemm_u8u8_transB_bias", _qgemm(3, 19, 13, np.uint8, np.uint8, 32, trans_b=1, c_shape=(13,))),
    Case("QGemm_s8s8_transA_perCol", _qgemm(4, 23, 9, np.int8, np.int8, 33, trans_a=1, per_col=True, c_shape=(4, 9))),
    Case("QGemm_u8s8_alpha_float_out", _qgemm(6, 17, 10, np.uint8, np.int8, 34, alpha=0.5, out_dt=None,
                                              c_shape=(1, 10)), rtol=1e-6, atol=1e-6),
    Case("QGemm_u8s8_perCol_float_out", _qgemm(2, 40, 7, np.uint8, np.int8, 35, per_col=True, out_dt=None),
         rtol=1e-6, atol=1e-6),
    Case("QGemm_u8s8_nonconstB_colbias", _qgemm(7, 9, 5, np.uint8, np.int8, 36, c_shape=(7, 1), b_const=False)),
]


def _lookup(op, shape, dt, seed, attrs=None, same=False):
    def build():
        x = _q(shape, seed, dt)
        z = 128 if dt == np.uint8 else 0
        consts = {"xs": _scalar(0.05, np.float32), "xz": _scalar(z + 9, dt),
                  "ys": _scalar(0.05 if same else 1 / 256 if op == "QLinearSigmoid" else 0.031, np.float32),
                  "yz": _scalar(z + 9 if same else (0 if dt == np.uint8 else -128) if op == "QLinearSigmoid" else z - 7,
                                dt)}
        return node_model(op, {"X": x}, [("Y", _TP[dt])], consts=consts, attrs=attrs or {}), {"X": x}
    return build


def _concat(shapes, axis, dt, seed, params):
    def build():
        feeds, consts, names = {}, {"ys": _scalar(params[0][0], np.float32), "yz": _scalar(params[0][1], dt)}, ["ys", "yz"]
        for k, shp in enumerate(shapes):
            feeds[f"X{k}"] = _q(shp, seed + k, dt)
            consts[f"s{k}"] = _scalar(params[k + 1][0], np.float32)
            consts[f"z{k}"] = _scalar(params[k + 1][1], dt)
            names += [f"X{k}", f"s{k}", f"z{k}"]
        return node_model("QLinearConcat", feeds, [("Y", _TP[dt])], consts=consts, inputs=names,
                          attrs={"axis": axis}), feeds
    return build


def _where(c_shape, x_shape, y_shape, dt, seed, same_x=False):
    def build():
        z = 128 if dt == np.uint8 else 0
        cond = rand(c_shape, seed, np.int32, 0, 1).astype(bool)
        x, y = _q(x_shape, seed + 1, dt), _q(y_shape, seed + 2, dt)
        consts = {"xs": _scalar(0.02 if same_x else 0.03, np.float32), "xz": _scalar(z + (2 if same_x else 5), dt),
                  "ys": _scalar(0.017, np.float32), "yz": _scalar(z - 3, dt),
                  "zs": _scalar(0.02, np.float32), "zz": _scalar(z + 2, dt)}
        feeds = {"C": cond, "X": x, "Y": y}
        names = ["C", "X", "xs", "xz", "Y", "ys", "yz", "zs", "zz"]
        return node_model("QLinearWhere", feeds, [("Z", _TP[dt])], consts=consts, inputs=names), feeds
    return build


CASES += [
    Case("QLinearSigmoid_u8", _lookup("QLinearSigmoid", (3, 129), np.uint8, 41)),
    Case("QLinearSigmoid_i8", _lookup("QLinearSigmoid", (2, 5, 31), np.int8, 42)),
    Case("QLinearLeakyRelu_u8", _lookup("QLinearLeakyRelu", (3, 129), np.uint8, 43, {"alpha": 0.1})),
    Case("QLinearLeakyRelu_i8_default", _lookup("QLinearLeakyRelu", (2, 5, 31), np.int8, 44)),
    Case("QLinearLeakyRelu_u8_sameq", _lookup("QLinearLeakyRelu", (77,), np.uint8, 45, {"alpha": 0.3}, same=True)),
    Case("QLinearConcat_u8_axis1", _concat([(2, 3, 5), (2, 4, 5), (2, 1, 5)], 1, np.uint8, 51,
                                           [(0.05, 128), (0.05, 128), (0.03, 120), (0.08, 140)])),
    Case("QLinearConcat_i8_lastaxis", _concat([(3, 7), (3, 2)], -1, np.int8, 52, [(0.04, 1), (0.02, -3), (0.04, 1)])),
    Case("QLinearConcat_u8_axis0", _concat([(1, 6), (2, 6)], 0, np.uint8, 53, [(0.1, 10), (0.3, 0), (0.01, 250)])),
    Case("QLinearWhere_u8_bcast", _where((4, 1), (1, 9), (4, 9), np.uint8, 61)),
    Case("QLinearWhere_i8_samex", _where((2, 3, 5), (2, 3, 5), (5,), np.int8, 62, same_x=True)),
]


def _qdq(op, shape, qdt, seed, per_axis=None, x_dt=np.float32, zp=True):
    def build():
        n = shape[per_axis] if per_axis is not None else None
        scale = rand((n,), seed, np.float32, 0.01, 0.05) if n else _scalar(0.02, np.float32)
        if qdt in ("int4", "uint4"):
            lo, hi = (-8, 7) if qdt == "int4" else (0, 15)
            tp = TensorProto.INT4 if qdt == "int4" else TensorProto.UINT4
        else:
            lo, hi = np.iinfo(qdt).min, np.iinfo(qdt).max
            tp = helper.np_dtype_to_tensor_dtype(np.dtype(qdt))
        zpv = rand((n,) if n else (), seed + 1, np.int32, lo // 4, hi // 4)
        zp_t = helper.make_tensor("zp", tp, zpv.shape, zpv.reshape(-1).tolist())
        attrs = {"axis": per_axis} if per_axis is not None else {}
        if op == "QuantizeLinear":
            x = rand(shape, seed + 2, np.float32, -3, 3).astype(x_dt)
            scale_c = scale.astype(x_dt)
            out_t = tp
        else:
            x = rand(shape, seed + 2, np.int32, lo, hi)
            scale_c = scale
            out_t = TensorProto.FLOAT
        m = node_model(op, {}, [("Y", out_t)], consts={"s": scale_c}, inputs=["X", "s"] + (["zp"] if zp else []),
                       attrs=attrs)
        g = m.graph
        if op == "QuantizeLinear":
            g.input.append(helper.make_tensor_value_info("X", helper.np_dtype_to_tensor_dtype(x.dtype), x.shape))
            feeds = {"X": x}
        else:
            g.initializer.append(helper.make_tensor("X", tp, x.shape, x.reshape(-1).tolist()))
            feeds = {}
        if zp:
            g.initializer.append(zp_t)
        if op == "QuantizeLinear" and isinstance(qdt, str):
            # ORT cannot return int4 tensors: read them back through DequantizeLinear
            g.node[0].output[0] = "Yq"
            g.node.append(helper.make_node("DequantizeLinear", ["Yq", "s"] + (["zp"] if zp else []), ["Y"], domain=MS,
                                           **attrs))
            g.output[0].type.tensor_type.elem_type = TensorProto.FLOAT
        return m, feeds
    return build


CASES += [
    Case("ms_QuantizeLinear_u8", _qdq("QuantizeLinear", (3, 17), np.uint8, 71)),
    Case("ms_QuantizeLinear_i8_axis1", _qdq("QuantizeLinear", (2, 5, 7), np.int8, 72, per_axis=1)),
    Case("ms_QuantizeLinear_u16_axis0", _qdq("QuantizeLinear", (4, 9), np.uint16, 73, per_axis=0)),
    Case("ms_QuantizeLinear_i16", _qdq("QuantizeLinear", (5, 11), np.int16, 74)),
    Case("ms_QuantizeLinear_i4_axis1", _qdq("QuantizeLinear", (3, 6), "int4", 75, per_axis=1)),
    Case("ms_QuantizeLinear_u4", _qdq("QuantizeLinear", (3, 7), "uint4", 76)),
    Case("ms_QuantizeLinear_f16_in", _qdq("QuantizeLinear", (3, 17), np.int8, 77, x_dt=np.float16)),
    Case("ms_QuantizeLinear_nozp", _qdq("QuantizeLinear", (3, 17), np.uint8, 78, zp=False)),
    Case("ms_DequantizeLinear_u8", _qdq("DequantizeLinear", (3, 17), np.uint8, 81)),
    Case("ms_DequantizeLinear_i8_axis1", _qdq("DequantizeLinear", (2, 5, 7), np.int8, 82, per_axis=1)),
    Case("ms_DequantizeLinear_i16_axis0", _qdq("DequantizeLinear", (4, 9), np.int16, 83, per_axis=0)),
    Case("ms_DequantizeLinear_u16", _qdq("DequantizeLinear", (4, 9), np.uint16, 84)),
    Case("ms_DequantizeLinear_i4", _qdq("DequantizeLinear", (3, 7), "int4", 85)),
    Case("ms_DequantizeLinear_u4_axis0", _qdq("DequantizeLinear", (3, 7), "uint4", 86, per_axis=0)),
]


def _mmitf(a_shape, b_shape, adt, bdt, seed, per_col=False, bias=False, zps=True, dynamic=False):
    def build():
        N = b_shape[-1]
        b = _q(b_shape, seed + 1, bdt)
        bs = rand((N,), seed + 2, np.float32, 0.001, 0.01) if per_col else _scalar(0.004, np.float32)
        bz = (rand((N,), seed + 3, bdt, 100, 150) if bdt == np.uint8 else rand((N,), seed + 3, bdt, -5, 5)) \
            if per_col else _scalar(128 if bdt == np.uint8 else 1, bdt)
        consts = {"B": b}
        if dynamic:
            a = rand(a_shape, seed, np.float32, -2, 3)
            consts.update({"bs": bs})
            names = ["A", "B", "bs"]
            if zps:
                consts["bz"] = bz
                names.append("bz")
            else:
                names.append("")
        else:
            a = _q(a_shape, seed, adt)
            consts.update({"as": _scalar(0.02, np.float32), "bs": bs})
            names = ["A", "B", "as", "bs"]
            if zps:
                consts.update({"az": _scalar(120 if adt == np.uint8 else -3, adt), "bz": bz})
                names += ["az", "bz"]
            else:
                names += ["", ""]
        if bias:
            consts["bias"] = rand((N,), seed + 4, np.float32, -1, 1)
            names.append("bias")
        op = "DynamicQuantizeMatMul" if dynamic else "MatMulIntegerToFloat"
        return node_model(op, {"A": a}, [("Y", TensorProto.FLOAT)], consts=consts, inputs=names), {"A": a}
    return build


CASES += [
    Case("MatMulIntegerToFloat_u8s8", _mmitf((5, 33), (33, 7), np.uint8, np.int8, 91), rtol=1e-6, atol=1e-6),
    Case("MatMulIntegerToFloat_u8u8_3d_percol_bias", _mmitf((2, 3, 19), (19, 9), np.uint8, np.uint8, 92, per_col=True,
                                                            bias=True), rtol=1e-6, atol=1e-6),
    Case("MatMulIntegerToFloat_s8s8_nozp", _mmitf((4, 17), (17, 6), np.int8, np.int8, 93, zps=False, bias=True),
         rtol=1e-6, atol=1e-6),
    Case("DynamicQuantizeMatMul_s8", _mmitf((2, 5, 21), (21, 11), None, np.int8, 94, dynamic=True, bias=True),
         rtol=1e-6, atol=1e-6),
    Case("DynamicQuantizeMatMul_u8_percol", _mmitf((6, 13), (13, 5), None, np.uint8, 95, dynamic=True, per_col=True),
         rtol=1e-6, atol=1e-6),
    Case("DynamicQuantizeMatMul_s8_nozp", _mmitf((3, 40), (40, 8), None, np.int8, 96, dynamic=True, zps=False),
         rtol=1e-6, atol=1e-6),
]


def _avgpool(shape, dt, seed, channels_last=0, **attrs):
    def build():
        x = _q(shape, seed, dt)
        z = 128 if dt == np.uint8 else 0
        consts = {"xs": _scalar(0.037, np.float32), "xz": _scalar(z + 3, dt),
                  "ys": _scalar(0.029, np.float32), "yz": _scalar(z - 6, dt)}
        a = dict(attrs)
        a["channels_last"] = channels_last
        return node_model("QLinearAveragePool", {"X": x}, [("Y", _TP[dt])], consts=consts, attrs=a), {"X": x}
    return build


def _nhwc_maxpool(shape, dt, seed, **attrs):
    def build():
        x = _q(shape, seed, dt)
        return node_model("NhwcMaxPool", {"x": x}, [("y", _TP[dt])], attrs=attrs), {"x": x}
    return build


CASES += [
    Case("QLinearAveragePool_u8_3x3_pad", _avgpool((2, 3, 9, 11), np.uint8, 101, kernel_shape=[3, 3],
                                                   pads=[1, 1, 1, 1], strides=[2, 2])),
    Case("QLinearAveragePool_i8_include_pad", _avgpool((1, 4, 7, 7), np.int8, 102, kernel_shape=[3, 2],
                                                       pads=[1, 0, 1, 1], count_include_pad=1)),
    Case("QLinearAveragePool_u8_nhwc_ceil", _avgpool((2, 8, 8, 5), np.uint8, 103, channels_last=1,
                                                     kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    Case("QLinearAveragePool_u8_1d_same", _avgpool((2, 3, 17), np.uint8, 104, kernel_shape=[4],
                                                   auto_pad="SAME_UPPER")),
    Case("QLinearAveragePool_i8_3d", _avgpool((1, 2, 5, 6, 7), np.int8, 105, kernel_shape=[2, 3, 2],
                                              strides=[1, 2, 2])),
    # channels-first planes row by row: ceil_mode with stride 2, and one big enough for two threads
    Case("QLinearAveragePool_u8_ceil_s2", _avgpool((1, 3, 9, 10), np.uint8, 106, kernel_shape=[3, 3],
                                                   strides=[2, 2], ceil_mode=1)),
    Case("QLinearAveragePool_i8_big_pad", _avgpool((1, 32, 28, 28), np.int8, 107, kernel_shape=[3, 3],
                                                   pads=[1, 1, 1, 1])),
    Case("NhwcMaxPool_u8_3x3_s2_pad", _nhwc_maxpool((2, 9, 11, 5), np.uint8, 111, kernel_shape=[3, 3],
                                                    strides=[2, 2], pads=[1, 1, 1, 1])),
    Case("NhwcMaxPool_i8_dilated", _nhwc_maxpool((1, 10, 10, 3), np.int8, 112, kernel_shape=[2, 2],
                                                 dilations=[2, 2])),
    Case("NhwcMaxPool_i8_ceil", _nhwc_maxpool((1, 8, 8, 4), np.int8, 113, kernel_shape=[3, 3], strides=[2, 2],
                                              ceil_mode=1)),
    # 32-channel vector steps and a tail; big enough to split across threads
    Case("NhwcMaxPool_u8_wide", _nhwc_maxpool((1, 40, 40, 70), np.uint8, 114, kernel_shape=[3, 3], strides=[2, 2],
                                              pads=[1, 1, 1, 1])),
    Case("NhwcMaxPool_i8_wide", _nhwc_maxpool((2, 9, 7, 37), np.int8, 115, kernel_shape=[2, 2])),
    # dilated windows wholly inside (one shared tap list) beside clipped border ones
    Case("NhwcMaxPool_u8_dilated_pad", _nhwc_maxpool((2, 13, 12, 16), np.uint8, 116, kernel_shape=[3, 3],
                                                     dilations=[2, 2], pads=[2, 1, 2, 1], strides=[1, 2])),
]


def _softmax(shape, dt, seed, opset, axis=None, xs=0.1, ys=1 / 256):
    def build():
        x = _q(shape, seed, dt)
        z = 0 if dt == np.uint8 else -128
        consts = {"xs": _scalar(xs, np.float32), "xz": _scalar(z + 100 if dt == np.uint8 else 5, dt),
                  "ys": _scalar(ys, np.float32), "yz": _scalar(z, dt)}
        attrs = {"opset": opset}
        if axis is not None:
            attrs["axis"] = axis
        return node_model("QLinearSoftmax", {"X": x}, [("Y", _TP[dt])], consts=consts, attrs=attrs), {"X": x}
    return build


CASES += [
    Case("QLinearSoftmax_u8_opset13_last", _softmax((3, 37), np.uint8, 121, 13)),
    Case("QLinearSoftmax_i8_opset13_axis1", _softmax((2, 9, 5), np.int8, 122, 13, axis=1)),
    Case("QLinearSoftmax_u8_opset12_flatten", _softmax((2, 3, 7), np.uint8, 123, 12, axis=1, xs=0.02)),
    Case("QLinearSoftmax_i8_opset13_small_scale", _softmax((4, 16), np.int8, 124, 13, xs=0.01, ys=1 / 255)),
]


def _qconv(x_shape, w_shape, group, seed, xdt=np.uint8, wdt=np.int8, per_channel=False, bias=True, nhwc=False,
           **attrs):
    """Standard QLinearConv, checked here for the depthwise and 8-bit GEMM paths; with nhwc,
    com.microsoft QLinearConv with channels_last = 1 (x_shape is then [N, spatial..., C])."""
    def build():
        x, w = _q(x_shape, seed, xdt), _q(w_shape, seed + 1, wdt)
        M = w_shape[0]
        ws = rand((M,), seed + 2, np.float32, 0.002, 0.01) if per_channel else _scalar(0.005, np.float32)
        wz = np.zeros((M,) if per_channel else (), wdt) if wdt == np.int8 else \
            (rand((M,), seed + 3, wdt, 120, 136) if per_channel else _scalar(128, wdt))
        consts = {"xs": _scalar(0.03, np.float32), "xz": _scalar(120 if xdt == np.uint8 else -3, xdt), "W": w,
                  "ws": ws, "wz": wz, "ys": _scalar(0.05, np.float32), "yz": _scalar(125 if xdt == np.uint8 else 2, xdt)}
        names = ["X", "xs", "xz", "W", "ws", "wz", "ys", "yz"]
        if bias:
            consts["B"] = rand((M,), seed + 4, np.int32, -2000, 2000)
            names.append("B")
        a = dict(attrs)
        a["group"] = group
        if nhwc:
            a["channels_last"] = 1
        return node_model("QLinearConv", {"X": x}, [("Y", _TP[xdt])], consts=consts, inputs=names, attrs=a,
                          domain="com.microsoft" if nhwc else ""), {"X": x}
    return build


CASES += [
    Case("QLinearConv_depthwise_s2_pad_dil", _qconv((2, 6, 13, 11), (6, 1, 3, 3), 6, 131, strides=[2, 2],
                                                    pads=[1, 2, 0, 1], dilations=[2, 1])),
    Case("QLinearConv_depthwise_s1_same_percol", _qconv((1, 5, 9, 9), (5, 1, 3, 3), 5, 132, per_channel=True,
                                                        pads=[1, 1, 1, 1])),
    Case("QLinearConv_int8gemm_3x3_s8s8", _qconv((1, 7, 10, 9), (12, 7, 3, 3), 1, 133, xdt=np.int8, pads=[1, 1, 1, 1],
                                                 strides=[2, 1])),
    Case("QLinearConv_int8gemm_1x1_u8u8_percol", _qconv((2, 9, 6, 5), (11, 9, 1, 1), 1, 134, wdt=np.uint8,
                                                        per_channel=True)),
    Case("QLinearConv_int8gemm_grouped", _qconv((1, 8, 7, 7), (12, 4, 3, 3), 2, 135, pads=[1, 1, 1, 1], bias=False)),
    # com.microsoft QLinearConv, channels_last (what ORT's NHWC transformer and Onyx's int8_channels_last write)
    Case("QLinearConv_nhwc_depthwise_40ch", _qconv((2, 9, 8, 40), (40, 1, 3, 3), 40, 136, nhwc=True, per_channel=True,
                                                   pads=[1, 1, 1, 1])),
    Case("QLinearConv_nhwc_depthwise_s2_i8", _qconv((1, 11, 10, 19), (19, 1, 3, 3), 19, 137, nhwc=True, xdt=np.int8,
                                                    strides=[2, 2], pads=[0, 1, 1, 0])),
    Case("QLinearConv_nhwc_depthwise_5x5_u8w", _qconv((1, 12, 12, 24), (24, 1, 5, 5), 24, 138, nhwc=True,
                                                      wdt=np.uint8, per_channel=True, pads=[2, 2, 2, 2])),
    Case("QLinearConv_nhwc_3x3_s2_stem", _qconv((1, 15, 17, 3), (16, 3, 3, 3), 1, 139, nhwc=True, strides=[2, 2],
                                                pads=[1, 1, 1, 1])),
    Case("QLinearConv_nhwc_1x1_u8u8", _qconv((2, 6, 5, 20), (33, 20, 1, 1), 1, 140, nhwc=True, wdt=np.uint8)),
    Case("QLinearConv_nhwc_grouped", _qconv((1, 7, 7, 8), (12, 4, 3, 3), 2, 141, nhwc=True, pads=[1, 1, 1, 1])),
]


def _resize(shape, sizes, dt, seed, lo=None, hi=None, **attrs):
    """The standard Resize on an integer tensor (quantized segmentation heads and U-Nets resize
    8-bit activations): every output must equal ORT's, its float sums truncated."""
    def build():
        info = np.iinfo(dt)
        x = rand(shape, seed, dt, info.min if lo is None else lo, info.max if hi is None else hi)
        consts = {"sizes": np.array(sizes, dtype=np.int64)}
        out_type = helper.np_dtype_to_tensor_dtype(np.dtype(dt))
        return node_model("Resize", {"X": x}, [("Y", out_type)], attrs=attrs, consts=consts,
                          inputs=["X", "", "", "sizes"], domain="", opset=19), {"X": x}
    return build


CASES += [
    Case("Resize_u8_linear_8x", _resize((1, 5, 28, 28), (1, 5, 224, 224), np.uint8, 150, mode="linear")),
    Case("Resize_i8_linear_align_corners", _resize((2, 3, 7, 9), (2, 3, 20, 15), np.int8, 151, mode="linear",
                                                   coordinate_transformation_mode="align_corners")),
    Case("Resize_u8_nearest_asymmetric", _resize((1, 3, 16, 16), (1, 3, 32, 32), np.uint8, 153,
                                                 coordinate_transformation_mode="asymmetric", nearest_mode="floor")),
    # Nearest copies: int32 values beyond float's 24-bit mantissa come out unchanged.
    Case("Resize_i32_nearest_large_values", _resize((1, 2, 5, 6), (1, 2, 9, 13), np.int32, 154, lo=2 ** 30,
                                                    hi=2 ** 31 - 1)),
]


def _add_tie():
    """A residual QLinearAdd of a statically quantized BERT-base where 157 + 104 lands on
    153.49998 in ORT's float steps (its constant term fused into one multiply-add) and on 153.5
    without the fusion: every pair of codes, these pairs among them."""
    def build():
        a = np.repeat(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)
        b = np.tile(np.arange(256, dtype=np.uint8), 256).reshape(256, 256)
        a[0, :8], b[0, :8] = 157, 104
        feeds = {"A": a, "B": b}
        consts = {"As": _scalar(0.03206855, np.float32), "Az": _scalar(126, np.uint8),
                  "Bs": _scalar(0.00575693, np.float32), "Bz": _scalar(113, np.uint8),
                  "Cs": _scalar(0.033063617, np.float32), "Cz": _scalar(125, np.uint8)}
        return node_model("QLinearAdd", feeds, [("C", TensorProto.UINT8)], consts=consts,
                          inputs=["A", "As", "Az", "B", "Bs", "Bz", "Cs", "Cz"]), feeds
    return build


def _softmax_rows(rows, d, seed, x_scale, y_scale):
    """QLinearSoftmax over many rows of d (split over threads)."""
    def build():
        x = rand((rows, d), seed, np.uint8, 0, 255)
        consts = {"xs": _scalar(x_scale, np.float32), "xz": _scalar(128, np.uint8),
                  "ys": _scalar(y_scale, np.float32), "yz": _scalar(0, np.uint8)}
        return node_model("QLinearSoftmax", {"X": x}, [("Y", TensorProto.UINT8)], consts=consts,
                          attrs={"axis": -1, "opset": 13}), {"X": x}
    return build


CASES += [
    Case("QLinearAdd_u8_every_pair_fused_constant", _add_tie()),
    Case("QLinearSoftmax_u8_many_rows", _softmax_rows(4096, 128, 160, 0.11, 1.0 / 256)),
]


def _dq_lstm(seq, batch, inp, hidden, direction, wdt, seed, per_col=False, bias=True, states=False, lens=None,
             peephole=False, weights_const=True, **attrs):
    """DynamicQuantizeLSTM: W [D, in, 4H], R [D, H, 4H] 8-bit, scales/zero points per direction (or per column)."""
    def build():
        D = 2 if direction == "bidirectional" else 1
        G = 4 * hidden
        info = np.iinfo(wdt)
        w, r = _q((D, inp, G), seed, wdt), _q((D, hidden, G), seed + 1, wdt)
        zshape, lo = ((D, G) if per_col else (D,)), (info.min + info.max) // 2
        # ORT takes one zero point per matrix (uint8), and 0 for int8
        zeros = lambda s: np.full(zshape, lo + s % 7 - 3, wdt) if wdt == np.uint8 else np.zeros(zshape, wdt)
        x = rand((seq, batch, inp), seed + 2, np.float32, -2, 2)
        feeds = {"X": x}
        consts = {"W": w, "R": r}
        names = ["X", "W", "R"]
        optional = {"B": (bias, lambda: rand((D, 2 * G), seed + 3, np.float32, -0.5, 0.5)),
                    "sequence_lens": (lens is not None, lambda: np.array(lens, np.int32)),
                    "initial_h": (states, lambda: rand((D, batch, hidden), seed + 4)),
                    "initial_c": (states, lambda: rand((D, batch, hidden), seed + 5)),
                    "P": (peephole, lambda: rand((D, 3 * hidden), seed + 6, np.float32, -0.3, 0.3))}
        for name, (present, make) in optional.items():
            names.append(name if present else "")
            if present:
                consts[name] = make()
        consts.update({"Ws": rand(zshape, seed + 7, np.float32, 0.004, 0.012), "Wz": zeros(seed + 8),
                       "Rs": rand(zshape, seed + 9, np.float32, 0.004, 0.012), "Rz": zeros(seed + 10)})
        names += ["Ws", "Wz", "Rs", "Rz"]
        if not weights_const:
            feeds.update({"W": consts.pop("W"), "R": consts.pop("R")})
        a = {"hidden_size": hidden, "direction": direction, **attrs}
        outs = [("Y", TensorProto.FLOAT), ("Y_h", TensorProto.FLOAT), ("Y_c", TensorProto.FLOAT)]
        return node_model("DynamicQuantizeLSTM", feeds, outs, consts=consts, inputs=names, attrs=a), feeds
    return build


# Inputs and hidden states are quantized per GEMM as ORT does, so only float rounding differs.
CASES += [
    Case("DynamicQuantizeLSTM_s8_forward", _dq_lstm(5, 1, 7, 6, "forward", np.int8, 111), rtol=1e-4, atol=1e-5),
    Case("DynamicQuantizeLSTM_s8_bidirectional_states", _dq_lstm(6, 1, 9, 8, "bidirectional", np.int8, 112,
                                                                  states=True), rtol=1e-4, atol=1e-5),
    Case("DynamicQuantizeLSTM_u8_reverse_percol", _dq_lstm(4, 1, 5, 4, "reverse", np.uint8, 113, per_col=True),
         rtol=1e-4, atol=1e-5),
    Case("DynamicQuantizeLSTM_s8_peephole_clip", _dq_lstm(5, 1, 6, 5, "forward", np.int8, 114, peephole=True,
                                                          clip=0.8), rtol=1e-4, atol=1e-5),
    Case("DynamicQuantizeLSTM_u8_batch_lens", _dq_lstm(5, 3, 6, 4, "bidirectional", np.uint8, 116, lens=[5, 2, 4],
                                                       states=True), rtol=1e-4, atol=1e-5),
    Case("DynamicQuantizeLSTM_u8_forward_lens", _dq_lstm(5, 3, 6, 4, "forward", np.uint8, 117, lens=[5, 2, 4]),
         rtol=1e-4, atol=1e-5),
    Case("DynamicQuantizeLSTM_s8_weights_fed", _dq_lstm(3, 1, 4, 3, "forward", np.int8, 115, bias=False,
                                                        weights_const=False), rtol=1e-4, atol=1e-5),
]
