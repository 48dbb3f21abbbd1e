"""Devices, memory infos, EP devices and provider selection, compared with onnxruntime."""

import subprocess
import sys
import textwrap

import numpy as np
import onnxruntime
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onyx as ort
from onyx.capi import onnxruntime_pybind11_state as C

ORT_C = onnxruntime.capi._pybind_state


@pytest.fixture
def relu_add_bytes():
    """y = Relu(x) + x over [2, 3], nodes named relu0 and add0."""
    return make_model(
        [helper.make_node("Relu", ["x"], ["r"], name="relu0"), helper.make_node("Add", ["r", "x"], ["y"], name="add0")],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        graph_name="g",
    ).SerializeToString()


X = np.arange(6, dtype=np.float32).reshape(2, 3) - 3
Y = np.maximum(X, 0) + X


def _memory_info_fields(m):
    return m.name, m.device_id, str(m.mem_type), str(m.allocator_type), str(m.device_mem_type), m.device_vendor_id


def _device_fields(d, native=False):
    if native:
        return d.device_id(), d.device_type(), d.vendor_id(), d.mem_type()
    return d.device_id(), d.device_type(), d.device_vendor_id(), d.device_mem_type()


def test_device_type_constants_match_onnxruntime():
    names = ["cpu", "gpu", "npu", "cuda", "cann", "dml", "fpga", "webgpu", "default_memory"]
    assert [getattr(ort.OrtDevice, n)() for n in names] == [getattr(ORT_C.OrtDevice, n)() for n in names]
    assert [getattr(ort.OrtDevice, n)() for n in names] == [0, 1, 3, 1, 3, 4, 2, 1, 0]


@pytest.mark.parametrize(
    "args", [("cpu", 0), ("cuda", 1), ("gpu", 0, 0x1002), ("npu", 2), ("dml", 0), ("cann", 0), ("webgpu", 0)]
)
def test_device_make_matches_onnxruntime(args):
    assert _device_fields(ort.OrtDevice.make(*args)) == _device_fields(onnxruntime.OrtDevice.make(*args))


def test_device_make_unknown_name_raises_like_onnxruntime():
    for name in ["tpu", "CPU"]:
        with pytest.raises(Exception, match=f"Unsupported device type: {name}"):
            onnxruntime.OrtDevice.make(name, 0)
        with pytest.raises(Exception, match=f"Unsupported device type: {name}"):
            ort.OrtDevice.make(name, 0)


@pytest.mark.parametrize("args", [(0, 0, 3), (1, 0, 0x10DE, 2), (4, 0, 0), (1, 5, 0)])
def test_native_device_constructor_matches_onnxruntime(args):
    assert _device_fields(C.OrtDevice(*args), True) == _device_fields(ORT_C.OrtDevice(*args), True)


def test_device_wrapper_constructor_and_equality():
    d = ort.OrtDevice.make("cuda", 1)
    assert ort.OrtDevice(d) == d and d._get_c_device() is d
    assert hash(ort.OrtDevice(d)) == hash(d)
    assert d != ort.OrtDevice.make("cuda", 0)


@pytest.mark.parametrize(
    "enum_name",
    [
        "OrtMemoryInfoDeviceType",
        "OrtDeviceMemoryType",
        "OrtHardwareDeviceType",
        "OrtExecutionProviderDevicePolicy",
        "OrtSparseFormat",
        "OrtDeviceVendorId",
        "OrtAllocatorType",
        "OrtMemType",
    ],
)
def test_enums_match_onnxruntime(enum_name):
    ours = [(k, int(v), str(v)) for k, v in getattr(ort, enum_name).__members__.items()]
    theirs = [(k, int(v), str(v)) for k, v in getattr(onnxruntime, enum_name).__members__.items()]
    assert ours == theirs


@pytest.mark.parametrize("name", ["Cpu", "Cuda", "CudaPinned", "DML"])
def test_memory_info_matches_onnxruntime(name):
    def fields(mod):
        return _memory_info_fields(
            mod.OrtMemoryInfo(name, mod.OrtAllocatorType.ORT_DEVICE_ALLOCATOR, 1, mod.OrtMemType.CPU_OUTPUT)
        )

    assert fields(ort) == fields(onnxruntime)


def test_memory_info_unknown_name_and_create_v2():
    with pytest.raises(RuntimeError, match="unknown memory name 'cpu'"):
        ort.OrtMemoryInfo("cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    for device_type in range(4):
        for mem in (0, 5):

            def fields(mod):
                m = mod.OrtMemoryInfo.create_v2(
                    "x",
                    mod.OrtMemoryInfoDeviceType(device_type),
                    0x10DE,
                    2,
                    mod.OrtDeviceMemoryType(mem),
                    0,
                    mod.OrtAllocatorType.ORT_ARENA_ALLOCATOR,
                )
                return _memory_info_fields(m)

            assert fields(ort) == fields(onnxruntime)


ARENA_FIELDS = [
    "max_mem",
    "arena_extend_strategy",
    "initial_chunk_size_bytes",
    "max_dead_bytes_per_chunk",
    "initial_growth_chunk_size_bytes",
    "max_power_of_two_extend_bytes",
]


@pytest.mark.parametrize(
    "args",
    [
        (0, -1, -1, -1),
        (1024, 1, 256, 5),
        ({},),
        ({"max_mem": 1024, "arena_extend_strategy": 1, "initial_chunk_size_bytes": 256,
          "max_dead_bytes_per_chunk": 5, "initial_growth_chunk_size_bytes": 7, "max_power_of_two_extend_bytes": 9},),
    ],
)
def test_arena_cfg_matches_onnxruntime(args):
    assert [getattr(ort.OrtArenaCfg(*args), f) for f in ARENA_FIELDS] == [
        getattr(onnxruntime.OrtArenaCfg(*args), f) for f in ARENA_FIELDS
    ]


def test_arena_cfg_errors():
    with pytest.raises(RuntimeError, match="Invalid OrtArenaCfg option: bogus"):
        ort.OrtArenaCfg({"bogus": 1})
    with pytest.raises(TypeError):
        ort.OrtArenaCfg(1, 2)
    cfg = ort.OrtArenaCfg({})
    cfg.max_mem = 77
    assert cfg.max_mem == 77


def test_create_and_register_allocator_records_cpu_and_refuses_devices(relu_add_bytes):
    from onyx.capi import _devices

    cpu = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    cfg = ort.OrtArenaCfg(0, -1, -1, -1)
    ort.create_and_register_allocator(cpu, cfg)
    assert _devices._registered_allocators["cpu"] == (cpu, cfg)
    ort.create_and_register_allocator_v2("CPUExecutionProvider", cpu, {}, None)
    assert _devices._registered_allocators["cpu"] == (cpu, None)
    cuda = ort.OrtMemoryInfo("Cuda", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    with pytest.raises(RuntimeError, match="'Cuda'"):
        ort.create_and_register_allocator(cuda, cfg)
    with pytest.raises(RuntimeError, match="CUDAExecutionProvider"):
        ort.create_and_register_allocator_v2("CUDAExecutionProvider", cpu, {}, cfg)
    # Sessions that ask for the environment's allocator run on it (with per-session threads too).
    so = ort.SessionOptions()
    so.add_session_config_entry("session.use_env_allocators", "1")
    for _ in range(2):
        np.testing.assert_array_equal(ort.InferenceSession(relu_add_bytes, so).run(None, {"x": X})[0], Y)


def test_ep_devices_match_onnxruntime():
    ours, theirs = ort.get_ep_devices(), onnxruntime.get_ep_devices()
    assert [d.ep_name for d in ours] == [d.ep_name for d in theirs] == ["CPUExecutionProvider"]
    o, t = ours[0], theirs[0]
    assert o.ep_vendor == "Onyx" and o.ep_metadata == {"version": ort.__version__}
    assert o.ep_options == t.ep_options == {}
    hw, thw = o.device, t.device
    assert str(hw.type) == str(thw.type) == "OrtHardwareDeviceType.CPU"
    assert (hw.vendor, hw.vendor_id, hw.device_id) == (thw.vendor, thw.vendor_id, thw.device_id)
    assert hw.metadata == thw.metadata == {}
    assert ort.get_ep_devices()[0] is o  # the same objects every time, as onnxruntime's
    assert o.memory_info(ort.OrtDeviceMemoryType.DEFAULT) is None
    assert t.memory_info(onnxruntime.OrtDeviceMemoryType.DEFAULT) is None
    with pytest.raises(RuntimeError):
        o.create_sync_stream()
    for cls in (ort.OrtEpDevice, ort.OrtHardwareDevice, ort.OrtEpAssignedNode, ort.OrtEpAssignedSubgraph):
        with pytest.raises(TypeError, match="No constructor defined"):
            cls()


def test_has_providers_matches_onnxruntime():
    for mod in (ort, onnxruntime):
        assert not mod.SessionOptions().has_providers()
        so = mod.SessionOptions()
        so.add_provider_for_devices(mod.get_ep_devices(), {})
        assert so.has_providers()
        so = mod.SessionOptions()
        so.set_provider_selection_policy(mod.OrtExecutionProviderDevicePolicy.PREFER_GPU)
        assert so.has_providers()
        so = mod.SessionOptions()
        so.add_provider("CPUExecutionProvider", {})
        assert so.has_providers()
        with pytest.raises(mod.capi.onnxruntime_pybind11_state.InvalidArgument, match="Must provide one or more"):
            mod.SessionOptions().add_provider_for_devices([], {})


def test_unknown_provider_names_itself():
    so = ort.SessionOptions()
    with pytest.raises(C.InvalidArgument, match="'TensorrtExecutionProvider'"):
        so.add_provider("TensorrtExecutionProvider", {})
    with pytest.raises(TypeError, match="OrtEpDevice"):
        so.add_provider_for_devices(["CPUExecutionProvider"], {})


def _run_both(relu_add_bytes, configure, **kw):
    out = []
    for mod in (ort, onnxruntime):
        so = mod.SessionOptions()
        configure(mod, so)
        with pytest.warns() if kw.get("providers") else _no_warning():
            s = mod.InferenceSession(relu_add_bytes, so, **kw)
        out.append((s.get_providers(), s.get_provider_options(), s.run(None, {"x": X})[0].tolist()))
    assert out[0] == out[1]
    return out[0]


class _no_warning:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_sessions_from_ep_devices_policy_and_delegate_run_on_cpu(relu_add_bytes):
    want = (["CPUExecutionProvider"], {"CPUExecutionProvider": {}}, Y.tolist())
    assert _run_both(relu_add_bytes, lambda m, so: so.add_provider_for_devices(m.get_ep_devices(), {})) == want
    assert _run_both(relu_add_bytes, lambda m, so: so.add_provider_for_devices(m.get_ep_devices(), {"a": "b"})) == want
    assert _run_both(relu_add_bytes, lambda m, so: so.add_provider("CPUExecutionProvider", {})) == want
    policy = lambda m, so: so.set_provider_selection_policy(m.OrtExecutionProviderDevicePolicy.PREFER_GPU)  # noqa: E731
    assert _run_both(relu_add_bytes, policy) == want
    both = lambda m, so: so.add_provider_for_devices(m.get_ep_devices(), {})  # noqa: E731
    assert _run_both(relu_add_bytes, both, providers=["CPUExecutionProvider"]) == want


def test_selection_delegate_gets_what_onnxruntime_gives(relu_add_bytes):
    calls = {}
    for mod in (ort, onnxruntime):

        def delegate(ep_devices, model_metadata, runtime_metadata, max_selections, mod=mod):
            calls[mod.__name__] = ([d.ep_name for d in ep_devices], model_metadata, runtime_metadata, max_selections)
            return ep_devices[:1]

        so = mod.SessionOptions()
        so.set_provider_selection_policy_delegate(delegate)
        s = mod.InferenceSession(relu_add_bytes, so)
        assert s.get_providers() == ["CPUExecutionProvider"]
        np.testing.assert_array_equal(s.run(None, {"x": X})[0], Y)
    assert calls["onyx"] == calls["onnxruntime"]
    assert calls["onyx"][1]["graph_name"] == "g"


@pytest.mark.parametrize("result, message", [([], "did not select anything"), (5, "EP selection delegate failed")])
def test_selection_delegate_errors_like_onnxruntime(relu_add_bytes, result, message):
    for mod in (ort, onnxruntime):
        so = mod.SessionOptions()
        so.set_provider_selection_policy_delegate(lambda *args: result)
        with pytest.raises(mod.capi.onnxruntime_pybind11_state.Fail, match=message):
            mod.InferenceSession(relu_add_bytes, so)


def test_memory_infos_and_input_ep_devices(relu_add_bytes):
    fields = _memory_info_fields
    ours, theirs = ort.InferenceSession(relu_add_bytes), onnxruntime.InferenceSession(relu_add_bytes)
    assert [fields(m) for m in ours.get_input_memory_infos()] == [fields(m) for m in theirs.get_input_memory_infos()]
    assert [fields(m) for m in ours.get_output_memory_infos()] == [fields(m) for m in theirs.get_output_memory_infos()]
    assert [d.ep_name for d in ours.get_input_epdevices()] == [d.ep_name for d in theirs.get_input_epdevices()]


def test_graph_assignment_info_matches_onnxruntime(relu_add_bytes):
    results = []
    for mod in (ort, onnxruntime):
        with pytest.raises(mod.capi.onnxruntime_pybind11_state.Fail, match="record_ep_graph_assignment_info"):
            mod.InferenceSession(relu_add_bytes).get_provider_graph_assignment_info()
        so = mod.SessionOptions()
        so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
        so.graph_optimization_level = mod.GraphOptimizationLevel.ORT_DISABLE_ALL
        info = mod.InferenceSession(relu_add_bytes, so).get_provider_graph_assignment_info()
        results.append([(sg.ep_name, [(n.name, n.domain, n.op_type) for n in sg.get_nodes()]) for sg in info])
    assert results[0] == results[1] == [
        ("CPUExecutionProvider", [("relu0", "", "Relu")]),
        ("CPUExecutionProvider", [("add0", "", "Add")]),
    ]


def test_external_initializer_info():
    e = ort.OrtExternalInitializerInfo("w.bin", 16, 64)
    r = onnxruntime.OrtExternalInitializerInfo("w.bin", 16, 64)
    assert (e.filepath, e.file_offset, e.byte_size) == (r.filepath, r.file_offset, r.byte_size)


@pytest.mark.parametrize("args", [("cpu",), ("cpu", 0, 0), ("cpu", 3)])
def test_ortvalue_on_cpu_device_names(args):
    x = np.ones(3, np.float32)
    assert ort.OrtValue.ortvalue_from_numpy(x, *args).device_name() == "cpu"
    assert onnxruntime.OrtValue.ortvalue_from_numpy(x, *args).device_name() == "cpu"
    np.testing.assert_array_equal(ort.OrtValue.ortvalue_from_shape_and_type([2], np.float32, *args).numpy(), [0, 0])


@pytest.mark.parametrize("args", [("cuda", 0), ("gpu", 0, 0x10DE), ("npu", 0, 0x5143)])
def test_ortvalue_on_missing_device_is_runtime_error_and_invalid_argument(args):
    if "CUDAExecutionProvider" in ort.get_available_providers() and args[0] != "npu":
        pytest.skip("this build has the CUDA provider")
    x = np.ones(3, np.float32)
    with pytest.raises(RuntimeError):
        onnxruntime.OrtValue.ortvalue_from_numpy(x, *args)
    with pytest.raises(RuntimeError, match="is not available in this build of Onyx") as e:
        ort.OrtValue.ortvalue_from_numpy(x, *args)
    assert isinstance(e.value, C.InvalidArgument)
    with pytest.raises(C.InvalidArgument):
        ort.OrtValue.ortvalue_from_shape_and_type([2], np.float32, *args)


def test_ortvalue_from_native_device_and_memory_info():
    x = np.arange(3, dtype=np.float32)
    v = C.OrtValue.ortvalue_from_numpy(x, ort.OrtDevice.make("cpu", 0))
    np.testing.assert_array_equal(v.numpy(), x)
    mi = ort.OrtMemoryInfo("Cpu", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    assert ort.OrtValue.ortvalue_from_shape_and_type([2, 2], 1, memory_info=mi).shape() == [2, 2]
    cuda = ort.OrtMemoryInfo("Cuda", ort.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, ort.OrtMemType.DEFAULT)
    with pytest.raises(C.InvalidArgument, match="'Cuda'"):
        ort.OrtValue.ortvalue_from_shape_and_type([2], np.float32, memory_info=cuda)


@pytest.mark.parametrize("args", [("cpu",), ("cuda", 0), ("gpu", 0, 0x10DE)])
def test_bind_output_to_a_device_gives_host_values_as_onnxruntime_cpu(relu_add_bytes, args):
    for mod in (ort, onnxruntime):
        s = mod.InferenceSession(relu_add_bytes)
        b = s.io_binding()
        b.bind_cpu_input("x", X)
        b.bind_output("y", *args)
        s.run_with_iobinding(b)
        assert b.get_outputs()[0].device_name() == "cpu"
        np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], Y)
    with pytest.raises(ValueError, match="Unsupported device type: tpu"):
        ort.InferenceSession(relu_add_bytes).io_binding().bind_output("y", "tpu", 0)


def test_execution_provider_libraries_raise_naming_the_library():
    with pytest.raises(C.Fail, match="'Foo' from '/tmp/libfoo.so'.*no plugin execution providers"):
        ort.register_execution_provider_library("Foo", "/tmp/libfoo.so")
    for mod in (ort, onnxruntime):
        with pytest.raises(mod.capi.onnxruntime_pybind11_state.Fail, match="Foo was not registered"):
            mod.unregister_execution_provider_library("Foo")


def test_copy_tensors_copies_and_checks():
    a = ort.OrtValue.ortvalue_from_numpy(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = ort.OrtValue.ortvalue_from_shape_and_type([2, 3], np.float32)
    s1 = ort.OrtValue.ortvalue_from_numpy(np.array(["a", "bc"], dtype=object))
    s2 = ort.OrtValue.ortvalue_from_numpy(np.array(["", ""], dtype=object))
    ort.copy_tensors([a, s1], [b, s2], None)
    np.testing.assert_array_equal(b.numpy(), np.arange(6).reshape(2, 3))
    assert b.data_ptr() != a.data_ptr()  # a copy, not a shared buffer
    assert s2.numpy().tolist() == ["a", "bc"]
    for dst in ([2, 3], np.int32), ([3, 2], np.float32), ([6], np.float32):
        with pytest.raises(C.InvalidArgument, match="copy_tensors: source 0 is float"):
            ort.copy_tensors([a], [ort.OrtValue.ortvalue_from_shape_and_type(*dst)])
    with pytest.raises(C.InvalidArgument, match="2 sources for 1 destinations"):
        ort.copy_tensors([a, a], [b])
    with pytest.raises(C.InvalidArgument, match="no stream"):
        ort.copy_tensors([a], [b], object())


def test_small_names_match_onnxruntime():
    assert ort.cuda_version == onnxruntime.cuda_version == ""
    assert ort.has_collective_ops() is onnxruntime.has_collective_ops() is False
    assert ort.onnxruntime_validation.get_package_name_and_version_info() == ("onyx", ort.__version__, "")
    ort.onnxruntime_validation.check_distro_info()
    assert ort.package_name == "onyx" and ort.version == ort.__version__


def test_print_debug_info(capsys):
    ort.print_debug_info()
    out = capsys.readouterr().out
    assert f"onyx version: {ort.__version__}" in out and "CPUExecutionProvider" in out


def test_global_thread_pool_sizes_once_before_the_shared_pools():
    # In a fresh process: the shared pools are process-wide state.
    code = textwrap.dedent(
        """
        import numpy as np, onyx as ort
        from onnx import helper, TensorProto
        ort.set_global_thread_pool_sizes(2, 1)
        try:
            ort.set_global_thread_pool_sizes(1, 1)
        except ort.capi.onnxruntime_pybind11_state.Fail as e:
            print("again:", "already been created" in str(e))
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
        m = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y]))
        m.ir_version = 8
        so = ort.SessionOptions()
        so.use_per_session_threads = False
        print(ort.InferenceSession(m.SerializeToString(), so).run(None, {"x": np.array([-1, 0, 2], np.float32)})[0])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split("\n")[:2] == ["again: True", "[0. 0. 2.]"]
