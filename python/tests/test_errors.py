"""Errors raise onnxruntime's exception classes with Onyx's message."""

import numpy as np
import pytest

import onyx as ort
from onyx.capi import onnxruntime_pybind11_state as C


def test_exception_classes():
    for name in ("Fail", "InvalidArgument", "NoSuchFile", "NoModel", "InvalidGraph", "NotImplemented",
                 "RuntimeException", "InvalidProtobuf", "EPFail", "EngineError"):
        cls = getattr(C, name)
        assert issubclass(cls, Exception)
        assert cls.__name__ == name
        assert cls.__module__ == "onyx.capi.onnxruntime_pybind11_state"
    from onyx.capi._pybind_state import InvalidArgument  # the other import path
    assert InvalidArgument is C.InvalidArgument


def test_missing_file(tmp_path):
    with pytest.raises(C.NoSuchFile) as e:
        ort.InferenceSession(str(tmp_path / "nope.onnx"))
    assert "nope.onnx" in str(e.value)


def test_bad_protobuf(tmp_path):
    p = tmp_path / "garbage.onnx"
    p.write_bytes(b"\xff\xff\xff garbage \x00\x01")
    with pytest.raises((C.InvalidProtobuf, C.InvalidGraph, C.Fail)):
        ort.InferenceSession(str(p))
    with pytest.raises((C.InvalidProtobuf, C.InvalidGraph, C.Fail)):
        ort.InferenceSession(b"\xff\xff\xff garbage")


def test_wrong_input_dtype(add_path):
    sess = ort.InferenceSession(add_path)
    a = np.ones((2, 3), np.float32)
    with pytest.raises(C.InvalidArgument) as e:
        sess.run(None, {"a": a.astype(np.float64), "b": a})
    assert "INVALID_ARGUMENT" in str(e.value)
    assert "'a'" in str(e.value)


def test_wrong_input_name(add_path):
    sess = ort.InferenceSession(add_path)
    a = np.ones((2, 3), np.float32)
    # A required input missing: ValueError, as onnxruntime.
    with pytest.raises(ValueError, match=r"Required inputs \(\['a'\]\) are missing"):
        sess.run(None, {"x": a, "b": a})
    # An extra unknown name next to all the required ones: InvalidArgument.
    with pytest.raises(C.InvalidArgument):
        sess.run(None, {"a": a, "b": a, "zz": a})


def test_wrong_output_name(add_path):
    sess = ort.InferenceSession(add_path)
    a = np.ones((2, 3), np.float32)
    with pytest.raises(C.InvalidArgument) as e:
        sess.run(["nope"], {"a": a, "b": a})
    assert "nope" in str(e.value)


def test_wrong_rank_and_dim(add_path, mlp_path):
    sess = ort.InferenceSession(add_path)
    with pytest.raises(C.InvalidArgument):
        sess.run(None, {"a": np.ones((2, 4), np.float32), "b": np.ones((2, 4), np.float32)})
    with pytest.raises(C.InvalidArgument):
        sess.run(None, {"a": np.ones(3, np.float32), "b": np.ones(3, np.float32)})


def test_unsupported_device():
    with pytest.raises(C.InvalidArgument):
        ort.OrtValue.ortvalue_from_numpy(np.ones(3, np.float32), "cuda", 0)


def test_feed_must_be_dict(add_path):
    sess = ort.InferenceSession(add_path)
    with pytest.raises(TypeError):
        sess.run(None, [np.ones((1, 3), np.float32)])


def test_shape_of_an_untyped_value_is_an_error_or_runs_not_a_crash():
    """Debian's libonnx crashed inferring Shape-15 or LabelEncoder on a value
    nothing typed; the model must load (a TreeEnsembleClassifier-1 or an
    ArrayFeatureExtractor output) or give a clear error (an unknown op)."""
    from onnx import TensorProto, helper

    def model(node, opsets):
        graph = helper.make_graph(
            [node, helper.make_node("Shape", [node.output[-1]], ["s"])],
            "g",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 2])],
            [helper.make_tensor_value_info("s", TensorProto.INT64, None)],
        )
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid(d, v) for d, v in opsets])
        m.ir_version = 8
        return m.SerializeToString()

    tree = helper.make_node(
        "TreeEnsembleClassifier", ["x"], ["label", "scores"], domain="ai.onnx.ml",
        nodes_treeids=[0], nodes_nodeids=[0], nodes_featureids=[0], nodes_modes=["LEAF"],
        nodes_values=[0.0], nodes_truenodeids=[0], nodes_falsenodeids=[0],
        class_treeids=[0], class_nodeids=[0], class_ids=[1], class_weights=[1.0], classlabels_int64s=[0, 1, 2],
    )
    sess = ort.InferenceSession(model(tree, [("", 17), ("ai.onnx.ml", 1)]))
    assert sess.run(None, {"x": np.zeros((4, 2), np.float32)})[0].tolist() == [4, 3]
    # LabelEncoder reading an ArrayFeatureExtractor output (scikit-learn's OrdinalEncoder).
    graph = helper.make_graph(
        [helper.make_node("ArrayFeatureExtractor", ["s", "i"], ["col"], domain="ai.onnx.ml"),
         helper.make_node("LabelEncoder", ["col"], ["code"], domain="ai.onnx.ml",
                          keys_strings=["a", "b"], values_int64s=[5, 6])],
        "g", [helper.make_tensor_value_info("s", TensorProto.STRING, [None, 2])],
        [helper.make_tensor_value_info("code", TensorProto.INT64, None)],
        [helper.make_tensor("i", TensorProto.INT64, [1], [1])])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 2)])
    m.ir_version = 8
    got = ort.InferenceSession(m.SerializeToString()).run(None, {"s": np.array([["x", "b"], ["y", "a"]], object)})[0]
    assert got.ravel().tolist() == [6, 5]
    custom = helper.make_node("Mystery", ["x"], ["y"], domain="example.custom")
    with pytest.raises(C.NotImplemented, match="Mystery"):
        ort.InferenceSession(model(custom, [("", 17), ("example.custom", 1)]))
