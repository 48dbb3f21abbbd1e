#!/usr/bin/env python3
"""One-pool models on plain tensors, the shapes CNNs and video networks pool:
MaxPool / AveragePool over small and large 2-D planes, windows that are the
whole input (old CNN exports' AveragePool 7x7, S3D's AvgPool3d (2,7,7)), and
S3D's 3-D max pools. Name: kind_C_plane[_kernel/stride].

Usage: python3 scripts/make_pool_models.py OUT
then   python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT --threads 1 2"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)


def pool(name, op, shape, **attrs):
    node = h.make_node(op, ['x'], ['y'], **attrs)
    graph = h.make_graph([node], name, [h.make_tensor_value_info('x', T.FLOAT, shape)],
                         [h.make_tensor_value_info('y', T.FLOAT, None)])
    model = h.make_model(graph, opset_imports=[h.make_opsetid('', 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(out, name + '.onnx'))
    np.save(os.path.join(out, name + '.input_0.npy'), rng.standard_normal(shape).astype(np.float32))


pool('avg2_2048_7', 'AveragePool', [1, 2048, 7, 7], kernel_shape=[7, 7])
pool('avg3_1024_2x7', 'AveragePool', [1, 1024, 2, 7, 7], kernel_shape=[2, 7, 7])
pool('avg2_1024_7_s1', 'AveragePool', [1, 1024, 7, 7], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
pool('avg2_192_35_s1', 'AveragePool', [1, 192, 35, 35], kernel_shape=[3, 3], pads=[1, 1, 1, 1])
pool('max2_256_13_s2', 'MaxPool', [1, 256, 13, 13], kernel_shape=[3, 3], strides=[2, 2])
pool('max2_512_14_2x2', 'MaxPool', [1, 512, 14, 14], kernel_shape=[2, 2], strides=[2, 2])
pool('max2_96_55_s2', 'MaxPool', [1, 96, 55, 55], kernel_shape=[3, 3], strides=[2, 2])
pool('max2_64_112_s2', 'MaxPool', [1, 64, 112, 112], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
pool('max3_64_8x112_s2', 'MaxPool', [1, 64, 8, 112, 112], kernel_shape=[1, 3, 3], strides=[1, 2, 2],
     pads=[0, 1, 1, 0, 1, 1])
pool('max3_192_8x56_s2', 'MaxPool', [1, 192, 8, 56, 56], kernel_shape=[1, 3, 3], strides=[1, 2, 2],
     pads=[0, 1, 1, 0, 1, 1])
pool('max3_480_8x28_333s2', 'MaxPool', [1, 480, 8, 28, 28], kernel_shape=[3, 3, 3], strides=[2, 2, 2],
     pads=[1] * 6)
pool('max3_256_8x28_333s1', 'MaxPool', [1, 256, 8, 28, 28], kernel_shape=[3, 3, 3], pads=[1] * 6)
pool('max3_832_4x14_222', 'MaxPool', [1, 832, 4, 14, 14], kernel_shape=[2, 2, 2], strides=[2, 2, 2])
