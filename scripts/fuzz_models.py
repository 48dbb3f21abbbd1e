#!/usr/bin/env python3
"""Feeds Onyx malformed models and hostile inputs: mutates valid models
(random bytes; or protobuf fields: attributes, node inputs and outputs,
initializer dims and data, opsets, op types, element types, also inside
subgraphs) or one of their inputs (extreme integers such as indices, sizes
and counts of 2^40 or -1; NaN / inf floats; an empty or reshaped array) and
runs `onyx run MODEL --input ... --output-dir DIR` on each. Each must give a
result or a clear one-line error, never a crash or a hang: the script prints
every run that died by a signal, ran past the time limit, or failed without
an `onyx: error:` line, keeps that model as FUZZ_DIR/mN.onnx.keep (or that
input as FUZZ_DIR/mN.npy.keep), and exits 1 if there was any.

Seed models: every MODEL.onnx given (its inputs MODEL.input_K.npy beside it,
as make_models.py writes them), and every DIR/CASE/CASE.onnx of a
`check_contrib_ops.py --keep DIR` tree (its inputs NAME.npy beside it).

Usage:
  scripts/fuzz_models.py [--onyx build/onyx] [--runs N] [--seed S] [--dir FUZZ_DIR] MODEL_OR_KEEP_DIR...

Needs numpy and onnx.
"""
import argparse
import glob
import os
import random
import subprocess
import sys

import onnx


def seed_models(paths):
    """(model path, onyx --input arguments) for each seed."""
    seeds = []
    for p in paths:
        if os.path.isdir(p):
            for m in sorted(glob.glob(os.path.join(p, "*", "*.onnx"))):
                feeds = sorted(glob.glob(os.path.join(os.path.dirname(m), "*.npy")))
                seeds.append((m, [f"{os.path.basename(f)[:-4]}={f}" for f in feeds]))
        else:
            seeds.append((p, sorted(glob.glob(p[:-5] + ".input_*.npy"))))
    return seeds


def mutate_bytes(rng, data):
    b = bytearray(data)
    kind = rng.choice(["flip", "truncate", "zero", "duplicate"])
    if kind == "flip":
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif kind == "truncate":
        b = b[:rng.randrange(len(b))]
    elif kind == "zero":
        i = rng.randrange(len(b))
        n = min(rng.randint(1, 64), len(b) - i)
        b[i:i + n] = bytes(n)
    else:
        i, j = rng.randrange(len(b)), rng.randrange(len(b))
        b[i:i] = b[j:j + rng.randint(1, 32)]
    return bytes(b)


def mutate_node(rng, g, n):
    """Mutates one field of node n of graph g; False when the chosen field does not apply."""
    kind = rng.choice(["attribute", "input", "output", "op_type"])
    if kind == "attribute" and n.attribute:
        a = rng.choice(n.attribute)
        if a.ints:
            a.ints[rng.randrange(len(a.ints))] = rng.choice([-1, 0, 3, 1000000, 2**40, -2**40])
        elif a.type == onnx.AttributeProto.INT:
            a.i = rng.choice([-7, -1, 0, 99, 2**40])
        elif a.type == onnx.AttributeProto.FLOAT:
            a.f = rng.choice([float("nan"), -1.0, 0.0, 1e30])
        else:
            return False
    elif kind == "input" and n.input:
        n.input[rng.randrange(len(n.input))] = rng.choice(["", "not_a_value", n.output[0] if n.output else ""])
    elif kind == "output" and n.output:
        n.output[0] = rng.choice(["", g.input[0].name if g.input else "x", "duplicate"])
    elif kind == "op_type":
        n.op_type = rng.choice(["Conv", "NoSuchOp", "Loop", "If", "Reshape", "Gather", ""])
    else:
        return False
    return True


def mutate_feed(rng, feed, out_path):
    """Writes a hostile version of one input (an `--input` argument) to out_path; the new argument."""
    import numpy as np
    name, path = feed.split("=", 1) if "=" in feed and not os.path.exists(feed) else (None, feed)
    try:
        a = np.load(path, allow_pickle=False)
    except ValueError:  # an element type numpy lacks (float8 written by ml_dtypes)
        return None
    kind = rng.choice(["values", "values", "empty", "reshape"])
    if kind == "empty" and a.ndim > 0:
        a = a[:0]
    elif kind == "reshape" and a.size > 0:
        a = a.reshape(a.shape + (1,)) if rng.random() < 0.5 else a.reshape(-1)
    elif a.size > 0 and a.dtype.kind in "iub":
        flat = a.reshape(-1).copy()
        if a.dtype.kind == "b":
            flat[rng.randrange(flat.size)] ^= True
        else:
            info = np.iinfo(a.dtype)
            # (not int32's max: a window or range of 2^31 - 1 is a valid, if slow, request)
            value = rng.choice([-2**40, -2**31, -1, 0, 2**40, info.min] + ([info.max] if a.itemsize != 4 else []))
            flat[rng.randrange(flat.size)] = min(max(value, info.min), info.max)
        a = flat.reshape(a.shape)
    elif a.size > 0 and a.dtype.kind in "fc":
        flat = a.reshape(-1).copy()
        with np.errstate(over="ignore"):  # 1e30 is inf in float16
            for _ in range(rng.randint(1, 3)):
                flat[rng.randrange(flat.size)] = rng.choice([float("nan"), float("inf"), -float("inf"), 1e30, -1e30])
        a = flat.reshape(a.shape)
    else:
        return None
    np.save(out_path, a)
    return f"{name}={out_path}" if name else out_path


def mutate_proto(rng, path):
    m = onnx.load(path)
    g = m.graph
    kind = rng.choice(["node", "node", "node", "dims", "data", "opset", "dtype"])
    if kind == "node" and g.node:
        n = rng.choice(g.node)
        subgraphs = [a.g for a in n.attribute if a.type == onnx.AttributeProto.GRAPH and a.g.node]
        if subgraphs and rng.random() < 0.5:
            g = rng.choice(subgraphs)
            n = rng.choice(g.node)
        if not mutate_node(rng, g, n):
            return None
    elif kind == "dims" and g.initializer:
        t = rng.choice(g.initializer)
        if not t.dims:
            return None
        t.dims[rng.randrange(len(t.dims))] = rng.choice([0, 1, 7, -3, 10**12])
    elif kind == "data" and g.initializer:
        t = rng.choice(g.initializer)
        if not t.raw_data:
            return None
        t.raw_data = t.raw_data[:rng.randrange(len(t.raw_data))]
    elif kind == "opset":
        m.opset_import[0].version = rng.choice([0, 1, 5, 99, 10**6])
    elif kind == "dtype" and g.initializer:
        rng.choice(g.initializer).data_type = rng.choice([0, 8, 16, 17, 23, 99])
    else:
        return None
    return m.SerializeToString()


def problem(result):
    """Why a finished run is a defect, or None."""
    if result.returncode < 0:
        return f"killed by signal {-result.returncode}"
    if result.returncode not in (0, 1):
        return f"exit status {result.returncode}"
    if result.returncode == 1 and "onyx: error:" not in result.stderr:
        return "failed without an 'onyx: error:' line"
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--onyx", default="build/onyx")
    ap.add_argument("--runs", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=60, help="seconds before a run counts as a hang")
    ap.add_argument("--dir", default="fuzz_out", help="where mutated models (and the kept ones) go")
    ap.add_argument("seeds", nargs="+", help="models (MODEL.onnx) or check_contrib_ops.py --keep directories")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    seeds = seed_models(args.seeds)
    os.makedirs(args.dir, exist_ok=True)
    bad = 0
    for run in range(args.runs):
        model, feeds = rng.choice(seeds)
        what = rng.random()
        if what < 0.3 and feeds:  # the model as it is, one input hostile
            feeds = list(feeds)
            k = rng.randrange(len(feeds))
            path = os.path.join(args.dir, f"m{run}.npy")
            feeds[k] = mutate_feed(rng, feeds[k], path)
            if feeds[k] is None:
                continue
            model_path = model
        else:
            data = mutate_proto(rng, model) if what < 0.7 else mutate_bytes(rng, open(model, "rb").read())
            if data is None:
                continue
            path = model_path = os.path.join(args.dir, f"m{run}.onnx")
            with open(path, "wb") as f:
                f.write(data)
        cmd = [args.onyx, "run", model_path, *sum((["--input", x] for x in feeds), []),
               "--output-dir", os.path.join(args.dir, "out")]
        try:
            result = subprocess.run(cmd, capture_output=True, text=True, errors="replace", timeout=args.timeout)
            why = problem(result)
            detail = result.stderr.strip().replace("\n", " | ")[:300]
        except subprocess.TimeoutExpired:
            why, detail = f"still running after {args.timeout:g} s", ""
        if why:
            bad += 1
            os.replace(path, path + ".keep")
            inputs = " ".join(feeds)
            print(f"{path}.keep (from {model}, inputs {inputs}): {why} {detail}")
        else:
            os.remove(path)
    print(f"{args.runs} runs over {len(seeds)} seed models: {bad} crashes, hangs or unclear failures")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
