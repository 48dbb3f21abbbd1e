"""Onyx: a fast ONNX inference runtime with onnxruntime's Python API.

Existing onnxruntime code runs unchanged with ``import onyx as ort``::

    import onyx as ort
    sess = ort.InferenceSession("model.onnx", providers=["CPUExecutionProvider"])
    outputs = sess.run(None, {"x": x})
"""

__version__ = "0.1.0"
__author__ = "Onyx developers"

import os as _os

# oneDNN (and with it the intra-op pool) runs on OpenMP, whose threads spin
# ~2 ms after each parallel region by default and burn a core between runs.
# libgomp reads GOMP_SPINCOUNT once, when _core loads it just below: a short
# spin keeps the speed (2000: ~3% of a core idle at 2 threads; see the CLI).
_os.environ.setdefault("GOMP_SPINCOUNT", "2000")

from onyx.capi import onnxruntime_pybind11_state as _state  # noqa: E402  (first: loads _core)
from onyx.capi.onnxruntime_pybind11_state import (  # noqa: E402,F401
    ExecutionMode,
    ExecutionOrder,
    GraphOptimizationLevel,
    LoraAdapter,
    ModelMetadata,
    NodeArg,
    OrtAllocatorType,
    OrtArenaCfg,
    OrtDeviceMemoryType,
    OrtEpAssignedNode,
    OrtEpAssignedSubgraph,
    OrtEpDevice,
    OrtExecutionProviderDevicePolicy,
    OrtExternalInitializerInfo,
    OrtHardwareDevice,
    OrtHardwareDeviceType,
    OrtMemoryInfo,
    OrtMemoryInfoDeviceType,
    OrtMemType,
    OrtSparseFormat,
    RunOptions,
    SessionOptions,
    create_and_register_allocator,
    create_and_register_allocator_v2,
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_available_providers,
    get_build_info,
    get_device,
    get_ep_devices,
    has_collective_ops,
    register_execution_provider_library,
    set_default_logger_callback,
    set_default_logger_severity,
    set_default_logger_verbosity,
    set_global_thread_pool_sizes,
    set_seed,
    unregister_execution_provider_library,
)
from onyx.capi import _pybind_state, onnxruntime_validation  # noqa: E402,F401

del _pybind_state  # imported so that onyx.capi._pybind_state is there as onnxruntime.capi._pybind_state is
from onyx.capi.onnxruntime_inference_collection import (  # noqa: E402,F401
    AdapterFormat,
    InferenceSession,
    IOBinding,
    OrtDevice,
    OrtDeviceVendorId,
    OrtValue,
    Session,
    SparseTensor,
    copy_tensors,
)

package_name, version, cuda_version = onnxruntime_validation.get_package_name_and_version_info()


def get_version_string() -> str:
    return __version__


def print_debug_info() -> None:
    """Prints what helps to debug an installation: version, platform, where the
    package is, its providers and the library search path."""
    import platform

    print(f"{package_name} version: {__version__}")
    print("platform:", platform.platform())
    print(f"\nPython package location: {_os.path.dirname(_os.path.abspath(__file__))}")
    print("available providers:", ", ".join(get_available_providers()))
    print("build:", get_build_info())
    print(f"\nEnvironment variable:\nLD_LIBRARY_PATH={_os.environ.get('LD_LIBRARY_PATH', '(unset)')}")


def preload_dlls(*args, **kwargs) -> None:
    """Nothing to preload: Onyx's CPU provider is linked into the module."""
