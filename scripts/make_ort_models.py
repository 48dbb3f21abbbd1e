#!/usr/bin/env python3
"""Makes the models ONNX Runtime's own tools produce from the benchmark models,
for checking and timing Onyx on them (check_models.py, compare_ort.py):

  NAME_ortext       saved by an ORT session at level extended (FusedConv,
                    FusedMatMul, BiasGelu: com.microsoft ops)
  NAME_tfopt        ORT's transformers optimizer (EmbedLayerNormalization,
                    Attention, SkipLayerNormalization, BiasGelu / FastGelu)
  NAME_qdyn         ORT's quantize_dynamic (DynamicQuantizeLinear + MatMulInteger)
  NAME_tfopt_qdyn   both (QAttention, QEmbedLayerNormalization)
  NAME_qop, _qdq    ORT's quantize_static, QOperator and QDQ formats, uint8
                    activations, calibrated on the model's sample input

Usage: make_ort_models.py --models MODELS OUT   (MODELS as written by
../shared/models/make_models.py; each output gets NAME.input_K.npy copies).
With OUT --static NAME...: only NAME_qop / NAME_qdq of those models, from any
model set written the same way (make_more_models.py, make_gen_models.py).
Needs onnx, onnxruntime, numpy."""
import argparse
import glob
import os
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process
from onnxruntime.transformers import optimizer

BERTS = ["bert_tiny", "bert_base"]
CNNS = ["mobilenet_v2", "resnet50"]


def copy_inputs(models, src, out, dst):
    for path in glob.glob(os.path.join(models, src + ".input_*.npy")):
        shutil.copy(path, os.path.join(out, dst + os.path.basename(path)[len(src):]))


def saved_at_extended(models, name, out):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = os.path.join(out, name + "_ortext.onnx")
    ort.InferenceSession(os.path.join(models, name + ".onnx"), so, providers=["CPUExecutionProvider"])
    copy_inputs(models, name, out, name + "_ortext")


def transformers_optimized(models, name, out):
    # opt_level 0: the Python fusions only (ORT's own pass first needs torch installed).
    m = optimizer.optimize_model(os.path.join(models, name + ".onnx"), model_type="bert", opt_level=0)
    m.save_model_to_file(os.path.join(out, name + "_tfopt.onnx"))
    copy_inputs(models, name, out, name + "_tfopt")


def dynamic(src_path, models, name, out, tag):
    quantize_dynamic(src_path, os.path.join(out, f"{name}_{tag}.onnx"), weight_type=QuantType.QInt8,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    copy_inputs(models, name, out, f"{name}_{tag}")


class SampleReader(CalibrationDataReader):
    def __init__(self, feeds):
        self.feeds = iter([feeds])

    def get_next(self):
        return next(self.feeds, None)


def static(models, name, out):
    pre = os.path.join(out, name + "_pre.onnx")
    quant_pre_process(os.path.join(models, name + ".onnx"), pre)
    inputs = onnx.load(pre, load_external_data=False).graph.input
    feeds = {i.name: np.load(os.path.join(models, f"{name}.input_{k}.npy")) for k, i in enumerate(inputs)}
    for fmt, tag in [(QuantFormat.QOperator, "qop"), (QuantFormat.QDQ, "qdq")]:
        quantize_static(pre, os.path.join(out, f"{name}_{tag}.onnx"), SampleReader(feeds), quant_format=fmt,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        copy_inputs(models, name, out, f"{name}_{tag}")
    os.remove(pre)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", required=True)
    ap.add_argument("--static", nargs="+", metavar="NAME", help="only quantize_static these models")
    ap.add_argument("out")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    ort.set_default_logger_severity(3)
    if a.static:
        for name in a.static:
            static(a.models, name, a.out)
        return
    for name in ["bert_tiny"] + CNNS:
        saved_at_extended(a.models, name, a.out)
    for name in BERTS:
        transformers_optimized(a.models, name, a.out)
        dynamic(os.path.join(a.models, name + ".onnx"), a.models, name, a.out, "qdyn")
        dynamic(os.path.join(a.out, name + "_tfopt.onnx"), a.models, name, a.out, "tfopt_qdyn")
    for name in CNNS:
        static(a.models, name, a.out)
    print("\n".join(sorted(os.path.basename(p) for p in glob.glob(os.path.join(a.out, "*.onnx")))))


if __name__ == "__main__":
    main()
