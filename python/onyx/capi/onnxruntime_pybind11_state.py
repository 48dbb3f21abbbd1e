"""The names onnxruntime's native module exposes (exceptions, enums, options,
OrtValue, NodeArg, ...), so `from onnxruntime.capi.onnxruntime_pybind11_state
import InvalidArgument` keeps working as `from onyx.capi... import ...`."""

from __future__ import annotations

import enum

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
)
from onyx.capi._dlpack import ortvalue_from_dlpack as _ortvalue_from_dlpack

OrtValue.from_dlpack = classmethod(_ortvalue_from_dlpack)


class _OrtEnum(enum.IntEnum):
    # pybind11 enums print as "Class.MEMBER" and compare with ints.
    def __str__(self):
        return f"{type(self).__name__}.{self.name}"


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

    def register_custom_ops_library(self, library_path: str) -> None:
        raise NotImplemented("[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : custom operator libraries are not supported by Onyx")

    def has_providers(self) -> bool:
        return False

    def _onyx_log_level(self) -> int:
        lvl = int(self.log_severity_level)
        return _default_logger_severity if lvl < 0 else lvl


class RunOptions:
    """Per-call options, as onnxruntime.RunOptions."""

    __slots__ = ("log_severity_level", "log_verbosity_level", "logid", "terminate", "only_execute_path_to_fetches", "_config")

    def __init__(self):
        self.log_severity_level = -1
        self.log_verbosity_level = 0
        self.logid = ""
        self.terminate = False
        self.only_execute_path_to_fetches = False
        self._config = {}

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
