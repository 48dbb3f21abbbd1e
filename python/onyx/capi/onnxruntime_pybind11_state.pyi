import enum
from typing import Any, Callable, Mapping, Sequence

from onyx._core import (
    DeviceReset as DeviceReset,
    EngineError as EngineError,
    EPFail as EPFail,
    Fail as Fail,
    InvalidArgument as InvalidArgument,
    InvalidGraph as InvalidGraph,
    InvalidProtobuf as InvalidProtobuf,
    ModelLoadCanceled as ModelLoadCanceled,
    ModelLoaded as ModelLoaded,
    ModelRequiresCompilation as ModelRequiresCompilation,
    NoModel as NoModel,
    NoSuchFile as NoSuchFile,
    NotFound as NotFound,
    NotImplemented as NotImplemented,
    OrtValue as OrtValue,
    RuntimeException as RuntimeException,
    SparseCooView as SparseCooView,
    SparseCsrView as SparseCsrView,
    SparseTensor as SparseTensor,
)
from onyx.capi._devices import (
    OrtArenaCfg as OrtArenaCfg,
    OrtDevice as OrtDevice,
    OrtDeviceMemoryType as OrtDeviceMemoryType,
    OrtDeviceVendorId as OrtDeviceVendorId,
    OrtEpAssignedNode as OrtEpAssignedNode,
    OrtEpAssignedSubgraph as OrtEpAssignedSubgraph,
    OrtEpDevice as OrtEpDevice,
    OrtExecutionProviderDevicePolicy as OrtExecutionProviderDevicePolicy,
    OrtExternalInitializerInfo as OrtExternalInitializerInfo,
    OrtHardwareDevice as OrtHardwareDevice,
    OrtHardwareDeviceType as OrtHardwareDeviceType,
    OrtMemoryInfo as OrtMemoryInfo,
    OrtMemoryInfoDeviceType as OrtMemoryInfoDeviceType,
    OrtSparseFormat as OrtSparseFormat,
    create_and_register_allocator as create_and_register_allocator,
    create_and_register_allocator_v2 as create_and_register_allocator_v2,
    get_ep_devices as get_ep_devices,
    register_execution_provider_library as register_execution_provider_library,
    unregister_execution_provider_library as unregister_execution_provider_library,
)

class GraphOptimizationLevel(enum.IntEnum):
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99

class ExecutionMode(enum.IntEnum):
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1

class ExecutionOrder(enum.IntEnum):
    DEFAULT = 0
    PRIORITY_BASED = 1
    MEMORY_EFFICIENT = 2

class OrtMemType(enum.IntEnum):
    CPU_INPUT = -2
    CPU_OUTPUT = -1
    CPU = -1
    DEFAULT = 0

class OrtAllocatorType(enum.IntEnum):
    INVALID = -1
    ORT_DEVICE_ALLOCATOR = 0
    ORT_ARENA_ALLOCATOR = 1

def get_available_providers() -> list[str]: ...
def get_all_providers() -> list[str]: ...
def get_device() -> str: ...
def get_build_info() -> str: ...
def set_default_logger_severity(level: int) -> None: ...
def set_default_logger_verbosity(level: int) -> None: ...
def set_default_logger_callback(
    callback: Callable[[int, str, str, str, str], object] | None, severity: int = 2
) -> None: ...
def set_global_thread_pool_sizes(intra_op_num_threads: int = 0, inter_op_num_threads: int = 0) -> None: ...
def has_collective_ops() -> bool: ...
def copy_tensors(src: Sequence[OrtValue], dst: Sequence[OrtValue], stream: object = None) -> None: ...
def set_seed(seed: int) -> None: ...
def enable_telemetry_events() -> None: ...
def disable_telemetry_events() -> None: ...

class SessionOptions:
    graph_optimization_level: GraphOptimizationLevel
    intra_op_num_threads: int
    inter_op_num_threads: int
    execution_mode: ExecutionMode
    execution_order: ExecutionOrder
    enable_profiling: bool
    profile_file_prefix: str
    optimized_model_filepath: str
    enable_mem_pattern: bool
    enable_mem_reuse: bool
    enable_cpu_mem_arena: bool
    log_severity_level: int
    log_verbosity_level: int
    logid: str
    use_deterministic_compute: bool
    use_per_session_threads: bool
    def __init__(self) -> None: ...
    def add_session_config_entry(self, config_key: str, config_value: str) -> None: ...
    def get_session_config_entry(self, config_key: str) -> str: ...
    def add_free_dimension_override_by_name(self, dim_name: str, dim_value: int) -> None: ...
    def add_free_dimension_override_by_denotation(self, dim_denotation: str, dim_value: int) -> None: ...
    def add_initializer(self, name: str, val: OrtValue) -> None: ...
    def add_external_initializers(self, names: list[str], values: list[OrtValue]) -> None: ...
    def register_custom_ops_library(self, library_path: str) -> None: ...
    def add_provider(self, provider_name: str, provider_options: Mapping[str, str]) -> None: ...
    def add_provider_for_devices(
        self, ep_devices: Sequence[OrtEpDevice], provider_options: Mapping[str, str]
    ) -> None: ...
    def set_provider_selection_policy(self, policy: OrtExecutionProviderDevicePolicy) -> None: ...
    def set_provider_selection_policy_delegate(
        self,
        selection_delegate: Callable[
            [Sequence[OrtEpDevice], Mapping[str, str], Mapping[str, str], int], Sequence[OrtEpDevice]
        ],
    ) -> None: ...
    def has_providers(self) -> bool: ...

class LoraAdapter:
    def __init__(self) -> None: ...
    def Load(self, adapter_file_path: str) -> None: ...

class RunOptions:
    log_severity_level: int
    log_verbosity_level: int
    logid: str
    terminate: bool
    only_execute_path_to_fetches: bool
    def __init__(self) -> None: ...
    def add_run_config_entry(self, config_key: str, config_value: str) -> None: ...
    def get_run_config_entry(self, config_key: str) -> str: ...
    def add_active_adapter(self, adapter: LoraAdapter) -> None: ...

class NodeArg:
    name: str
    type: str
    shape: list[int | str | None]
    def __init__(self, name: str, type: str, shape: Any) -> None: ...

class ModelMetadata:
    producer_name: str
    graph_name: str
    domain: str
    description: str
    graph_description: str
    version: int
    custom_metadata_map: dict[str, str]
    def __init__(self, meta: dict[str, Any]) -> None: ...
