"""Every numpy element type through Identity / Cast, compared with onnxruntime."""

import numpy as np
import onnxruntime
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onyx as ort

NUMPY_TO_ONNX = [
    (np.float32, TensorProto.FLOAT, "float"),
    (np.float64, TensorProto.DOUBLE, "double"),
    (np.float16, TensorProto.FLOAT16, "float16"),
    (np.int8, TensorProto.INT8, "int8"),
    (np.int16, TensorProto.INT16, "int16"),
    (np.int32, TensorProto.INT32, "int32"),
    (np.int64, TensorProto.INT64, "int64"),
    (np.uint8, TensorProto.UINT8, "uint8"),
    (np.uint16, TensorProto.UINT16, "uint16"),
    (np.uint32, TensorProto.UINT32, "uint32"),
    (np.uint64, TensorProto.UINT64, "uint64"),
    (np.bool_, TensorProto.BOOL, "bool"),
]


def identity_model(elem, shape=(2, 3)):
    return make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", elem, list(shape))],
        [helper.make_tensor_value_info("y", elem, list(shape))],
    ).SerializeToString()


@pytest.mark.parametrize("np_type,elem,name", NUMPY_TO_ONNX, ids=[n for _, _, n in NUMPY_TO_ONNX])
def test_identity_roundtrip(np_type, elem, name):
    data = identity_model(elem)
    sess = ort.InferenceSession(data)
    assert sess.get_inputs()[0].type == f"tensor({name})"
    x = (np.arange(6).reshape(2, 3) % 2 == 0) if np_type is np.bool_ else np.arange(6).reshape(2, 3).astype(np_type)
    (y,) = sess.run(None, {"x": x})
    (want,) = onnxruntime.InferenceSession(data).run(None, {"x": x})
    assert y.dtype == want.dtype == np.dtype(np_type)
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("np_type,elem,name", NUMPY_TO_ONNX[:11], ids=[n for _, _, n in NUMPY_TO_ONNX[:11]])
def test_cast_to_float(np_type, elem, name):
    data = make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("x", elem, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    ).SerializeToString()
    x = np.array([0, 1, 2, 3]).astype(np_type)
    (y,) = ort.InferenceSession(data).run(None, {"x": x})
    (want,) = onnxruntime.InferenceSession(data).run(None, {"x": x})
    np.testing.assert_array_equal(y, want)


def test_float16_arithmetic():
    data = make_model(
        [helper.make_node("Add", ["x", "x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT16, [5])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT16, [5])],
    ).SerializeToString()
    x = np.array([0.5, 1.25, -2, 1000, 3.1], np.float16)
    (y,) = ort.InferenceSession(data).run(None, {"x": x})
    assert y.dtype == np.float16
    np.testing.assert_array_equal(y, onnxruntime.InferenceSession(data).run(None, {"x": x})[0])


@pytest.mark.parametrize("kind", ["object", "str", "bytes"])
def test_strings(kind):
    data = identity_model(TensorProto.STRING, (3,))
    words = ["hello", "wörld", ""]
    if kind == "object":
        x = np.array(words, dtype=object)
    elif kind == "str":
        x = np.array(words)
    else:
        x = np.array([w.encode() for w in words], dtype=object)
    sess = ort.InferenceSession(data)
    assert sess.get_inputs()[0].type == "tensor(string)"
    (y,) = sess.run(None, {"x": x})
    (want,) = onnxruntime.InferenceSession(data).run(None, {"x": np.array(words, dtype=object)})
    assert y.dtype == object
    assert y.tolist() == want.tolist() == words


def test_string_ops_against_onnxruntime():
    data = make_model(
        [
            helper.make_node("Concat", ["x", "x"], ["c"], axis=0),
            helper.make_node("Gather", ["c", "i"], ["y"], axis=0),
        ],
        [
            helper.make_tensor_value_info("x", TensorProto.STRING, [3]),
            helper.make_tensor_value_info("i", TensorProto.INT64, [2]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.STRING, [2])],
    ).SerializeToString()
    feeds = {"x": np.array(["abc", "Déf", "g"], dtype=object), "i": np.array([4, 0], np.int64)}
    (y,) = ort.InferenceSession(data).run(None, feeds)
    assert y.tolist() == onnxruntime.InferenceSession(data).run(None, feeds)[0].tolist() == ["Déf", "abc"]


def test_scalar_and_empty():
    data = identity_model(TensorProto.FLOAT, ())
    (y,) = ort.InferenceSession(data).run(None, {"x": np.array(3.5, np.float32)})
    assert y.shape == () and y == np.float32(3.5)
    data = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
    ).SerializeToString()
    (y,) = ort.InferenceSession(data).run(None, {"x": np.zeros((0, 3), np.float32)})
    assert y.shape == (0, 3) and y.dtype == np.float32


def test_big_endian_input():
    data = identity_model(TensorProto.FLOAT, (3,))
    x = np.array([1.5, -2.0, 3.25], dtype=">f4")
    (y,) = ort.InferenceSession(data).run(None, {"x": x})
    assert y.dtype == np.float32 and y.tolist() == [1.5, -2.0, 3.25]


def test_sequence_output_and_input():
    data = make_model(
        [
            helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
            helper.make_node("SequenceAt", ["s", "i"], ["t"]),
        ],
        [
            helper.make_tensor_value_info("a", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("b", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
        ],
        [
            helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("t", TensorProto.FLOAT, [2]),
        ],
    ).SerializeToString()
    feeds = {"a": np.array([1, 2], np.float32), "b": np.array([3, 4], np.float32), "i": np.array(1, np.int64)}
    sess = ort.InferenceSession(data)
    assert sess.get_outputs()[0].type == onnxruntime.InferenceSession(data).get_outputs()[0].type
    s, t = sess.run(None, feeds)
    ws, wt = onnxruntime.InferenceSession(data).run(None, feeds)
    assert isinstance(s, list) and len(s) == len(ws) == 2
    for g, w in zip(s, ws):
        np.testing.assert_array_equal(g, w)
    np.testing.assert_array_equal(t, wt)

    seq_in = make_model(
        [helper.make_node("SequenceLength", ["s"], ["n"])],
        [helper.make_tensor_sequence_value_info("s", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("n", TensorProto.INT64, [])],
    ).SerializeToString()
    items = [np.zeros(2, np.float32), np.ones(3, np.float32), np.ones(1, np.float32)]
    (n,) = ort.InferenceSession(seq_in).run(None, {"s": items})
    assert int(n) == 3 == int(onnxruntime.InferenceSession(seq_in).run(None, {"s": items})[0])


def test_ortvalue_from_numpy_with_onnx_type_feeds_bfloat16():
    """uint16 bits read as bfloat16 (numpy has no bfloat16), cast to float: as onnxruntime."""
    model = make_model(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    ).SerializeToString()
    values = np.array([1.0, -2.5, 3.140625, 1e20], np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)  # exact in bfloat16 but for 1e20 (truncated)
    results = []
    for module in (ort, onnxruntime):
        v = module.OrtValue.ortvalue_from_numpy_with_onnx_type(bits, TensorProto.BFLOAT16)
        assert v.data_type() == "tensor(bfloat16)"
        sess = module.InferenceSession(model, providers=["CPUExecutionProvider"])
        results.append(sess.run_with_ort_values(["y"], {"x": v})[0].numpy())
    np.testing.assert_array_equal(results[0], results[1])
    np.testing.assert_array_equal(results[0][:3], values[:3])
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="takes 2 bytes"):
        ort.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros(3, np.float32), TensorProto.BFLOAT16)
