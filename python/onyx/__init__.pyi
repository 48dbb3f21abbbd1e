"""Type stubs for onyx: onnxruntime's Python API on the Onyx runtime."""

from onyx.capi.onnxruntime_inference_collection import (
    InferenceSession as InferenceSession,
    IOBinding as IOBinding,
    Session as Session,
)
from onyx.capi.onnxruntime_pybind11_state import (
    ExecutionMode as ExecutionMode,
    ExecutionOrder as ExecutionOrder,
    GraphOptimizationLevel as GraphOptimizationLevel,
    ModelMetadata as ModelMetadata,
    NodeArg as NodeArg,
    OrtAllocatorType as OrtAllocatorType,
    OrtMemType as OrtMemType,
    OrtValue as OrtValue,
    RunOptions as RunOptions,
    SessionOptions as SessionOptions,
    disable_telemetry_events as disable_telemetry_events,
    enable_telemetry_events as enable_telemetry_events,
    get_all_providers as get_all_providers,
    get_available_providers as get_available_providers,
    get_build_info as get_build_info,
    get_device as get_device,
    set_default_logger_severity as set_default_logger_severity,
    set_default_logger_verbosity as set_default_logger_verbosity,
    set_seed as set_seed,
)
from onyx.capi import onnxruntime_pybind11_state as onnxruntime_pybind11_state

__version__: str
version: str
package_name: str

def get_version_string() -> str: ...
def preload_dlls(*args: object, **kwargs: object) -> None: ...
