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
Exit status 1 if any case fails. On x86 CPUs without VNNI, onnxruntime's
u8 x s8 products saturate: a case with an int8 operand that differs is
checked against its exact mode (session.x64quantprecision), and where that
mode does not cover the kernel either, reported as SKIP with the reason.

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


# Integer matrix products whose int8 operand onnxruntime multiplies with
# vpmaddubsw on x86 CPUs without VNNI: pairs of u8 x s8 products saturate at
# 16 bits there, so its result is not the exact one the op defines (and Onyx
# computes on every CPU).
INT8_GEMM_OPS = {"QGemm", "MatMulIntegerToFloat", "DynamicQuantizeMatMul", "QLinearConv", "DynamicQuantizeLSTM",
                 "QAttention", "MatMulInteger", "ConvInteger", "QLinearMatMul"}


def cpu_has_vnni():
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return True  # not Linux x86: assume no saturating kernels
    return "avx512_vnni" in flags or "avx_vnni" in flags or "avx2" not in flags


def multiplies_int8(model):
    """Whether an int8 tensor feeds one of INT8_GEMM_OPS."""
    int8 = {t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.INT8}
    int8 |= {v.name for v in list(model.graph.input) + list(model.graph.value_info)
             if v.type.tensor_type.elem_type == onnx.TensorProto.INT8}
    return any(n.op_type in INT8_GEMM_OPS and int8.intersection(n.input) for n in model.graph.node)


def compare_outputs(case, sess, expected, got):
    """(largest float difference, problems) of Onyx's outputs against ORT's."""
    if len(got) != len(expected):
        return 0.0, [f"{len(got)} outputs, expected {len(expected)}"]
    worst, problems = 0.0, []
    for out, e, g in zip(sess.get_outputs(), expected, got):
        d, problem = compare(out.name, np.asarray(e), parse_output(g, e), case.rtol, case.atol)
        worst = max(worst, d)
        if problem:
            problems.append(problem)
    return worst, problems


def ort_session(model_path, exact_u8s8=False):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    if exact_u8s8:  # onnxruntime's u8u8 path for u8s8 products (not every kernel honours it)
        so.add_session_config_entry("session.x64quantprecision", "1")
    return ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])


def check_case(case, args):
    """Returns (largest float difference, problems, why skipped or None)."""
    model, feeds = case.build()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = os.path.join(args.keep, case.name) if args.keep else tmp
        os.makedirs(workdir, exist_ok=True)
        model_path = os.path.join(workdir, f"{case.name}.onnx")
        onnx.save(model, model_path)
        sess = ort_session(model_path)
        run = lambda s: case.ort_run(s, feeds) if case.ort_run else s.run(None, feeds)
        got = run_onyx(args.onyx, model_path, feeds, workdir, args.threads)
        worst, problems = compare_outputs(case, sess, run(sess), got)
        if not problems or cpu_has_vnni() or not multiplies_int8(model):
            return worst, problems, None
        # This CPU's onnxruntime saturates u8 x s8 products: ask for its exact path.
        try:
            exact = ort_session(model_path, exact_u8s8=True)
            worst, problems = compare_outputs(case, exact, run(exact), got)
        except Exception:  # the exact mode drops some int8 kernels
            pass
        if not problems:
            return worst, problems, None
        return worst, [], "onnxruntime's int8 kernels saturate on this CPU (no VNNI): no exact reference here"


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
    failed = skipped = 0
    for case in cases:
        try:
            worst, problems, skip = check_case(case, args)
        except Exception as e:  # a case that cannot run is a failed case, not a stopped script
            worst, problems, skip = float("nan"), [f"{type(e).__name__}: {e}"], None
        failed += bool(problems)
        skipped += bool(skip)
        status = "SKIP" if skip else "OK  " if not problems else "FAIL"
        detail = skip or "; ".join(problems)
        print(f"{case.name:48s} max|diff| {worst:9.2e}  {status}" + ("  " + detail if detail else ""), flush=True)
    print(f"{len(cases) - failed - skipped} of {len(cases)} contrib-op cases match ONNX Runtime"
          + (f", {skipped} skipped (no exact reference on this CPU)" if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
