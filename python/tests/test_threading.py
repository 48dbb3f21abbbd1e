"""Threading options: parallel execution, session.dynamic_block_base, shared thread pools."""

import numpy as np
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx as ort

from conftest import make_model, save


def branchy_model(branches=4, dim=16):
    """y = sum over branches of Tanh(x @ W_k + b_k) @ V_k: independent branches joined by Sum."""
    rng = np.random.default_rng(7)
    nodes, inits, outs = [], [], []
    for k in range(branches):
        inits += [
            numpy_helper.from_array(rng.standard_normal((dim, dim)).astype(np.float32), f"W{k}"),
            numpy_helper.from_array(rng.standard_normal((dim,)).astype(np.float32), f"b{k}"),
            numpy_helper.from_array(rng.standard_normal((dim, dim)).astype(np.float32), f"V{k}"),
        ]
        nodes += [
            helper.make_node("MatMul", ["x", f"W{k}"], [f"h{k}"]),
            helper.make_node("Add", [f"h{k}", f"b{k}"], [f"a{k}"]),
            helper.make_node("Tanh", [f"a{k}"], [f"t{k}"]),
            helper.make_node("MatMul", [f"t{k}", f"V{k}"], [f"o{k}"]),
        ]
        outs.append(f"o{k}")
    nodes.append(helper.make_node("Sum", outs, ["y"]))
    return make_model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", dim])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", dim])],
        inits,
    )


@pytest.fixture
def branchy_path(tmp_path):
    return save(branchy_model(), tmp_path, "branchy.onnx")


def run(path, x, **options):
    so = ort.SessionOptions()
    config = options.pop("config", {})
    for k, v in options.items():
        setattr(so, k, v)
    for k, v in config.items():
        so.add_session_config_entry(k, v)
    return ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def test_parallel_matches_sequential_and_onnxruntime(branchy_path):
    x = np.random.default_rng(1).standard_normal((3, 16)).astype(np.float32)
    want = onnxruntime.InferenceSession(branchy_path, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    seq = run(branchy_path, x, execution_mode=ort.ExecutionMode.ORT_SEQUENTIAL, intra_op_num_threads=1)
    np.testing.assert_allclose(seq, want, rtol=1e-5, atol=1e-5)
    for inter in (0, 2, 3):
        par = run(branchy_path, x, execution_mode=ort.ExecutionMode.ORT_PARALLEL, inter_op_num_threads=inter,
                  intra_op_num_threads=1)
        np.testing.assert_array_equal(par, seq)


def test_dynamic_block_base(branchy_path):
    x = np.random.default_rng(2).standard_normal((64, 16)).astype(np.float32)
    want = run(branchy_path, x, intra_op_num_threads=2)
    for base in ("0", "1", "4"):
        got = run(branchy_path, x, intra_op_num_threads=2, config={"session.dynamic_block_base": base})
        np.testing.assert_array_equal(got, want)
    for bad in ("-1", "2.5", "many"):
        with pytest.raises(Exception, match="session.dynamic_block_base' must be an integer of 0 or more"):
            run(branchy_path, x, config={"session.dynamic_block_base": bad})


def test_shared_thread_pools(branchy_path):
    x = np.random.default_rng(3).standard_normal((5, 16)).astype(np.float32)
    want = run(branchy_path, x)
    for mode in (ort.ExecutionMode.ORT_SEQUENTIAL, ort.ExecutionMode.ORT_PARALLEL):
        got = run(branchy_path, x, use_per_session_threads=False, execution_mode=mode)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
