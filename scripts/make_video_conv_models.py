#!/usr/bin/env python3
"""One-convolution models of the shapes video networks (R(2+1)D, S3D, R3D)
run, each Conv (+ Relu) on a [1, C, D, H, W] input with seeded weights:
temporal (k,1,1) convs, spatial (1,3,3) ones, 3x3x3 ones and 1x1x1 ones,
strided too. Name: kind_C_M_DxHW[_s2].

Usage: python3 scripts/make_video_conv_models.py OUT
then   python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT --threads 1 2"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T, helper as h, numpy_helper as nh

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(0)


def conv(name, C, M, dhw, kernel, strides=(1, 1, 1), pads=(0,) * 6, relu=True):
    fan_in = C * int(np.prod(kernel))
    w = nh.from_array((rng.standard_normal([M, C, *kernel]) / np.sqrt(fan_in)).astype(np.float32), 'w')
    b = nh.from_array((rng.standard_normal(M) * 0.1).astype(np.float32), 'b')
    nodes = [h.make_node('Conv', ['x', 'w', 'b'], ['c' if relu else 'y'], kernel_shape=list(kernel),
                         strides=list(strides), pads=list(pads))]
    if relu:
        nodes.append(h.make_node('Relu', ['c'], ['y']))
    graph = h.make_graph(nodes, name, [h.make_tensor_value_info('x', T.FLOAT, [1, C, *dhw])],
                         [h.make_tensor_value_info('y', T.FLOAT, None)], [w, b])
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid('', 17)]), f'{out}/{name}.onnx')
    np.save(f'{out}/{name}.input_0.npy', rng.standard_normal([1, C, *dhw]).astype(np.float32))


temporal_pads = (1, 0, 0, 1, 0, 0)
for C, M, dhw in [(144, 64, (8, 56, 56)), (64, 64, (16, 56, 56)), (32, 32, (16, 112, 112)),
                  (288, 128, (4, 28, 28)), (128, 128, (8, 28, 28)), (64, 64, (8, 40, 40))]:
    conv(f't_{C}_{M}_{dhw[0]}x{dhw[1]}', C, M, dhw, (3, 1, 1), pads=temporal_pads)
conv('t_230_128_8x28_s2', 230, 128, (8, 28, 28), (3, 1, 1), strides=(2, 1, 1), pads=temporal_pads)
conv('t5_64_64_8x56', 64, 64, (8, 56, 56), (5, 1, 1), pads=(2, 0, 0, 2, 0, 0))
conv('sp_64_144_8x56', 64, 144, (8, 56, 56), (1, 3, 3), pads=(0, 1, 1, 0, 1, 1))
conv('sp_128_288_4x28', 128, 288, (4, 28, 28), (1, 3, 3), pads=(0, 1, 1, 0, 1, 1))
conv('k3_64_64_8x56', 64, 64, (8, 56, 56), (3, 3, 3), pads=(1,) * 6)
conv('pw_64_64_8x56', 64, 64, (8, 56, 56), (1, 1, 1))
conv('pw_256_128_8x28', 256, 128, (8, 28, 28), (1, 1, 1))
conv('pw_64_128_8x56_s2', 64, 128, (8, 56, 56), (1, 1, 1), strides=(2, 2, 2), relu=False)
