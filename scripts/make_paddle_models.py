#!/usr/bin/env python3
"""Models from PaddlePaddle, exported by its own converter (paddle2onnx,
opset 13), with seeded random weights: paddle.vision's ResNet-18,
MobileNetV2, MobileNetV3-small (HardSwish as x * HardSigmoid(x)),
ShuffleNetV2, SqueezeNet, DenseNet-121 and GoogLeNet (three heads), a
PaddleOCR-like recognizer (conv stack, two-layer bidirectional LSTM, softmax)
and a small Transformer encoder over token ids. NAME.onnx + NAME.input_0.npy.

Needs paddlepaddle and paddle2onnx, best in their own venv (they pin other
numpy / protobuf / onnx versions):
  python3 -m venv PDENV && PDENV/bin/pip install paddlepaddle paddle2onnx packaging

Usage: PDENV/bin/python scripts/make_paddle_models.py OUT [NAME ...]
Then: python3 scripts/check_models.py --onyx build/onyx --models OUT"""
import os
import sys

import numpy as np
import paddle
import paddle.nn as nn
import paddle.vision.models as vm
from paddle.static import InputSpec


class Recognizer(nn.Layer):
    """PaddleOCR's CRNN shape: conv features collapsed to a sequence, BiLSTM, per-step class softmax."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(
            nn.Conv2D(3, 32, 3, padding=1), nn.BatchNorm2D(32), nn.Hardswish(), nn.MaxPool2D(2),
            nn.Conv2D(32, 64, 3, padding=1), nn.BatchNorm2D(64), nn.ReLU(), nn.MaxPool2D((2, 1)),
            nn.Conv2D(64, 96, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2D((1, None)))
        self.rnn = nn.LSTM(96, 48, direction="bidirectional", num_layers=2)
        self.fc = nn.Linear(96, 37)

    def forward(self, x):
        features = self.conv(x).squeeze(2).transpose([0, 2, 1])
        y, _ = self.rnn(features)
        return nn.functional.softmax(self.fc(y), axis=-1)


class Encoder(nn.Layer):
    """Token ids -> embedding -> two Transformer encoder layers (GELU) -> first-token classifier."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(1000, 64)
        layer = nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, 2)
        self.norm = nn.LayerNorm(64)
        self.classifier = nn.Linear(64, 5)

    def forward(self, ids):
        return self.classifier(self.norm(self.encoder(self.embedding(ids))[:, 0]))


IMAGE = ("float32", [1, 3, 224, 224])
MODELS = {
    "pd_resnet18": (vm.resnet18, IMAGE),
    "pd_mobilenet_v2": (vm.mobilenet_v2, ("float32", [2, 3, 224, 224])),
    "pd_mobilenet_v3_small": (vm.mobilenet_v3_small, IMAGE),
    "pd_shufflenet_v2": (vm.shufflenet_v2_x1_0, IMAGE),
    "pd_squeezenet": (vm.squeezenet1_1, IMAGE),
    "pd_densenet121": (vm.densenet121, IMAGE),
    "pd_googlenet": (vm.googlenet, IMAGE),
    "pd_crnn": (Recognizer, ("float32", [2, 3, 32, 100])),
    "pd_encoder": (Encoder, ("int64", [2, 12])),
}


def export(name, out):
    paddle.seed(0)
    make, (dtype, shape) = MODELS[name]
    model = make()
    model.eval()
    rng = np.random.default_rng(0)
    if dtype == "int64":
        x = rng.integers(0, 1000, size=shape).astype(np.int64)
        spec = InputSpec([None, None], "int64", "ids")
    else:
        x = rng.standard_normal(shape).astype(np.float32)
        spec = InputSpec([None] + shape[1:], "float32", "x")
    paddle.onnx.export(model, os.path.join(out, name), input_spec=[spec], opset_version=13)
    np.save(os.path.join(out, name + ".input_0.npy"), x)
    print(os.path.join(out, name + ".onnx"), flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name in sys.argv[2:] or MODELS:
        export(name, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
