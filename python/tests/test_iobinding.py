"""OrtValue and IOBinding, compared with onnxruntime."""

import numpy as np
import onnxruntime
import pytest

import onyx as ort


def test_ortvalue_from_numpy():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    v = ort.OrtValue.ortvalue_from_numpy(x)
    r = onnxruntime.OrtValue.ortvalue_from_numpy(x)
    assert v.shape() == r.shape() == [2, 3]
    assert v.data_type() == r.data_type() == "tensor(float)"
    assert v.element_type() == r.element_type() == 1
    assert v.device_name() == r.device_name() == "cpu"
    assert v.is_tensor() and v.has_value() and not v.is_tensor_sequence()
    assert v.data_ptr() == x.ctypes.data  # wrapped in place
    np.testing.assert_array_equal(v.numpy(), x)
    v.update_inplace(np.ones((2, 3), np.float32))
    assert x.sum() == 6  # update_inplace wrote through to the wrapped array
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.InvalidArgument):
        v.update_inplace(np.ones(4, np.float32))
    assert v.tensor_size_in_bytes() == 24
    assert v._ortvalue is v


def test_ortvalue_keeps_array_alive():
    v = ort.OrtValue.ortvalue_from_numpy(np.full((1000,), 7, np.int64))
    import gc

    gc.collect()
    assert int(v.numpy().sum()) == 7000


def test_ortvalue_from_shape_and_type():
    for et in (np.float32, np.int64, np.float16, np.bool_):
        v = ort.OrtValue.ortvalue_from_shape_and_type([3, 2], et, "cpu", 0)
        r = onnxruntime.OrtValue.ortvalue_from_shape_and_type([3, 2], et, "cpu", 0)
        assert v.shape() == [3, 2] and v.data_type() == r.data_type()
        assert v.numpy().dtype == np.dtype(et)


def test_ortvalue_from_dlpack_shares_memory():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for source in (x, x.__dlpack__()):  # a protocol object, and a raw capsule
        v = ort.OrtValue.from_dlpack(source)
        r = onnxruntime.OrtValue.from_dlpack(x)
        assert v.shape() == r.shape() == [3, 4] and v.data_type() == r.data_type() == "tensor(float)"
        x[0, 0] = 100.0
        assert v.numpy()[0, 0] == 100.0  # no copy
        x[0, 0] = 0.0
    flags = ort.OrtValue.from_dlpack(np.array([True, False]))
    assert flags.data_type() == "tensor(bool)"
    np.testing.assert_array_equal(flags.numpy(), [True, False])
    with pytest.raises(TypeError, match="from_dlpack"):
        ort.OrtValue.from_dlpack(42)


def test_run_with_ort_values(add_path):
    sess = ort.InferenceSession(add_path)
    a = np.ones((2, 3), np.float32)
    feeds = {"a": ort.OrtValue.ortvalue_from_numpy(a), "b": ort.OrtValue.ortvalue_from_numpy(a * 3)}
    (c,) = sess.run_with_ort_values(["c"], feeds)
    assert c.data_type() == "tensor(float)"
    np.testing.assert_array_equal(c.numpy(), a * 4)
    # OrtValues are also accepted by run().
    np.testing.assert_array_equal(sess.run(None, feeds)[0], a * 4)


def test_iobinding_allocated_outputs(mlp_path):
    sess = ort.InferenceSession(mlp_path)
    ref = onnxruntime.InferenceSession(mlp_path)
    x = np.random.default_rng(5).standard_normal((3, 8)).astype(np.float32)
    for s in (sess, ref):
        b = s.io_binding()
        b.bind_cpu_input("x", x)
        b.bind_output("y")
        b.bind_output("hidden", "cpu")
        b.synchronize_inputs()
        s.run_with_iobinding(b)
        b.synchronize_outputs()
        if s is sess:
            ours = b.copy_outputs_to_cpu()
            ours_vals = b.get_outputs()
        else:
            want = b.copy_outputs_to_cpu()
    assert len(ours) == 2
    for g, w in zip(ours, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    assert [v.shape() for v in ours_vals] == [[3, 4], [3, 16]]


def test_iobinding_preallocated_and_pointers(add_path):
    for mod in (ort, onnxruntime):
        sess = mod.InferenceSession(add_path)
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        b_arr = np.ones((2, 3), np.float32)
        out = np.zeros((2, 3), np.float32)
        b = sess.io_binding()
        b.bind_input("a", "cpu", 0, np.float32, [2, 3], a.ctypes.data)
        b.bind_ortvalue_input("b", mod.OrtValue.ortvalue_from_numpy(b_arr))
        b.bind_output("c", "cpu", 0, np.float32, [2, 3], out.ctypes.data)
        sess.run_with_iobinding(b)
        np.testing.assert_array_equal(out, a + 1)  # written into the caller's buffer
        # An OrtValue bound as output receives the result too.
        ov = mod.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32, "cpu", 0)
        b.clear_binding_outputs()
        b.bind_ortvalue_output("c", ov)
        sess.run_with_iobinding(b)
        np.testing.assert_array_equal(ov.numpy(), a + 1)
        np.testing.assert_array_equal(b.get_outputs()[0].numpy(), a + 1)
        b.clear_binding_inputs()
        b.bind_cpu_input("a", a)
        b.bind_cpu_input("b", a)
        sess.run_with_iobinding(b)
        np.testing.assert_array_equal(ov.numpy(), a + a)
