"""Benchmark models, when they are on this machine (shared/models/make_models.py
writes them): outputs compared with onnxruntime."""

import os

import numpy as np
import onnxruntime
import pytest

import onyx as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_DIRS = [
    os.environ.get("ONYX_MODELS_DIR", ""),
    os.path.join(HERE, "..", "..", "models"),
    "/work/models",
]


def find_model(name):
    for d in MODEL_DIRS:
        if d and os.path.exists(os.path.join(d, name + ".onnx")):
            return os.path.join(d, name)
    pytest.skip(f"{name}.onnx not found (set ONYX_MODELS_DIR)")


def feeds_for(sess, base):
    feeds = {}
    rng = np.random.default_rng(0)
    for i, arg in enumerate(sess.get_inputs()):
        p = f"{base}.input_{i}.npy"
        if os.path.exists(p):
            feeds[arg.name] = np.load(p)
        else:
            shape = [d if isinstance(d, int) else 1 for d in arg.shape]
            if "int" in arg.type:
                feeds[arg.name] = np.ones(shape, np.int64)
            else:
                feeds[arg.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("name", ["bert_tiny"])
def test_model_matches_onnxruntime(name):
    base = find_model(name)
    sess = ort.InferenceSession(base + ".onnx", providers=["CPUExecutionProvider"])
    ref = onnxruntime.InferenceSession(base + ".onnx", providers=["CPUExecutionProvider"])
    assert [(i.name, i.type) for i in sess.get_inputs()] == [(i.name, i.type) for i in ref.get_inputs()]
    assert [o.name for o in sess.get_outputs()] == [o.name for o in ref.get_outputs()]
    feeds = feeds_for(sess, base)
    for g, w in zip(sess.run(None, feeds), ref.run(None, feeds)):
        assert g.shape == w.shape and g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-3, atol=1e-4)
