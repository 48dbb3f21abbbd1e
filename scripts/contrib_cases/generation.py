"""ORT's generation ops (com.microsoft GreedySearch and BeamSearch) over a tiny
GPT-2-like decoder built here: token and position embeddings, one attention
block whose keys and values are concatenated to the past state
([2, batch*beams, heads, past, head_size]) and returned as present, and a
projection to a vocabulary of 50 logits, with seeded random weights. The
generated token ids must equal ORT's exactly; sequence scores and per-step
scores agree to float rounding."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from . import MS, Case, rand

VOCAB, HIDDEN, HEADS = 50, 8, 2
HEAD = HIDDEN // HEADS
I32, F32 = TensorProto.INT32, TensorProto.FLOAT


def _weights(seed):
    return {
        "wte": rand((VOCAB, HIDDEN), seed, low=-2.0, high=2.0),
        "wpe": rand((64, HIDDEN), seed + 1, low=-2.0, high=2.0),
        "wq": rand((HIDDEN, HIDDEN), seed + 2, low=-2.0, high=2.0),
        "wk": rand((HIDDEN, HIDDEN), seed + 3, low=-2.0, high=2.0),
        "wv": rand((HIDDEN, HIDDEN), seed + 4, low=-3.0, high=3.0),
        "wo": rand((HIDDEN, VOCAB), seed + 5, low=-1.5, high=1.5),
        "heads_shape": np.array([0, 0, HEADS, HEAD], np.int64), "hidden_shape": np.array([0, 0, HIDDEN], np.int64),
        "scale": np.array(1.0 / np.sqrt(HEAD), np.float32), "neg": np.array(-10000.0, np.float32),
        "one": np.array(1.0, np.float32), "ax0": np.array([0], np.int64), "ax12": np.array([1, 2], np.int64),
    }


def _nodes():
    n = helper.make_node
    return [
        n("Gather", ["wte", "input_ids"], ["tok"]),
        n("Gather", ["wpe", "position_ids"], ["pos"]),
        n("Add", ["tok", "pos"], ["x"]),
        *[n("MatMul", ["x", f"w{p}"], [f"{p}2"]) for p in "qkv"],
        *[n("Reshape", [f"{p}2", "heads_shape"], [f"{p}4"]) for p in "qkv"],
        *[n("Transpose", [f"{p}4"], [f"{p}h"], perm=[0, 2, 1, 3]) for p in "qkv"],
        n("Split", ["past_0"], ["pk5", "pv5"], axis=0),
        n("Squeeze", ["pk5", "ax0"], ["pk"]), n("Squeeze", ["pv5", "ax0"], ["pv"]),
        n("Concat", ["pk", "kh"], ["k_all"], axis=2), n("Concat", ["pv", "vh"], ["v_all"], axis=2),
        n("Unsqueeze", ["k_all", "ax0"], ["k5"]), n("Unsqueeze", ["v_all", "ax0"], ["v5"]),
        n("Concat", ["k5", "v5"], ["present_0"], axis=0),
        n("Transpose", ["k_all"], ["kt"], perm=[0, 1, 3, 2]),
        n("MatMul", ["qh", "kt"], ["qk"]), n("Mul", ["qk", "scale"], ["qk_s"]),
        # padding mask: (1 - mask) * -10000 on every key position
        n("Cast", ["attention_mask"], ["mask_f"], to=F32), n("Sub", ["one", "mask_f"], ["inv"]),
        n("Mul", ["inv", "neg"], ["bias2"]), n("Unsqueeze", ["bias2", "ax12"], ["bias4"]),
        n("Add", ["qk_s", "bias4"], ["scores"]), n("Softmax", ["scores"], ["probs"], axis=-1),
        n("MatMul", ["probs", "v_all"], ["ctx"]), n("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx_t", "hidden_shape"], ["attn"]), n("Add", ["attn", "x"], ["h"]),
        n("Tanh", ["h"], ["ht"]), n("MatMul", ["ht", "wo"], ["logits"]),
    ]


def gpt_decoder(seed=0, outer=False, logits_type=F32):
    """The decoder subgraph; with outer=True its weights are returned apart, to
    live in the main graph (read by the subgraph as outer-scope values)."""
    weights = _weights(seed)
    inputs = [helper.make_tensor_value_info("input_ids", I32, ["B", "S"]),
              helper.make_tensor_value_info("position_ids", I32, ["B", "S"]),
              helper.make_tensor_value_info("attention_mask", I32, ["B", "T"]),
              helper.make_tensor_value_info("past_0", F32, [2, "B", HEADS, "P", HEAD])]
    outputs = [helper.make_tensor_value_info("logits", logits_type, ["B", "S", VOCAB]),
               helper.make_tensor_value_info("present_0", F32, [2, "B", HEADS, "T", HEAD])]
    inits = [numpy_helper.from_array(v, k) for k, v in weights.items()]
    graph = helper.make_graph(_nodes(), "decoder", inputs, outputs, [] if outer else inits)
    return graph, (inits if outer else [])


_BEAM_INPUTS = ["input_ids", "max_length", "min_length", "num_beams", "num_return_sequences", "length_penalty",
                "repetition_penalty", "vocab_mask", "prefix_vocab_mask", "attention_mask"]
_GREEDY_INPUTS = ["input_ids", "max_length", "min_length", "repetition_penalty", "vocab_mask",
                  "prefix_vocab_mask", "attention_mask"]
_TYPES = {"length_penalty": np.float32, "repetition_penalty": np.float32}


def generation_model(op, values, attrs, outputs, seed=0, outer=False, decoder=None, fed=("input_ids",)):
    """A model of one GreedySearch / BeamSearch node. `values` maps the op's
    input names to arrays (scalars become [1] int32 / float tensors); those in
    `fed` are graph inputs, the others initializers."""
    names = _BEAM_INPUTS if op == "BeamSearch" else _GREEDY_INPUTS
    arrays = {}
    for k, v in values.items():
        arrays[k] = np.asarray(v, _TYPES.get(k, np.int32)).reshape(-1 if np.ndim(v) == 0 else np.shape(v))
    last = max(names.index(k) for k in arrays)
    node_inputs = [k if k in arrays else "" for k in names[:last + 1]]
    graph_dec, outer_inits = gpt_decoder(seed, outer) if decoder is None else (decoder, [])
    attrs = dict(attrs)
    attrs.setdefault("decoder", graph_dec)
    node = helper.make_node(op, node_inputs, [o for o, _ in outputs], domain=MS, name=f"{op.lower()}_node", **attrs)
    feeds = {k: v for k, v in arrays.items() if k in fed}
    inits = [numpy_helper.from_array(v, k) for k, v in arrays.items() if k not in fed] + outer_inits
    graph = helper.make_graph(
        [node], f"{op}_case",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    return model, feeds


def _prompt(batch, length, seed, pad_left=None, pad_id=0):
    ids = rand((batch, length), seed, np.int32, 1, VOCAB - 1)
    mask = np.ones_like(ids)
    for b, n in enumerate(pad_left or []):
        ids[b, :n], mask[b, :n] = pad_id, 0
    return ids, mask


def _greedy(batch=1, length=4, max_length=12, seed=7, attrs=None, extra=None, pad_left=None, with_mask=False,
            outer=False, fed=("input_ids",)):
    def build():
        ids, mask = _prompt(batch, length, seed, pad_left)
        values = {"input_ids": ids, "max_length": max_length}
        if with_mask:
            values["attention_mask"] = mask
        values.update(extra or {})
        a = {"eos_token_id": 49, "pad_token_id": 0, **(attrs or {})}
        return generation_model("GreedySearch", values, a, [("sequences", I32)], seed=seed, outer=outer,
                                fed=fed + (("attention_mask",) if with_mask else ()))
    return build


def _beam(batch=1, length=4, max_length=12, beams=3, ret=1, seed=7, attrs=None, extra=None, pad_left=None,
          with_mask=False, scores=True, step_scores=False, outer=False, fed=("input_ids",), decoder=None):
    def build():
        ids, mask = _prompt(batch, length, seed, pad_left)
        values = {"input_ids": ids, "max_length": max_length, "min_length": 0, "num_beams": beams,
                  "num_return_sequences": ret, "length_penalty": 1.0}
        if with_mask:
            values["attention_mask"] = mask
        values.update(extra or {})
        a = {"eos_token_id": 49, "pad_token_id": 0, **(attrs or {})}
        outs = [("sequences", I32)] + ([("sequences_scores", F32)] if scores or step_scores else [])
        outs += [("scores", F32)] if step_scores else []
        return generation_model("BeamSearch", values, a, outs, seed=seed, outer=outer, decoder=decoder,
                                fed=fed + (("attention_mask",) if with_mask else ()))
    return build


def _t5_weights(seed):
    w = {
        "wte_enc": rand((VOCAB, HIDDEN), seed, low=-2.0, high=2.0), "w_enc": rand((HIDDEN, HIDDEN), seed + 1),
        "wte_dec": rand((VOCAB, HIDDEN), seed + 2, low=-2.0, high=2.0),
        "wo": rand((HIDDEN, VOCAB), seed + 3, low=-1.5, high=1.5),
        "heads_shape": np.array([0, 0, HEADS, HEAD], np.int64), "hidden_shape": np.array([0, 0, HIDDEN], np.int64),
        "scale": np.array(1.0 / np.sqrt(HEAD), np.float32), "neg": np.array(-10000.0, np.float32),
        "one": np.array(1.0, np.float32), "half": np.array(0.5, np.float32), "ax12": np.array([1, 2], np.int64),
        "last": np.array([-1], np.int64),
    }
    for i, name in enumerate(["wq", "wk_s", "wv_s", "wk_c", "wv_c"]):
        w[name] = rand((HIDDEN, HIDDEN), seed + 4 + i, low=-2.0, high=2.0)
    return w


def _heads(n, src, weight, out):
    """src [B, L, E] @ weight as heads [B, H, L, D]."""
    return [n("MatMul", [src, weight], [out + "_2"]), n("Reshape", [out + "_2", "heads_shape"], [out + "_4"]),
            n("Transpose", [out + "_4"], [out], perm=[0, 2, 1, 3])]


def _attend(n, q, k, v, out, mask=None):
    """softmax(q k^T scale [+ padding bias]) v."""
    nodes = [n("Transpose", [k], [out + "_kt"], perm=[0, 1, 3, 2]), n("MatMul", [q, out + "_kt"], [out + "_qk"]),
             n("Mul", [out + "_qk", "scale"], [out + "_s"])]
    scores = out + "_s"
    if mask:
        nodes += [n("Cast", [mask], [out + "_mf"], to=F32), n("Sub", ["one", out + "_mf"], [out + "_inv"]),
                  n("Mul", [out + "_inv", "neg"], [out + "_b2"]), n("Unsqueeze", [out + "_b2", "ax12"], [out + "_b4"]),
                  n("Add", [out + "_s", out + "_b4"], [out + "_sm"])]
        scores = out + "_sm"
    return nodes + [n("Softmax", [scores], [out + "_p"], axis=-1), n("MatMul", [out + "_p", v], [out])]


def _t5_logits(n, x, ctx_self, ctx_cross, extra=None):
    """logits = tanh(x + merged heads of both contexts [+ extra]) @ wo."""
    nodes = [n("Add", [ctx_self, ctx_cross], ["ctx"]), n("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
             n("Reshape", ["ctx_t", "hidden_shape"], ["ctx_m"]), n("Add", ["ctx_m", x], ["h0"])]
    h = "h0"
    if extra:
        nodes += [n("Add", ["h0", extra], ["h1"])]
        h = "h1"
    return nodes + [n("Tanh", [h], ["ht"]), n("MatMul", ["ht", "wo"], ["logits"])]


def t5_subgraphs(seed=0, whole_sequence=False):
    """A T5-style encoder (which also runs the first decoder step) and decoder."""
    n = helper.make_node
    inits = [numpy_helper.from_array(v, k) for k, v in _t5_weights(seed).items()]
    enc_nodes = [n("Gather", ["wte_enc", "encoder_input_ids"], ["e"]), n("MatMul", ["e", "w_enc"], ["e2"]),
                 n("Tanh", ["e2"], ["encoder_hidden_states"]),
                 *_heads(n, "encoder_hidden_states", "wk_c", "present_key_cross_0"),
                 *_heads(n, "encoder_hidden_states", "wv_c", "present_value_cross_0"),
                 n("Gather", ["wte_dec", "decoder_input_ids"], ["x"]),
                 *_heads(n, "x", "wk_s", "present_key_self_0"), *_heads(n, "x", "wv_s", "present_value_self_0"),
                 *_heads(n, "x", "wq", "q"),
                 *_attend(n, "q", "present_key_cross_0", "present_value_cross_0", "cross", "encoder_attention_mask"),
                 *_t5_logits(n, "x", "present_value_self_0", "cross")]
    B, S = "B", "S"
    encoder = helper.make_graph(
        enc_nodes, "encoder",
        [helper.make_tensor_value_info("encoder_input_ids", I32, [B, S]),
         helper.make_tensor_value_info("encoder_attention_mask", I32, [B, S]),
         helper.make_tensor_value_info("decoder_input_ids", I32, [B, 1])],
        [helper.make_tensor_value_info("logits", F32, [B, 1, VOCAB]),
         helper.make_tensor_value_info("encoder_hidden_states", F32, [B, S, HIDDEN]),
         *[helper.make_tensor_value_info(f"present_{kv}_{sc}_0", F32, [B, HEADS, 1 if sc == "self" else S, HEAD])
           for sc in ("self", "cross") for kv in ("key", "value")]], inits)
    ids = "input_ids"
    dec_nodes = []
    if whole_sequence:  # the decoder reads the whole sequence and uses its last token
        dec_nodes.append(n("Gather", ["input_ids", "last"], ["last_ids"], axis=1))
        ids = "last_ids"
    dec_nodes += [n("Gather", ["wte_dec", ids], ["x"]), *_heads(n, "x", "wk_s", "k_new"),
                  *_heads(n, "x", "wv_s", "v_new"),
                  n("Concat", ["past_key_self_0", "k_new"], ["present_key_self_0"], axis=2),
                  n("Concat", ["past_value_self_0", "v_new"], ["present_value_self_0"], axis=2),
                  *_heads(n, "x", "wq", "q"),
                  *_attend(n, "q", "present_key_self_0", "present_value_self_0", "self"),
                  *_attend(n, "q", "past_key_cross_0", "past_value_cross_0", "cross", "encoder_attention_mask"),
                  n("ReduceMean", ["encoder_hidden_states"], ["hmean"], axes=[1], keepdims=1),
                  n("Mul", ["hmean", "half"], ["hmean2"]), *_t5_logits(n, "x", "self", "cross", "hmean2")]
    decoder = helper.make_graph(
        dec_nodes, "decoder",
        [helper.make_tensor_value_info("input_ids", I32, [B, "L" if whole_sequence else 1]),
         helper.make_tensor_value_info("encoder_attention_mask", I32, [B, S]),
         helper.make_tensor_value_info("encoder_hidden_states", F32, [B, S, HIDDEN]),
         *[helper.make_tensor_value_info(f"past_{kv}_{sc}_0", F32, [B, HEADS, "P" if sc == "self" else S, HEAD])
           for sc in ("self", "cross") for kv in ("key", "value")]],
        [helper.make_tensor_value_info("logits", F32, [B, 1, VOCAB]),
         helper.make_tensor_value_info("present_key_self_0", F32, [B, HEADS, "T", HEAD]),
         helper.make_tensor_value_info("present_value_self_0", F32, [B, HEADS, "T", HEAD])], inits)
    return encoder, decoder


def _t5_beam(whole_sequence=False, start=1, **kw):
    def build():
        encoder, decoder = t5_subgraphs(kw.pop("seed", 7), whole_sequence)
        attrs = {"model_type": 1, "decoder_start_token_id": start, "encoder": encoder, **kw.pop("attrs", {})}
        return _beam(attrs=attrs, decoder=decoder, **kw)()
    return build


def _init_decoder(build):
    """The model of `build` with an init_decoder (the same decoder) for the first step."""
    def wrapped():
        model, feeds = build()
        node = model.graph.node[0]
        decoder = next(a.g for a in node.attribute if a.name == "decoder")
        node.attribute.append(helper.make_attribute("init_decoder", decoder))
        return model, feeds
    return wrapped


_VOCAB_MASK = (np.arange(VOCAB) % 3 != 1).astype(np.int32)
_PREFIX_MASK = np.stack([(np.arange(VOCAB) < 20), (np.arange(VOCAB) >= 25)]).astype(np.int32)
_NO_EOS = (np.arange(VOCAB) != 49).astype(np.int32)

CASES = [
    # GreedySearch: one and two prompts, EOS ending one row (written as pad), the optional inputs
    Case("GreedySearch_gpt_b1", _greedy()),
    Case("GreedySearch_gpt_b2_seed3", _greedy(batch=2, max_length=14, seed=3)),
    Case("GreedySearch_eos_one_row_ends", _greedy(batch=2, max_length=14, attrs={"eos_token_id": 45})),
    Case("GreedySearch_repetition_penalty", _greedy(batch=2, max_length=14, extra={"repetition_penalty": 1.8},
                                                    fed=("input_ids", "repetition_penalty"))),
    Case("GreedySearch_no_repeat_ngram_1", _greedy(batch=2, max_length=14, attrs={"no_repeat_ngram_size": 1})),
    Case("GreedySearch_no_repeat_ngram_2", _greedy(batch=2, max_length=16, attrs={"no_repeat_ngram_size": 2})),
    Case("GreedySearch_min_length_bans_eos", _greedy(batch=2, max_length=14, attrs={"eos_token_id": 10},
                                                     extra={"min_length": 13})),
    Case("GreedySearch_vocab_mask", _greedy(batch=2, max_length=14, extra={"vocab_mask": _VOCAB_MASK})),
    Case("GreedySearch_prefix_vocab_mask", _greedy(batch=2, max_length=14, extra={"prefix_vocab_mask": _PREFIX_MASK})),
    Case("GreedySearch_left_pad_attention_mask", _greedy(batch=2, length=6, max_length=15, pad_left=[0, 2],
                                                         with_mask=True)),
    Case("GreedySearch_left_pad_no_mask", _greedy(batch=2, length=6, max_length=15, pad_left=[3, 0])),
    Case("GreedySearch_outer_scope_weights", _greedy(batch=2, max_length=13, outer=True, seed=5)),
    Case("GreedySearch_init_decoder", _init_decoder(_greedy(batch=2, max_length=12))),
    # BeamSearch: beams 3-4, one or more returned sequences, batch 1-3
    Case("BeamSearch_b1_beams3", _beam()),
    Case("BeamSearch_b1_beams4_return4", _beam(beams=4, ret=4)),
    Case("BeamSearch_b2_beams3_return3", _beam(batch=2, beams=3, ret=3, max_length=14)),
    Case("BeamSearch_b3_beams4_return2_eos", _beam(batch=3, beams=4, ret=2, max_length=14, seed=11)),
    Case("BeamSearch_one_beam", _beam(batch=2, beams=1, max_length=10)),
    Case("BeamSearch_no_scores_output", _beam(batch=2, beams=3, ret=2, scores=False)),
    # EOS: early_stopping on and off; length_penalty below, at and above 1
    Case("BeamSearch_eos_early_stopping", _beam(batch=2, beams=3, ret=2, max_length=16,
                                                attrs={"eos_token_id": 10, "early_stopping": 1})),
    Case("BeamSearch_eos_no_early_stopping", _beam(batch=2, beams=3, ret=2, max_length=16,
                                                   attrs={"eos_token_id": 10})),
    Case("BeamSearch_eos_b3_no_early_stopping", _beam(batch=3, beams=3, ret=3, max_length=16, seed=11,
                                                      attrs={"eos_token_id": 28})),
    # a batch item's done test reads candidates of the item before it (ORT's offset): these end differently otherwise
    Case("BeamSearch_b3_done_test_offset_a", _beam(batch=3, beams=3, ret=3, max_length=14, seed=7,
                                                   attrs={"eos_token_id": 43})),
    Case("BeamSearch_b3_done_test_offset_b", _beam(batch=3, beams=2, ret=2, max_length=14, seed=11,
                                                   attrs={"eos_token_id": 28})),
    Case("BeamSearch_length_penalty_0_6", _beam(batch=2, beams=4, ret=3, max_length=14,
                                                attrs={"eos_token_id": 27}, extra={"length_penalty": 0.6})),
    Case("BeamSearch_length_penalty_2", _beam(batch=2, beams=4, ret=3, max_length=14,
                                              attrs={"eos_token_id": 27}, extra={"length_penalty": 2.0},
                                              fed=("input_ids", "length_penalty"))),
    # score processors
    Case("BeamSearch_repetition_penalty", _beam(batch=2, beams=3, ret=2, max_length=14,
                                                extra={"repetition_penalty": 1.4})),
    Case("BeamSearch_no_repeat_ngram_2", _beam(batch=2, beams=3, ret=3, max_length=16,
                                               attrs={"no_repeat_ngram_size": 2})),
    Case("BeamSearch_no_repeat_ngram_3", _beam(batch=1, beams=4, ret=2, max_length=18,
                                               attrs={"no_repeat_ngram_size": 3})),
    Case("BeamSearch_min_length", _beam(batch=2, beams=3, ret=2, max_length=14, attrs={"eos_token_id": 10},
                                        extra={"min_length": 9}, fed=("input_ids", "min_length"))),
    Case("BeamSearch_vocab_mask", _beam(batch=2, beams=3, ret=2, max_length=14, extra={"vocab_mask": _VOCAB_MASK})),
    Case("BeamSearch_prefix_vocab_mask", _beam(batch=2, beams=3, ret=2, max_length=14,
                                               extra={"prefix_vocab_mask": _PREFIX_MASK})),
    # prompts of different lengths: left padding with and without attention_mask
    Case("BeamSearch_left_pad_attention_mask", _beam(batch=2, length=6, beams=3, ret=2, max_length=15,
                                                     pad_left=[2, 0], with_mask=True)),
    Case("BeamSearch_left_pad_no_mask", _beam(batch=2, length=6, beams=4, ret=2, max_length=15, pad_left=[0, 3])),
    # the per-step scores output (EOS masked out, so that every step is taken)
    Case("BeamSearch_step_scores", _beam(batch=2, beams=3, ret=2, max_length=10, step_scores=True,
                                         extra={"vocab_mask": _NO_EOS})),
    Case("BeamSearch_outer_scope_weights", _beam(batch=2, beams=3, ret=2, max_length=13, outer=True, seed=5)),
    Case("BeamSearch_init_decoder", _init_decoder(_beam(batch=2, beams=3, ret=2, max_length=12))),
    Case("BeamSearch_all_inputs_fed", _beam(batch=2, beams=3, ret=2, max_length=13, extra={"repetition_penalty": 1.2},
                                            fed=("input_ids", "max_length", "min_length", "num_beams",
                                                 "num_return_sequences", "length_penalty", "repetition_penalty"))),
    # model_type 1: a T5-style encoder (giving the first step) and decoder with self and cross attention states
    Case("BeamSearch_t5_b2_beams3", _t5_beam(batch=2, beams=3, ret=2, max_length=10)),
    Case("BeamSearch_t5_whole_sequence_ids", _t5_beam(whole_sequence=True, batch=2, beams=3, ret=3, max_length=10,
                                                      extra={"repetition_penalty": 1.6})),
    Case("BeamSearch_t5_repetition_ngram", _t5_beam(batch=2, beams=4, ret=2, max_length=12,
                                                    attrs={"no_repeat_ngram_size": 2},
                                                    extra={"repetition_penalty": 1.3})),
    Case("BeamSearch_t5_eos_left_pad", _t5_beam(batch=2, length=6, beams=3, ret=2, max_length=12, pad_left=[0, 2],
                                                attrs={"eos_token_id": 35, "pad_token_id": 0},
                                                extra={"repetition_penalty": 1.5})),
    Case("BeamSearch_t5_attention_mask", _t5_beam(batch=2, length=6, beams=3, ret=2, max_length=12,
                                                  pad_left=[3, 0], with_mask=True, extra={"repetition_penalty": 1.5})),
    Case("BeamSearch_t5_one_beam_step_scores", _t5_beam(batch=2, beams=1, max_length=8, step_scores=True,
                                                        extra={"vocab_mask": _NO_EOS})),
    Case("BeamSearch_t5_step_scores", _t5_beam(batch=2, beams=3, ret=2, max_length=8, step_scores=True,
                                               extra={"vocab_mask": _NO_EOS, "repetition_penalty": 1.5})),
]
