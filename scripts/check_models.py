#!/usr/bin/env python3
"""Runs each model of a folder (NAME.onnx + NAME.input_K.npy, as
shared/models/make_models.py writes them) through `onyx run --output-dir`
and through onnxruntime, and prints the relative max difference per output
(max |onyx - ort| / max |ort|). Exit status 1 if any exceeds --tol.

Usage: check_models.py --onyx build/onyx --models DIR [--tol 1e-3] [NAME ...]
Needs numpy, onnx and onnxruntime (pip install numpy onnx onnxruntime)."""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import numpy_helper


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--tol", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(a.models, "*.onnx")))
    worst = 0.0
    for name in names:
        model = os.path.join(a.models, name + ".onnx")
        inputs = sorted(glob.glob(os.path.join(a.models, name + ".input_*.npy")))
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        try:
            sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
            feeds = {i.name: np.load(p) for i, p in zip(sess.get_inputs(), inputs)}
            expected = sess.run(None, feeds)
        except Exception as e:  # noqa: BLE001 - no reference to compare with; not Onyx's failure
            print(f"{name:16s} skipped: onnxruntime fails: {str(e).splitlines()[0][:200]}")
            continue
        with tempfile.TemporaryDirectory() as out:
            cmd = [a.onyx, "run", model, "--output-dir", out, "--threads", str(a.threads)]
            for p in inputs:
                cmd += ["--input", p]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{name:16s} ERROR {r.stderr.strip()[:300]}")
                worst = float("inf")
                continue
            for k, e in enumerate(expected):
                t = onnx.TensorProto()
                with open(os.path.join(out, f"output_{k}.pb"), "rb") as f:
                    t.ParseFromString(f.read())
                got = numpy_helper.to_array(t)
                if got.shape != e.shape:
                    print(f"{name:16s} output {k}: shape {got.shape} != {e.shape}")
                    worst = float("inf")
                    continue
                if e.size == 0:  # e.g. a detector that keeps no box: the shapes are the check
                    rel = 0.0
                else:
                    rel = float(np.max(np.abs(got.astype(np.float64) - e)) / max(np.max(np.abs(e)), 1e-30))
                worst = max(worst, rel)
                print(f"{name:16s} output {k} {str(e.shape):18s} rel max diff {rel:.2e}")
    print(f"worst rel max diff: {worst:.2e} (tolerance {a.tol:g})")
    return 0 if worst <= a.tol else 1


if __name__ == "__main__":
    sys.exit(main())
