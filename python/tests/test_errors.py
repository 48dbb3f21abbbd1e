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
