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
    ModelMetadata,
    NodeArg,
    OrtAllocatorType,
    OrtMemType,
    OrtValue,
    RunOptions,
    SessionOptions,
    disable_telemetry_events,
    enable_telemetry_events,
    get_all_providers,
    get_available_providers,
    get_build_info,
    get_device,
    set_default_logger_severity,
    set_default_logger_verbosity,
    set_seed,
)
from onyx.capi.onnxruntime_inference_collection import (  # noqa: E402,F401
    InferenceSession,
    IOBinding,
    Session,
)

version = __version__
package_name = "onyx"


def get_version_string() -> str:
    return __version__


def preload_dlls(*args, **kwargs) -> None:
    """Nothing to preload: Onyx's CPU provider is linked into the module."""
