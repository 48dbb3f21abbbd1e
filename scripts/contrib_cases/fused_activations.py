"""Elementwise contrib ops: the GELU family."""
import numpy as np
from onnx import TensorProto

from . import Case, node_model, rand


def _bias_gelu():
    x, b = rand((2, 3, 8), 1, low=-4, high=4), rand((8,), 2)
    return node_model("BiasGelu", {"X": x, "bias": b}, [("Y", TensorProto.FLOAT)]), {"X": x, "bias": b}


CASES = [Case("BiasGelu_3d", _bias_gelu)]
