"""Small models built with the onnx helper API, shared by the tests."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper


def make_model(nodes, inputs, outputs, initializers=(), opset=17, ir_version=8, check=True, **kw):
    graph = helper.make_graph(list(nodes), kw.pop("graph_name", "g"), list(inputs), list(outputs), list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], **kw)
    model.ir_version = ir_version
    if check:
        onnx.checker.check_model(model)
    return model


def save(model, tmp_path, name="model.onnx"):
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return str(path)


@pytest.fixture
def add_model():
    """c = a + b, float, shape ['N', 3]."""
    return make_model(
        [helper.make_node("Add", ["a", "b"], ["c"])],
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, ["N", 3]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, ["N", 3]),
        ],
        [helper.make_tensor_value_info("c", TensorProto.FLOAT, ["N", 3])],
        producer_name="onyx-tests",
        producer_version="1.2",
        domain="ai.onyx.test",
        model_version=7,
        doc_string="adds two tensors",
        graph_name="add_graph",
    )


@pytest.fixture
def add_path(add_model, tmp_path):
    return save(add_model, tmp_path)


@pytest.fixture
def mlp_model():
    """y = Relu(x @ W1 + b1) @ W2 + b2, and also the hidden layer as an output."""
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((8, 16)).astype(np.float32)
    b1 = rng.standard_normal(16).astype(np.float32)
    w2 = rng.standard_normal((16, 4)).astype(np.float32)
    b2 = rng.standard_normal(4).astype(np.float32)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h0"]),
            helper.make_node("Add", ["h0", "b1"], ["h1"]),
            helper.make_node("Relu", ["h1"], ["hidden"]),
            helper.make_node("MatMul", ["hidden", "w2"], ["y0"]),
            helper.make_node("Add", ["y0", "b2"], ["y"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4]),
            helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", 16]),
        ],
        [numpy_helper.from_array(a, n) for a, n in [(w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2")]],
    )


@pytest.fixture
def mlp_path(mlp_model, tmp_path):
    return save(mlp_model, tmp_path, "mlp.onnx")
