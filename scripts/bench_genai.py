#!/usr/bin/env python3
"""Prompt and decode-step latency of an onnxruntime-genai model (a folder with model.onnx and
genai_config.json, as check_genai_models.py or the genai builder make) through onnxruntime's
and Onyx's InferenceSession, alternating, each round in its own process: a PROMPT-token
prompt, then STEPS greedy decode steps feeding the KV cache back; medians over ROUNDS rounds.
Batch 1. A benchmark, not a test.

Usage: PYTHONPATH=<dir holding onyx> python3 scripts/bench_genai.py MODEL_DIR [--threads 1 2]
       [--prompt 128] [--steps 16] [--rounds 3]"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_genai_models import decoder_config, greedy_decode  # noqa: E402


def session(runtime, model, threads):
    rt = __import__('onyx' if runtime == 'onyx' else 'onnxruntime')
    options = rt.SessionOptions()
    options.intra_op_num_threads = threads
    return rt.InferenceSession(model, options, providers=['CPUExecutionProvider'])


def generate(sess, decoder, prompt, steps, rng):
    """Seconds for the prompt and the median decode step."""
    ids = rng.integers(3, 1000, (1, prompt)).astype(np.int64)
    times = [seconds for _, seconds in greedy_decode(sess, decoder, ids, np.ones_like(ids), steps + 1)]
    return times[0], float(np.median(times[1:]))


def measure(runtime, model_dir, threads, prompt, steps, seed):
    """One round in this process: (prompt seconds, median decode-step seconds)."""
    model = os.path.join(model_dir, 'model.onnx')
    decoder = decoder_config(model)
    sess = session(runtime, model, threads)
    generate(sess, decoder, 16, 2, np.random.default_rng(1))  # warm-up
    return generate(sess, decoder, prompt, steps, np.random.default_rng(seed))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('model_dir')
    ap.add_argument('--threads', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--prompt', type=int, default=128)
    ap.add_argument('--steps', type=int, default=16)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--one', help=argparse.SUPPRESS)  # RUNTIME,THREADS,SEED: one round, printed as JSON
    a = ap.parse_args()
    if a.one:
        runtime, threads, seed = a.one.split(',')
        print(json.dumps(measure(runtime, a.model_dir, int(threads), a.prompt, a.steps, int(seed))))
        return
    # Each round in its own process, the runtimes alternating: onnxruntime's threads spin after
    # a run and would take the cores from the other runtime's next one.
    for threads in a.threads:
        results = {'onnxruntime': [], 'onyx': []}
        for k in range(a.rounds):
            for runtime in results:
                cmd = [sys.executable, __file__, a.model_dir, '--prompt', str(a.prompt), '--steps', str(a.steps),
                       '--one', f'{runtime},{threads},{k}']
                out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
                results[runtime].append(json.loads(out.strip().splitlines()[-1]))
        ms = {r: [1e3 * float(np.median([x[i] for x in v])) for i in (0, 1)] for r, v in results.items()}
        print(f'threads {threads}: prompt ({a.prompt} tokens) ORT {ms["onnxruntime"][0]:.1f} ms, Onyx '
              f'{ms["onyx"][0]:.1f} ms, ORT/Onyx {ms["onnxruntime"][0] / ms["onyx"][0]:.2f}; decode step ORT '
              f'{ms["onnxruntime"][1]:.2f} ms, Onyx {ms["onyx"][1]:.2f} ms, ORT/Onyx '
              f'{ms["onnxruntime"][1] / ms["onyx"][1]:.2f}')


if __name__ == '__main__':
    main()
