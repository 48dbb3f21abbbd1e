#!/usr/bin/env python3
"""Makes one-node models of the two ops that dominate an int4 LLM on the CPU,
at a 7B-class layer's sizes, for timing Onyx against ONNX Runtime
(compare_ort.py) and checking outputs (check_models.py):

  nbits_m{1,64}_acc{0,4}   MatMulNBits, K = N = 4096, 4-bit codes in blocks of
                           32 with uint8 zero points; M = 1 (a decode step) or
                           64 (a prompt); accuracy_level 0 (float) or 4 (A
                           quantized to int8 per block, onnxruntime-genai's
                           CPU setting)
  gqa_prompt               GroupQueryAttention, 32 query / 8 KV heads of 128,
                           rotary, 256 new tokens
  gqa_decode               the same, one new token after 256 in the KV cache

Usage: make_llm_bench_models.py OUT   (each model gets NAME.input_K.npy files).
Needs onnx and numpy."""
import argparse
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from contrib_cases.llm import _gqa  # noqa: E402


def nbits_model(M, K, N, acc, block=32, seed=0):
    rng = np.random.default_rng(seed)
    kb = K // block
    inits = [numpy_helper.from_array(rng.integers(0, 256, (N, kb, block // 2), dtype=np.uint8), "B"),
             numpy_helper.from_array((rng.random(N * kb, dtype=np.float32) * 0.02 + 0.001), "scales"),
             numpy_helper.from_array(rng.integers(0, 256, N * ((kb + 1) // 2), dtype=np.uint8), "zero_points")]
    node = helper.make_node("MatMulNBits", ["A", "B", "scales", "zero_points"], ["Y"], domain="com.microsoft",
                            K=K, N=N, bits=4, block_size=block, accuracy_level=acc)
    graph = helper.make_graph([node], "matmul_nbits", [helper.make_tensor_value_info("A", TensorProto.FLOAT, [M, K])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [M, N])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              ir_version=8)
    return model, [rng.standard_normal((M, K), dtype=np.float32)]


def gqa_model(S, past):
    model, feeds = _gqa(1, S, 32, 8, 128, past=past, rotary=True)()
    return model, [feeds[i.name] for i in model.graph.input]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    models = {f"nbits_m{M}_acc{acc}": (lambda M=M, acc=acc: nbits_model(M, 4096, 4096, acc))
              for M in (1, 64) for acc in (0, 4)}
    models["gqa_prompt"] = lambda: gqa_model(256, 0)
    models["gqa_decode"] = lambda: gqa_model(1, 256)
    for name, make in models.items():
        model, inputs = make()
        onnx.save(model, os.path.join(out, name + ".onnx"))
        for i, x in enumerate(inputs):
            np.save(os.path.join(out, f"{name}.input_{i}.npy"), x)
        print("wrote", name)


if __name__ == "__main__":
    main()
