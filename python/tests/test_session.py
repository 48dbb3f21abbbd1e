"""InferenceSession: loading, metadata, run, options and providers, compared
with onnxruntime on the same models."""

import os
import threading
import warnings

import numpy as np
import onnxruntime
import pytest
from conftest import make_model, save
import onnx
from onnx import TensorProto, helper, numpy_helper

import onyx as ort
from onyx.capi.onnxruntime_pybind11_state import InvalidArgument, InvalidProtobuf, NoSuchFile


def both(path_or_bytes, **kw):
    return ort.InferenceSession(path_or_bytes, **kw), onnxruntime.InferenceSession(path_or_bytes, **kw)


def test_import_as_ort_basics():
    assert ort.get_available_providers() == ["CPUExecutionProvider"]
    assert ort.get_device() == "CPU"
    assert isinstance(ort.__version__, str)
    assert ort.GraphOptimizationLevel.ORT_ENABLE_ALL == 99
    assert int(ort.GraphOptimizationLevel.ORT_DISABLE_ALL) == 0
    assert ort.ExecutionMode.ORT_PARALLEL == 1
    assert str(ort.ExecutionMode.ORT_SEQUENTIAL) == "ExecutionMode.ORT_SEQUENTIAL"


def test_run_matches_onnxruntime(mlp_path):
    ours, ref = both(mlp_path)
    x = np.random.default_rng(1).standard_normal((5, 8)).astype(np.float32)
    got = ours.run(None, {"x": x})
    want = ref.run(None, {"x": x})
    assert isinstance(got, list) and len(got) == 2
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray)
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    # One named output, and [] meaning all outputs.
    (y,) = ours.run(["y"], {"x": x})
    np.testing.assert_allclose(y, want[0], rtol=1e-5, atol=1e-5)
    assert len(ours.run([], {"x": x})) == 2
    (h,) = ours.run(["hidden"], {"x": x})
    np.testing.assert_allclose(h, want[1], rtol=1e-5, atol=1e-5)


def test_list_feeds_take_the_input_element_type(add_path):
    """As onnxruntime: a list (here of Python floats and ints) becomes an array
    of the declared element type, not float64."""
    ours, ref = both(add_path)
    feeds = {"a": [[1.5, -2.0, 3.0]], "b": [[1, 2, 3]]}
    (got,), (want,) = ours.run(None, feeds), ref.run(None, feeds)
    assert got.dtype == np.float32 == want.dtype
    np.testing.assert_array_equal(got, want)
    with pytest.raises(InvalidArgument, match="input 'a'"):
        ours.run(None, {"a": [["x", "y", "z"]], "b": [[1, 2, 3]]})


def test_node_args_match_onnxruntime(add_path, mlp_path):
    for path in (add_path, mlp_path):
        ours, ref = both(path)
        for a, b in [
            (ours.get_inputs(), ref.get_inputs()),
            (ours.get_outputs(), ref.get_outputs()),
        ]:
            assert [(n.name, n.type, n.shape) for n in a] == [(n.name, n.type, n.shape) for n in b]
        assert str(ours.get_inputs()[0]) == str(ref.get_inputs()[0])


def test_shapes_symbolic_and_unknown(tmp_path):
    model = make_model(
        [helper.make_node("Identity", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.INT64, ["batch", None, 3])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["batch", None, 3])],
    )
    sess = ort.InferenceSession(model.SerializeToString())
    (arg,) = sess.get_inputs()
    assert arg.name == "x" and arg.type == "tensor(int64)" and arg.shape == ["batch", None, 3]


def test_overridable_initializers(tmp_path):
    w = numpy_helper.from_array(np.array([1.0, 2.0, 3.0], np.float32), "w")
    model = make_model(
        [helper.make_node("Mul", ["x", "w"], ["y"])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [w],
    )
    path = save(model, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, ref = both(path)
    assert [i.name for i in ours.get_inputs()] == [i.name for i in ref.get_inputs()] == ["x"]
    assert [(i.name, i.type, i.shape) for i in ours.get_overridable_initializers()] == [
        (i.name, i.type, i.shape) for i in ref.get_overridable_initializers()
    ]
    x = np.ones(3, np.float32)
    np.testing.assert_array_equal(ours.run(None, {"x": x})[0], [1, 2, 3])
    w2 = np.full(3, 10, np.float32)
    np.testing.assert_array_equal(ours.run(None, {"x": x, "w": w2})[0], ref.run(None, {"x": x, "w": w2})[0])
    # The initializer is unchanged for the next call.
    np.testing.assert_array_equal(ours.run(None, {"x": x})[0], [1, 2, 3])


def test_modelmeta(add_model, add_path):
    for src in (add_path, add_model.SerializeToString()):
        ours, ref = both(src)
        a, b = ours.get_modelmeta(), ref.get_modelmeta()
        for field in ("producer_name", "graph_name", "domain", "description", "graph_description", "version", "custom_metadata_map"):
            assert getattr(a, field) == getattr(b, field), field


def test_modelmeta_custom_map_and_defaults(tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    helper.set_model_props(model, {"author": "me", "task": "relu"})
    path = save(model, tmp_path)
    ours, ref = both(path)
    assert ours.get_modelmeta().custom_metadata_map == ref.get_modelmeta().custom_metadata_map == {"author": "me", "task": "relu"}
    assert ours.get_modelmeta().version == ref.get_modelmeta().version


def test_load_from_bytes_and_pathlike(add_model, add_path):
    import pathlib

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    for src in (add_model.SerializeToString(), pathlib.Path(add_path), add_path):
        (c,) = ort.InferenceSession(src).run(None, {"a": a, "b": a})
        np.testing.assert_array_equal(c, a + a)
    with pytest.raises(TypeError):
        ort.InferenceSession(42)


def test_providers(add_path):
    sess = ort.InferenceSession(add_path, providers=["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.get_provider_options() == {"CPUExecutionProvider": {}}
    sess = ort.InferenceSession(add_path, providers=[("CPUExecutionProvider", {"use_arena": 0})])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert "CPUExecutionProvider" in sess.get_provider_options()
    sess = ort.InferenceSession(add_path, providers=["CPUExecutionProvider"], provider_options=[{}])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    # Unknown or unavailable providers: a warning, then the CPU provider.
    with pytest.warns(UserWarning, match="not in available provider names"):
        sess = ort.InferenceSession(add_path, providers=["CUDAExecutionProvider", "CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    with pytest.warns(UserWarning):
        sess = ort.InferenceSession(add_path, providers=["FooExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    # Malformed arguments: ValueError, as onnxruntime.
    with pytest.raises(ValueError):
        ort.InferenceSession(add_path, providers=[1])
    with pytest.raises(ValueError):
        ort.InferenceSession(add_path, providers=["CPUExecutionProvider"], provider_options=[{}, {}])
    sess.set_providers(["CPUExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    a = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"a": a, "b": a})[0], a * 2)


def test_session_options(mlp_path):
    so = ort.SessionOptions()
    assert so.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    assert so.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL
    assert so.intra_op_num_threads == 0 and so.inter_op_num_threads == 0
    assert so.enable_mem_pattern and so.enable_mem_reuse and so.enable_cpu_mem_arena
    assert so.enable_profiling is False
    so.add_session_config_entry("session.disable_prepacking", "1")
    assert so.get_session_config_entry("session.disable_prepacking") == "1"
    with pytest.raises(RuntimeError):
        so.get_session_config_entry("nope")
    with pytest.raises(AttributeError):
        so.no_such_option = 1
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    want = onnxruntime.InferenceSession(mlp_path).run(None, {"x": x})
    for level in (
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    ):
        for threads in (1, 2):
            so = ort.SessionOptions()
            so.graph_optimization_level = level
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            so.execution_mode = ort.ExecutionMode.ORT_PARALLEL if threads == 2 else ort.ExecutionMode.ORT_SEQUENTIAL
            so.enable_mem_pattern = False
            so.enable_cpu_mem_arena = False
            so.log_severity_level = 3
            sess = ort.InferenceSession(mlp_path, sess_options=so, providers=["CPUExecutionProvider"])
            assert sess.get_session_options() is so
            for g, w in zip(sess.run(None, {"x": x}), want):
                np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


def test_run_options(add_path):
    sess = ort.InferenceSession(add_path)
    ro = ort.RunOptions()
    ro.log_severity_level = 3
    ro.logid = "test"
    ro.add_run_config_entry("k", "v")
    assert ro.get_run_config_entry("k") == "v"
    a = np.ones((2, 3), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"a": a, "b": a}, ro)[0], a * 2)
    ro.terminate = True
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail):
        sess.run(None, {"a": a, "b": a}, ro)


def test_run_options_arena_shrinkage(mlp_path):
    # The entry reaches the C++ run (which then empties the arena, checked in
    # tests/parallel_test.cc); results are unchanged, with OrtValues too.
    sess = ort.InferenceSession(mlp_path)
    x = np.linspace(-1, 1, 2 * sess.get_inputs()[0].shape[1], dtype=np.float32).reshape(2, -1)
    want = sess.run(None, {"x": x})
    ro = ort.RunOptions()
    ro.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
    for _ in range(2):
        for g, w in zip(sess.run(None, {"x": x}, ro), want):
            np.testing.assert_array_equal(g, w)
    got = sess.run_with_ort_values(None, {"x": ort.OrtValue.ortvalue_from_numpy(x)}, ro)
    np.testing.assert_array_equal(got[0].numpy(), want[0])


def test_profiling(add_path, tmp_path):
    import json

    so = ort.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof_")
    sess = ort.InferenceSession(add_path, so)
    a = np.ones((2, 3), np.float32)
    for _ in range(3):
        sess.run(None, {"a": a, "b": a})
    start = sess.get_profiling_start_time_ns()
    assert start > 0
    path = sess.end_profiling()
    # As in onnxruntime: the start time stays, a second end_profiling writes nothing.
    assert sess.get_profiling_start_time_ns() == start and sess.end_profiling() == ""
    assert os.path.basename(path).startswith("prof_") and path.endswith(".json")
    events = json.load(open(path))
    assert sum(e["name"] == "model_run" for e in events) == 3
    assert all({"cat", "name", "ph", "ts", "dur", "pid", "tid"} <= set(e) for e in events)
    # The C++ profiler: session events and one Node event per executed node per run.
    names = {e["name"] for e in events if e["cat"] == "Session"}
    assert {"model_loading", "session_initialization"} <= names
    nodes = [e for e in events if e["cat"] == "Node"]
    assert len(nodes) == 3
    for n in nodes:
        assert n["args"]["op_name"] == "Add" and n["args"]["provider"] == "CPUExecutionProvider"
        assert n["args"]["input_type_shape"] == [{"float": [2, 3]}, {"float": [2, 3]}]
        assert n["args"]["output_type_shape"] == [{"float": [2, 3]}] and n["args"]["output_size"] == 24
    assert ort.InferenceSession(add_path).end_profiling() == ""


def test_optimized_model_filepath(add_path, tmp_path):
    so = ort.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "opt.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the optimized graph is written, with no warning
        ort.InferenceSession(add_path, so)
    onnx.checker.check_model(so.optimized_model_filepath)
    a = np.ones((2, 3), np.float32)
    (c,) = ort.InferenceSession(so.optimized_model_filepath).run(None, {"a": a, "b": a})
    np.testing.assert_array_equal(c, a * 2)


def test_outputs_are_owned_and_writable(tmp_path):
    # An output that is an initializer, one that is the input itself, one computed.
    k = numpy_helper.from_array(np.array([5.0, 6.0], np.float32), "k")
    model = make_model(
        [
            helper.make_node("Identity", ["k"], ["const_out"]),
            helper.make_node("Identity", ["x"], ["same"]),
            helper.make_node("Neg", ["x"], ["neg"]),
        ],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [
            helper.make_tensor_value_info("const_out", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("same", TensorProto.FLOAT, [2]),
            helper.make_tensor_value_info("neg", TensorProto.FLOAT, [2]),
        ],
        [k],
    )
    for level in (ort.GraphOptimizationLevel.ORT_DISABLE_ALL, ort.GraphOptimizationLevel.ORT_ENABLE_ALL):
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        sess = ort.InferenceSession(model.SerializeToString(), so)
        x = np.array([1.0, 2.0], np.float32)
        c, s, n = sess.run(None, {"x": x})
        c[:] = 0
        s[:] = 0
        n[:] = 0
        assert x.tolist() == [1.0, 2.0]  # the input is untouched
        c, s, n = sess.run(None, {"x": x})
        assert c.tolist() == [5.0, 6.0] and s.tolist() == [1.0, 2.0] and n.tolist() == [-1.0, -2.0]
        assert c.flags.writeable and n.flags.writeable


def test_noncontiguous_and_list_inputs(add_path):
    sess = ort.InferenceSession(add_path)
    big = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = big[:, ::2]  # strided view
    b = np.asfortranarray(np.ones((4, 3), np.float32))
    (c,) = sess.run(None, {"a": a, "b": b})
    np.testing.assert_array_equal(c, a + 1)
    (c,) = sess.run(["c"], {"a": np.array([[1, 2, 3]], np.float32), "b": np.zeros((1, 3), np.float32)})
    np.testing.assert_array_equal(c, [[1, 2, 3]])


def test_run_from_threads(mlp_path):
    sess = ort.InferenceSession(mlp_path)
    ref = onnxruntime.InferenceSession(mlp_path)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((3, 8)).astype(np.float32) for _ in range(8)]
    wants = [ref.run(["y"], {"x": x})[0] for x in xs]
    errors = []

    def work(i):
        try:
            for _ in range(50):
                (y,) = sess.run(["y"], {"x": xs[i]})
                np.testing.assert_allclose(y, wants[i], rtol=1e-5, atol=1e-5)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_run_async(add_path):
    sess = ort.InferenceSession(add_path)
    done = threading.Event()
    result = {}

    def callback(outputs, user_data, err):
        result["outputs"], result["user_data"], result["err"] = outputs, user_data, err
        done.set()

    a = np.ones((2, 3), np.float32)
    sess.run_async(None, {"a": a, "b": a}, callback, "data")
    assert done.wait(10)
    assert result["err"] == "" and result["user_data"] == "data"
    np.testing.assert_array_equal(result["outputs"][0], a * 2)


def test_unknown_shape_is_empty_list(tmp_path):
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        check=False,
    ).SerializeToString()
    sess = ort.InferenceSession(model)
    assert sess.get_inputs()[0].shape == onnxruntime.InferenceSession(model).get_inputs()[0].shape == []


def test_mapping_feeds(add_path):
    import types

    sess = ort.InferenceSession(add_path)
    a = np.ones((2, 3), np.float32)
    feeds = types.MappingProxyType({"a": a, "b": a})
    np.testing.assert_array_equal(sess.run(None, feeds)[0], a * 2)
    np.testing.assert_array_equal(sess.run(("c",), {"a": a, "b": a})[0], a * 2)


def test_import_order_with_onnx():
    # onyx links the system protobuf / ONNX libraries; importing it before or
    # after the onnx package must both work.
    import subprocess
    import sys

    code = "import onyx, onnx, onnxruntime; from onnx import helper; print(onyx.get_device())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "CPU"


def test_run_releases_gil(mlp_path):
    # While one thread runs, another Python thread keeps making progress.
    import time

    sess = ort.InferenceSession(mlp_path)
    x = np.ones((256, 8), np.float32)
    stop = threading.Event()
    ticks = [0]

    def spin():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0)

    t = threading.Thread(target=spin)
    t.start()
    try:
        for _ in range(200):
            sess.run(None, {"x": x})
    finally:
        stop.set()
        t.join()
    assert ticks[0] > 0


def test_free_dimension_override_matches_onnxruntime(mlp_path):
    """add_free_dimension_override_by_name fixes 'batch': metadata shows it, other sizes are refused."""
    sessions = []
    for module in (ort, onnxruntime):
        so = module.SessionOptions()
        so.add_free_dimension_override_by_name("batch", 3)
        so.add_free_dimension_override_by_name("not_in_model", 9)
        sessions.append(module.InferenceSession(mlp_path, so, providers=["CPUExecutionProvider"]))
    ours, ref = sessions
    assert ours.get_inputs()[0].shape == ref.get_inputs()[0].shape == [3, 8]
    assert ours.get_outputs()[1].shape == ref.get_outputs()[1].shape == [3, 16]
    x = np.random.default_rng(2).standard_normal((3, 8)).astype(np.float32)
    np.testing.assert_allclose(ours.run(["y"], {"x": x})[0], ref.run(["y"], {"x": x})[0], rtol=1e-5, atol=1e-5)
    with pytest.raises(InvalidArgument, match="dimension 0 must be 3"):
        ours.run(None, {"x": x[:2]})


def test_add_initializer_matches_onnxruntime(mlp_path):
    """add_initializer replaces the model's b2 (the OrtValue must outlive the session in onnxruntime)."""
    b2 = np.arange(4, dtype=np.float32)
    values = [ort.OrtValue.ortvalue_from_numpy(b2), onnxruntime.OrtValue.ortvalue_from_numpy(b2)]
    sessions = []
    for module, value in zip((ort, onnxruntime), values):
        so = module.SessionOptions()
        so.add_initializer("b2", value)
        sessions.append(module.InferenceSession(mlp_path, so, providers=["CPUExecutionProvider"]))
    x = np.random.default_rng(3).standard_normal((2, 8)).astype(np.float32)
    (got,), (want,) = sessions[0].run(["y"], {"x": x}), sessions[1].run(["y"], {"x": x})
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    plain = onnxruntime.InferenceSession(mlp_path, providers=["CPUExecutionProvider"]).run(["y"], {"x": x})[0]
    assert np.abs(got - plain).max() > 0.5  # the override changed the result
    so = ort.SessionOptions()
    with pytest.raises(TypeError, match="OrtValue"):
        so.add_initializer("b2", b2)
    so.add_external_initializers(["b2"], [ort.OrtValue.ortvalue_from_numpy(b2.astype(np.float64))])
    with pytest.raises(InvalidArgument, match="initializer override 'b2' is double"):
        ort.InferenceSession(mlp_path, so, providers=["CPUExecutionProvider"])


def _model_with_external_weights(tmp_path):
    """A MatMul whose weights live in weights.bin beside the model; returns (model path, x, W)."""
    from onnx.external_data_helper import convert_model_to_external_data

    w = np.arange(12, dtype=np.float32).reshape(3, 4) / 7
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])], [numpy_helper.from_array(w, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    convert_model_to_external_data(m, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    path = tmp_path / "model.onnx"
    onnx.save(m, str(path))
    return path, np.ones((2, 3), np.float32), w


def test_external_data_files_in_memory(tmp_path):
    path, x, w = _model_with_external_weights(tmp_path)
    contents = (tmp_path / "weights.bin").read_bytes()
    model_bytes = path.read_bytes()
    (tmp_path / "weights.bin").unlink()
    for runtime in (ort, onnxruntime):
        so = runtime.SessionOptions()
        so.add_external_initializers_from_files_in_memory(["weights.bin"], [np.frombuffer(contents, np.uint8)],
                                                          [len(contents)])
        for source in (str(path), model_bytes):
            y = runtime.InferenceSession(source, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            np.testing.assert_allclose(y, x @ w, rtol=1e-6)
    so = ort.SessionOptions()
    with pytest.raises(ValueError, match="outside its buffer"):
        so.add_external_initializers_from_files_in_memory(["weights.bin"], [contents], [len(contents) + 1])
    with pytest.raises(NoSuchFile):  # nothing given, no file: the missing file is named
        ort.InferenceSession(str(path), so)


def test_load_cancellation_flag(add_path):
    from onyx.capi.onnxruntime_pybind11_state import ModelLoadCanceled

    for runtime in (ort, onnxruntime):
        so = runtime.SessionOptions()
        so.set_load_cancellation_flag(True)
        with pytest.raises(Exception) as e:
            runtime.InferenceSession(add_path, so, providers=["CPUExecutionProvider"])
        assert type(e.value).__name__ == "ModelLoadCanceled"
    assert issubclass(ModelLoadCanceled, Exception)
    so = ort.SessionOptions()
    so.set_load_cancellation_flag(True)
    so.set_load_cancellation_flag(False)
    ort.InferenceSession(add_path, so)


def test_session_allocator_tuning_and_dynamic_options(add_path):
    ours, ref = both(add_path, providers=["CPUExecutionProvider"])
    for s in (ours, ref):
        v = s.create_ortvalue_from_shape_and_type([2, 3], np.float32, "cpu")
        assert (v.shape(), v.data_type(), v.device_name()) == ([2, 3], "tensor(float)", "cpu")
        assert v.numpy().dtype == np.float32
        assert s.create_ortvalue_from_shape_and_type([4], 7, "cpu").data_type() == "tensor(int64)"
        with pytest.raises(RuntimeError):
            s.create_ortvalue_from_shape_and_type([2], np.float32, "cuda")
        assert s.get_tuning_results() == []
        s.set_ep_dynamic_options({"ep.dynamic.workload_type": "Efficient"})
        s.release_captured_graph()
    with pytest.warns(UserWarning, match="does not support TunableOp"):
        ours.set_tuning_results([{"ep": "CPUExecutionProvider", "results": {}, "validators": {}}])
    with pytest.raises(ort.capi.onnxruntime_pybind11_state.Fail):
        ours.set_tuning_results([{"ep": "CPUExecutionProvider"}], error_on_invalid=True)
