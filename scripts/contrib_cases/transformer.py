"""Transformer contrib ops from ORT's transformers optimizer: SkipLayerNormalization,
SkipSimplifiedLayerNormalization, EmbedLayerNormalization, Attention,
MultiHeadAttention, and SimplifiedLayerNormalization / LayerNormalization in the
default domain as ORT registers them."""
import numpy as np
from onnx import TensorProto

from . import Case, node_model, rand

F, I32 = TensorProto.FLOAT, TensorProto.INT32


def _model(op, feeds, outs, attrs=None, inputs=None, consts=None, domain="com.microsoft", opset=17):
    """(model, feeds) for one node; `consts` become initializers (not fed)."""
    return node_model(op, feeds, outs, attrs, consts=consts, inputs=inputs, domain=domain, opset=opset), feeds


# ---- SkipLayerNormalization / SkipSimplifiedLayerNormalization ----

def _skip_ln(shape=(2, 5, 13), skip_shape=None, beta=True, bias=False, outs=1, simplified=False, eps=None, seed=0):
    def build():
        H = shape[-1]
        feeds = {"x": rand(shape, seed + 1, low=-3, high=3), "skip": rand(skip_shape or shape, seed + 2),
                 "gamma": rand((H,), seed + 3, low=0.5, high=1.5)}
        names = ["x", "skip", "gamma"]
        if not simplified:
            if beta:
                feeds["beta"] = rand((H,), seed + 4)
            names.append("beta" if beta else "")
        if bias:
            feeds["bias"] = rand((H,), seed + 5)
            names.append("bias")
        all_outs = [("y", F), ("mean", F), ("inv_std", F), ("sum", F)]
        op = "SkipSimplifiedLayerNormalization" if simplified else "SkipLayerNormalization"
        attrs = {"epsilon": eps} if eps is not None else None
        return _model(op, feeds, all_outs[:outs], attrs, names)
    return build


# ---- EmbedLayerNormalization ----

def _embed(B=2, S=7, H=12, V=30, seg=True, mask=True, pos_ids=None, sum_out=False, mask_zero_row=False, seed=0):
    def build():
        feeds = {"ids": rand((B, S), seed + 1, np.int32, 0, V - 1)}
        names = ["ids"]
        if seg:
            feeds["seg"] = rand((B, S), seed + 2, np.int32, 0, 1)
        names.append("seg" if seg else "")
        feeds.update(we=rand((V, H), seed + 3), pe=rand((S + 3, H), seed + 4))
        names += ["we", "pe"]
        if seg:
            feeds["se"] = rand((2, H), seed + 5)
        names.append("se" if seg else "")
        feeds.update(g=rand((H,), seed + 6, low=0.5, high=1.5), b=rand((H,), seed + 7))
        names += ["g", "b"]
        if mask:
            m = (np.arange(S)[None, :] < rand((B, 1), seed + 8, np.int32, 1, S)).astype(np.int32)
            if mask_zero_row:
                m[-1] = 0
            feeds["mask"] = m
        names.append("mask" if mask else "")
        if pos_ids is not None:
            feeds["pos"] = rand((pos_ids, S), seed + 9, np.int32, 0, S + 2)
            names.append("pos")
        while names[-1] == "":
            names.pop()
        outs = [("y", F), ("mask_index", I32)] + ([("sum", F)] if sum_out else [])
        return _model("EmbedLayerNormalization", feeds, outs, {"epsilon": 1e-5}, names)
    return build


# ---- SimplifiedLayerNormalization, LayerNormalization below opset 17 (ORT's default-domain ops) ----

def _default_domain_norm(op, shape, axis=-1, outs=1, opset=13, bias=False, eps=None):
    def build():
        axis_ = axis if axis >= 0 else axis + len(shape)
        feeds = {"x": rand(shape, 1, low=-2, high=2), "scale": rand(shape[axis_:], 2, low=0.5, high=1.5)}
        if bias:
            feeds["b"] = rand(shape[axis_:], 3)
        attrs = {"axis": axis}
        if eps is not None:
            attrs["epsilon"] = eps
        names = [("y", F), ("o1", F), ("o2", F)][:outs]
        return _model(op, feeds, names, attrs, domain="", opset=opset)
    return build


def _qembed(B=2, S=7, H=12, V=30, dtype=np.uint8, seg=True, mask=True, seed=0):
    def build():
        lo, hi = (0, 255) if dtype == np.uint8 else (-127, 127)
        q = lambda shape, k: rand(shape, seed + k, dtype, lo, hi)
        feeds = {"ids": rand((B, S), seed + 1, np.int32, 0, V - 1)}
        if seg:
            feeds["seg"] = rand((B, S), seed + 2, np.int32, 0, 1)
        consts = {"we": q((V, H), 3), "pe": q((S + 2, H), 4), "g": q((H,), 6), "b": q((H,), 7)}
        if seg:
            consts["se"] = q((2, H), 5)
        if mask:
            feeds["mask"] = (np.arange(S)[None, :] < rand((B, 1), seed + 8, np.int32, 1, S)).astype(np.int32)
        tables = ["we", "pe", "se", "g", "b"]
        rng = np.random.default_rng(seed + 9)
        for t in tables:
            if t in consts:
                consts[t + "_s"] = np.array(rng.uniform(0.002, 0.02), np.float32)
                consts[t + "_z"] = np.array(rng.integers(lo // 2 + hi // 4, hi // 2 + 1), dtype)
        opt = lambda n, d: n if n in d else ""
        names = ["ids", opt("seg", feeds), "we", "pe", opt("se", consts), "g", "b", opt("mask", feeds)]
        names += [opt(t + "_s", consts) for t in tables] + [opt(t + "_z", consts) for t in tables]
        return node_model("QEmbedLayerNormalization", feeds, [("y", F), ("mask_index", I32)], {"epsilon": 1e-5},
                          consts=consts, inputs=names), feeds
    return build


# ---- Attention ----

def _attention(B=2, S=5, hidden_in=12, N=3, sizes=None, mask=None, past=0, present=False, attn_bias=None,
               bias=True, const_weights=True, attrs=None, seed=0):
    """mask: None, 'end' [B], 'end_start' [2B], 'raw2d' [B, T], 'raw3d' [B, S, T];
    attn_bias: None or its shape with B, N, S, T as letters (e.g. '1N')."""
    def build():
        q, k, v = sizes or (hidden_in, hidden_in, hidden_in)
        cols = q + k + v
        T = past + S
        feeds = {"x": rand((B, S, hidden_in), seed + 1)}
        consts = {}
        w = rand((hidden_in, cols), seed + 2, low=-0.5, high=0.5)
        (consts if const_weights else feeds)["w"] = w
        names = ["x", "w"]
        if bias:
            feeds["bias"] = rand((cols,), seed + 3)
        names.append("bias" if bias else "")
        rng = np.random.default_rng(seed + 4)
        if mask == "end":
            feeds["mask"] = rng.integers(1, T + 1, size=B).astype(np.int32)
        elif mask == "end_start":
            end = rng.integers(2, T + 1, size=B)
            feeds["mask"] = np.concatenate([end, rng.integers(0, 2, size=B)]).astype(np.int32)
        elif mask == "raw2d":
            m = rng.integers(0, 2, size=(B, T)).astype(np.int32)
            m[:, 0] = 1
            feeds["mask"] = m
        elif mask == "raw2d_zero_row":
            m = rng.integers(0, 2, size=(B, T)).astype(np.int32)
            m[-1] = 0
            feeds["mask"] = m
        elif mask == "raw3d":
            feeds["mask"] = rng.integers(0, 2, size=(B, S, T)).astype(np.int32)
        names.append("mask" if mask else "")
        if past:
            feeds["past"] = rand((2, B, N, past, q // N), seed + 5)
        names.append("past" if past else "")
        if attn_bias:
            dims = {"B": B, "N": N, "1": 1}
            feeds["ab"] = rand((dims[attn_bias[0]], dims[attn_bias[1]], S, T), seed + 6)
            names.append("ab")
        while names[-1] == "":
            names.pop()
        a = {"num_heads": N}
        if sizes:
            a["qkv_hidden_sizes"] = list(sizes)
        a.update(attrs or {})
        outs = [("y", F)] + ([("present", F)] if present or past else [])
        inputs = [n for n in names]
        return node_model("Attention", feeds, outs, a, consts=consts, inputs=inputs), feeds
    return build


# ---- MultiHeadAttention ----
# ORT's CPU kernel has no packed QKV / packed KV forms; those are unit-tested
# against the unpacked form in tests/kernels/contrib_transformer_test.cc.

def _mha(B=2, S=4, L=None, N=3, D=5, Dv=None, bias=False, kv="3d", mask=None, attn_bias=None, past=0,
         present=False, attrs=None, seed=0):
    def build():
        L_ = L or S
        Dv_ = Dv or D
        T = past + L_
        feeds = {"q": rand((B, S, N * D), seed + 1)}
        if kv == "3d":
            feeds.update(k=rand((B, L_, N * D), seed + 2), v=rand((B, L_, N * Dv_), seed + 3))
        else:  # per head [B, N, L, D]
            feeds.update(k=rand((B, N, L_, D), seed + 2), v=rand((B, N, L_, Dv_), seed + 3))
        names = ["q", "k", "v"]
        if bias:
            feeds["bias"] = rand((2 * N * D + N * Dv_,), seed + 4)
        names.append("bias" if bias else "")
        rng = np.random.default_rng(seed + 5)
        if mask == "end":
            feeds["mask"] = rng.integers(1, T + 1, size=B).astype(np.int32)
        elif mask == "raw2d":
            m = rng.integers(0, 2, size=(B, T)).astype(np.int32)
            m[0] = 0  # a fully masked row
            feeds["mask"] = m
        elif mask == "raw3d":
            feeds["mask"] = rng.integers(0, 2, size=(B, S, T)).astype(np.int32)
        names.append("mask" if mask else "")
        if attn_bias:
            dims = {"B": B, "N": N, "1": 1}
            feeds["ab"] = rand((dims[attn_bias[0]], dims[attn_bias[1]], S, T), seed + 6)
        names.append("ab" if attn_bias else "")
        if past:
            feeds.update(past_k=rand((B, N, past, D), seed + 7), past_v=rand((B, N, past, Dv_), seed + 8))
            names += ["past_k", "past_v"]
        while names[-1] == "":
            names.pop()
        a = {"num_heads": N}
        a.update(attrs or {})
        outs = [("y", F)] + ([("present_k", F), ("present_v", F)] if present or past else [])
        return _model("MultiHeadAttention", feeds, outs, a, names)
    return build


# ---- QAttention (ORT's quantize_dynamic on an optimized BERT) ----

def _qattention(B=2, S=5, hidden_in=12, N=3, w_type=np.int8, per_column=False, zero_points=True, mask=None,
                past=0, const=True, attrs=None, seed=0):
    def build():
        cols = 3 * hidden_in
        lo, hi = (-127, 127) if w_type == np.int8 else (0, 255)
        feeds = {"x": rand((B, S, hidden_in), seed + 1, np.uint8, 0, 255)}
        consts = {"w": rand((hidden_in, cols), seed + 2, w_type, lo, hi), "bias": rand((cols,), seed + 3)}
        feeds["x_scale"] = np.array(0.013, np.float32)
        consts["w_scale"] = (rand((cols,), seed + 4, low=0.002, high=0.01) if per_column
                             else np.array(0.004, np.float32))
        names = ["x", "w", "bias", "x_scale", "w_scale"]
        if mask == "end":
            feeds["mask"] = np.random.default_rng(seed + 5).integers(1, past + S + 1, size=B).astype(np.int32)
        names.append("mask" if mask else "")
        if zero_points:
            feeds["x_zp"] = np.array(118, np.uint8)
            mid = 0 if w_type == np.int8 else 128
            consts["w_zp"] = (rand((cols,), seed + 6, w_type, mid - 3, mid + 3) if per_column
                              else np.array(mid + 2, w_type))
            names += ["x_zp", "w_zp"]
        if past:
            feeds["past"] = rand((2, B, N, past, hidden_in // N), seed + 7)
            names += [""] * (8 - len(names)) + ["past"]
        if not const:
            feeds.update(consts)
            consts.clear()
        a = {"num_heads": N}
        a.update(attrs or {})
        outs = [("y", F)] + ([("present", F)] if past else [])
        return node_model("QAttention", feeds, outs, a, consts=consts, inputs=names), feeds
    return build


CASES = [
    Case("SkipLayerNorm_3d", _skip_ln()),
    Case("SkipLayerNorm_bias_all_outputs", _skip_ln(bias=True, outs=4)),
    Case("SkipLayerNorm_no_beta_bias", _skip_ln(beta=False, bias=True, outs=2, eps=1e-5)),
    Case("SkipLayerNorm_skip_2d_broadcast", _skip_ln(skip_shape=(5, 13), bias=True)),
    Case("SkipLayerNorm_skip_batch1_broadcast", _skip_ln(shape=(3, 4, 37), skip_shape=(1, 4, 37))),
    Case("SkipLayerNorm_2d_input", _skip_ln(shape=(6, 768), bias=True, outs=3)),
    Case("SkipLayerNorm_wide_rows", _skip_ln(shape=(2, 33, 768), bias=True)),
    Case("SkipSimplifiedLayerNorm_3d", _skip_ln(simplified=True)),
    Case("SkipSimplifiedLayerNorm_bias_outputs", _skip_ln(simplified=True, bias=True, outs=4, eps=1e-6)),
    Case("SkipSimplifiedLayerNorm_skip_2d", _skip_ln(shape=(3, 6, 19), skip_shape=(6, 19), simplified=True, outs=3)),
    Case("EmbedLayerNorm_full", _embed()),
    Case("EmbedLayerNorm_no_segment_no_mask", _embed(seg=False, mask=False)),
    Case("EmbedLayerNorm_position_ids", _embed(pos_ids=2, sum_out=True)),
    Case("EmbedLayerNorm_position_ids_shared", _embed(B=3, pos_ids=1, mask_zero_row=True)),
    Case("EmbedLayerNorm_batch1_odd", _embed(B=1, S=11, H=37, V=50)),
    Case("QEmbedLayerNorm_uint8", _qembed(), atol=1e-4),
    Case("QEmbedLayerNorm_int8_no_segment", _qembed(dtype=np.int8, seg=False, B=3, S=5, H=19), atol=1e-4),
    Case("QEmbedLayerNorm_no_mask", _qembed(mask=False, B=1), atol=1e-4),
    Case("SimplifiedLayerNorm_last_axis", _default_domain_norm("SimplifiedLayerNormalization", (2, 5, 19))),
    Case("SimplifiedLayerNorm_axis1_inv_std", _default_domain_norm("SimplifiedLayerNormalization", (3, 4, 5), axis=1,
                                                                   outs=2, eps=1e-3)),
    Case("LayerNorm_opset13_default_domain", _default_domain_norm("LayerNormalization", (2, 5, 19), bias=True, outs=3)),
    Case("LayerNorm_opset11_axis1", _default_domain_norm("LayerNormalization", (3, 4, 6), axis=1, opset=11)),
    Case("Attention_plain", _attention()),
    Case("Attention_runtime_weights", _attention(const_weights=False)),  # ORT 1.31 crashes without bias
    Case("Attention_mask_end", _attention(mask="end")),
    Case("Attention_mask_end_start", _attention(mask="end_start")),
    Case("Attention_mask_raw2d", _attention(mask="raw2d", B=3, S=7)),
    Case("Attention_mask_fully_masked_row", _attention(mask="raw2d_zero_row"), rtol=1e-3, atol=1e-4),
    Case("Attention_mask_raw3d", _attention(mask="raw3d")),
    Case("Attention_mask_filter_value", _attention(mask="raw2d", attrs={"mask_filter_value": -30.0})),
    Case("Attention_unidirectional", _attention(attrs={"unidirectional": 1})),
    Case("Attention_unidirectional_mask", _attention(mask="raw2d", attrs={"unidirectional": 1})),
    Case("Attention_scale", _attention(attrs={"scale": 0.37})),
    Case("Attention_qkv_hidden_sizes", _attention(sizes=(12, 12, 21))),
    Case("Attention_attention_bias_BN", _attention(attn_bias="BN")),
    Case("Attention_attention_bias_1N_mask", _attention(attn_bias="1N", mask="end")),
    Case("Attention_attention_bias_B1", _attention(attn_bias="B1")),
    Case("Attention_present_only", _attention(present=True)),
    Case("Attention_past_present_gpt2", _attention(past=4, S=1, attrs={"unidirectional": 1})),
    Case("Attention_past_present_mask", _attention(past=3, S=2, mask="raw2d", attrs={"unidirectional": 1})),
    Case("Attention_past_mask_end", _attention(past=3, S=3, mask="end")),
    Case("Attention_bert_base_shape", _attention(B=2, S=19, hidden_in=768, N=12, mask="end"), rtol=1e-3, atol=1e-4),
    Case("MHA_self", _mha()),
    Case("MHA_cross_bias_odd_sizes", _mha(S=3, L=7, D=7, Dv=9, bias=True)),
    Case("MHA_key_padding_end", _mha(L=6, mask="end")),
    Case("MHA_key_padding_2d_zero_row", _mha(mask="raw2d", bias=True), rtol=1e-3, atol=1e-4),
    Case("MHA_mask_3d", _mha(S=3, L=5, mask="raw3d")),
    Case("MHA_mask_filter_value", _mha(mask="raw2d", attrs={"mask_filter_value": -7.5})),
    Case("MHA_attention_bias_BN", _mha(attn_bias="BN", L=6)),
    Case("MHA_attention_bias_11_mask", _mha(attn_bias="11", mask="end")),
    Case("MHA_per_head_kv", _mha(kv="4d", L=6, present=True)),
    Case("MHA_per_head_kv_query_bias", _mha(kv="4d", L=6, bias=True)),
    Case("MHA_present_no_past", _mha(present=True, bias=True)),
    Case("MHA_past_present_decode", _mha(S=1, past=5, bias=True, attrs={"unidirectional": 1})),
    Case("MHA_past_present_mask", _mha(S=2, past=3, mask="raw2d")),
    Case("MHA_unidirectional_self", _mha(S=6, attrs={"unidirectional": 1})),
    Case("MHA_unidirectional_past", _mha(S=3, past=2, attrs={"unidirectional": 1, "scale": 0.3})),
    Case("MHA_bert_base_shape", _mha(B=2, S=23, N=12, D=64, bias=True, mask="end"), rtol=1e-3, atol=1e-4),
    Case("QAttention_int8_weights", _qattention(), rtol=1e-4, atol=1e-4),
    Case("QAttention_uint8_weights_mask", _qattention(w_type=np.uint8, mask="end"), rtol=1e-4, atol=1e-4),
    Case("QAttention_per_column", _qattention(per_column=True, B=3, S=7), rtol=1e-4, atol=1e-4),
    Case("QAttention_no_zero_points_runtime_weights", _qattention(zero_points=False, const=False), rtol=1e-4, atol=1e-4),
    Case("QAttention_past_unidirectional", _qattention(past=3, S=2, attrs={"unidirectional": 1}), rtol=1e-4, atol=1e-4),
]
