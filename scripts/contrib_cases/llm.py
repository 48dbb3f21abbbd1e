"""LLM contrib ops (com.microsoft): MatMulNBits, GatherBlockQuantized,
RotaryEmbedding, GroupQueryAttention, and a tiny decoder block."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from . import MS, Case, node_model, rand


# ---- MatMulNBits ----

def _pack_codes(q, bits):
    """Codes q [..., n] (n a multiple of 8 / bits) packed little-end first, as MatMulNBits stores them."""
    per = 8 // bits
    q = q.astype(np.uint32).reshape(*q.shape[:-1], q.shape[-1] // per, per)
    out = np.zeros(q.shape[:-1], np.uint32)
    for i in range(per):
        out |= q[..., i] << (bits * i)
    return out.astype(np.uint8)


def _mnb(M, K, N, bits, block, zp=None, bias=False, acc=0, seed=0, const=True, lead=(), g_idx=False, f16=False):
    def build():
        rng = np.random.default_rng(seed)
        nb = (K + block - 1) // block
        q = rng.integers(0, 2 ** bits, size=(N, nb, block))
        consts = {"B": _pack_codes(q, bits), "scales": rng.uniform(0.01, 0.1, N * nb).astype(np.float32)}
        names = ["A", "B", "scales"]
        if zp == "u8":
            per = 8 // bits
            zq = np.zeros((N, (nb + per - 1) // per * per), np.int64)
            zq[:, :nb] = rng.integers(0, 2 ** bits, size=(N, nb))
            consts["zp"] = _pack_codes(zq, bits).reshape(-1)
        elif zp == "f":
            consts["zp"] = rng.uniform(0, 2 ** bits - 1, N * nb).astype(np.float32)
        names.append("zp" if zp else "")
        if g_idx:  # act-order: a permutation of the k -> block map
            consts["g_idx"] = rng.permutation(np.arange(K, dtype=np.int32) // block).astype(np.int32)
        names.append("g_idx" if g_idx else "")
        if bias:
            consts["bias"] = rand((N,), seed + 1)
        names.append("bias" if bias else "")
        while names[-1] == "":
            names.pop()
        a = rand((*lead, M, K), seed + 2)
        if f16:
            a = a.astype(np.float16)
            for n in ("scales", "bias"):
                if n in consts:
                    consts[n] = consts[n].astype(np.float16)
        feeds = {"A": a}
        if not const:
            feeds.update(consts)
            consts = {}
        out_t = TensorProto.FLOAT16 if f16 else TensorProto.FLOAT
        model = node_model("MatMulNBits", feeds, [("Y", out_t)], consts=consts, inputs=names,
                           attrs=dict(K=K, N=N, bits=bits, block_size=block, accuracy_level=acc))
        return model, {"A": a} if const else feeds
    return build


def _quantizer_model(K, N, block, symmetric, M=5, bits=4, seed=0):
    """A MatMul with a float weight, quantized by ORT's own MatMulNBitsQuantizer."""
    def build():
        from onnxruntime.quantization.matmul_nbits_quantizer import DefaultWeightOnlyQuantConfig, MatMulNBitsQuantizer
        w = rand((K, N), seed, low=-0.5, high=0.5)
        graph = helper.make_graph(
            [helper.make_node("MatMul", ["A", "W"], ["Y"])], "mm",
            [helper.make_tensor_value_info("A", TensorProto.FLOAT, [None, K])],
            [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)], [numpy_helper.from_array(w, "W")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
        cfg = DefaultWeightOnlyQuantConfig(block_size=block, is_symmetric=symmetric, bits=bits)
        q = MatMulNBitsQuantizer(model, algo_config=cfg)
        q.process()
        out = q.model.model
        assert any(n.op_type == "MatMulNBits" for n in out.graph.node)
        return out, {"A": rand((M, K), seed + 1)}
    return build


# accuracy_level 4: ORT quantizes A to int8 per block; Onyx does the same, so
# only float rounding differs (in float the difference would be ~1% of |Y|).
_ACC4 = dict(rtol=1e-4, atol=1e-4)

MATMUL_NBITS = [
    Case("MatMulNBits_4bit_sym", _mnb(3, 64, 8, 4, 32)),
    Case("MatMulNBits_4bit_u8zp_bias", _mnb(3, 96, 7, 4, 32, zp="u8", bias=True), atol=1e-4),
    Case("MatMulNBits_4bit_floatzp", _mnb(2, 64, 9, 4, 16, zp="f"), atol=1e-4),
    Case("MatMulNBits_4bit_K_odd", _mnb(5, 50, 7, 4, 16, zp="u8")),
    Case("MatMulNBits_4bit_M1_decode", _mnb(1, 256, 33, 4, 32, zp="u8", bias=True), atol=1e-4),
    Case("MatMulNBits_4bit_M64_blk128", _mnb(64, 300, 40, 4, 128, zp="u8"), atol=1e-4),
    Case("MatMulNBits_4bit_M1_odd_blocks", _mnb(1, 80, 20, 4, 32, zp="u8", bias=True), atol=1e-4),
    Case("MatMulNBits_4bit_3d_batch", _mnb(7, 64, 12, 4, 32, lead=(2,))),
    Case("MatMulNBits_4bit_runtime_B", _mnb(3, 80, 6, 4, 16, zp="u8", bias=True, const=False)),
    Case("MatMulNBits_4bit_runtime_B_M1", _mnb(1, 80, 6, 4, 16, zp="f", const=False)),
    # More than 4 rows with B not kept as float (fed at run time, or over 4 MiB as float): the
    # column-tiled dequantize-and-multiply path.
    Case("MatMulNBits_4bit_runtime_B_M9", _mnb(9, 96, 21, 4, 32, zp="u8", bias=True, const=False), atol=1e-4),
    Case("MatMulNBits_4bit_runtime_B_g_idx_M6", _mnb(6, 64, 10, 4, 16, zp="f", const=False, g_idx=True), atol=1e-4),
    Case("MatMulNBits_4bit_large_B_tiled_M6", _mnb(6, 1024, 1040, 4, 32, zp="u8", bias=True), atol=2e-4),
    Case("MatMulNBits_4bit_g_idx", _mnb(3, 64, 8, 4, 16, g_idx=True)),
    Case("MatMulNBits_4bit_g_idx_M1", _mnb(1, 64, 8, 4, 16, zp="f", g_idx=True), atol=1e-4),
    Case("MatMulNBits_8bit", _mnb(3, 64, 8, 8, 32), rtol=1e-4, atol=1e-3),
    Case("MatMulNBits_8bit_u8zp_M1", _mnb(1, 100, 10, 8, 32, zp="u8"), atol=1e-3),
    Case("MatMulNBits_8bit_M17", _mnb(17, 256, 24, 8, 64, zp="u8", bias=True), atol=1e-3),
    Case("MatMulNBits_2bit", _mnb(3, 64, 8, 2, 32)),
    Case("MatMulNBits_2bit_u8zp_M1", _mnb(1, 70, 5, 2, 16, zp="u8")),
    Case("MatMulNBits_2bit_floatzp", _mnb(4, 64, 8, 2, 32, zp="f"), atol=1e-4),
    Case("MatMulNBits_4bit_f16", _mnb(3, 64, 8, 4, 32, zp="u8", bias=True, f16=True), rtol=2e-3, atol=2e-2),
    Case("MatMulNBits_acc4_4bit_M1", _mnb(1, 256, 32, 4, 32, zp="u8", acc=4), **_ACC4),
    Case("MatMulNBits_acc4_4bit_M9", _mnb(9, 256, 32, 4, 64, acc=4), **_ACC4),
    Case("MatMulNBits_acc4_8bit", _mnb(4, 128, 16, 8, 32, acc=4), rtol=1e-4, atol=1e-3),
    Case("MatMulNBits_acc4_8bit_M1", _mnb(1, 96, 16, 8, 32, zp="u8", acc=4), rtol=1e-4, atol=1e-3),
    Case("MatMulNBits_acc4_4bit_M1_blk16_bias", _mnb(1, 80, 24, 4, 16, zp="u8", bias=True, acc=4), **_ACC4),
    Case("MatMulNBits_acc4_4bit_M1_Kodd", _mnb(1, 200, 24, 4, 64, zp="u8", acc=4), **_ACC4),
    # The int8 x 4-bit kernel's row and tile remainders (3 rows left of 4, N not a multiple of 16).
    Case("MatMulNBits_acc4_4bit_M35_N100_bias", _mnb(35, 256, 100, 4, 32, zp="u8", bias=True, acc=4), **_ACC4),
    Case("MatMulNBits_acc4_4bit_M2_blk128_3d", _mnb(2, 384, 40, 4, 128, acc=4, lead=(3,)), **_ACC4),
    Case("MatMulNBits_acc4_4bit_f16", _mnb(5, 128, 24, 4, 32, zp="u8", bias=True, acc=4, f16=True),
         rtol=2e-3, atol=2e-2),
    Case("MatMulNBits_acc4_4bit_runtime_B", _mnb(2, 128, 16, 4, 32, zp="f", acc=4, const=False), **_ACC4),
    Case("MatMulNBits_acc4_4bit_runtime_B_u8", _mnb(2, 128, 16, 4, 32, zp="u8", acc=4, const=False), **_ACC4),
    Case("MatMulNBits_acc4_4bit_floatzp", _mnb(2, 128, 16, 4, 32, zp="f", acc=4), **_ACC4),
    Case("MatMulNBits_acc4_2bit_M1", _mnb(1, 128, 16, 2, 32, acc=4), **_ACC4),
    Case("MatMulNBits_acc4_8bit_runtime_B", _mnb(2, 128, 16, 8, 32, acc=4, const=False), **_ACC4),
    Case("MatMulNBits_acc4_2bit", _mnb(3, 128, 16, 2, 32, acc=4), **_ACC4),
    Case("MatMulNBits_quantizer_sym_b32", _quantizer_model(128, 48, 32, True), atol=1e-4),
    Case("MatMulNBits_quantizer_asym_b32", _quantizer_model(128, 48, 32, False), atol=1e-4),
    Case("MatMulNBits_quantizer_asym_b128_M1", _quantizer_model(256, 40, 128, False, M=1), atol=1e-4),
    Case("MatMulNBits_quantizer_sym_b16_Kodd", _quantizer_model(72, 24, 16, True), atol=1e-4),
    Case("MatMulNBits_quantizer_8bit_asym", _quantizer_model(128, 32, 64, False, bits=8), atol=1e-4),
]



# ---- GatherBlockQuantized ----

def _gbq(dtype, shape, idx, block=16, gather_axis=0, quantize_axis=1, bits=4, zp=False, scale_t=np.float32, seed=0):
    """data of `shape` (the unpacked codes), as int4 / uint4 tensors or packed uint8."""
    def build():
        rng = np.random.default_rng(seed)
        r = len(shape)
        qa = quantize_axis % r
        lo, hi = {TensorProto.INT4: (-8, 7), TensorProto.UINT4: (0, 15)}.get(dtype, (0, 2 ** bits - 1))
        q = rng.integers(lo, hi + 1, size=shape)
        sshape = list(shape)
        sshape[qa] = (shape[qa] + block - 1) // block
        scales = rng.uniform(0.1, 1.0, sshape).astype(scale_t)
        z = rng.integers(lo, hi + 1, size=sshape) if zp else None

        def tensor(name, vals):
            if dtype == TensorProto.UINT8 and bits == 4:
                if vals.shape[-1] % 2:
                    vals = np.concatenate([vals, np.zeros((*vals.shape[:-1], 1), vals.dtype)], -1)
                return numpy_helper.from_array((vals[..., 0::2] | (vals[..., 1::2] << 4)).astype(np.uint8), name)
            if dtype == TensorProto.UINT8:
                return numpy_helper.from_array(vals.astype(np.uint8), name)
            return helper.make_tensor(name, dtype, vals.shape, vals.reshape(-1).tolist())
        indices = np.array(idx, np.int64)
        names = ["data", "indices", "scales"] + (["zp"] if zp else [])
        model = node_model("GatherBlockQuantized", {"indices": indices},
                           [("Y", helper.np_dtype_to_tensor_dtype(np.dtype(scale_t)))], inputs=names,
                           attrs=dict(block_size=block, gather_axis=gather_axis, quantize_axis=quantize_axis, bits=bits))
        inits = [tensor("data", q), numpy_helper.from_array(scales, "scales")] + ([tensor("zp", z)] if zp else [])
        model.graph.initializer.extend(inits)
        return model, {"indices": indices}
    return build


GATHER_BLOCK_QUANTIZED = [
    Case("GatherBlockQuantized_int4_2d_idx", _gbq(TensorProto.INT4, (5, 32), [[1, 4], [0, -1]])),
    Case("GatherBlockQuantized_uint4_zp", _gbq(TensorProto.UINT4, (6, 48), [2, 5, 2], zp=True)),
    Case("GatherBlockQuantized_uint8_packed4", _gbq(TensorProto.UINT8, (7, 64), [3, 0, 6], quantize_axis=-1)),
    Case("GatherBlockQuantized_uint8_packed4_zp", _gbq(TensorProto.UINT8, (7, 64), [[3], [1]], zp=True, block=32)),
    Case("GatherBlockQuantized_uint8_8bit", _gbq(TensorProto.UINT8, (4, 40), [1, 3], bits=8, block=16)),
    Case("GatherBlockQuantized_uint8_8bit_zp", _gbq(TensorProto.UINT8, (4, 40), [0], bits=8, zp=True)),
    Case("GatherBlockQuantized_int4_axis1_q0", _gbq(TensorProto.INT4, (32, 6), [5, 1], gather_axis=1, quantize_axis=0)),
    Case("GatherBlockQuantized_int4_3d_K20", _gbq(TensorProto.INT4, (2, 3, 20), [2, 0], gather_axis=1, quantize_axis=2)),
    Case("GatherBlockQuantized_int4_f16_scales", _gbq(TensorProto.INT4, (5, 32), [4, 1], scale_t=np.float16), rtol=1e-3, atol=1e-3),
]


# ---- RotaryEmbedding (com.microsoft) ----

def _rope(B, S, H, D, max_pos=16, interleaved=0, four_d=False, offset=None, rot_dim=0, seed=0, f16=False):
    def build():
        half = (rot_dim or D) // 2
        x = rand((B, H, S, D) if four_d else (B, S, H * D), seed)
        pos = np.array([offset], np.int64) if offset is not None else rand((B, S), seed + 1, np.int64, 0, max_pos - 1)
        ang = np.arange(max_pos)[:, None] / (10000 ** (np.arange(half) / half))[None]
        cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        if f16:
            x, cos, sin = x.astype(np.float16), cos.astype(np.float16), sin.astype(np.float16)
        feeds = {"x": x, "pos": pos, "cos": cos, "sin": sin}
        attrs = dict(interleaved=interleaved)
        if rot_dim:
            attrs.update(rotary_embedding_dim=rot_dim, num_heads=H)
        out_t = TensorProto.FLOAT16 if f16 else TensorProto.FLOAT
        return node_model("RotaryEmbedding", feeds, [("Y", out_t)], attrs=attrs), feeds
    return build


ROTARY = [
    Case("MsRotaryEmbedding_3d", _rope(2, 5, 3, 8)),
    Case("MsRotaryEmbedding_3d_interleaved", _rope(2, 5, 3, 8, interleaved=1)),
    Case("MsRotaryEmbedding_4d_bnsh", _rope(2, 3, 4, 6)),
    Case("MsRotaryEmbedding_offset_pos", _rope(1, 7, 2, 16, offset=4)),
    Case("MsRotaryEmbedding_partial", _rope(2, 3, 2, 10, rot_dim=6)),
    Case("MsRotaryEmbedding_partial_interleaved", _rope(2, 3, 2, 10, rot_dim=4, interleaved=1)),
    Case("MsRotaryEmbedding_f16", _rope(1, 4, 2, 8, f16=True), rtol=2e-3, atol=2e-3),
]



# ---- GroupQueryAttention ----

def _rotary_caches(max_pos, half):
    ang = np.arange(max_pos)[:, None] / (10000 ** (np.arange(half) / half))[None]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def _gqa(B, S, Hq, Hkv, D, past=0, seqlens=None, total=None, packed=False, rotary=False, interleaved=0,
         rot_dim=None, pos_ids=False, bias=False, sink=False, f16=False, seed=0, **attrs):
    """seqlens: per-batch total lengths (seqlens_k + 1); total: total_sequence_length."""
    def build():
        total_len = total if total is not None else past + S
        lens = seqlens if seqlens is not None else [total_len] * B
        feeds = {}
        if packed:
            feeds["query"] = rand((B, S, (Hq + 2 * Hkv) * D), seed)
        else:
            feeds.update(query=rand((B, S, Hq * D), seed), key=rand((B, S, Hkv * D), seed + 1),
                         value=rand((B, S, Hkv * D), seed + 2))
        if past:
            feeds.update(past_key=rand((B, Hkv, past, D), seed + 3), past_value=rand((B, Hkv, past, D), seed + 4))
        feeds["seqlens_k"] = np.array(lens, np.int32) - 1
        feeds["total_sequence_length"] = np.array(total_len, np.int32)
        names = ["query", "" if packed else "key", "" if packed else "value", "past_key" if past else "",
                 "past_value" if past else "", "seqlens_k", "total_sequence_length"]
        a = dict(num_heads=Hq, kv_num_heads=Hkv, **attrs)
        if rotary:
            feeds["cos_cache"], feeds["sin_cache"] = _rotary_caches(past + S + 4, (rot_dim or D) // 2)
            names += ["cos_cache", "sin_cache"]
            a.update(do_rotary=1, rotary_interleaved=interleaved)
        if pos_ids:
            names += [""] * (9 - len(names)) + ["position_ids"]
            start = np.array(lens)[:, None] - S
            feeds["position_ids"] = (start + np.arange(S)[None]).astype(np.int64)
        if bias:
            names += [""] * (10 - len(names)) + ["attention_bias"]
            feeds["attention_bias"] = rand((B, 1, S, total_len), seed + 5, low=-2, high=0)
        if sink:
            names += [""] * (11 - len(names)) + ["head_sink"]
            feeds["head_sink"] = rand((Hq,), seed + 6)
        ft = TensorProto.FLOAT
        if f16:
            ft = TensorProto.FLOAT16
            for n, x in feeds.items():
                if x.dtype == np.float32:
                    feeds[n] = x.astype(np.float16)
        outs = [("output", ft), ("present_key", ft), ("present_value", ft)]
        return node_model("GroupQueryAttention", feeds, outs, attrs=a, inputs=names), feeds
    return build


GQA = [
    Case("GQA_prompt", _gqa(2, 5, 4, 2, 8)),
    Case("GQA_prompt_mha_heads", _gqa(1, 3, 3, 3, 16)),
    Case("GQA_prompt_right_padded", _gqa(2, 4, 4, 2, 8, seqlens=[4, 2])),
    Case("GQA_prompt_packed_qkv", _gqa(2, 3, 6, 2, 8, packed=True)),
    # ORT's CPU kernel wants head sizes that are multiples of 8 (16 with rotary),
    # rotary dims that are multiples of 16, and batch 1 for several new tokens after a past.
    Case("GQA_prompt_rotary", _gqa(2, 5, 4, 2, 16, rotary=True)),
    Case("GQA_prompt_rotary_interleaved_partial", _gqa(1, 4, 4, 1, 32, rotary=True, interleaved=1, rot_dim=16)),
    Case("GQA_decode", _gqa(2, 1, 4, 2, 8, past=6)),
    Case("GQA_decode_rotary_packed", _gqa(2, 1, 8, 2, 16, past=5, packed=True, rotary=True)),
    Case("GQA_decode_batch_ragged", _gqa(3, 1, 4, 2, 16, past=6, seqlens=[7, 3, 5], total=7, rotary=True)),
    Case("GQA_decode_static_cache", _gqa(2, 1, 4, 2, 8, past=8, seqlens=[5, 3], total=5)),
    Case("GQA_continue_3_tokens", _gqa(1, 3, 4, 2, 16, past=4, rotary=True)),
    Case("GQA_local_window", _gqa(1, 7, 2, 1, 8, local_window_size=3)),
    Case("GQA_local_window_decode", _gqa(2, 1, 2, 2, 8, past=9, local_window_size=4)),
    Case("GQA_softcap_scale", _gqa(1, 3, 4, 2, 8, past=2, softcap=2.0, scale=0.7)),
    Case("GQA_softcap_decode", _gqa(2, 1, 4, 2, 8, past=5, softcap=1.5)),
    Case("GQA_smooth_softmax", _gqa(1, 4, 4, 2, 8, past=3, smooth_softmax=1)),
    Case("GQA_head_sink", _gqa(2, 3, 4, 2, 8, sink=True)),
    Case("GQA_attention_bias", _gqa(1, 3, 4, 2, 8, past=2, bias=True)),
    Case("GQA_attention_bias_decode", _gqa(2, 1, 4, 2, 8, past=4, bias=True)),
    Case("GQA_position_ids", _gqa(1, 2, 4, 2, 16, past=3, rotary=True, pos_ids=True)),
    Case("GQA_odd_heads_and_lengths", _gqa(3, 7, 6, 3, 24, seqlens=[7, 5, 1])),
    Case("GQA_decode_f16", _gqa(2, 1, 4, 2, 16, past=5, rotary=True, f16=True), rtol=2e-3, atol=2e-3),
    Case("GQA_prompt_f16", _gqa(1, 4, 4, 2, 16, f16=True), rtol=2e-3, atol=2e-3),
    Case("GQA_decode_longer_cache", _gqa(2, 1, 8, 2, 32, past=37, rotary=True)),
    # 32 new tokens and more run as a prompt in causal blocks of 32 query rows (the last one partial).
    Case("GQA_long_prompt_blocks", _gqa(2, 40, 4, 2, 16, rotary=True)),
    Case("GQA_long_prompt_right_padded", _gqa(2, 37, 4, 2, 8, seqlens=[37, 20])),
    Case("GQA_long_prompt_window_softcap_bias", _gqa(1, 35, 4, 2, 8, local_window_size=9, softcap=2.0, bias=True)),
    Case("GQA_long_continue_after_past", _gqa(1, 33, 4, 2, 16, past=5, rotary=True)),
    Case("GQA_long_prompt_sink", _gqa(1, 34, 2, 1, 8, sink=True)),
    Case("GQA_long_prompt_f16", _gqa(1, 40, 4, 2, 16, rotary=True, f16=True), rtol=2e-3, atol=2e-3),
]



# ---- a tiny decoder block, end to end ----

def _decoder(B, S, past, seqlens=None, vocab=50, hidden=64, Hq=4, Hkv=2, ffn=96, block=32, acc=0, seed=0):
    """int4 embedding (GatherBlockQuantized) -> RMSNorm (plain ops) -> packed QKV
    MatMulNBits -> GroupQueryAttention with rotary and a KV cache -> o_proj ->
    residual -> RMSNorm -> SiLU-gated MLP -> residual -> int4 lm_head."""
    D = hidden // Hq

    def build():
        rng = np.random.default_rng(seed)
        nodes, inits = [], []

        def mnb(name, x, K, N, zp):
            nb = K // block
            q = rng.integers(0, 16, size=(N, nb, block))
            inits.extend([numpy_helper.from_array(_pack_codes(q, 4), name + "_B"),
                          numpy_helper.from_array(rng.uniform(0.005, 0.03, N * nb).astype(np.float32), name + "_s")])
            ins = [x, name + "_B", name + "_s"]
            if zp:
                inits.append(numpy_helper.from_array(rng.integers(0, 256, N * ((nb + 1) // 2)).astype(np.uint8), name + "_zp"))
                ins.append(name + "_zp")
            nodes.append(helper.make_node("MatMulNBits", ins, [name], domain=MS, K=K, N=N, bits=4, block_size=block,
                                          accuracy_level=acc))
            return name

        def rms(name, x):
            inits.append(numpy_helper.from_array(rng.uniform(0.8, 1.2, hidden).astype(np.float32), name + "_w"))
            inits.append(numpy_helper.from_array(np.array([1e-5], np.float32), name + "_eps"))
            nodes.extend([
                helper.make_node("Mul", [x, x], [name + "_sq"]),
                helper.make_node("ReduceMean", [name + "_sq"], [name + "_ms"], axes=[-1], keepdims=1),
                helper.make_node("Add", [name + "_ms", name + "_eps"], [name + "_mse"]),
                helper.make_node("Sqrt", [name + "_mse"], [name + "_rms"]),
                helper.make_node("Div", [x, name + "_rms"], [name + "_n"]),
                helper.make_node("Mul", [name + "_n", name + "_w"], [name])])
            return name

        emb_q = rng.integers(-8, 8, size=(vocab, hidden))
        inits += [helper.make_tensor("emb", TensorProto.INT4, emb_q.shape, emb_q.reshape(-1).tolist()),
                  numpy_helper.from_array(rng.uniform(0.02, 0.1, (vocab, hidden // block)).astype(np.float32), "emb_s")]
        nodes.append(helper.make_node("GatherBlockQuantized", ["emb", "input_ids", "emb_s"], ["h0"], domain=MS,
                                      block_size=block, gather_axis=0, quantize_axis=1, bits=4))
        qkv = mnb("qkv", rms("n1", "h0"), hidden, (Hq + 2 * Hkv) * D, zp=True)
        cos, sin = _rotary_caches(64, D // 2)
        inits += [numpy_helper.from_array(cos, "cos"), numpy_helper.from_array(sin, "sin")]
        nodes.append(helper.make_node(
            "GroupQueryAttention", [qkv, "", "", "past_key" if past else "", "past_value" if past else "", "seqlens_k",
                                    "total_sequence_length", "cos", "sin"],
            ["attn", "present_key", "present_value"], domain=MS, num_heads=Hq, kv_num_heads=Hkv, do_rotary=1))
        h1 = "h1"
        nodes.append(helper.make_node("Add", ["h0", mnb("o_proj", "attn", hidden, hidden, zp=False)], [h1]))
        n2 = rms("n2", h1)
        gate, up = mnb("gate", n2, hidden, ffn, zp=True), mnb("up", n2, hidden, ffn, zp=False)
        nodes += [helper.make_node("Sigmoid", [gate], ["gate_sig"]), helper.make_node("Mul", [gate, "gate_sig"], ["silu"]),
                  helper.make_node("Mul", ["silu", up], ["act"])]
        nodes.append(helper.make_node("Add", [h1, mnb("down", "act", ffn, hidden, zp=True)], ["h2"]))
        mnb("logits", rms("n3", "h2"), hidden, vocab, zp=True)
        total = past + S
        lens = seqlens if seqlens is not None else [total] * B
        feeds = {"input_ids": rng.integers(0, vocab, size=(B, S)).astype(np.int64),
                 "seqlens_k": np.array(lens, np.int32) - 1, "total_sequence_length": np.array(total, np.int32)}
        if past:
            feeds["past_key"] = rand((B, Hkv, past, D), seed + 1)
            feeds["past_value"] = rand((B, Hkv, past, D), seed + 2)
        graph = helper.make_graph(
            nodes, "decoder",
            [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for n, v in feeds.items()],
            [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("logits", "present_key", "present_value")],
            inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)], ir_version=10)
        return model, feeds
    return build


DECODER = [
    Case("LlmDecoderBlock_prompt", _decoder(1, 6, 0), rtol=1e-3, atol=1e-4),
    Case("LlmDecoderBlock_prompt_batch2_padded", _decoder(2, 5, 0, seqlens=[5, 3]), rtol=1e-3, atol=1e-4),
    Case("LlmDecoderBlock_decode_step", _decoder(2, 1, 7, seqlens=[8, 5]), rtol=1e-3, atol=1e-4),
    # onnxruntime-genai's CPU int4 models use accuracy_level 4.
    Case("LlmDecoderBlock_decode_step_acc4", _decoder(1, 1, 9, acc=4), rtol=1e-3, atol=1e-4),
    Case("LlmDecoderBlock_prompt_acc4", _decoder(1, 5, 0, acc=4), rtol=1e-3, atol=1e-4),
]

CASES = MATMUL_NBITS + GATHER_BLOCK_QUANTIZED + ROTARY + GQA + DECODER
