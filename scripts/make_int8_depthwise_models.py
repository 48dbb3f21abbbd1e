#!/usr/bin/env python3
"""One-node int8 depthwise convolutions at MobileNetV2 / EfficientNet sizes:
com.microsoft QLinearConv with channels_last (the layout Onyx's int8 pass and
ORT's NHWC transformer give them), uint8 input, int8 per-channel weights,
with a sample input each, for compare_ort.py.

Usage: python3 scripts/make_int8_depthwise_models.py OUT
then   python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT --threads 1 2"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)


def make(name, size, channels, kernel, stride):
    pad = kernel // 2
    inits = [nh.from_array(np.array(0.02, np.float32), 'xs'), nh.from_array(np.array(128, np.uint8), 'xz'),
             nh.from_array(rng.integers(-127, 128, size=(channels, 1, kernel, kernel)).astype(np.int8), 'w'),
             nh.from_array(rng.uniform(0.001, 0.01, channels).astype(np.float32), 'ws'),
             nh.from_array(np.zeros(channels, np.int8), 'wz'), nh.from_array(np.array(0.05, np.float32), 'ys'),
             nh.from_array(np.array(128, np.uint8), 'yz'),
             nh.from_array(rng.integers(-1000, 1000, channels).astype(np.int32), 'b')]
    node = h.make_node('QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'b'], ['y'],
                       domain='com.microsoft', group=channels, kernel_shape=[kernel, kernel], pads=[pad] * 4,
                       strides=[stride, stride], channels_last=1)
    side = (size + 2 * pad - kernel) // stride + 1
    graph = h.make_graph([node], name, [h.make_tensor_value_info('x', T.UINT8, [1, size, size, channels])],
                         [h.make_tensor_value_info('y', T.UINT8, [1, side, side, channels])], inits)
    model = h.make_model(graph, opset_imports=[h.make_opsetid('', 17), h.make_opsetid('com.microsoft', 1)])
    onnx.save(model, f'{out}/{name}.onnx')
    np.save(f'{out}/{name}.input_0.npy', rng.integers(0, 256, size=(1, size, size, channels)).astype(np.uint8))


# (size, channels, kernel, stride)
for args in [(112, 32, 3, 1), (112, 96, 3, 2), (56, 144, 3, 1), (56, 144, 3, 2), (28, 192, 3, 1), (14, 576, 3, 1),
             (7, 960, 3, 1), (28, 240, 5, 1), (14, 672, 5, 1)]:
    make('dw_%d_%d_k%d_s%d' % args, *args)
