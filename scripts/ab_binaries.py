#!/usr/bin/env python3
"""Times two onyx builds on the same models, alternating: R rounds of
`onyx perf MODEL -r N` per binary (the order swapped every round), then the
median and minimum of each binary's round medians and their ratio A/B
(> 1: B is faster). On a shared machine whose speed drifts, alternating
rounds keeps the comparison fair where separate runs are minutes apart.

Usage: python3 scripts/ab_binaries.py A_ONYX B_ONYX MODEL.onnx... [--threads T] [--rounds R] [--runs N]
(inputs: MODEL's sibling files MODEL.input_K.npy, as make_models.py writes them)"""
import argparse
import glob
import json
import os
import statistics
import subprocess

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument('a')
ap.add_argument('b')
ap.add_argument('models', nargs='+')
ap.add_argument('--threads', type=int, default=2)
ap.add_argument('--rounds', type=int, default=8)
ap.add_argument('--runs', type=int, default=20)
opts = ap.parse_args()


def median_ms(binary, model, inputs):
    cmd = [binary, 'perf', model, '-x', str(opts.threads), '-r', str(opts.runs)] + inputs
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])['median_ms']


for model in opts.models:
    inputs = []
    for f in sorted(glob.glob(model[:-5] + '.input_*.npy')):
        inputs += ['--input', f]
    times = {opts.a: [], opts.b: []}
    for r in range(opts.rounds):
        for binary in (opts.a, opts.b) if r % 2 == 0 else (opts.b, opts.a):
            times[binary].append(median_ms(binary, model, inputs))
    a, b = times[opts.a], times[opts.b]
    print('%-24s A %8.3f (min %8.3f)  B %8.3f (min %8.3f)  A/B %.3f (min %.3f)' %
          (os.path.basename(model)[:-5], statistics.median(a), min(a), statistics.median(b), min(b),
           statistics.median(a) / statistics.median(b), min(a) / min(b)), flush=True)
