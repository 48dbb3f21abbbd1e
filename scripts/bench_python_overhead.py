#!/usr/bin/env python3
"""Per-call overhead of InferenceSession.run, Onyx against onnxruntime:
a one-node model (Add of two [1, 4] floats) and, when present, bert_tiny.

usage: scripts/bench_python_overhead.py [--bert PATH] [--calls N] [--threads N]
Prints one line per (model, runtime) with median and p10 microseconds per call."""

import argparse
import os
import statistics
import time

import numpy as np
import onnx
from onnx import TensorProto, helper


def one_node_model() -> bytes:
    g = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        "one_node",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [1, 4]) for n in ("a", "b")],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, [1, 4])],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


def bert_feeds(sess, model_path):
    base = model_path[: -len(".onnx")]
    feeds = {}
    for i, arg in enumerate(sess.get_inputs()):
        p = f"{base}.input_{i}.npy"
        if os.path.exists(p):
            feeds[arg.name] = np.load(p)
        else:
            shape = [d if isinstance(d, int) else 1 for d in arg.shape]
            dt = np.int64 if "int64" in arg.type else np.float32
            feeds[arg.name] = np.zeros(shape, dt)
    return feeds


def measure(mod, model, feeds_fn, calls, threads, reps=7):
    so = mod.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = mod.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds = feeds_fn(sess)
    for _ in range(max(10, calls // 10)):
        sess.run(None, feeds)
    per_call = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(calls):
            sess.run(None, feeds)
        per_call.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(per_call), min(per_call)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bert", default="/work/models/bert_tiny.onnx")
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    import onnxruntime

    import onyx

    tiny = one_node_model()
    x = np.ones((1, 4), np.float32)
    cases = [("one_node Add [1,4]", tiny, lambda s: {"a": x, "b": x}, args.calls)]
    if os.path.exists(args.bert):
        cases.append(("bert_tiny", args.bert, lambda s: bert_feeds(s, args.bert), max(200, args.calls // 50)))
    for name, model, feeds_fn, calls in cases:
        res = {}
        for label, mod in (("onnxruntime", onnxruntime), ("onyx", onyx)):
            med, best = measure(mod, model, feeds_fn, calls, args.threads)
            res[label] = med
            print(f"{name:22s} {label:12s} median {med:9.2f} us/call   best {best:9.2f} us/call")
        print(f"{name:22s} onyx / onnxruntime = {res['onyx'] / res['onnxruntime']:.2f}")


if __name__ == "__main__":
    main()
