#!/usr/bin/env python3
"""LLMs as onnxruntime-genai's model builder writes them for the CPU (GroupQueryAttention
with a KV cache, SkipSimplifiedLayerNormalization, rotary embeddings inside the attention,
MatMulNBits with 4- or 8-bit weights and int8 activations, or float MatMul), decoded
greedily for 10 tokens through each runtime's InferenceSession: onnxruntime's and Onyx's.
The source models are small decoders of ten architectures (Llama, Qwen2, Gemma, Mistral,
Qwen3, Phi, OLMo, Granite, SmolLM3, Nemotron) built here with seeded, noisy weights and a
word-level tokenizer, saved with transformers, then converted by
`python -m onnxruntime_genai.models.builder -i HF_DIR -o OUT -p PRECISION -e cpu`.
Prints per model whether the tokens agree and the largest logit difference; where the tokens
differ, the first step's difference is set against how far onnxruntime's own logits move when
the embeddings move by one ulp (int8 activations flip at rounding boundaries).

Usage: VENV/bin/python scripts/check_genai_models.py WORK_DIR [ARCH ...]
(ARCH: a key of ARCHS; all but llama_big, a larger Llama for bench_genai.py, by default)
(VENV: pip install torch "transformers>=5" tokenizers onnxruntime-genai onnxruntime numpy,
with the onyx package importable, e.g. through PYTHONPATH). Exit status 1 if tokens differ by more
than rounding."""
import json
import os
import subprocess
import sys

import numpy as np

PRECISIONS = ('int4', 'int8', 'fp32')
STEPS = 10


# Architecture -> (transformers config and model class names, config beyond the common small
# sizes). The first ten are checked by default; llama_big is for timing (bench_genai.py).
ARCHS = {
    'llama': ('LlamaConfig', 'LlamaForCausalLM', dict(num_key_value_heads=2)),
    'qwen2': ('Qwen2Config', 'Qwen2ForCausalLM', dict(num_key_value_heads=2)),  # Q, K, V biases
    'gemma': ('GemmaConfig', 'GemmaForCausalLM', dict(num_key_value_heads=1, head_dim=32)),  # GELU MLP
    'mistral': ('MistralConfig', 'MistralForCausalLM', dict(num_key_value_heads=2)),
    'qwen3': ('Qwen3Config', 'Qwen3ForCausalLM', dict(num_key_value_heads=2, head_dim=32)),  # per-head Q, K norms
    'phi': ('PhiConfig', 'PhiForCausalLM', dict(partial_rotary_factor=0.5)),  # LayerNorm, parallel MLP, partial rotary
    'olmo': ('OlmoConfig', 'OlmoForCausalLM', dict(num_key_value_heads=2)),
    'granite': ('GraniteConfig', 'GraniteForCausalLM', dict(num_key_value_heads=2)),
    'smollm3': ('SmolLM3Config', 'SmolLM3ForCausalLM', dict(num_key_value_heads=2, pad_token_id=0)),
    'nemotron': ('NemotronConfig', 'NemotronForCausalLM', dict(num_key_value_heads=2)),
    'llama_big': ('LlamaConfig', 'LlamaForCausalLM',
                  dict(num_key_value_heads=4, vocab_size=32000, hidden_size=1024, intermediate_size=2816,
                       num_hidden_layers=8, num_attention_heads=16, max_position_embeddings=2048)),
}
SMALL = dict(vocab_size=512, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=256)


def build_hf(arch, out):
    import torch
    import transformers as tf
    from tokenizers import Tokenizer, models, pre_tokenizers
    if arch not in ARCHS:
        raise KeyError(f'unknown architecture {arch!r}: one of {", ".join(ARCHS)}')
    config_name, model_name, extra = ARCHS[arch]
    config = getattr(tf, config_name)(**{**SMALL, **extra})
    torch.manual_seed(0)
    model = getattr(tf, model_name)(config)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    model.save_pretrained(out)
    words = Tokenizer(models.WordLevel({f't{i}': i for i in range(config.vocab_size)}, unk_token='t0'))
    words.pre_tokenizer = pre_tokenizers.Whitespace()
    tf.PreTrainedTokenizerFast(tokenizer_object=words, bos_token='t1', eos_token='t2', unk_token='t0',
                               pad_token='t0').save_pretrained(out)


def greedy(runtime, model_path):
    rt = __import__('onyx' if runtime == 'onyx' else 'onnxruntime')
    return run_steps(rt.InferenceSession(model_path, providers=['CPUExecutionProvider']), decoder_config(model_path),
                     STEPS)


def decoder_config(model_path):
    """genai_config.json's decoder section: the cache's head count and size, named dims in the model."""
    return json.load(open(os.path.join(os.path.dirname(model_path), 'genai_config.json')))['model']['decoder']


def greedy_decode(session, decoder, ids, mask, steps):
    """`steps` greedy steps from prompts `ids` (`mask` 0 where padded), each step's present.* fed
    back as past_key_values.*: per step, the last-position logits and the seconds its run took."""
    import time
    cache = [i.name for i in session.get_inputs() if i.name.startswith('past_key_values.')]
    outputs = [o.name for o in session.get_outputs()]
    batch = ids.shape[0]
    past = {n: np.zeros((batch, decoder['num_key_value_heads'], 0, decoder['head_size']), np.float32) for n in cache}
    record = []
    for _ in range(steps):
        start = time.perf_counter()
        result = dict(zip(outputs, session.run(None, {'input_ids': ids, 'attention_mask': mask, **past})))
        record.append((result['logits'][:, -1], time.perf_counter() - start))
        ids = record[-1][0].argmax(-1)[:, None].astype(np.int64)
        past = {n: result[n.replace('past_key_values.', 'present.')] for n in cache}
        mask = np.concatenate([mask, np.ones((batch, 1), np.int64)], 1)
    return record


def run_steps(session, decoder, steps):
    """Tokens and last-position logits of `steps` greedy steps over a batch of two prompts, the
    second left-padded."""
    ids = np.array([[5, 17, 42, 99, 3, 64], [8, 8, 1, 2, 300, 77]], dtype=np.int64)
    mask = np.ones_like(ids)
    mask[1, :2] = 0
    logits = np.stack([step_logits for step_logits, _ in greedy_decode(session, decoder, ids, mask, steps)])
    return logits.argmax(-1).tolist(), logits


def ulp_sensitivity(model_path):
    """How far onnxruntime's own first-step logits move when the token embeddings move by one
    ulp (times 1 + 2^-23): with int8 activations, values next to a rounding boundary flip, and
    random weights carry the flips to the logits. A runtime whose results differ from ORT's by
    no more than this differs by rounding alone."""
    import tempfile
    import onnx
    import onnxruntime
    from onnx import helper, numpy_helper
    model = onnx.load(model_path)
    weights = {i.name for i in model.graph.initializer}
    lookup = next(n for n in model.graph.node if n.op_type == 'Gather' and n.input[0] in weights)
    embeddings = lookup.output[0]
    lookup.output[0] = embeddings + '_exact'
    model.graph.initializer.append(numpy_helper.from_array(np.array(1 + 2 ** -23, np.float32), 'one_ulp_up'))
    model.graph.node.insert(list(model.graph.node).index(lookup) + 1,
                            helper.make_node('Mul', [embeddings + '_exact', 'one_ulp_up'], [embeddings]))
    with tempfile.TemporaryDirectory() as tmp:
        moved = os.path.join(tmp, 'model.onnx')
        onnx.save(model, moved, save_as_external_data=True, location='model.onnx.data')
        first = [first_logits(onnxruntime, path, decoder_config(model_path)) for path in (model_path, moved)]
    return float(np.abs(first[0] - first[1]).max())


def first_logits(rt, model_path, decoder):
    """The first step's last-position logits (the prompt) through runtime module `rt`."""
    return run_steps(rt.InferenceSession(model_path, providers=['CPUExecutionProvider']), decoder, 1)[1][0]


def main(work, archs):
    failed = False
    for arch in archs or [a for a in ARCHS if a != 'llama_big']:
        hf = os.path.join(work, arch + '_hf')
        if not os.path.isdir(hf):
            build_hf(arch, hf)
        for precision in PRECISIONS:
            out = os.path.join(work, f'{arch}_{precision}')
            if not os.path.exists(os.path.join(out, 'model.onnx')):
                subprocess.run([sys.executable, '-m', 'onnxruntime_genai.models.builder', '-i', hf, '-m', arch, '-o',
                                out, '-p', precision, '-e', 'cpu'], check=True, capture_output=True)
            model = os.path.join(out, 'model.onnx')
            ort_tokens, ort_logits = greedy('onnxruntime', model)
            onyx_tokens, onyx_logits = greedy('onyx', model)
            same = ort_tokens == onyx_tokens
            note = ''
            if not same:  # fine only where ORT's first step moves as much under a one-ulp nudge
                first, nudged = float(np.abs(ort_logits[0] - onyx_logits[0]).max()), ulp_sensitivity(model)
                failed |= first > 2 * nudged
                note = (f'; first step {first:.2e}, ORT itself {nudged:.2e} with embeddings one ulp up: '
                        + ('rounding' if first <= 2 * nudged else 'TOO FAR'))
            print(f'{arch}_{precision:5s} tokens {"equal" if same else "differ"}, max logit difference '
                  f'{np.abs(ort_logits - onyx_logits).max():.2e} (largest logit {np.abs(ort_logits).max():.2f}){note}')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2:]))
