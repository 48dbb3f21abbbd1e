"""onyx.quantization: onnxruntime.quantization's entry points, so that
``from onyx.quantization import quantize_dynamic, quantize_static`` quantizes
models the same way. Written from the ONNX operator spec; the output uses only
standard ONNX ops, so Onyx, onnxruntime and other runtimes all run it."""
from .calibrate import CalibrationDataReader, CalibrationMethod
from .quant_utils import QuantFormat, QuantType
from .quantize import DynamicQuantConfig, StaticQuantConfig, quantize, quantize_dynamic, quantize_static

__all__ = ["CalibrationDataReader", "CalibrationMethod", "DynamicQuantConfig", "QuantFormat", "QuantType",
           "StaticQuantConfig", "quantize", "quantize_dynamic", "quantize_static"]
