#!/usr/bin/env python3
"""Conv 1x1 -> AveragePool 3x3 (stride 1, pad 1) -> Conv 1x1 on 1x288x25x25
(Inception-v3's pool branch at Mixed_5): a memory-bound pool between two
convolutions, for how the thread pool places work across cores.

Usage: python3 scripts/make_conv_pool_model.py OUT
then   build/onyx perf OUT/conv_pool.onnx -x 2 -r 300 --input OUT/conv_pool.input_0.npy [-p TRACE]"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)
C = 288
w = nh.from_array(rng.standard_normal((C, C, 1, 1)).astype(np.float32) * 0.05, 'w')
nodes = [h.make_node('Conv', ['x', 'w'], ['c'], kernel_shape=[1, 1]),
         h.make_node('AveragePool', ['c'], ['p'], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
         h.make_node('Conv', ['p', 'w'], ['y'], kernel_shape=[1, 1])]
graph = h.make_graph(nodes, 'conv_pool', [h.make_tensor_value_info('x', T.FLOAT, [1, C, 25, 25])],
                     [h.make_tensor_value_info('y', T.FLOAT, None)], [w])
onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid('', 17)]), f'{out}/conv_pool.onnx')
np.save(f'{out}/conv_pool.input_0.npy', rng.standard_normal((1, C, 25, 25)).astype(np.float32))
