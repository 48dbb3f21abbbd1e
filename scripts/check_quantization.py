#!/usr/bin/env python3
"""Quantizes models with onyx.quantization and with onnxruntime.quantization, and
prints size, op counts and agreement with the float model for each.

  scripts/check_quantization.py --models /work/models --out /tmp/q resnet50:static bert_base:dynamic

MODELS holds NAME.onnx and NAME.input_K.npy. Static models are calibrated on the
sample input and 4 copies with 10% Gaussian noise, and checked on a fifth copy.
OUT receives the Onyx-quantized models with their inputs, ready for
/work/shared/bench/compare_ort.py --models OUT (ORT's go to OUT/ort_quantizer). ORT's QOperator quantizer needs
its pre-processing on PyTorch exports, so it gets quant_pre_process first."""
import argparse
import logging
import os
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime import quantization as ortq

import onyx
from onyx import quantization as onyxq


class Feeds:
    def __init__(self, feeds):
        self.it = iter(feeds)

    def get_next(self):
        return next(self.it, None)


def sample_feed(models, name):
    names = [i.name for i in ort.InferenceSession(f"{models}/{name}.onnx").get_inputs()]
    return {n: np.load(f"{models}/{name}.input_{k}.npy") for k, n in enumerate(names)}


def noisy_copies(feed, count):
    rng = np.random.default_rng(0)
    out = [feed]
    for _ in range(count):
        out.append({k: v + rng.normal(0, 0.1 * v.std(), v.shape).astype(v.dtype) if v.dtype == np.float32 else v
                    for k, v in feed.items()})
    return out


def agreement(ref, got):
    a, b = ref.ravel().astype(np.float64), got.ravel().astype(np.float64)
    cos = a @ b / (np.linalg.norm(a) * np.linalg.norm(b))
    text = f"cos={cos:.5f} max|diff|={np.abs(a - b).max():.3g}"
    if ref.ndim == 2:
        text += f" top1_equal={bool((ref.argmax(-1) == got.argmax(-1)).all())}"
    return text


def run(lib, path, feed):
    return lib.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, feed)[0]


def describe(tag, path, ref, feed):
    ops = Counter(n.op_type for n in onnx.load(path, load_external_data=False).graph.node)
    try:
        onyx_text = "onyx " + agreement(ref, run(onyx, path, feed))
    except Exception as e:  # noqa: BLE001 - e.g. com.microsoft ops Onyx lacks
        onyx_text = "onyx cannot run it: " + str(e).splitlines()[0][-90:]
    print(f"  {tag:24s} {os.path.getsize(path) / 1e6:7.1f} MB  {onyx_text} | ort {agreement(ref, run(ort, path, feed))}")
    print(f"  {'':24s} ops: {dict(ops.most_common(7))}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("specs", nargs="+", help="NAME:static or NAME:dynamic")
    args = ap.parse_args()
    logging.disable(logging.WARNING)
    os.makedirs(f"{args.out}/ort_quantizer", exist_ok=True)
    for spec in args.specs:
        name, mode = spec.split(":")
        src = f"{args.models}/{name}.onnx"
        feed = sample_feed(args.models, name)
        test_feed = noisy_copies(feed, 5)[-1]
        ref = run(ort, src, test_feed)
        print(f"{name} ({os.path.getsize(src) / 1e6:.1f} MB float)")
        jobs = []
        if mode == "dynamic":
            jobs.append(("dyn", lambda lib, out: lib.quantize_dynamic(src, out)))
        else:
            for fmt in ("QDQ", "QOperator"):
                def static(lib, out, fmt=fmt):
                    model = src
                    if lib is ortq and fmt == "QOperator":
                        model = f"{args.out}/ort_quantizer/{name}.pre.onnx"
                        ortq.quant_pre_process(src, model)
                    lib.quantize_static(model, out, Feeds(noisy_copies(feed, 4)), quant_format=lib.QuantFormat[fmt],
                                        per_channel=True, activation_type=lib.QuantType.QUInt8)
                jobs.append((fmt.lower(), static))
        for suffix, job in jobs:
            ours, theirs = f"{args.out}/{name}_{suffix}.onnx", f"{args.out}/ort_quantizer/{name}_{suffix}.onnx"
            job(onyxq, ours)
            job(ortq, theirs)
            for k, v in enumerate(feed.values()):
                np.save(f"{args.out}/{name}_{suffix}.input_{k}.npy", v)
            describe(f"onyx {suffix}", ours, ref, test_feed)
            describe(f"ORT quantizer {suffix}", theirs, ref, test_feed)


if __name__ == "__main__":
    main()
