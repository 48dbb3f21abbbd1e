#!/usr/bin/env python3
"""Writes a small MLP model (MatMul+Add+Relu, MatMul+Add, Softmax), an input
and the numpy reference of its output into the folder given."""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
w1 = rng.standard_normal((8, 16)).astype(np.float32)
b1 = rng.standard_normal(16).astype(np.float32)
w2 = rng.standard_normal((16, 4)).astype(np.float32)
b2 = rng.standard_normal(4).astype(np.float32)
nodes = [
    helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
    helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
    helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
    helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
    helper.make_node("Add", ["h3", "b2"], ["logits"], name="fc2_bias"),
    helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
]
graph = helper.make_graph(
    nodes, "mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
    [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 4])],
    [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")]])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, os.path.join(out, "mlp.onnx"))
x = rng.standard_normal((2, 8)).astype(np.float32)
np.save(os.path.join(out, "x.npy"), x)
h = np.maximum(x @ w1 + b1, 0) @ w2 + b2
e = np.exp(h - h.max(axis=-1, keepdims=True))
p = e / e.sum(axis=-1, keepdims=True)
with open(os.path.join(out, "expected.txt"), "w") as f:
    f.write("probs: float[2,4] [" + ", ".join(f"{v:.6g}" for v in p.ravel()[:6]) + ", ...]\n")
