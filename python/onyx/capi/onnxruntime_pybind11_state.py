"""The names onnxruntime's native module exposes (exceptions, enums, options,
OrtValue, NodeArg, ...), so `from onnxruntime.capi.onnxruntime_pybind11_state
import InvalidArgument` keeps working as `from onyx.capi... import ...`."""

from __future__ import annotations

from onyx import _core
from onyx._core import (  # noqa: F401  (re-exported)
    DeviceReset,
    EngineError,
    EPFail,
    Fail,
    InvalidArgument,
    InvalidGraph,
    InvalidProtobuf,
    ModelLoadCanceled,
    ModelLoaded,
    ModelRequiresCompilation,
    NoModel,
    NoSuchFile,
    NotFound,
    NotImplemented,
    OrtValue,
    RuntimeException,
    SparseCooView,
    SparseCsrView,
    SparseTensor,
)
from onyx.capi._devices import (  # noqa: F401  (re-exported)
    OrtArenaCfg,
    OrtDevice,
    OrtDeviceMemoryType,
    OrtDeviceVendorId,
    OrtEpAssignedNode,
    OrtEpAssignedSubgraph,
    OrtEpDevice,
    OrtExecutionProviderDevicePolicy,
    OrtExternalInitializerInfo,
    OrtHardwareDevice,
    OrtHardwareDeviceType,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtSparseFormat,
    _core_device_name,
    create_and_register_allocator,
    create_and_register_allocator_v2,
    get_ep_devices,
    register_execution_provider_library,
    unregister_execution_provider_library,
)
from onyx.capi._dlpack import ortvalue_from_dlpack as _ortvalue_from_dlpack
from onyx.capi._enum import _OrtEnum

OrtValue.from_dlpack = classmethod(_ortvalue_from_dlpack)

# ---------------------------------------------------------------- OrtValue factories taking devices

# The native factories take 'cpu' or 'cuda'; these take what onnxruntime's do: a device name
# ('cpu', 'cuda', 'gpu' with a vendor id, ...) or an OrtDevice, and refuse a device Onyx cannot use.
_native_from_numpy = OrtValue.ortvalue_from_numpy
_native_from_shape_and_type = OrtValue.ortvalue_from_shape_and_type


def _ortvalue_from_numpy(numpy_obj, /, device_type="cpu", device_id=0, vendor_id=-1):
    """Wraps a numpy array (in place when it is C-contiguous; the OrtValue keeps it alive)."""
    return _native_from_numpy(numpy_obj, _core_device_name(device_type, device_id, vendor_id), int(device_id))


def _ortvalue_from_shape_and_type(shape, element_type, device_type="cpu", device_id=0, vendor_id=-1, memory_info=None):
    """A zero-filled tensor of this shape and element type (a numpy type or an ONNX type number)."""
    if memory_info is not None:
        if not isinstance(memory_info, OrtMemoryInfo):
            raise TypeError(f"memory_info must be an OrtMemoryInfo, got {type(memory_info).__name__}")
        if not memory_info._is_cpu():
            raise InvalidArgument(
                "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Onyx allocates OrtValues in host memory only, "
                f"not in '{memory_info.name}'"
            )
        return _native_from_shape_and_type(shape, element_type, "cpu", 0)
    device = _core_device_name(device_type, device_id, vendor_id)
    return _native_from_shape_and_type(shape, element_type, device, int(device_id))


OrtValue.ortvalue_from_numpy = staticmethod(_ortvalue_from_numpy)
OrtValue.ortvalue_from_shape_and_type = staticmethod(_ortvalue_from_shape_and_type)

# ---------------------------------------------------------------- SparseTensor


def _check_sparse_device(ort_device, what: str) -> None:
    device = ort_device._get_c_device() if hasattr(ort_device, "_get_c_device") else ort_device
    if not isinstance(device, OrtDevice):
        raise TypeError(f"{what}: ort_device must be an OrtDevice, got {type(ort_device).__name__}")
    if device.device_type() != OrtDevice.cpu():
        raise RuntimeError(f"{what}: Onyx keeps sparse tensors on the CPU, not on device {device._describe()}")


def _sparse_coo_from_numpy(cls, dense_shape, values, coo_indices, ort_device):
    """A COO sparse tensor: values (1-D) at coo_indices, either [nnz] linear indices
    into the dense shape or [nnz, rank] coordinates. Numeric values and int64
    indices are used in place (the tensor keeps the arrays alive)."""
    _check_sparse_device(ort_device, "sparse_coo_from_numpy")
    return SparseTensor._coo(dense_shape, values, coo_indices)


def _sparse_csr_from_numpy(cls, dense_shape, values, inner_indices, outer_indices, ort_device):
    """A CSR sparse tensor of a 2-D dense shape: values with their column
    (inner_indices) and where each row starts (outer_indices, rows + 1 entries)."""
    _check_sparse_device(ort_device, "sparse_csr_from_numpy")
    return SparseTensor._csr(dense_shape, values, inner_indices, outer_indices)


SparseTensor.sparse_coo_from_numpy = classmethod(_sparse_coo_from_numpy)
SparseTensor.sparse_csr_from_numpy = classmethod(_sparse_csr_from_numpy)
SparseTensor.format = lambda self: OrtSparseFormat(self._format_value())
SparseTensor.format.__doc__ = "The OrtSparseFormat of the tensor (ORT_SPARSE_COO or ORT_SPARSE_CSRC)."
SparseTensor._get_c_tensor = lambda self: self
# The native module's names for the views.
SparseTensor.get_coo_data = SparseTensor.as_coo_view
SparseTensor.get_csrc_data = SparseTensor.as_csrc_view
SparseTensor.get_blocksparse_data = SparseTensor.as_blocksparse_view




class GraphOptimizationLevel(_OrtEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(_OrtEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


class ExecutionOrder(_OrtEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2


class OrtMemType(_OrtEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0


class OrtAllocatorType(_OrtEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1


# Onyx's C++ OptimizationLevel values for each onnxruntime level.
_OPT_LEVEL_TO_ONYX = {0: 0, 1: 1, 2: 2, 3: 2, 99: 99}

_AVAILABLE_PROVIDERS = list(_core.available_providers())
_ALL_PROVIDERS = [
    "CPUExecutionProvider",
    "CUDAExecutionProvider",
    "TensorrtExecutionProvider",
    "OpenVINOExecutionProvider",
    "DnnlExecutionProvider",
    "ROCMExecutionProvider",
    "MIGraphXExecutionProvider",
    "CoreMLExecutionProvider",
    "DmlExecutionProvider",
    "QNNExecutionProvider",
    "XnnpackExecutionProvider",
    "AzureExecutionProvider",
]
# onnxruntime provider name -> Onyx's C++ provider name
_PROVIDER_TO_ONYX = {"CPUExecutionProvider": "cpu", "CUDAExecutionProvider": "cuda"}


def get_available_providers() -> list[str]:
    return list(_AVAILABLE_PROVIDERS)


def get_all_providers() -> list[str]:
    return list(_ALL_PROVIDERS)


def get_device() -> str:
    return "GPU" if "CUDAExecutionProvider" in _AVAILABLE_PROVIDERS else "CPU"


def get_build_info() -> str:
    return "onyx build (providers: " + ", ".join(_AVAILABLE_PROVIDERS) + ")"


_default_logger_severity = 2
_default_logger_verbosity = 0


def set_default_logger_callback(callback, severity: int = 2) -> None:
    """Sends Onyx's log messages to callback(severity, category, logid, code_location, message)
    (ints and strs: category 'onyx', logid the session's SessionOptions.logid) instead of stderr,
    and sets the default severity (sessions made from now on log at it unless their
    log_severity_level says otherwise). None restores stderr and keeps the severity.

    Messages from threads Python knows (those creating or running sessions) reach the
    callback at once, holding the GIL; messages from Onyx's own worker threads are
    delivered on the main thread at its next chance, so a worker never waits for the GIL.
    Exceptions the callback raises go to sys.unraisablehook."""
    severity = int(severity)
    if not 0 <= severity <= 4:
        raise ValueError(
            f"Invalid logging severity {severity}; must be in [0, 4] (0:Verbose, 1:Info, 2:Warning, 3:Error, 4:Fatal)"
        )
    if callback is None:
        _core.set_log_callback(None)
        return
    if not callable(callback):
        raise TypeError(
            f"set_default_logger_callback: callback must be a callable or None, got {type(callback).__name__}"
        )
    _core.set_log_callback(callback)
    set_default_logger_severity(severity)


def set_global_thread_pool_sizes(intra_op_num_threads: int = 0, inter_op_num_threads: int = 0) -> None:
    """Thread counts of the pools shared by sessions with use_per_session_threads = False
    (0: one per physical core). Only before the first such session: Fail afterwards."""
    _core.set_global_thread_pool_sizes(int(intra_op_num_threads), int(inter_op_num_threads))


def has_collective_ops() -> bool:
    """Onyx has no collective (multi-device communication) operators."""
    return False


def copy_tensors(src, dst, stream=None) -> None:
    """Copies each source OrtValue's data into the destination OrtValue of the
    same index (same element type and shape; CPU memory; stream must be None)."""
    _core.copy_tensors([getattr(v, "_ortvalue", v) for v in src], [getattr(v, "_ortvalue", v) for v in dst], stream)


def set_default_logger_severity(level: int) -> None:
    global _default_logger_severity
    if not 0 <= int(level) <= 4:
        raise ValueError("Invalid logging severity level; must be in [0, 4]")
    _default_logger_severity = int(level)


def set_default_logger_verbosity(level: int) -> None:
    global _default_logger_verbosity
    _default_logger_verbosity = int(level)


def set_seed(seed: int) -> None:
    """Onyx has no random operators that use a global seed; accepted for compatibility."""


def enable_telemetry_events() -> None:
    """Onyx sends no telemetry; accepted for compatibility."""


def disable_telemetry_events() -> None:
    """Onyx sends no telemetry; accepted for compatibility."""


class SessionOptions:
    """Options for an InferenceSession, as onnxruntime.SessionOptions."""

    __slots__ = (
        "graph_optimization_level",
        "intra_op_num_threads",
        "inter_op_num_threads",
        "execution_mode",
        "execution_order",
        "enable_profiling",
        "profile_file_prefix",
        "optimized_model_filepath",
        "enable_mem_pattern",
        "enable_mem_reuse",
        "enable_cpu_mem_arena",
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "use_deterministic_compute",
        "use_per_session_threads",
        "_config",
        "_free_dims_by_name",
        "_free_dims_by_denotation",
        "_initializers",
        "_external_files",
        "_load_canceled",
        "_ep_providers",
        "_ep_policy",
        "_ep_delegate",
    )

    def __init__(self):
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.intra_op_num_threads = 0
        self.inter_op_num_threads = 0
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.execution_order = ExecutionOrder.DEFAULT
        self.enable_profiling = False
        self.profile_file_prefix = "onnxruntime_profile_"
        self.optimized_model_filepath = ""
        self.enable_mem_pattern = True
        self.enable_mem_reuse = True
        self.enable_cpu_mem_arena = True
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.use_deterministic_compute = False
        self.use_per_session_threads = True
        self._config = {}
        self._free_dims_by_name = {}
        self._free_dims_by_denotation = {}
        self._initializers = {}
        self._external_files = {}
        self._load_canceled = False
        # Providers chosen on the options themselves (add_provider, add_provider_for_devices, a
        # selection policy or delegate): used when InferenceSession is given no providers.
        self._ep_providers = []
        self._ep_policy = None
        self._ep_delegate = None

    def add_session_config_entry(self, config_key: str, config_value: str) -> None:
        if not isinstance(config_key, str) or not isinstance(config_value, str):
            raise TypeError("add_session_config_entry(): key and value must be str")
        self._config[config_key] = config_value

    def get_session_config_entry(self, config_key: str) -> str:
        try:
            return self._config[config_key]
        except KeyError:
            raise RuntimeError(f"SessionOptions does not have configuration with key: {config_key}") from None

    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None:
        """Fixes the symbolic dimension `dim_name` of the model's inputs and outputs to `dim_value`."""
        self._free_dims_by_name[str(dim_name)] = int(dim_value)

    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None:
        """Fixes the dimensions with this denotation (e.g. 'DATA_BATCH') to `dim_value`."""
        self._free_dims_by_denotation[str(dim_denotation)] = int(dim_value)

    def add_initializer(self, name: str, val) -> None:
        """Replaces the model's initializer `name` by the OrtValue `val` (its buffer is shared, as
        in onnxruntime); names the model does not have are ignored with a warning."""
        if not isinstance(name, str):
            raise TypeError("add_initializer(): name must be str")
        if not isinstance(val, OrtValue):
            raise TypeError(f"add_initializer(): val must be an OrtValue, got {type(val).__name__}")
        self._initializers[name] = val

    def add_external_initializers(self, names, values) -> None:
        """add_initializer for each (name, OrtValue) pair."""
        names, values = list(names), list(values)
        if len(names) != len(values):
            raise ValueError(f"add_external_initializers(): {len(names)} names for {len(values)} values")
        for name, val in zip(names, values):
            self.add_initializer(name, val)

    def add_external_initializers_from_files_in_memory(self, names, buffers, lengths) -> None:
        """Gives the contents of external data files in memory, by the file names the model's
        external_data locations use; they are read from here before the model's folder. The
        first `lengths[i]` bytes of each buffer are copied."""
        names, buffers, lengths = list(names), list(buffers), list(lengths)
        if not len(names) == len(buffers) == len(lengths):
            raise ValueError(
                "add_external_initializers_from_files_in_memory(): "
                f"{len(names)} names, {len(buffers)} buffers and {len(lengths)} lengths must agree"
            )
        for name, buf, length in zip(names, buffers, lengths):
            if not isinstance(name, str):
                raise TypeError(f"add_external_initializers_from_files_in_memory(): name must be str, got {name!r}")
            view = memoryview(buf).cast("B")
            length = int(length)
            if length < 0 or length > view.nbytes:
                raise ValueError(
                    f"add_external_initializers_from_files_in_memory(): length {length} of '{name}' is outside "
                    f"its buffer of {view.nbytes} bytes"
                )
            self._external_files[name] = view[:length].tobytes()

    def set_load_cancellation_flag(self, value: bool) -> None:
        """When True, a session being created with these options stops loading with ModelLoadCanceled."""
        self._load_canceled = bool(value)

    def register_custom_ops_library(self, library_path: str) -> None:
        raise NotImplemented("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : custom operator libraries are not supported by Onyx")

    def add_provider(self, provider_name: str, provider_options) -> None:
        """Adds a provider (by name, with its options) that sessions made with these options use."""
        if provider_name not in _AVAILABLE_PROVIDERS:
            raise InvalidArgument(
                f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Failed to add provider of type '{provider_name}' to "
                f"SessionOptions: this build of Onyx has {', '.join(_AVAILABLE_PROVIDERS)}"
            )
        self._ep_providers.append((provider_name, {str(k): str(v) for k, v in dict(provider_options).items()}))

    def add_provider_for_devices(self, ep_devices, provider_options) -> None:
        """Adds the provider of these OrtEpDevices (from get_ep_devices()) with its options."""
        ep_devices = list(ep_devices)
        if not ep_devices:
            raise InvalidArgument(
                "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : Must provide one or more OrtEpDevice instances."
            )
        for d in ep_devices:
            if not isinstance(d, OrtEpDevice):
                raise TypeError(f"add_provider_for_devices: expected OrtEpDevice instances, got {type(d).__name__}")
        names = {d.ep_name for d in ep_devices}
        if len(names) != 1:
            raise InvalidArgument(
                "[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : All OrtEpDevice instances must use the same execution "
                f"provider, got {', '.join(sorted(names))}"
            )
        self.add_provider(names.pop(), provider_options)

    def set_provider_selection_policy(self, policy) -> None:
        """Lets Onyx choose the providers by policy (OrtExecutionProviderDevicePolicy); Onyx's
        devices (get_ep_devices()) are the CPU's, so every policy selects CPUExecutionProvider."""
        self._ep_policy = OrtExecutionProviderDevicePolicy(int(policy))

    def set_provider_selection_policy_delegate(self, selection_delegate) -> None:
        """Lets a function choose: selection_delegate(ep_devices, model_metadata, runtime_metadata,
        max_selections) returns the OrtEpDevices to use, in priority order."""
        if not callable(selection_delegate):
            raise TypeError(
                f"set_provider_selection_policy_delegate: expected a callable, got {type(selection_delegate).__name__}"
            )
        self._ep_delegate = selection_delegate

    def has_providers(self) -> bool:
        """True when these options choose providers (add_provider, add_provider_for_devices, a policy or a delegate)."""
        return bool(self._ep_providers) or self._ep_policy is not None or self._ep_delegate is not None

    def _onyx_log_level(self) -> int:
        lvl = int(self.log_severity_level)
        return _default_logger_severity if lvl < 0 else lvl


class LoraAdapter:
    """A LoRA adapter file (.onnx_adapter, onnxruntime's format) whose parameters feed the model's
    inputs of the same names in runs whose RunOptions activate it (add_active_adapter)."""

    __slots__ = ("_parameters", "_path")

    def __init__(self):
        self._parameters = {}
        self._path = None

    def Load(self, adapter_file_path) -> None:  # noqa: N802  (onnxruntime's name)
        """Memory-maps the adapter file (its parameters are read in place)."""
        from onyx._adapter import map_adapter_file

        _, _, _, params = map_adapter_file(adapter_file_path)
        self._parameters = {name: OrtValue.ortvalue_from_numpy(a) for name, a in params.items()}
        self._path = str(adapter_file_path)


class RunOptions:
    """Per-call options, as onnxruntime.RunOptions."""

    __slots__ = (
        "log_severity_level",
        "log_verbosity_level",
        "logid",
        "terminate",
        "only_execute_path_to_fetches",
        "_config",
        "_adapters",
    )

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}
        self._adapters = []

    def add_active_adapter(self, adapter: LoraAdapter) -> None:
        """Feeds the adapter's parameters to the model's inputs of the same names in runs with these
        options (over a feed given to run() for the same name, as onnxruntime)."""
        if not isinstance(adapter, LoraAdapter):
            raise TypeError(f"add_active_adapter: expected a LoraAdapter, got {type(adapter).__name__}")
        self._adapters.append(adapter)

    def _adapter_feeds(self) -> dict:
        feeds = {}
        for adapter in self._adapters:
            for name, value in adapter._parameters.items():
                if name in feeds:
                    raise InvalidArgument(
                        f"[ONNXRuntimeError] : 2 : INVALID_ARGUMENT : two active adapters set the parameter '{name}'"
                    )
                feeds[name] = value
        return feeds

    def add_run_config_entry(self, config_key: str, config_value: str) -> None:
        self._config[config_key] = config_value

    def get_run_config_entry(self, config_key: str) -> str:
        try:
            return self._config[config_key]
        except KeyError:
            raise RuntimeError(f"RunOptions does not have configuration with key: {config_key}") from None


class NodeArg:
    """A graph input or output: name, type string and shape (ints, symbolic names or None)."""

    __slots__ = ("name", "type", "shape")

    def __init__(self, name: str, type: str, shape):
        self.name = name
        self.type = type
        self.shape = shape

    def __str__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"

    __repr__ = __str__


class ModelMetadata:
    """Model metadata, as onnxruntime.ModelMetadata."""

    __slots__ = (
        "producer_name",
        "graph_name",
        "domain",
        "description",
        "graph_description",
        "version",
        "custom_metadata_map",
    )

    def __init__(self, meta: dict):
        self.producer_name = meta["producer_name"]
        self.graph_name = meta["graph_name"]
        self.domain = meta["domain"]
        self.description = meta["description"]
        self.graph_description = meta["graph_description"]
        self.version = meta["version"]
        self.custom_metadata_map = dict(meta["custom_metadata_map"])
