"""OrtValue.from_dlpack: a CPU tensor of another framework (PyTorch, JAX,
NumPy, ...) as an OrtValue, through NumPy's DLPack import, which shares the
memory rather than copying it."""

from __future__ import annotations

import numpy as np


class _Capsule:
    """A raw DLPack capsule (the legacy protocol) made consumable by np.from_dlpack."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, *args, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (1, 0)  # kDLCPU: a capsule says nothing else we can check before reading it


def ortvalue_from_dlpack(cls, data, /):
    """Construct an OrtValue from an object implementing the DLPack protocol
    (``__dlpack__`` / ``__dlpack_device__``) or a raw DLPack capsule. Only CPU
    tensors: Onyx's OrtValues live in host memory."""
    source = data if hasattr(data, "__dlpack__") else _Capsule(data)
    if hasattr(source, "__dlpack_device__"):
        device = source.__dlpack_device__()
        if int(device[0]) not in (1, 3):  # kDLCPU, kDLCUDAHost (pinned host memory)
            raise TypeError(f"OrtValue.from_dlpack: only CPU tensors can be imported, got DLPack device {tuple(device)}")
    try:
        array = np.from_dlpack(source)
    except (BufferError, TypeError, RuntimeError, ValueError) as e:
        raise TypeError(f"OrtValue.from_dlpack: cannot import a {type(data).__name__}: {e}") from e
    return cls.ortvalue_from_numpy(array)
