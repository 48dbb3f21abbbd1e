"""Assorted com.microsoft ops exporters emit: CDist (skl2onnx KNN's 'cdist'
optimization), Inverse (tf2onnx), MurmurHash3 (skl2onnx FeatureHasher),
MatMulInteger16, Unique and ExpandDims (old tf2onnx). Hashes, indices and
integer products must equal ORT's exactly."""
import numpy as np
from onnx import TensorProto, helper

from . import Case, node_model, rand


def _tp(dt):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


def _cdist(n, m, k, dt, metric, seed, low=-1.0, high=1.0):
    def build():
        feeds = {"A": rand((n, k), seed, dt, low, high), "B": rand((m, k), seed + 1, dt, low, high)}
        attrs = {"metric": metric} if metric else None
        return node_model("CDist", feeds, [("C", _tp(dt))], attrs=attrs), feeds
    return build


def _well_conditioned(shape, seed, dt):
    """Random square matrices made diagonally dominant, so the inverse is tame."""
    x = rand(shape, seed, np.float64)
    n = shape[-1]
    return (x + n * np.eye(n) * np.sign(rand(shape[:-1], seed + 1, np.float64) + 0.01)[..., None]).astype(dt)


def _inverse(x_fn):
    def build():
        x = x_fn()
        feeds = {"X": x}
        return node_model("Inverse", feeds, [("Y", _tp(x.dtype))]), feeds
    return build


def _murmur(x, seed=None, positive=None):
    def build():
        attrs = {}
        if seed is not None:
            attrs["seed"] = seed
        if positive is not None:
            attrs["positive"] = positive
        out = TensorProto.INT32 if positive == 0 else TensorProto.UINT32
        feeds = {"X": x}
        return node_model("MurmurHash3", feeds, [("Y", out)], attrs=attrs), feeds
    return build


def _special_floats(dt):
    return np.array([0.0, -0.0, 1.0, -1.5, np.inf, -np.inf, np.nan, 3.14159, 1e-30, 6.02e23], dt)


def _matmul16(a_shape, b_shape, seed, low=-300, high=300, b_const=False):
    def build():
        a, b = rand(a_shape, seed, np.int16, low, high), rand(b_shape, seed + 1, np.int16, low, high)
        feeds, consts = {"A": a}, {}
        (consts if b_const else feeds)["B"] = b
        return node_model("MatMulInteger16", feeds, [("Y", TensorProto.INT32)], consts=consts), feeds
    return build


def _unique(x):
    def build():
        feeds = {"x": x}
        outs = [("y", _tp(x.dtype)), ("idx", TensorProto.INT64), ("counts", TensorProto.INT64)]
        return node_model("Unique", feeds, outs), feeds
    return build


def _expand_dims(x, axis, axis_shape=(), axis_fed=False):
    def build():
        axis_t = np.full(axis_shape, axis, np.int32)
        feeds, consts = {"X": x}, {}
        (feeds if axis_fed else consts)["axis"] = axis_t
        return node_model("ExpandDims", feeds, [("Y", _tp(x.dtype))], consts=consts), feeds
    return build


_STRINGS = np.array(["", "a", "ab", "abc", "abcd", "abcde", "hello world", "caf\u00e9", "\u65e5\u672c\u8a9e",
                     "feature_hasher_token_0123456789"])  # fixed-width str: onyx run reads no pickled .npy
_INTS = np.array([0, 1, -1, 2, 123456, -987654, 2**31 - 1, -2**31], np.int64)

CASES = [
    # CDist: ORT's raw loop and GEMM paths split at K = 8; float and double; default metric
    Case("CDist_sqeuclidean_f32", _cdist(5, 6, 7, np.float32, "sqeuclidean", 1)),
    Case("CDist_euclidean_f32_k3", _cdist(4, 9, 3, np.float32, "euclidean", 2)),
    Case("CDist_default_metric_f32_k16", _cdist(7, 5, 16, np.float32, None, 3)),
    Case("CDist_euclidean_f64_k12", _cdist(6, 8, 12, np.float64, "euclidean", 4), rtol=1e-9, atol=1e-12),
    Case("CDist_sqeuclidean_f64", _cdist(3, 4, 5, np.float64, "sqeuclidean", 5), rtol=1e-9, atol=1e-12),
    Case("CDist_knn_like_f32", _cdist(20, 64, 10, np.float32, "euclidean", 6, 0.0, 10.0)),
    Case("CDist_empty_A_f32", _cdist(0, 3, 4, np.float32, "euclidean", 7)),
    Case("CDist_empty_B_f32", _cdist(3, 0, 4, np.float32, "sqeuclidean", 8)),
    # Inverse: batches, sizes, float16 (ORT computes it in half precision, we in float), singular matrices
    Case("Inverse_f32_3x3", _inverse(lambda: _well_conditioned((3, 3), 10, np.float32))),
    Case("Inverse_f32_batched", _inverse(lambda: _well_conditioned((2, 3, 4, 4), 11, np.float32))),
    Case("Inverse_f32_20x20", _inverse(lambda: _well_conditioned((20, 20), 12, np.float32))),
    Case("Inverse_f32_random_5x5", _inverse(lambda: rand((3, 5, 5), 13, np.float32)), rtol=1e-3, atol=1e-4),
    Case("Inverse_f64_6x6", _inverse(lambda: _well_conditioned((2, 6, 6), 14, np.float64)), rtol=1e-9, atol=1e-12),
    Case("Inverse_f16_3x3", _inverse(lambda: _well_conditioned((2, 3, 3), 15, np.float16)), rtol=5e-3, atol=1e-3),
    Case("Inverse_f32_1x1", _inverse(lambda: np.array([[[4.0]], [[-0.5]], [[0.0]]], np.float32))),
    Case("Inverse_f32_empty_batch", _inverse(lambda: np.zeros((0, 3, 3), np.float32))),
    Case("Inverse_f32_0x0", _inverse(lambda: np.zeros((2, 0, 0), np.float32))),
    Case("Inverse_f32_singular", _inverse(lambda: np.array([[[1, 2], [2, 4]], [[0, 0], [0, 0]]], np.float32))),
    Case("Inverse_f32_singular_3x3", _inverse(lambda: np.arange(1, 10, dtype=np.float32).reshape(3, 3))),
    Case("Inverse_f32_needs_pivot", _inverse(lambda: np.array([[0, 1, 2], [1, 0, 3], [4, -3, 8]], np.float32))),
    # MurmurHash3: every input type, seeds (negative too), signed and unsigned outputs, empty and scalar inputs
    Case("MurmurHash3_int32", _murmur(_INTS.astype(np.int32).reshape(2, 4))),
    Case("MurmurHash3_int32_seed_signed", _murmur(_INTS.astype(np.int32), seed=42, positive=0)),
    Case("MurmurHash3_uint32_seed_neg", _murmur(_INTS.astype(np.uint32), seed=-1, positive=1)),
    Case("MurmurHash3_int64", _murmur(_INTS, seed=7)),
    Case("MurmurHash3_uint64_signed", _murmur(_INTS.astype(np.uint64), positive=0)),
    Case("MurmurHash3_float", _murmur(_special_floats(np.float32), seed=3)),
    Case("MurmurHash3_double_signed", _murmur(_special_floats(np.float64), positive=0)),
    Case("MurmurHash3_string", _murmur(_STRINGS)),
    Case("MurmurHash3_string_2d_seed_signed", _murmur(_STRINGS.reshape(2, 5), seed=12345, positive=0)),
    Case("MurmurHash3_empty", _murmur(np.zeros((0, 3), np.int32))),
    Case("MurmurHash3_scalar", _murmur(np.array(17, np.int64), seed=1)),
    # MatMulInteger16: 2-D, numpy batch broadcast, 1-D operands, wrapping int32 sums, constant B, K = 0
    Case("MatMulInteger16_2d", _matmul16((3, 5), (5, 4), 20)),
    Case("MatMulInteger16_batched_broadcast", _matmul16((2, 1, 3, 5), (4, 5, 2), 21)),
    Case("MatMulInteger16_vector_a", _matmul16((7,), (3, 7, 2), 22)),
    Case("MatMulInteger16_vector_both", _matmul16((9,), (9,), 23)),
    Case("MatMulInteger16_full_range_wraps", _matmul16((4, 64), (64, 3), 24, -32768, 32767)),
    Case("MatMulInteger16_const_b", _matmul16((2, 6, 33), (33, 17), 25, b_const=True)),
    Case("MatMulInteger16_k0", _matmul16((3, 0), (0, 2), 26)),
    # Unique: ORT's CPU kernel takes float (and float16); NaNs stay apart, -0 and +0 are one value
    Case("Unique_f32", _unique(np.array([2, 1, 1, 3, 4, 3, 2, 2, -1], np.float32))),
    Case("Unique_f32_nan_zero", _unique(np.array([np.nan, 1, np.nan, -0.0, 0.0, 1, np.inf], np.float32))),
    Case("Unique_f32_random", _unique(rand((200,), 30, np.int64, -20, 20).astype(np.float32))),
    Case("Unique_f16", _unique(np.array([0.5, 0.25, 0.5, 7, 0.25, -3], np.float16))),
    Case("Unique_f32_empty", _unique(np.zeros((0,), np.float32))),
    Case("Unique_f32_single", _unique(np.array([5.5], np.float32))),
    # ExpandDims: negative and positive axes across [-rank-1, rank], several types, scalar X, axis as [1], fed axis
    Case("ExpandDims_f32_axis0", _expand_dims(rand((2, 3), 40), 0)),
    Case("ExpandDims_f32_axis_rank", _expand_dims(rand((2, 3), 41), 2)),
    Case("ExpandDims_f32_axis_neg1", _expand_dims(rand((2, 3), 42), -1)),
    Case("ExpandDims_f32_axis_neg_rank1", _expand_dims(rand((2, 3), 43), -3)),
    Case("ExpandDims_int64_axis1", _expand_dims(rand((2, 3, 4), 44, np.int64, -9, 9), 1)),
    Case("ExpandDims_bool", _expand_dims(np.array([True, False, True]), -2)),
    Case("ExpandDims_string", _expand_dims(_STRINGS[:4].reshape(2, 2), 1)),
    Case("ExpandDims_f16_scalar", _expand_dims(np.array(1.5, np.float16), -1)),
    Case("ExpandDims_axis_shape1", _expand_dims(rand((4, 5), 45), 1, axis_shape=(1,))),
    Case("ExpandDims_axis_fed", _expand_dims(rand((3, 2), 46, np.int32, -5, 5), -2, axis_fed=True)),
    Case("ExpandDims_empty", _expand_dims(np.zeros((0, 2), np.float32), 1)),
]
