#!/usr/bin/env python3
"""PyTorch vs Onyx latency on one GPU: ResNet-50 and BERT-base, batch 1 and 8.

  python3 scripts/bench_torch_cuda.py [MODELS_DIR] [--runs N] [--onyx build-cuda/onyx] [--tf32]

PyTorch: the same architectures as ../shared/models/make_models.py (imported
from it), float32, eval, no_grad, TF32 off (as Onyx's float32 path; --tf32 turns
it on for both: PyTorch's allow_tf32, Onyx's use_tf32=1), timed
with torch.cuda.synchronize(); plain eager and with a captured CUDA graph.
Onyx: `onyx perf` on MODELS_DIR/{resnet50,bert_base}.onnx with the CUDA
provider: plain run (inputs and outputs copied), I/O binding, I/O binding +
CUDA graph. Prints one table (median ms) and one JSON line per measurement.
"""
import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("models", nargs="?", default="/work/shared/models/out")
p.add_argument("--runs", type=int, default=100)
p.add_argument("--warmup", type=int, default=20)
p.add_argument("--onyx", default=os.path.join(os.path.dirname(__file__), "..", "build-cuda", "onyx"))
p.add_argument("--make-models", default="/work/shared/models/make_models.py")
p.add_argument("--tf32", action="store_true", help="TF32 on both sides: PyTorch's allow_tf32, Onyx's use_tf32=1")
args = p.parse_args()

if not torch.cuda.is_available():
    sys.exit("torch has no CUDA device here")
torch.backends.cuda.matmul.allow_tf32 = args.tf32
torch.backends.cudnn.allow_tf32 = args.tf32
torch.backends.cudnn.benchmark = True
dev = torch.device("cuda")

spec = importlib.util.spec_from_file_location("make_models", args.make_models)
mm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mm)


def time_fn(fn):
    for _ in range(args.warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def torch_latency(name, batch):
    torch.manual_seed(0)
    if name == "resnet50":
        import torchvision
        model = torchvision.models.resnet50().eval().to(dev)
        inputs = (torch.randn(batch, 3, 224, 224, device=dev),)
    else:
        model = mm.Bert().eval().to(dev)
        inputs = (torch.randint(0, 30522, (batch, 128), device=dev), torch.ones(batch, 128, dtype=torch.int64, device=dev))
    out = {}
    with torch.no_grad():
        out["eager"] = time_fn(lambda: model(*inputs))
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(*inputs)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                model(*inputs)
            out["cudagraph"] = time_fn(g.replay)
        except Exception as e:  # some models do not capture
            out["cudagraph"] = None
            print(f"torch {name} batch {batch}: CUDA graph capture failed: {e}", file=sys.stderr)
    return out


def onyx_latency(name, batch):
    path = os.path.join(args.models, name + ".onnx")
    if not os.path.exists(path):
        return {}
    dims = ["--dim", f"batch={batch}"] + (["--dim", "seq=128"] if name == "bert_base" else [])
    res = {}
    for mode, extra in [("plain", []), ("iobinding", ["--io-binding"]),
                        ("cudagraph", ["--io-binding", "--provider-option", "enable_cuda_graph=1"])]:
        cmd = [args.onyx, "perf", path, "--provider", "cuda", "-r", str(args.runs), "--warmup", str(args.warmup)] + dims + extra
        if args.tf32:
            cmd += ["--provider-option", "use_tf32=1"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        try:
            res[mode] = json.loads(r.stdout.strip().splitlines()[-1])["median_ms"]
        except Exception:
            res[mode] = None
            print(f"onyx {name} batch {batch} {mode} failed: {r.stderr.strip()[-400:]}", file=sys.stderr)
    return res


rows = []
for name in ["resnet50", "bert_base"]:
    for batch in [1, 8]:
        t = torch_latency(name, batch)
        o = onyx_latency(name, batch)
        row = {"model": name, "batch": batch, "device": torch.cuda.get_device_name(0),
               "torch_eager_ms": t.get("eager"), "torch_cudagraph_ms": t.get("cudagraph"),
               "onyx_ms": o.get("plain"), "onyx_iobinding_ms": o.get("iobinding"), "onyx_cudagraph_ms": o.get("cudagraph")}
        rows.append(row)
        print(json.dumps(row), flush=True)

fmt = lambda v: f"{v:8.3f}" if isinstance(v, (int, float)) else "       -"
print(f"\n{'model':10} {'batch':>5} | {'torch':>8} {'torch+g':>8} | {'onyx':>8} {'onyx+io':>8} {'onyx+g':>8}  (median ms, {rows[0]['device'] if rows else ''})")
for r in rows:
    print(f"{r['model']:10} {r['batch']:5d} | {fmt(r['torch_eager_ms'])} {fmt(r['torch_cudagraph_ms'])} | "
          f"{fmt(r['onyx_ms'])} {fmt(r['onyx_iobinding_ms'])} {fmt(r['onyx_cudagraph_ms'])}")
