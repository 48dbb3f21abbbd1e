#!/usr/bin/env python3
"""Checks Onyx against ONNX Runtime on ONNX Runtime's contrib ops (domain
com.microsoft and ORT's extra ops in the default domain): what the ORT
transformers optimizer, ORT's quantization tools and models saved from ORT
sessions contain.

Each case (scripts/contrib_cases/<family>.py, list CASES) builds a small
model and its inputs. The checker runs them through onnxruntime (one thread)
and through `onyx run MODEL --input NAME=FILE.npy --output-dir DIR`, and
compares every output: integers equal, floats within the case's rtol/atol
(|onyx - ort| <= atol + rtol |ort|), shapes and types the same. One line per
case: name, the largest absolute float difference, OK or FAIL and why.
Exit status 1 if any case fails.

Usage:
  scripts/check_contrib_ops.py [--onyx build/onyx] [--keep DIR] [--list] [NAME_SUBSTRING ...]

Needs numpy, onnx, onnxruntime.
"""
import argparse
import importlib
import logging
import os
import pkgutil
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

import contrib_cases
from ort_compare import compare, parse_output, run_onyx


def all_cases():
    cases = []
    for info in sorted(pkgutil.iter_modules(contrib_cases.__path__), key=lambda m: m.name):
        cases += importlib.import_module(f"contrib_cases.{info.name}").CASES
    return cases


def check_case(case, args):
    """Returns (largest float difference, problems)."""
    model, feeds = case.build()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = os.path.join(args.keep, case.name) if args.keep else tmp
        os.makedirs(workdir, exist_ok=True)
        model_path = os.path.join(workdir, f"{case.name}.onnx")
        onnx.save(model, model_path)
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
        expected = case.ort_run(sess, feeds) if case.ort_run else sess.run(None, feeds)
        got = run_onyx(args.onyx, model_path, feeds, workdir, args.threads)
    if len(got) != len(expected):
        return 0.0, [f"{len(got)} outputs, expected {len(expected)}"]
    worst, problems = 0.0, []
    for out, e, g in zip(sess.get_outputs(), expected, got):
        d, problem = compare(out.name, np.asarray(e), parse_output(g, e), case.rtol, case.atol)
        worst = max(worst, d)
        if problem:
            problems.append(problem)
    return worst, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onyx", default="build/onyx", help="the onyx CLI (default build/onyx)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--keep", help="keep each case's model, inputs and outputs in DIR/NAME")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("names", nargs="*", help="run only cases whose name contains one of these")
    args = ap.parse_args()
    cases = [c for c in all_cases() if not args.names or any(n in c.name for n in args.names)]
    if args.list:
        print("\n".join(c.name for c in cases))
        return 0
    if not cases:
        print("no case matches", args.names)
        return 1
    ort.set_default_logger_severity(3)
    logging.getLogger("onnxruntime").setLevel(logging.WARNING)  # its quantizers log each step at INFO
    failed = 0
    for case in cases:
        try:
            worst, problems = check_case(case, args)
        except Exception as e:  # a case that cannot run is a failed case, not a stopped script
            worst, problems = float("nan"), [f"{type(e).__name__}: {e}"]
        failed += bool(problems)
        status = "OK  " if not problems else "FAIL"
        print(f"{case.name:48s} max|diff| {worst:9.2e}  {status}" + ("  " + "; ".join(problems) if problems else ""),
              flush=True)
    print(f"{len(cases) - failed} of {len(cases)} contrib-op cases match ONNX Runtime")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
