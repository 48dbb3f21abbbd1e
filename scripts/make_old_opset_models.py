#!/usr/bin/env python3
"""Models at old opsets and old IR versions, as older exporters left them: torchvision
ResNet-18, MobileNetV2 and SqueezeNet at opsets 7-10 (opset 7 writes IR version 3, where every
initializer is also a graph input), a Conv + BatchNorm + nearest Upsample + LSTM net at opsets
9 and 10, and ResNet-18 exported with keep_initializers_as_inputs (weights as overridable
inputs). Seeded random weights; OUT/NAME.onnx + OUT/NAME.input_0.npy as the other scripts.

Usage: /usr/bin/python3 scripts/make_old_opset_models.py OUT   (Debian's python3-torch, -torchvision)"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torchvision


class UpsampleLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.lstm = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.LSTM(8, 16, batch_first=True)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        y = nn.functional.max_pool2d(nn.functional.interpolate(y, scale_factor=2, mode='nearest'), 2)
        out, _ = self.lstm(y.mean(dim=2).transpose(1, 2))
        return torch.cat([out[:, -1], y.flatten(1)[:, :10]], 1).softmax(-1)


JOBS = [  # name, model, input shape, opsets, keep_initializers_as_inputs
    ('resnet18', torchvision.models.resnet18, (1, 3, 224, 224), [7, 9], False),
    ('mobilenet_v2', torchvision.models.mobilenet_v2, (1, 3, 224, 224), [9, 10], False),
    ('squeezenet', torchvision.models.squeezenet1_1, (1, 3, 224, 224), [7, 9], False),
    ('up_lstm', UpsampleLstm, (2, 3, 32, 32), [9, 10], False),
    ('resnet18_keepinit', torchvision.models.resnet18, (1, 3, 224, 224), [13], True),
]


def main(out):
    os.makedirs(out, exist_ok=True)
    for name, ctor, shape, opsets, keep in JOBS:
        torch.manual_seed(0)
        model, x = ctor().eval(), torch.randn(*shape)
        for opset in opsets:
            full = name if keep else f'{name}_op{opset}'
            path = os.path.join(out, full + '.onnx')
            torch.onnx.export(model, (x,), path, opset_version=opset, input_names=['x'], output_names=['y'],
                              keep_initializers_as_inputs=keep)
            np.save(os.path.join(out, full + '.input_0.npy'), x.numpy())
            print(path, flush=True)


if __name__ == '__main__':
    main(sys.argv[1])
