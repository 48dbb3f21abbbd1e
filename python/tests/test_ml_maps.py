"""Maps in and out of a session (the ai.onnx.ml dictionary ops), against onnxruntime."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper

import onyx as ort
from onyx.capi.onnxruntime_pybind11_state import InvalidArgument


def ml_model(node, inputs, outputs):
    graph = helper.make_graph([node], "g", inputs, outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 3)]
    )
    model.ir_version = 8
    return model.SerializeToString()


def map_type(key, value):
    return helper.make_map_type_proto(key, helper.make_tensor_type_proto(value, None))


def test_zipmap_returns_a_list_of_dicts_like_onnxruntime():
    model = ml_model(
        helper.make_node("ZipMap", ["x"], ["z"], domain="ai.onnx.ml", classlabels_int64s=[7, 2, 5]),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
        [helper.make_value_info("z", helper.make_sequence_type_proto(map_type(TensorProto.INT64, TensorProto.FLOAT)))],
    )
    x = np.array([[0.25, 0.5, 0.25], [0.125, 0.375, 0.5]], np.float32)
    ours = ort.InferenceSession(model).run(None, {"x": x})[0]
    want = onnxruntime.InferenceSession(model).run(None, {"x": x})[0]
    assert ours == want
    assert ours[1] == {7: 0.125, 2: 0.375, 5: 0.5}
    assert list(ours[0]) == [2, 5, 7]  # keys in ascending order, as onnxruntime gives them
    assert ort.InferenceSession(model).get_outputs()[0].type == "seq(map(int64,tensor(float)))"


def test_dict_input_to_dict_vectorizer():
    model = ml_model(
        helper.make_node("DictVectorizer", ["x"], ["y"], domain="ai.onnx.ml", string_vocabulary=["a", "c", "b"]),
        [helper.make_value_info("x", map_type(TensorProto.STRING, TensorProto.FLOAT))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    sess = ort.InferenceSession(model)
    feed = {"x": {"c": 8.0, "a": 4.0}}
    got = sess.run(None, feed)[0]
    np.testing.assert_array_equal(got, onnxruntime.InferenceSession(model).run(None, feed)[0])
    np.testing.assert_array_equal(got, np.array([[4, 8, 0]], np.float32))
    with pytest.raises(InvalidArgument, match="values are not all float"):
        sess.run(None, {"x": {"a": "not a number"}})
    with pytest.raises(InvalidArgument, match="input 'x': expected a dict"):
        sess.run(None, {"x": np.zeros(3, np.float32)})
    with pytest.raises(InvalidArgument, match="keys must be str"):
        sess.run(None, {"x": {1: 2.0}})
