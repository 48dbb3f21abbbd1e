#!/usr/bin/env python3
"""Checks the graph optimizer on a folder of models (NAME.onnx + NAME.input_K.npy):
- outputs at every level equal those at level disable (rel max diff <= --tol);
- the model saved by `onyx optimize` passes onnx.checker, and Onyx reloads it
  with the same outputs; at level basic onnxruntime runs it with the same outputs.
Usage: check_levels.py --onyx build/onyx --models DIR [NAME ...]"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

LEVELS = ["disable", "basic", "extended", "all"]


def onyx_outputs(onyx, model, inputs, level, out):
    cmd = [onyx, "run", model, "--output-dir", out, "--opt-level", level, "--threads", "2"]
    for p in inputs:
        cmd += ["--input", p]
    subprocess.run(cmd, check=True, capture_output=True)
    res = []
    for k in range(len(glob.glob(os.path.join(out, "output_*.pb")))):
        t = onnx.TensorProto()
        with open(os.path.join(out, f"output_{k}.pb"), "rb") as f:
            t.ParseFromString(f.read())
        res.append(numpy_helper.to_array(t))
    return res


def rel(a, b):
    if a.shape != b.shape:
        return float('inf')
    if b.size == 0:  # e.g. a detector that keeps no box: the shapes are the check
        return 0.0
    return float(np.max(np.abs(a.astype(np.float64) - b)) / max(float(np.max(np.abs(b))), 1e-30))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--onyx", required=True)
    ap.add_argument("--models", required=True)
    ap.add_argument("--tol", type=float, default=1e-4)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    names = a.names or sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(a.models, "*.onnx")))
    ok = True
    for name in names:
        model = os.path.join(a.models, name + ".onnx")
        inputs = sorted(glob.glob(os.path.join(a.models, name + ".input_*.npy")))
        with tempfile.TemporaryDirectory() as tmp:
            base = onyx_outputs(a.onyx, model, inputs, "disable", os.path.join(tmp, "disable"))
            for level in LEVELS[1:]:
                got = onyx_outputs(a.onyx, model, inputs, level, os.path.join(tmp, level))
                worst = max(rel(g, b) for g, b in zip(got, base))
                saved = os.path.join(tmp, f"{level}.onnx")
                subprocess.run([a.onyx, "optimize", model, saved, "--opt-level", level], check=True, capture_output=True)
                onnx.checker.check_model(saved)
                reloaded = onyx_outputs(a.onyx, saved, inputs, "disable", os.path.join(tmp, level + "_reload"))
                reload_diff = max(rel(g, b) for g, b in zip(reloaded, got))
                line = f"{name:16s} {level:9s} vs disable {worst:.2e}  saved+reloaded {reload_diff:.2e}"
                if level == "basic":
                    import onnxruntime as ort
                    sess = ort.InferenceSession(saved, providers=["CPUExecutionProvider"])
                    feeds = {i.name: np.load(p) for i, p in zip(sess.get_inputs(), inputs)}
                    ort_diff = max(rel(o, b) for o, b in zip(sess.run(None, feeds), base))
                    line += f"  onnxruntime on saved {ort_diff:.2e}"
                    ok &= ort_diff <= 1e-3
                print(line, flush=True)
                ok &= worst <= a.tol and reload_diff <= a.tol
    print("all levels match" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
