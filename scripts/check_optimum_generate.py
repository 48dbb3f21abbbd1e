#!/usr/bin/env python3
"""Greedy generation (and, for encoders, one forward pass) through Optimum's ORTModelFor* classes (code written for onnxruntime:
sessions, KV-cache feeds, the merged decoder's If branch) on the models of
make_optimum_models.py, once with onnxruntime and once with Onyx's classes put in its place
(InferenceSession, SessionOptions, OrtValue, ...), each in its own process. Compares the
generated tokens (must be equal) and the per-step scores (max abs difference).
Usage: VENV/bin/python scripts/check_optimum_generate.py [--time REPEATS] MODELS_DIR [NAME ...]
(--time: also the median wall time of REPEATS generate calls per runtime; not a test).
(VENV as make_optimum_models.py's, with the onyx package importable, e.g. through PYTHONPATH)."""
import json
import os
import subprocess
import sys
import time

import numpy as np

# onnxruntime's public classes and functions that a program uses; Onyx's go in their place.
SWAPPED = ['InferenceSession', 'SessionOptions', 'GraphOptimizationLevel', 'ExecutionMode', 'RunOptions', 'OrtValue',
           'IOBinding', 'SessionIOBinding', 'get_available_providers', 'get_device', 'NodeArg', 'ModelMetadata']
STEPS = 12


def generate(model_dir, runtime, repeats):
    import onnxruntime
    if runtime == 'onyx':
        import onyx
        for name in SWAPPED:
            if hasattr(onyx, name):
                setattr(onnxruntime, name, getattr(onyx, name))
    import torch
    from optimum import onnxruntime as opt
    arch = json.load(open(os.path.join(model_dir, 'config.json')))['model_type']
    if arch in ONE_PASS:
        return forward(opt, model_dir, arch, repeats)
    if arch == 'whisper':
        model = opt.ORTModelForSpeechSeq2Seq.from_pretrained(model_dir)
        inputs = dict(input_features=torch.from_numpy(np.random.default_rng(0).standard_normal((2, 80, 3000),
                                                                                              dtype=np.float32)))
    else:
        cls = opt.ORTModelForSeq2SeqLM if arch in ('t5', 'bart') else opt.ORTModelForCausalLM
        model = cls.from_pretrained(model_dir)
        ids = torch.tensor([[5, 17, 42, 99, 3, 64], [8, 8, 1, 2, 300, 77]])
        mask = torch.ones_like(ids)
        mask[1, :2] = 0  # a left-padded row
        inputs = dict(input_ids=ids, attention_mask=mask)
    out, ms = timed(lambda: model.generate(**inputs, max_new_tokens=STEPS, min_new_tokens=STEPS, do_sample=False,
                                           output_scores=True, return_dict_in_generate=True, pad_token_id=0),
                    repeats)
    return dict(tokens=out.sequences.tolist(), scores=[s.numpy().tolist() for s in out.scores],
                session_modules=session_modules(model), ms=ms)


def timed(call, repeats):
    """call()'s last result and the median of `repeats` calls' wall times, in ms."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return out, 1000 * float(np.median(times))


def session_modules(model):
    """The modules of the classes of a model's sessions (its own, its encoder's and decoders')."""
    sessions = [v for v in vars(model).values() if type(v).__name__ == 'InferenceSession']
    sessions += [part.session for part in [model, *vars(model).values()] if hasattr(part, 'session')]
    return sorted({type(s).__module__ for s in sessions})


# Models compared on one forward pass: model_type -> (ORTModelFor* class, inputs).
ONE_PASS = {
    'bert': ('ORTModelForFeatureExtraction', 'text'),
    'roberta': ('ORTModelForSequenceClassification', 'text'),
    'distilbert': ('ORTModelForQuestionAnswering', 'text'),
    'deberta-v2': ('ORTModelForTokenClassification', 'text'),
    'electra': ('ORTModelForMaskedLM', 'text'),
    'vit': ('ORTModelForImageClassification', 'image'),
    'swin': ('ORTModelForImageClassification', 'image'),
    'segformer': ('ORTModelForSemanticSegmentation', 'image'),
    'clip': ('ORTModelForZeroShotImageClassification', 'text+image'),
    'wav2vec2': ('ORTModelForCTC', 'audio'),
}


def forward(opt, model_dir, arch, repeats):
    """One forward pass: the argmax of the first output as `tokens`, every output as `scores`."""
    import torch
    cls_name, kind = ONE_PASS[arch]
    model = getattr(opt, cls_name).from_pretrained(model_dir)
    rng = np.random.default_rng(0)
    inputs = {}
    if 'text' in kind:
        ids = torch.from_numpy(rng.integers(3, 1000, (2, 11)))
        mask = torch.ones_like(ids)
        mask[1, :3] = 0
        inputs.update(input_ids=ids, attention_mask=mask)
    if 'image' in kind:
        inputs['pixel_values'] = torch.from_numpy(rng.standard_normal((2, 3, 64, 64), dtype=np.float32))
    if kind == 'audio':
        inputs['input_values'] = torch.from_numpy(rng.standard_normal((2, 16000), dtype=np.float32))
    out, ms = timed(lambda: model(**inputs), repeats)
    values = [v.detach().numpy() for v in out.values() if isinstance(v, torch.Tensor)]
    return dict(tokens=values[0].argmax(-1).tolist(), scores=[v.tolist() for v in values],
                session_modules=session_modules(model), ms=ms)


def score_diff(a, b):
    """Max abs difference of finite scores; inf where the -inf (suppressed tokens) differ."""
    finite = np.isfinite(a)
    if not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite]):
        return float('inf')
    return float(np.max(np.abs(a[finite] - b[finite]), initial=0.0))


def run_worker(model_dir, runtime, repeats):
    proc = subprocess.run([sys.executable, __file__, '--worker', model_dir, runtime, str(repeats)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f'exit {proc.returncode}'
    return json.loads(proc.stdout.strip().splitlines()[-1]), None


def main():
    if sys.argv[1] == '--worker':
        print(json.dumps(generate(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
        return 0
    args = sys.argv[1:]
    repeats = 1
    if args[0] == '--time':
        repeats, args = int(args[1]), args[2:]
    root = args[0]
    names = args[1:] or sorted(d[4:] for d in os.listdir(root) if d.startswith('opt_'))
    failures = 0
    for name in names:
        model_dir = os.path.join(root, f'opt_{name}')
        ref, err = run_worker(model_dir, 'ort', repeats)
        got, err2 = (None, None) if err else run_worker(model_dir, 'onyx', repeats)
        if err or err2:
            print(f'{name:10s} ERROR {"onnxruntime" if err else "onyx"}: {err or err2}')
            failures += 1
            continue
        if not any(m.startswith('onyx') for m in got['session_modules']):
            print(f'{name:10s} ERROR: the sessions were not Onyx\'s ({got["session_modules"]})')
            failures += 1
            continue
        same = ref['tokens'] == got['tokens']
        diff = max(score_diff(np.array(a), np.array(b)) for a, b in zip(ref['scores'], got['scores']))
        failures += not same
        timing = f'  generate ms: onnxruntime {ref["ms"]:.1f} onyx {got["ms"]:.1f}' if repeats > 1 else ''
        print(f'{name:10s} tokens {"equal" if same else "DIFFER"}  score max abs diff {diff:.2e}{timing}')
        if not same:
            print(f'  onnxruntime {ref["tokens"]}\n  onyx        {got["tokens"]}')
    print(f'{len(names) - failures} of {len(names)} give the same tokens (one-pass models: the same argmax)')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
