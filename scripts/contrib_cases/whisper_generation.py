"""ORT's WhisperBeamSearch (and BeamSearch with model_type 2) over a tiny
Whisper-like pair of subgraphs built here: the encoder takes audio features
[batch, features, frames] and the forced decoder ids, and returns the logits of
those ids, the encoder's hidden states and each layer's self- and
cross-attention states; the decoder takes the next token (or the whole
sequence), the hidden states and the past states. Weights are seeded random.
The generated token ids must equal ORT's exactly; scores agree to float
rounding."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper

from . import MS, Case, rand
from .generation import _attend, _heads

VOCAB, HIDDEN, HEADS, FEATURES, FRAMES = 50, 8, 2, 4, 6
HEAD = HIDDEN // HEADS
I32, F32 = TensorProto.INT32, TensorProto.FLOAT
EOS, PAD, START = 49, 0, 1


def _weights(seed):
    w = {
        "w_feat": rand((FEATURES, HIDDEN), seed, low=-2.0, high=2.0), "w_enc": rand((HIDDEN, HIDDEN), seed + 1),
        "wte_dec": rand((VOCAB, HIDDEN), seed + 2, low=-2.0, high=2.0),
        "wo": rand((HIDDEN, VOCAB), seed + 3, low=-1.5, high=1.5),
        "heads_shape": np.array([0, 0, HEADS, HEAD], np.int64), "hidden_shape": np.array([0, 0, HIDDEN], np.int64),
        "scale": np.array(1.0 / np.sqrt(HEAD), np.float32), "half": np.array(0.5, np.float32),
        "last": np.array([-1], np.int64), "shape_b11": np.array([0, 1, 1], np.int64),
        "second": np.array([1], np.int64),
    }
    for i, name in enumerate(["wq", "wk_s", "wv_s", "wk_c", "wv_c"]):
        w[name] = rand((HIDDEN, HIDDEN), seed + 4 + i, low=-2.0, high=2.0)
    return w


def _logits(n, x, ctx_self, ctx_cross, hidden=None):
    """logits = tanh(x + merged heads of both contexts [+ mean(hidden) / 2]) @ wo."""
    nodes = [n("Add", [ctx_self, ctx_cross], ["ctx"]), n("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
             n("Reshape", ["ctx_t", "hidden_shape"], ["ctx_m"]), n("Add", ["ctx_m", x], ["h0"])]
    h = "h0"
    if hidden:
        nodes += [n("ReduceMean", [hidden], ["hmean"], axes=[1], keepdims=1), n("Mul", ["hmean", "half"], ["hmean2"]),
                  n("Add", ["h0", "hmean2"], ["h1"])]
        h = "h1"
    return nodes + [n("Tanh", [h], ["ht"]), n("MatMul", ["ht", "wo"], ["logits"])]


def whisper_subgraphs(seed=0, whole_sequence=False, layers=1, hidden_input=True):
    """The encoder (which also runs the forced decoder ids) and the decoder
    (without an encoder_hidden_states input when hidden_input is False). Like
    Whisper's, the decoder reads the encoder only through the cross-attention
    states: ORT 1.32 feeds its encoder_hidden_states input a buffer of the
    right shape that it never fills."""
    n = helper.make_node
    inits = [numpy_helper.from_array(v, k) for k, v in _weights(seed).items()]
    B = "B"
    enc_nodes = [n("Transpose", ["encoder_input_ids"], ["feat_t"], perm=[0, 2, 1]),
                 n("MatMul", ["feat_t", "w_feat"], ["e"]), n("MatMul", ["e", "w_enc"], ["e2"]),
                 n("Tanh", ["e2"], ["encoder_hidden_states"]),
                 n("Gather", ["wte_dec", "decoder_input_ids"], ["x"]), *_heads(n, "x", "wq", "q")]
    enc_outs = [helper.make_tensor_value_info("logits", F32, [B, "L", VOCAB]),
                helper.make_tensor_value_info("encoder_hidden_states", F32, [B, FRAMES, HIDDEN])]
    # every layer has the same weights; its states are scaled by (layer + 1) so that they differ
    self_outs, cross_outs = [], []
    for i in range(layers):
        for kv, w in (("key", "wk_s"), ("value", "wv_s")):
            enc_nodes += _heads(n, "x", w, f"{kv}_self_{i}_0")
            enc_nodes.append(n("Mul", [f"{kv}_self_{i}_0", f"layer_scale_{i}"], [f"present_{kv}_self_{i}"]))
            self_outs.append(helper.make_tensor_value_info(f"present_{kv}_self_{i}", F32, [B, HEADS, "L", HEAD]))
        for kv, w in (("key", "wk_c"), ("value", "wv_c")):
            enc_nodes += _heads(n, "encoder_hidden_states", w, f"{kv}_cross_{i}_0")
            enc_nodes.append(n("Mul", [f"{kv}_cross_{i}_0", f"layer_scale_{i}"], [f"present_{kv}_cross_{i}"]))
            cross_outs.append(helper.make_tensor_value_info(f"present_{kv}_cross_{i}", F32,
                                                            [B, HEADS, FRAMES, HEAD]))
        inits.append(numpy_helper.from_array(np.array(i + 1.0, np.float32), f"layer_scale_{i}"))
    # the logits read layer 0's states: self attention over the forced ids, cross attention over the frames
    enc_nodes += [*_attend(n, "q", "present_key_self_0", "present_value_self_0", "self"),
                  *_attend(n, "q", "present_key_cross_0", "present_value_cross_0", "cross"),
                  *_logits(n, "x", "self", "cross", "encoder_hidden_states")]
    # ORT's order: present_{key,value}_self_i of every layer, then present_{key,value}_cross_i
    encoder = helper.make_graph(
        enc_nodes, "encoder",
        [helper.make_tensor_value_info("encoder_input_ids", F32, [B, FEATURES, FRAMES]),
         helper.make_tensor_value_info("decoder_input_ids", I32, [B, "L"])],
        enc_outs + self_outs + cross_outs, inits)

    ids = "input_ids"
    dec_nodes = []
    x = "x"
    if whole_sequence:  # the decoder reads the whole sequence: its last token, plus half its second's embedding
        dec_nodes += [n("Gather", ["input_ids", "last"], ["last_ids"], axis=1),
                      n("Gather", ["input_ids", "second"], ["second_ids"], axis=1),
                      n("Gather", ["wte_dec", "second_ids"], ["x3"]), n("Mul", ["x3", "half"], ["x3h"])]
        ids, x = "last_ids", "x_last"
    dec_nodes.append(n("Gather", ["wte_dec", ids], [x]))
    if whole_sequence:
        dec_nodes.append(n("Add", ["x_last", "x3h"], ["x"]))
    dec_nodes += _heads(n, "x", "wq", "q")
    dec_outs = [helper.make_tensor_value_info("logits", F32, [B, 1, VOCAB])]
    for i in range(layers):
        for kv, w in (("key", "wk_s"), ("value", "wv_s")):
            dec_nodes += _heads(n, "x", w, f"{kv}_new_{i}_0")
            dec_nodes.append(n("Mul", [f"{kv}_new_{i}_0", f"layer_scale_{i}"], [f"{kv}_new_{i}"]))
            dec_nodes.append(n("Concat", [f"past_{kv}_self_{i}", f"{kv}_new_{i}"], [f"present_{kv}_self_{i}"],
                               axis=2))
            dec_outs.append(helper.make_tensor_value_info(f"present_{kv}_self_{i}", F32, [B, HEADS, "T", HEAD]))
    dec_nodes += [*_attend(n, "q", "present_key_self_0", "present_value_self_0", "self"),
                  *_attend(n, "q", "past_key_cross_0", "past_value_cross_0", "cross"),
                  *_logits(n, "x", "self", "cross")]
    if layers > 1:  # the last layer's cross state counts too
        j = layers - 1
        dec_nodes[-1:] = [n("ReduceMean", [f"past_key_cross_{j}"], ["ck"], axes=[1, 2, 3], keepdims=1),
                          n("Reshape", ["ck", "shape_b11"], ["ck1"]), n("Add", ["ht", "ck1"], ["ht2"]),
                          n("MatMul", ["ht2", "wo"], ["logits"])]
    dec_inputs = [helper.make_tensor_value_info("input_ids", I32, [B, "L" if whole_sequence else 1])]
    if hidden_input:
        dec_inputs.append(helper.make_tensor_value_info("encoder_hidden_states", F32, [B, FRAMES, HIDDEN]))
    dec_inputs += [helper.make_tensor_value_info(f"past_{kv}_self_{i}", F32, [B, HEADS, "P", HEAD])
                   for i in range(layers) for kv in ("key", "value")]
    dec_inputs += [helper.make_tensor_value_info(f"past_{kv}_cross_{i}", F32, [B, HEADS, FRAMES, HEAD])
                   for i in range(layers) for kv in ("key", "value")]
    decoder = helper.make_graph(dec_nodes, "decoder", dec_inputs, dec_outs, inits)
    return encoder, decoder


_INPUTS = ["input_ids", "max_length", "min_length", "num_beams", "num_return_sequences", "length_penalty",
           "repetition_penalty", "vocab_mask", "prefix_vocab_mask", "attention_mask", "decoder_input_ids",
           "logits_processor", "cross_qk_layer_head", "extra_decoding_ids", "temperature"]
_FLOATS = ("input_ids", "length_penalty", "repetition_penalty", "temperature")


def whisper_model(values, attrs, outputs, op="WhisperBeamSearch", seed=0, whole_sequence=False, layers=1,
                  hidden_input=True, fed=("input_ids",)):
    """A model of one WhisperBeamSearch node; `values` maps input names to
    arrays (scalars become [1] tensors), those in `fed` are graph inputs."""
    arrays = {}
    for k, v in values.items():
        arrays[k] = np.asarray(v, np.float32 if k in _FLOATS else np.int32).reshape(
            -1 if np.ndim(v) == 0 else np.shape(v))
    last = max(_INPUTS.index(k) for k in arrays)
    node_inputs = [k if k in arrays else "" for k in _INPUTS[:last + 1]]
    encoder, decoder = whisper_subgraphs(seed, whole_sequence, layers, hidden_input)
    attrs = {"eos_token_id": EOS, "pad_token_id": PAD, "decoder_start_token_id": START, "model_type": 2,
             "encoder": encoder, "decoder": decoder, **attrs}
    node = helper.make_node(op, node_inputs, [o for o, _ in outputs], domain=MS, name="whisper_node", **attrs)
    feeds = {k: v for k, v in arrays.items() if k in fed}
    inits = [numpy_helper.from_array(v, k) for k, v in arrays.items() if k not in fed]
    graph = helper.make_graph(
        [node], "whisper_case",
        [helper.make_tensor_value_info(k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in feeds.items()],
        [helper.make_tensor_value_info(o, t, None) for o, t in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(MS, 1)],
                              ir_version=8)
    return model, feeds


def _whisper(batch=1, max_length=10, beams=3, ret=1, seed=7, attrs=None, extra=None, forced=None, scores=True,
             step_scores=False, op="WhisperBeamSearch", whole_sequence=False, layers=1, hidden_input=True,
             fed=("input_ids",)):
    """`forced`: decoder_input_ids [batch, n] (None: the start token alone)."""
    def build():
        values = {"input_ids": rand((batch, FEATURES, FRAMES), seed, low=-1.0, high=1.0),
                  "max_length": max_length, "min_length": 0, "num_beams": beams, "num_return_sequences": ret,
                  "length_penalty": 1.0}
        if forced is not None:
            values["decoder_input_ids"] = np.asarray(forced, np.int32)
        values.update(extra or {})
        outs = [("sequences", I32)] + ([("sequences_scores", F32)] if scores or step_scores else [])
        outs += [("scores", F32)] if step_scores else []
        return whisper_model(values, attrs or {}, outs, op=op, seed=seed, whole_sequence=whole_sequence,
                             layers=layers, hidden_input=hidden_input, fed=fed)
    return build


_VOCAB_MASK = (np.arange(VOCAB) % 3 != 1).astype(np.int32)
_PREFIX_MASK = np.stack([(np.arange(VOCAB) < 20), (np.arange(VOCAB) >= 25)]).astype(np.int32)
_NO_EOS = (np.arange(VOCAB) != EOS).astype(np.int32)
# eos, start, translate, transcribe, start of LM, no timestamps, then the timestamps 36-49
_TIMESTAMPS = {"eos_token_id": 30, "decoder_start_token_id": 31, "translate_token_id": 32, "transcribe_token_id": 33,
               "start_of_lm_token_id": 34, "no_timestamps_token_id": 35, "beginning_timestamp_token_id": 36}
_FORCED2 = [[START, 7, 12], [START, 9, 30]]
_FORCED3 = [[START, 3, 4, 5], [START, 44, 2, 8], [START, 11, 11, 6]]

CASES = [
    # the start token alone, or forced decoder ids ahead of the generated tokens; batch 1-3, beams 1-4
    Case("WhisperBeamSearch_b1_beams3", _whisper()),
    Case("WhisperBeamSearch_b2_forced_ids_return2", _whisper(batch=2, beams=3, ret=2, max_length=11, forced=_FORCED2)),
    Case("WhisperBeamSearch_b3_forced_ids_beams4", _whisper(batch=3, beams=4, ret=4, max_length=12, forced=_FORCED3,
                                                           seed=11)),
    Case("WhisperBeamSearch_b2_one_beam", _whisper(batch=2, beams=1, max_length=9, forced=_FORCED2)),
    Case("WhisperBeamSearch_no_scores_output", _whisper(batch=2, beams=3, ret=2, scores=False)),
    Case("WhisperBeamSearch_two_layers", _whisper(batch=2, beams=3, ret=2, max_length=11, layers=2, seed=5)),
    Case("WhisperBeamSearch_decoder_without_hidden_states", _whisper(batch=2, beams=3, ret=2, max_length=11,
                                                                     forced=_FORCED2, hidden_input=False, seed=3)),
    Case("WhisperBeamSearch_decoder_reads_whole_sequence", _whisper(batch=2, beams=3, ret=2, max_length=11,
                                                                    forced=_FORCED2, whole_sequence=True,
                                                                    extra={"repetition_penalty": 1.4})),
    Case("WhisperBeamSearch_whole_sequence_start_only", _whisper(batch=2, beams=2, ret=2, max_length=10,
                                                                 whole_sequence=True, seed=5)),
    Case("BeamSearch_model_type_2", _whisper(batch=2, beams=3, ret=2, max_length=10, forced=_FORCED2, op="BeamSearch")),
    # EOS: early_stopping on and off; length_penalty below and above 1
    Case("WhisperBeamSearch_eos_early_stopping", _whisper(batch=2, beams=3, ret=2, max_length=14,
                                                          attrs={"eos_token_id": 20, "early_stopping": 1})),
    Case("WhisperBeamSearch_eos_no_early_stopping", _whisper(batch=2, beams=3, ret=3, max_length=14,
                                                             attrs={"eos_token_id": 20})),
    Case("WhisperBeamSearch_eos_forced_b3", _whisper(batch=3, beams=3, ret=2, max_length=14, forced=_FORCED3,
                                                     attrs={"eos_token_id": 48})),
    Case("WhisperBeamSearch_length_penalty_0_6", _whisper(batch=2, beams=4, ret=3, max_length=14,
                                                          attrs={"eos_token_id": 20}, extra={"length_penalty": 0.6})),
    Case("WhisperBeamSearch_length_penalty_2", _whisper(batch=2, beams=4, ret=3, max_length=14, forced=_FORCED2,
                                                        attrs={"eos_token_id": 20}, extra={"length_penalty": 2.0},
                                                        fed=("input_ids", "length_penalty"))),
    # score processors
    Case("WhisperBeamSearch_repetition_penalty", _whisper(batch=2, beams=3, ret=2, max_length=12, forced=_FORCED2,
                                                          extra={"repetition_penalty": 1.5})),
    Case("WhisperBeamSearch_temperature", _whisper(batch=2, beams=3, ret=2, max_length=12,
                                                   extra={"temperature": 0.7})),
    Case("WhisperBeamSearch_no_repeat_ngram_2", _whisper(batch=2, beams=3, ret=3, max_length=14, forced=_FORCED2,
                                                         attrs={"no_repeat_ngram_size": 2})),
    Case("WhisperBeamSearch_min_length", _whisper(batch=2, beams=3, ret=2, max_length=14, attrs={"eos_token_id": 20},
                                                  extra={"min_length": 9})),
    Case("WhisperBeamSearch_vocab_mask", _whisper(batch=2, beams=3, ret=2, max_length=12, forced=_FORCED2,
                                                  extra={"vocab_mask": _VOCAB_MASK})),
    Case("WhisperBeamSearch_prefix_vocab_mask", _whisper(batch=2, beams=3, ret=2, max_length=12,
                                                         extra={"prefix_vocab_mask": _PREFIX_MASK})),
    Case("WhisperBeamSearch_logits_processor_0", _whisper(batch=2, beams=3, ret=2, extra={"logits_processor": 0})),
    # Whisper's timestamp rules (logits_processor 1), with its control tokens laid out as in Whisper's vocabulary
    Case("WhisperBeamSearch_timestamps_b2", _whisper(batch=2, beams=3, ret=2, max_length=14, attrs=_TIMESTAMPS,
                                                     extra={"logits_processor": 1})),
    Case("WhisperBeamSearch_timestamps_forced", _whisper(batch=3, beams=4, ret=3, max_length=16, attrs=_TIMESTAMPS,
                                                         forced=[[31, 33], [31, 32], [31, 35]], seed=11,
                                                         extra={"logits_processor": 1})),
    Case("WhisperBeamSearch_timestamps_b3", _whisper(batch=3, beams=3, ret=3, max_length=16, seed=21,
                                                     attrs=_TIMESTAMPS, extra={"logits_processor": 1})),
    Case("WhisperBeamSearch_timestamps_no_translate_id", _whisper(
        batch=2, beams=3, ret=2, max_length=14, extra={"logits_processor": 1},
        attrs={k: v for k, v in _TIMESTAMPS.items() if k != "translate_token_id"})),
    Case("WhisperBeamSearch_timestamps_eos_apart", _whisper(batch=3, beams=3, ret=2, max_length=16, seed=3,
                                                            attrs={**_TIMESTAMPS, "eos_token_id": 27},
                                                            extra={"logits_processor": 1})),
    Case("WhisperBeamSearch_timestamps_step_scores", _whisper(batch=2, beams=2, ret=2, max_length=10, seed=5,
                                                              attrs=_TIMESTAMPS, step_scores=True,
                                                              extra={"logits_processor": 1,
                                                                     "repetition_penalty": 1.3})),
    # the per-step scores output (EOS masked out, so that every step is taken)
    Case("WhisperBeamSearch_step_scores", _whisper(batch=2, beams=3, ret=2, max_length=9, step_scores=True,
                                                   forced=_FORCED2, extra={"vocab_mask": _NO_EOS})),
    Case("WhisperBeamSearch_all_inputs_fed", _whisper(batch=2, beams=3, ret=2, max_length=11, forced=_FORCED2,
                                                      fed=("input_ids", "max_length", "min_length", "num_beams",
                                                           "num_return_sequences", "length_penalty",
                                                           "decoder_input_ids"))),
]
