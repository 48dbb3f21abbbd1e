"""onyx.quantization: onnxruntime.quantization's entry points, so that
``from onyx.quantization import quantize_dynamic, quantize_static`` quantizes
models the same way. Written from the ONNX operator spec; the output uses only
standard ONNX ops, so Onyx, onnxruntime and other runtimes all run it."""
from .calibrate import (CalibraterBase, CalibrationDataReader, CalibrationMethod, MinMaxCalibrater,
                        PercentileCalibrater, TensorData, TensorsData, create_calibrator, load_tensors_data,
                        save_tensors_data)
from .quant_utils import QuantFormat, QuantType, write_calibration_table
from .quantize import (DynamicQuantConfig, StaticQuantConfig, get_qdq_config, quantize, quantize_dynamic,
                       quantize_static)
from .shape_inference import quant_pre_process

__all__ = ["CalibraterBase", "CalibrationDataReader", "CalibrationMethod", "DynamicQuantConfig", "MinMaxCalibrater",
           "PercentileCalibrater", "QuantFormat", "QuantType", "StaticQuantConfig", "TensorData", "TensorsData",
           "create_calibrator", "get_qdq_config", "load_tensors_data", "quant_pre_process", "quantize",
           "quantize_dynamic", "quantize_static", "save_tensors_data", "write_calibration_table"]
