"""onnxruntime.capi._pybind_state equivalent: the native module's names."""

from onyx.capi.onnxruntime_pybind11_state import *  # noqa: F401,F403
from onyx.capi.onnxruntime_pybind11_state import (  # noqa: F401
    _ALL_PROVIDERS,
    _AVAILABLE_PROVIDERS,
)
