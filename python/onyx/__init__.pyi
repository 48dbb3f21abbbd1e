"""Type stubs for onyx: onnxruntime's Python API on the Onyx runtime."""

from onyx.capi.onnxruntime_inference_collection import (
    AdapterFormat as AdapterFormat,
    InferenceSession as InferenceSession,
    IOBinding as IOBinding,
    OrtDevice as OrtDevice,
    OrtDeviceVendorId as OrtDeviceVendorId,
    Session as Session,
    SparseTensor as SparseTensor,
    copy_tensors as copy_tensors,
)
from onyx.capi.onnxruntime_pybind11_state import (
    ExecutionMode as ExecutionMode,
    ExecutionOrder as ExecutionOrder,
    GraphOptimizationLevel as GraphOptimizationLevel,
    LoraAdapter as LoraAdapter,
    ModelMetadata as ModelMetadata,
    NodeArg as NodeArg,
    OrtAllocatorType as OrtAllocatorType,
    OrtArenaCfg as OrtArenaCfg,
    OrtDeviceMemoryType as OrtDeviceMemoryType,
    OrtEpAssignedNode as OrtEpAssignedNode,
    OrtEpAssignedSubgraph as OrtEpAssignedSubgraph,
    OrtEpDevice as OrtEpDevice,
    OrtExecutionProviderDevicePolicy as OrtExecutionProviderDevicePolicy,
    OrtExternalInitializerInfo as OrtExternalInitializerInfo,
    OrtHardwareDevice as OrtHardwareDevice,
    OrtHardwareDeviceType as OrtHardwareDeviceType,
    OrtMemoryInfo as OrtMemoryInfo,
    OrtMemoryInfoDeviceType as OrtMemoryInfoDeviceType,
    OrtMemType as OrtMemType,
    OrtSparseFormat as OrtSparseFormat,
    OrtValue as OrtValue,
    RunOptions as RunOptions,
    SessionOptions as SessionOptions,
    create_and_register_allocator as create_and_register_allocator,
    create_and_register_allocator_v2 as create_and_register_allocator_v2,
    disable_telemetry_events as disable_telemetry_events,
    enable_telemetry_events as enable_telemetry_events,
    get_all_providers as get_all_providers,
    get_available_providers as get_available_providers,
    get_build_info as get_build_info,
    get_device as get_device,
    get_ep_devices as get_ep_devices,
    has_collective_ops as has_collective_ops,
    register_execution_provider_library as register_execution_provider_library,
    set_default_logger_callback as set_default_logger_callback,
    set_default_logger_severity as set_default_logger_severity,
    set_default_logger_verbosity as set_default_logger_verbosity,
    set_global_thread_pool_sizes as set_global_thread_pool_sizes,
    set_seed as set_seed,
    unregister_execution_provider_library as unregister_execution_provider_library,
)
from onyx.capi import onnxruntime_pybind11_state as onnxruntime_pybind11_state
from onyx.capi import onnxruntime_validation as onnxruntime_validation

__version__: str
version: str
package_name: str
cuda_version: str

def get_version_string() -> str: ...
def print_debug_info() -> None: ...
def preload_dlls(*args: object, **kwargs: object) -> None: ...
