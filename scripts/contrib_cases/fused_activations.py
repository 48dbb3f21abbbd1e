"""ORT's fused contrib ops (com.microsoft) from its graph optimizer (level
extended) and transformers optimizer: the GELU family, FusedMatMul,
FusedGemm, FusedConv."""
import numpy as np
from onnx import TensorProto

from . import Case, node_model, rand

F = TensorProto.FLOAT
Y = [("Y", F)]


def _feeds_model(op, feeds, attrs=None, consts=None, inputs=None):
    return node_model(op, feeds, Y, attrs, consts, inputs), feeds


# ---- GELU family

def _bias_gelu():
    x, b = rand((2, 3, 8), 1, low=-4, high=4), rand((8,), 2)
    return _feeds_model("BiasGelu", {"X": x, "bias": b})


def _bias_gelu_big():  # several threads' worth of rows, odd width
    x, b = rand((3, 257, 77), 3, low=-6, high=6), rand((77,), 4)
    return _feeds_model("BiasGelu", {"X": x, "bias": b})


def _gelu():
    x = rand((2, 5, 13), 5, low=-8, high=8)
    x.flat[:4] = [0.0, -30.0, 30.0, 1e-3]
    return _feeds_model("Gelu", {"X": x})


def _gelu_big():
    return _feeds_model("Gelu", {"X": rand((70001,), 6, low=-5, high=5)})


def _fast_gelu():
    return _feeds_model("FastGelu", {"X": rand((4, 7, 9), 7, low=-6, high=6)})


def _fast_gelu_bias():
    x, b = rand((2, 3, 33), 8, low=-6, high=6), rand((33,), 9)
    return _feeds_model("FastGelu", {"X": x, "bias": b})


def _fast_gelu_bias_const():
    x, b = rand((5, 19), 10, low=-6, high=6), rand((19,), 11)
    return _feeds_model("FastGelu", {"X": x}, consts={"bias": b})


def _quick_gelu():
    return _feeds_model("QuickGelu", {"X": rand((3, 17), 12, low=-9, high=9)})


def _quick_gelu_alpha():
    return _feeds_model("QuickGelu", {"X": rand((2, 2, 11), 13, low=-9, high=9)}, {"alpha": 1.0})


# ---- FusedMatMul

def _matmul(a_shape, b_shape, attrs, seed, b_const=False):
    a, b = rand(a_shape, seed), rand(b_shape, seed + 1)
    if b_const:
        return _feeds_model("FusedMatMul", {"A": a}, attrs, consts={"B": b})
    return _feeds_model("FusedMatMul", {"A": a, "B": b}, attrs)


def _mm(name, a, b, attrs, seed, b_const=False, rtol=1e-4, atol=1e-5):
    return Case(name, lambda: _matmul(a, b, attrs, seed, b_const), rtol, atol)


MATMUL_CASES = [
    _mm("FusedMatMul_2d_alpha", (5, 7), (7, 3), {"alpha": 0.125}, 20),
    _mm("FusedMatMul_transA", (7, 5), (7, 3), {"transA": 1}, 21),
    _mm("FusedMatMul_transB", (5, 7), (3, 7), {"transB": 1, "alpha": 2.0}, 22),
    _mm("FusedMatMul_transAB", (7, 5), (3, 7), {"transA": 1, "transB": 1}, 23),
    # BERT's scores: Q [B, H, S, D] x K^T with alpha = 1/sqrt(D)
    _mm("FusedMatMul_4d_transB", (2, 3, 9, 8), (2, 3, 9, 8), {"transB": 1, "alpha": 0.35355339}, 24),
    _mm("FusedMatMul_broadcast", (2, 1, 5, 6), (3, 6, 4), {}, 25),
    _mm("FusedMatMul_3d_by_2d_transA", (3, 6, 5), (6, 4), {"transA": 1}, 26),
    _mm("FusedMatMul_3d_by_2d_const", (3, 5, 6), (6, 9), {"alpha": 0.5}, 27, b_const=True),
    _mm("FusedMatMul_const_transB", (4, 5, 6), (9, 6), {"transB": 1}, 28, b_const=True),
    _mm("FusedMatMul_const_transAB", (4, 6, 5), (9, 6), {"transA": 1, "transB": 1}, 29, b_const=True),
    _mm("FusedMatMul_vec_A", (6,), (6, 4), {"alpha": 3.0}, 30),
    _mm("FusedMatMul_vec_B", (2, 5, 6), (6,), {}, 31),
    _mm("FusedMatMul_transBatchA", (5, 2, 3, 4), (2, 3, 4, 6), {"transBatchA": 1}, 32),
    _mm("FusedMatMul_transBatchA_transA", (4, 2, 3, 5), (2, 3, 4, 6), {"transBatchA": 1, "transA": 1}, 33),
    _mm("FusedMatMul_transBatchB_transB", (2, 3, 5, 4), (6, 2, 3, 4), {"transBatchB": 1, "transB": 1, "alpha": 0.5}, 34),
    _mm("FusedMatMul_transBatchAB", (5, 3, 4), (4, 3, 6), {"transBatchA": 1, "transBatchB": 1}, 35),
    _mm("FusedMatMul_big", (2, 67, 129), (129, 95), {"alpha": 0.7}, 36, rtol=1e-4, atol=1e-4),
]


# ---- FusedGemm

def _gemm(act, act_attrs, seed, trans_a=0, trans_b=0, c_shape=(6,), b_const=False, beta=1.0, alpha=1.0):
    a = rand((6, 5) if trans_a else (5, 6), seed, low=-2, high=2)
    b = rand((6, 6) if trans_b else (6, 6), seed + 1, low=-2, high=2)
    attrs = {"transA": trans_a, "transB": trans_b, "alpha": alpha, "beta": beta}
    if act:
        attrs["activation"] = act
    attrs.update({"activation_" + k: v for k, v in act_attrs.items()})
    feeds = {"A": a}
    consts = {}
    if b_const:
        consts["B"] = b
    else:
        feeds["B"] = b
    inputs = ["A", "B"]
    if c_shape is not None:
        feeds["C"] = rand(c_shape, seed + 2)
        inputs.append("C")
    return _feeds_model("FusedGemm", feeds, attrs, consts, inputs)


def _g(name, act, act_attrs, seed, **kw):
    return Case("FusedGemm_" + name, lambda: _gemm(act, act_attrs, seed, **kw))


GEMM_CASES = [
    _g("Relu", "Relu", {}, 40),
    _g("Relu_const_B_transB", "Relu", {}, 41, trans_b=1, b_const=True),
    _g("LeakyRelu", "LeakyRelu", {"alpha": 0.1}, 42, trans_a=1),
    _g("Sigmoid_C2d", "Sigmoid", {}, 43, c_shape=(5, 6), beta=0.5, alpha=1.5),
    _g("Tanh_noC", "Tanh", {}, 44, c_shape=None),
    _g("HardSigmoid", "HardSigmoid", {"alpha": 0.3, "beta": 0.4}, 45),
    _g("Elu", "Elu", {"alpha": 0.7}, 46),
    _g("Selu", "Selu", {"alpha": 1.6, "gamma": 1.1}, 47),
    _g("Celu", "Celu", {"alpha": 0.8}, 48),
    _g("Softplus", "Softplus", {}, 49),
    _g("Softsign", "Softsign", {}, 50),
    _g("ThresholdedRelu", "ThresholdedRelu", {"alpha": 0.5}, 51),
    _g("ScaledTanh", "ScaledTanh", {"alpha": 1.5, "beta": 0.7}, 52),
    _g("ParametricSoftplus", "ParametricSoftplus", {"alpha": 1.5, "beta": 0.7}, 53),
    _g("Relu_C_scalar", "Relu", {}, 54, c_shape=(1,), b_const=True),
]


# ---- FusedConv

def _conv(act, params, seed, x_shape=(2, 4, 9, 7), w_shape=(6, 4, 3, 3), bias=True, z=False, attrs=None):
    x, w = rand(x_shape, seed), rand(w_shape, seed + 1)
    a = dict(attrs or {})
    if act:
        a["activation"] = act
    if params is not None:
        a["activation_params"] = params
    consts = {"W": w}
    inputs = ["X", "W"]
    if bias:
        consts["B"] = rand((w_shape[0],), seed + 2)
        inputs.append("B")
    feeds = {"X": x}
    model, feeds = _feeds_model("FusedConv", feeds, a, consts, inputs)
    if z:
        # Z: the residual, computed like the conv's output shape.
        import onnxruntime as ort
        zshape = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, feeds)[0].shape
        zt = rand(zshape, seed + 3)
        if not bias:
            inputs.append("")
        inputs.append("Z")
        feeds = {"X": x, "Z": zt}
        model, feeds = _feeds_model("FusedConv", feeds, a, consts, inputs)
    return model, feeds


def _c(name, act, params, seed, **kw):
    return Case("FusedConv_" + name, lambda: _conv(act, params, seed, **kw), 1e-4, 1e-4)


CONV_CASES = [
    _c("Relu", "Relu", None, 60, attrs={"pads": [1, 1, 1, 1]}),
    _c("Clip6_strided", "Clip", [0.0, 6.0], 61, attrs={"strides": [2, 2], "pads": [1, 0, 1, 0]}),
    _c("LeakyRelu_nobias", "LeakyRelu", [0.2], 62, bias=False),
    _c("Sigmoid_depthwise", "Sigmoid", None, 63, x_shape=(1, 6, 10, 10), w_shape=(6, 1, 3, 3),
       attrs={"group": 6, "pads": [1, 1, 1, 1]}),
    _c("Tanh_dilated", "Tanh", None, 64, attrs={"dilations": [2, 2]}),
    _c("HardSigmoid_1x1", "HardSigmoid", [0.2, 0.5], 65, w_shape=(5, 4, 1, 1)),
    _c("Relu_Z", "Relu", None, 66, z=True, attrs={"pads": [1, 1, 1, 1]}),
    _c("noact_Z", None, None, 67, z=True),
    _c("Relu_1d", "Relu", None, 68, x_shape=(2, 3, 11), w_shape=(4, 3, 3)),
    _c("Clip_autopad", "Clip", [-1.0, 1.0], 69, attrs={"auto_pad": "SAME_UPPER", "strides": [2, 2]}),
]


CASES = [
    Case("BiasGelu_3d", _bias_gelu),
    Case("BiasGelu_big_odd", _bias_gelu_big),
    Case("Gelu_edges", _gelu),
    Case("Gelu_big", _gelu_big),
    Case("FastGelu", _fast_gelu),
    Case("FastGelu_bias", _fast_gelu_bias),
    Case("FastGelu_bias_const", _fast_gelu_bias_const),
    Case("QuickGelu", _quick_gelu),
    Case("QuickGelu_alpha", _quick_gelu_alpha),
] + MATMUL_CASES + GEMM_CASES + CONV_CASES
