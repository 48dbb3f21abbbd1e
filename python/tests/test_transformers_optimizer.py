"""onyx.transformers.optimizer on a small BERT-like attention block built here."""
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.transformers import optimizer

H, HEADS, S = 8, 2, 4


def make_block(path):
    rng = np.random.default_rng(0)
    inits, nodes = [], []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def proj(tag, perm):
        w = const(f"w{tag}", rng.standard_normal((H, H)).astype(np.float32))
        b = const(f"b{tag}", rng.standard_normal(H).astype(np.float32))
        nodes.append(helper.make_node("MatMul", ["x", w], [f"{tag}_mm"]))
        nodes.append(helper.make_node("Add", [b, f"{tag}_mm"], [f"{tag}_add"]))
        nodes.append(helper.make_node("Reshape", [f"{tag}_add", "shape4"], [f"{tag}_r"]))
        nodes.append(helper.make_node("Transpose", [f"{tag}_r"], [f"{tag}_t"], perm=perm))
        return f"{tag}_t"

    const("shape4", np.array([1, S, HEADS, H // HEADS], np.int64))
    const("shape3", np.array([1, S, H], np.int64))
    const("scale", np.array(np.sqrt(H // HEADS), np.float32))
    q, k, v = proj("q", [0, 2, 1, 3]), proj("k", [0, 2, 3, 1]), proj("v", [0, 2, 1, 3])
    nodes += [
        helper.make_node("MatMul", [q, k], ["qk"]),
        helper.make_node("Div", ["qk", "scale"], ["qk_s"]),
        helper.make_node("Softmax", ["qk_s"], ["p"], axis=-1),
        helper.make_node("MatMul", ["p", v], ["ctx"]),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx_t", "shape3"], ["att"]),
        helper.make_node("Add", ["x", "att"], ["res"]),
        helper.make_node("LayerNormalization", ["res", const("g", np.ones(H, np.float32)),
                                                const("beta", np.zeros(H, np.float32))], ["y"], axis=-1),
    ]
    graph = helper.make_graph(nodes, "block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, S, H])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, S, H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def test_fuses_attention_and_skip_layer_norm(tmp_path):
    src = str(tmp_path / "block.onnx")
    make_block(src)
    m = optimizer.optimize_model(src, model_type="bert", num_heads=HEADS, hidden_size=H)
    stats = m.get_fused_operator_statistics()
    assert stats["Attention"] == 1
    assert stats["SkipLayerNormalization"] == 1
    out = str(tmp_path / "block_opt.onnx")
    m.save_model_to_file(out)
    x = np.random.default_rng(1).standard_normal((1, S, H)).astype(np.float32)
    (got,) = onyx.InferenceSession(out).run(None, {"x": x})
    (ref,) = onnxruntime.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"x": x})
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-5)


def test_rejects_unknown_model_type(tmp_path):
    src = str(tmp_path / "block.onnx")
    make_block(src)
    with pytest.raises(ValueError, match="model_type"):
        optimizer.optimize_model(src, model_type="nope")
