"""LoRA adapter files (.onnx_adapter): written and read by Onyx and onnxruntime alike, and run."""

import numpy as np
import onnxruntime
import pytest
from conftest import make_model
from onnx import TensorProto, helper, numpy_helper

import onyx as ort

PARAMS = {
    "w": np.arange(6, dtype=np.float32).reshape(2, 3),
    "n": np.array([7, -1], dtype=np.int64),
    "h": np.array([1.5], dtype=np.float16),
    "e": np.zeros((0, 4), np.float32),
    "b": np.array([3], dtype=np.int8),
}


@pytest.mark.parametrize("writer, reader", [(ort, onnxruntime), (onnxruntime, ort), (ort, ort)])
def test_adapter_files_cross_between_onyx_and_onnxruntime(tmp_path, writer, reader):
    a = writer.AdapterFormat()
    a.set_adapter_version(3)
    a.set_model_version(5)
    a.set_parameters({k: writer.OrtValue.ortvalue_from_numpy(v) for k, v in PARAMS.items()})
    path = str(tmp_path / "a.onnx_adapter")
    a.export_adapter(path)
    r = reader.AdapterFormat.read_adapter(path)
    assert (r.get_format_version(), r.get_adapter_version(), r.get_model_version()) == (1, 3, 5)
    got = {k: v.numpy() for k, v in r.get_parameters().items()}
    assert sorted(got) == sorted(PARAMS)
    for k, want in PARAMS.items():
        assert got[k].dtype == want.dtype and got[k].shape == want.shape
        np.testing.assert_array_equal(got[k], want)


@pytest.fixture
def add_w_model():
    """y = x + w, w an initializer (100s) that is also an input: the adapter's parameter overrides it."""
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("w", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        [numpy_helper.from_array(np.full((2, 3), 100, np.float32), "w")],
    ).SerializeToString()


def test_active_adapter_feeds_its_parameters_as_onnxruntime(tmp_path, add_w_model):
    path = str(tmp_path / "w.onnx_adapter")
    a = onnxruntime.AdapterFormat()
    a.set_parameters({"w": onnxruntime.OrtValue.ortvalue_from_numpy(PARAMS["w"])})
    a.export_adapter(path)
    x = np.ones((2, 3), np.float32)
    results = []
    for mod in (ort, onnxruntime):
        sess = mod.InferenceSession(add_w_model)
        adapter = mod.LoraAdapter()
        adapter.Load(path)
        ro = mod.RunOptions()
        ro.add_active_adapter(adapter)
        with_adapter = sess.run(None, {"x": x}, ro)[0]
        over_a_feed = sess.run(None, {"x": x, "w": np.zeros((2, 3), np.float32)}, ro)[0]  # the adapter wins
        without = sess.run(None, {"x": x})[0]
        results.append((with_adapter.tolist(), over_a_feed.tolist(), without.tolist()))
    assert results[0] == results[1]
    assert results[0][0] == (x + PARAMS["w"]).tolist() and results[0][2] == (x + 100).tolist()


def test_scalar_parameters(tmp_path):
    # onnxruntime writes a scalar parameter but cannot load it back; Onyx loads it and refuses to write one.
    a = onnxruntime.AdapterFormat()
    a.set_parameters({"s": onnxruntime.OrtValue.ortvalue_from_numpy(np.array(3, np.int8))})
    a.export_adapter(str(tmp_path / "s.onnx_adapter"))
    with pytest.raises(RuntimeError, match="dims is missing or empty"):
        onnxruntime.AdapterFormat.read_adapter(str(tmp_path / "s.onnx_adapter"))
    got = ort.AdapterFormat.read_adapter(str(tmp_path / "s.onnx_adapter")).get_parameters()["s"].numpy()
    assert got.shape == () and got == 3
    a = ort.AdapterFormat()
    a.set_parameters({"s": ort.OrtValue.ortvalue_from_numpy(np.array(3, np.int8))})
    with pytest.raises(ValueError, match="'s' is a scalar"):
        a.export_adapter(str(tmp_path / "s2.onnx_adapter"))


def test_adapter_errors(tmp_path, add_w_model):
    with pytest.raises(RuntimeError, match="cannot read the adapter file"):
        ort.LoraAdapter().Load(str(tmp_path / "missing.onnx_adapter"))
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"hello world, this is no adapter at all")
    with pytest.raises(RuntimeError, match="does not start with the identifier TORT"):
        ort.LoraAdapter().Load(str(garbage))
    with pytest.raises(TypeError, match="LoraAdapter"):
        ort.RunOptions().add_active_adapter("w.onnx_adapter")
    # A parameter the model has no input for is named.
    path = str(tmp_path / "n.onnx_adapter")
    a = ort.AdapterFormat()
    a.set_parameters({"n": ort.OrtValue.ortvalue_from_numpy(PARAMS["n"])})
    a.export_adapter(path)
    adapter = ort.LoraAdapter()
    adapter.Load(path)
    ro = ort.RunOptions()
    ro.add_active_adapter(adapter)
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument, match="'n' is not an input"):
        ort.InferenceSession(add_w_model).run(None, {"x": np.ones((2, 3), np.float32)}, ro)
