"""Mirrors onnxruntime.capi so code importing from it keeps working."""
