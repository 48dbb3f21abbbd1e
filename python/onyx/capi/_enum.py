"""The base of the enums the native module of onnxruntime defines."""

import enum


class _OrtEnum(enum.IntEnum):
    # pybind11 enums print as "Class.MEMBER" and compare with ints.
    def __str__(self):
        return f"{type(self).__name__}.{self.name}"
