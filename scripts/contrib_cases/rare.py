"""The rarer com.microsoft ops of ORT's CPU provider: CropAndResize,
MaxpoolWithMask, UnfoldTensor, DynamicTimeWarping, NGramRepeatBlock,
BifurcationDetector, WordConvEmbedding and MatMulBnb4. Each attribute, the
optional inputs, every dtype ORT's kernel takes, and odd sizes; ORT's quirks
(MaxpoolWithMask's mask offsets and index-0 test, BifurcationDetector's
suffix search) are checked as ORT computes them. Paths, indices and token
ids must be equal; floats within 1e-5."""
import numpy as np
from onnx import TensorProto, helper

from . import Case, node_model, rand

F, I32, I64 = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64


def _tp(dt):
    return helper.np_dtype_to_tensor_dtype(np.dtype(dt))


# ---- CropAndResize ----

def _crop(x_shape, boxes, bidx, crop, seed, mode=None, extrapolation=None, fed_crop=False):
    def build():
        attrs = {}
        if mode is not None:
            attrs["mode"] = mode
        if extrapolation is not None:
            attrs["extrapolation_value"] = extrapolation
        feeds = {"X": rand(x_shape, seed), "rois": np.array(boxes, np.float32),
                 "batch_indices": np.array(bidx, np.int32)}
        consts = {}
        (feeds if fed_crop else consts)["crop_size"] = np.array(crop, np.int32)
        return node_model("CropAndResize", feeds, [("Y", F)], attrs=attrs, consts=consts), feeds
    return build


_BOXES = [[0.1, 0.2, 0.8, 0.9], [0.0, 0.0, 1.0, 1.0], [0.35, 0.6, 0.4, 0.65], [0.9, 0.7, 0.2, 0.1]]
_OUTSIDE = [[-0.3, -0.2, 0.5, 1.4], [0.5, 0.5, 1.5, 1.2], [-1.0, 0.2, -0.5, 0.8]]


# ---- MaxpoolWithMask ----

def _mask(shape, seed, p_zero=0.3):
    m = (rand(shape, seed, np.float64, 0.0, 1.0) >= p_zero).astype(np.int32)
    return m


def _maxpool_mask(x_shape, m_shape, seed, p_zero=0.3, **attrs):
    def build():
        feeds = {"X": rand(x_shape, seed), "M": _mask(m_shape, seed + 1, p_zero)}
        return node_model("MaxpoolWithMask", feeds, [("Y", F)], attrs=attrs), feeds
    return build


# ---- UnfoldTensor ----

def _unfold(x, **attrs):
    def build():
        feeds = {"input": x}
        return node_model("UnfoldTensor", feeds, [("output", _tp(x.dtype))], attrs=attrs), feeds
    return build


# ---- DynamicTimeWarping ----

def _dtw(x):
    def build():
        feeds = {"input": x}
        return node_model("DynamicTimeWarping", feeds, [("output", I32)]), feeds
    return build


# ---- NGramRepeatBlock ----

def _ngram(ids, vocab, n, seed):
    def build():
        ids_a = np.array(ids, np.int64)
        feeds = {"input_ids": ids_a, "scores": rand((ids_a.shape[0], vocab), seed, np.float32, -5, 5)}
        return node_model("NGramRepeatBlock", feeds, [("scores_out", F)], attrs={"ngram_size": n}), feeds
    return build


# ---- BifurcationDetector ----

def _bifurcation(src, cur, prev, pred=None, min_n=None, max_n=None):
    def build():
        attrs = {}
        if min_n is not None:
            attrs["min_ngram_size"] = min_n
        if max_n is not None:
            attrs["max_ngram_size"] = max_n
        feeds = {"src_tokens": np.array(src, np.int64), "cur_tokens": np.array(cur, np.int64),
                 "prev_suffix_match_idx": np.array(prev, np.int64)}
        if pred is not None:
            feeds["pred_tokens"] = np.array(pred, np.int64)
        outs = [("tokens", I64), ("suffix_match_idx", I64)]
        return node_model("BifurcationDetector", feeds, outs, attrs=attrs), feeds
    return build


# ---- WordConvEmbedding ----

def _word_conv(seq, filters, window, char_dim, vocab, seed, attrs=None, const_weights=True):
    def build():
        feeds = {"Sequence": np.array(seq, np.int32)}
        weights = {"W": rand((filters, 1, window, char_dim), seed, np.float32, -0.5, 0.5),
                   "B": rand((filters,), seed + 1, np.float32, -0.5, 0.5),
                   "C": rand((vocab, char_dim), seed + 2)}
        consts = weights if const_weights else {}
        if not const_weights:
            feeds.update(weights)
        return node_model("WordConvEmbedding", feeds, [("Y", F)], attrs=attrs, consts=consts), feeds
    return build


def _words(n_words, width, vocab, seed, lengths=None):
    """Rows of character ids, each a word of positive ids padded with zeros."""
    rng = np.random.default_rng(seed)
    rows = np.zeros((n_words, width), np.int32)
    for i in range(n_words):
        length = lengths[i] if lengths is not None else rng.integers(1, width + 1)
        rows[i, :length] = rng.integers(1, vocab, size=length)
    return rows


# ---- MatMulBnb4 ----

def _bnb4(a_shape, K, N, block_size, quant_type, seed, trans_b=None, fed_weights=False):
    def build():
        count = N * K
        rng = np.random.default_rng(seed)
        b = rng.integers(0, 256, size=((count + 1) // 2,), dtype=np.uint8)
        absmax = rng.uniform(0.1, 2.0, size=((count + block_size - 1) // block_size,)).astype(np.float32)
        attrs = {"K": K, "N": N, "block_size": block_size, "quant_type": quant_type}
        if trans_b is not None:
            attrs["transB"] = trans_b
        feeds = {"A": rand(a_shape, seed + 1)}
        consts = {"B": b, "absmax": absmax}
        if fed_weights:
            feeds.update(consts)
            consts = {}
        return node_model("MatMulBnb4", feeds, [("Y", F)], attrs=attrs, consts=consts), feeds
    return build


CASES = [
    # CropAndResize: bilinear and nearest, boxes inside, flipped and outside the image, 1-sample crops, fed crop_size
    Case("CropAndResize_bilinear", _crop((2, 3, 7, 9), _BOXES, [0, 1, 1, 0], (5, 4), 1)),
    Case("CropAndResize_nearest", _crop((2, 3, 7, 9), _BOXES, [1, 0, 1, 0], (6, 5), 2, mode="nearest")),
    Case("CropAndResize_extrapolate", _crop((1, 2, 8, 6), _OUTSIDE, [0, 0, 0], (7, 7), 3, extrapolation=-2.5)),
    Case("CropAndResize_nearest_extrapolate",
         _crop((1, 2, 8, 6), _OUTSIDE, [0, 0, 0], (4, 9), 4, mode="nearest", extrapolation=1.0)),
    Case("CropAndResize_crop_1x1", _crop((2, 4, 5, 5), _BOXES, [0, 1, 0, 1], (1, 1), 5)),
    Case("CropAndResize_crop_1x6", _crop((2, 1, 6, 10), _BOXES, [1, 1, 0, 0], (1, 6), 6)),
    Case("CropAndResize_height1_image", _crop((1, 3, 1, 8), _BOXES[:2], [0, 0], (3, 3), 7)),
    Case("CropAndResize_fed_crop_size", _crop((3, 2, 11, 13), _BOXES, [2, 0, 1, 2], (9, 2), 8, fed_crop=True)),
    Case("CropAndResize_no_boxes", _crop((1, 2, 4, 4), np.zeros((0, 4)), [], (3, 3), 9)),
    # MaxpoolWithMask: 1-D / 2-D / 3-D, broadcast and full masks (ORT's modulo offsets), pads, strides, auto_pad
    Case("MaxpoolWithMask_2d_k3s2_pads", _maxpool_mask((2, 3, 9, 8), (1, 1, 9, 8), 20, kernel_shape=[3, 3],
                                                       strides=[2, 2], pads=[1, 1, 1, 1])),
    Case("MaxpoolWithMask_2d_full_mask", _maxpool_mask((2, 3, 7, 7), (2, 3, 7, 7), 21, kernel_shape=[2, 3],
                                                       strides=[1, 2])),
    Case("MaxpoolWithMask_2d_all_ones", _maxpool_mask((1, 4, 6, 5), (1, 1, 6, 5), 22, p_zero=0.0,
                                                      kernel_shape=[3, 2])),
    Case("MaxpoolWithMask_2d_mostly_masked", _maxpool_mask((1, 2, 6, 6), (1, 1, 6, 6), 23, p_zero=0.8,
                                                           kernel_shape=[2, 2], strides=[2, 2])),
    Case("MaxpoolWithMask_2d_same_upper", _maxpool_mask((1, 2, 7, 6), (1, 1, 7, 6), 24, kernel_shape=[3, 3],
                                                        strides=[2, 2], auto_pad="SAME_UPPER")),
    Case("MaxpoolWithMask_2d_same_lower", _maxpool_mask((1, 2, 8, 5), (1, 1, 8, 5), 25, kernel_shape=[2, 4],
                                                        strides=[3, 1], auto_pad="SAME_LOWER")),
    Case("MaxpoolWithMask_2d_valid", _maxpool_mask((2, 1, 9, 9), (1, 1, 9, 9), 26, kernel_shape=[4, 4],
                                                   strides=[2, 3], auto_pad="VALID")),
    Case("MaxpoolWithMask_1d", _maxpool_mask((2, 3, 11), (1, 1, 11), 27, kernel_shape=[3], strides=[2], pads=[1, 2])),
    Case("MaxpoolWithMask_1d_full_mask", _maxpool_mask((2, 2, 10), (2, 2, 10), 28, kernel_shape=[4])),
    Case("MaxpoolWithMask_3d", _maxpool_mask((1, 2, 5, 6, 4), (1, 1, 5, 6, 4), 29, kernel_shape=[2, 3, 2],
                                             strides=[1, 2, 2], pads=[0, 1, 1, 1, 1, 0])),
    Case("MaxpoolWithMask_3d_mask_n2", _maxpool_mask((2, 2, 4, 4, 4), (2, 1, 4, 4, 4), 30, kernel_shape=[2, 2, 2],
                                                     strides=[2, 2, 2])),
    # UnfoldTensor: each dtype ORT's kernel takes, default and explicit dim (negative too), steps, whole-length windows
    Case("UnfoldTensor_f32_default_dim", _unfold(rand((2, 3, 10), 40), size=3)),
    Case("UnfoldTensor_f32_dim1_step2", _unfold(rand((2, 9, 4), 41), dim=1, size=4, step=2)),
    Case("UnfoldTensor_f64_dim0_step3", _unfold(rand((11, 3), 42, np.float64), dim=0, size=2, step=3)),
    Case("UnfoldTensor_i32_neg_dim", _unfold(rand((3, 7, 2), 43, np.int32, -100, 100), dim=-2, size=7, step=1)),
    Case("UnfoldTensor_i64_step_gt_size", _unfold(rand((4, 13), 44, np.int64, -9, 9), dim=1, size=2, step=5)),
    Case("UnfoldTensor_f32_1d", _unfold(rand((6,), 45), size=6, step=4)),
    # DynamicTimeWarping: [M, N] and [1, M, N], thin matrices, ties (ORT's order of preference)
    Case("DynamicTimeWarping_2d", _dtw(rand((7, 11), 50, np.float32, 0.0, 1.0))),
    Case("DynamicTimeWarping_3d", _dtw(rand((1, 12, 5), 51, np.float32, -1.0, 1.0))),
    Case("DynamicTimeWarping_row", _dtw(rand((1, 6), 52))),
    Case("DynamicTimeWarping_column", _dtw(rand((5, 1), 53))),
    Case("DynamicTimeWarping_ties", _dtw(np.zeros((4, 6), np.float32))),
    Case("DynamicTimeWarping_int_costs", _dtw(rand((9, 9), 54, np.int64, 0, 2).astype(np.float32))),
    # NGramRepeatBlock: n = 1 (bans every seen token), 2, 3, rows with and without repeats, too short for n
    Case("NGramRepeatBlock_n2", _ngram([[1, 2, 3, 1, 2, 5, 1], [4, 4, 4, 4, 4, 4, 4]], 8, 2, 60)),
    Case("NGramRepeatBlock_n3", _ngram([[1, 2, 3, 1, 2, 5, 1, 2], [0, 1, 0, 1, 0, 1, 2, 0]], 6, 3, 61)),
    Case("NGramRepeatBlock_n1", _ngram([[3, 0, 3, 5]], 7, 1, 62)),
    Case("NGramRepeatBlock_too_short", _ngram([[1, 1]], 4, 4, 63)),
    Case("NGramRepeatBlock_random", _ngram(rand((3, 40), 64, np.int64, 0, 5), 9, 2, 65)),
    # BifurcationDetector: with and without pred_tokens, default and explicit n-gram sizes, unique / repeated /
    # absent suffixes, a match ending the source (ORT returns src_len then)
    Case("BifurcationDetector_no_pred", _bifurcation([1, 2, 3, 4, 5, 6], [9, 3, 4], 0)),
    Case("BifurcationDetector_pred_partial", _bifurcation([1, 2, 3, 4, 5, 6, 7], [8, 1, 2], 2, [3, 4, 9, 6, 7, 0])),
    Case("BifurcationDetector_pred_full", _bifurcation([5, 6, 7, 8], [1], 1, [6, 7, 8, 2])),
    Case("BifurcationDetector_pred_all_match", _bifurcation([1, 2, 3, 4, 5, 6, 7], [8, 1, 2], 2, [3, 4, 5, 6, 7, 3])),
    Case("BifurcationDetector_pred_first_differs", _bifurcation([5, 6, 7, 8], [6, 7], 0, [1, 6, 7, 8, 9])),
    Case("BifurcationDetector_repeated_suffix", _bifurcation([1, 2, 1, 2, 3, 1, 2], [0, 1, 2], 0, min_n=1,
                                                             max_n=2)),
    Case("BifurcationDetector_match_at_end", _bifurcation([4, 5, 6, 7], [1, 6, 7], 0, min_n=2, max_n=4)),
    Case("BifurcationDetector_sizes_2_5", _bifurcation([1, 2, 3, 4, 2, 3, 5, 6, 7], [9, 4, 2, 3], 3,
                                                       [4, 2, 3, 5, 6, 7, 8], min_n=2, max_n=5)),
    Case("BifurcationDetector_absent", _bifurcation([1, 2, 3], [7, 8], 0, min_n=1, max_n=1)),
    # WordConvEmbedding: words shorter than the window, padded and full rows, attributes given or not, fed weights
    Case("WordConvEmbedding_basic", _word_conv(_words(6, 10, 20, 70), 5, 3, 4, 20, 71)),
    Case("WordConvEmbedding_attrs", _word_conv(_words(4, 8, 12, 72), 6, 2, 3, 12, 73,
                                               attrs={"embedding_size": 6, "conv_window_size": 2,
                                                      "char_embedding_size": 3})),
    Case("WordConvEmbedding_short_words", _word_conv(_words(5, 7, 15, 74, lengths=[1, 2, 7, 3, 4]), 4, 4, 5, 15,
                                                     75)),
    Case("WordConvEmbedding_window1_fed", _word_conv(_words(3, 5, 9, 76), 7, 1, 2, 9, 77, const_weights=False)),
    Case("WordConvEmbedding_gap_in_word", _word_conv([[3, 0, 4, 5, 0, 0], [1, 2, 3, 4, 5, 6]], 3, 3, 2, 8, 78)),
    # MatMulBnb4: FP4 and NF4, every block size ORT takes, N * K odd and not a multiple of the block, batched and
    # 1-D A, transB = 0 (ORT's stride-K reading, K <= N), fed weights
    Case("MatMulBnb4_nf4_bs64", _bnb4((4, 64), 64, 32, 64, 1, 80), rtol=1e-5),
    Case("MatMulBnb4_fp4_bs16", _bnb4((3, 48), 48, 20, 16, 0, 81), rtol=1e-5),
    Case("MatMulBnb4_nf4_bs32_batched", _bnb4((2, 3, 40), 40, 24, 32, 1, 82), rtol=1e-5),
    Case("MatMulBnb4_fp4_bs128_odd", _bnb4((5, 33), 33, 7, 128, 0, 83), rtol=1e-5),
    Case("MatMulBnb4_nf4_bs256_vector", _bnb4((100,), 100, 9, 256, 1, 84), rtol=1e-5),
    Case("MatMulBnb4_fp4_transB0", _bnb4((3, 16), 8, 16, 16, 0, 85, trans_b=0), rtol=1e-5),
    Case("MatMulBnb4_nf4_transB1_fed", _bnb4((2, 32), 32, 16, 32, 1, 86, trans_b=1, fed_weights=True), rtol=1e-5),
]
