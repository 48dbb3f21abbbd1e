"""Offline transformer optimization, as onnxruntime.transformers offers it."""
from . import optimizer  # noqa: F401
