#!/usr/bin/env python3
"""Single-operator models against onnxruntime: builds one-node models with
realistic shapes (elementwise, activations, normalization, data movement,
pooling, GEMM, Einsum, recurrent, sampling ops), times each in onnxruntime
and in `onyx perf` at 1 thread (median of 100 runs) and prints the ratio
ORT/Onyx; rows where Onyx is over 2x slower are marked <<<.

Usage: python3 scripts/op_sweep.py [--onyx build/onyx] [--out DIR] [CASE ...]"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, TensorProto, numpy_helper

ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument('--onyx', default='build/onyx')
ap.add_argument('--out', default='/tmp/onyx_op_sweep')
ap.add_argument('cases', nargs='*')
opts = ap.parse_args()
rng = np.random.default_rng(0)
def case(name, op, inputs, attrs=None, consts=None, opset=17, outputs=1):
    # inputs: list of (name, np.array) fed at runtime; consts: list of (name, array) initializers
    consts = consts or []
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in consts], [f'y{i}' for i in range(outputs)], **(attrs or {}))
    tt = lambda a: helper.np_dtype_to_tensor_dtype(a.dtype)
    g = helper.make_graph([node], 'g', [helper.make_tensor_value_info(n, tt(a), a.shape) for n, a in inputs],
                          [helper.make_empty_tensor_value_info(f'y{i}') for i in range(outputs)],
                          [numpy_helper.from_array(a, n) for n, a in consts])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid('', opset)]); m.ir_version = 8
    p = f'{opts.out}/{name}.onnx'; onnx.save(m, p)
    args = []
    for i, (n, a) in enumerate(inputs):
        q = f'{opts.out}/{name}_{i}.npy'; np.save(q, a); args += ['--input', f'{n}={q}']
    so = ort.SessionOptions(); so.intra_op_num_threads = 1
    s = ort.InferenceSession(p, so, providers=['CPUExecutionProvider'])
    feeds = dict(inputs)
    for _ in range(10): s.run(None, feeds)
    t = []
    for _ in range(100):
        a = time.perf_counter(); s.run(None, feeds); t.append((time.perf_counter() - a) * 1e6)
    r = subprocess.run([opts.onyx, 'perf', p, '--threads', '1', '--runs', '100'] + args, capture_output=True, text=True)
    try:
        d = json.loads(r.stdout.strip().splitlines()[-1]); on = d['median_ms'] * 1000
    except Exception:
        print(f"{name:28s} ONYX ERROR {r.stderr[:200]}"); return
    o = statistics.median(t)
    flag = '  <<<' if on > 2 * o and on - o > 20 else ''
    print(f"{name:28s} ORT {o:9.1f} us  Onyx {on:9.1f} us  ratio {o/on:5.2f}{flag}")
os.makedirs(opts.out, exist_ok=True)
f = lambda *s: rng.standard_normal(s).astype(np.float32)
X = f(1, 64, 56, 56); S = f(1, 128, 768); A4 = f(1, 12, 128, 64)
only = opts.cases
cases = [
 ('add_same', 'Add', [('a', S), ('b', f(1, 128, 768))]),
 ('add_bcast_row', 'Add', [('a', S), ('b', f(768))]),
 ('mul_bcast_chan', 'Mul', [('a', X), ('b', f(1, 64, 1, 1))]),
 ('relu', 'Relu', [('a', X)]),
 ('sigmoid', 'Sigmoid', [('a', X)]),
 ('tanh', 'Tanh', [('a', X)]),
 ('erf', 'Erf', [('a', S)]),
 ('exp', 'Exp', [('a', S)]),
 ('log', 'Log', [('a', np.abs(S) + 0.1)]),
 ('sqrt', 'Sqrt', [('a', np.abs(S))]),
 ('pow2', 'Pow', [('a', S)], None, [('p', np.array(2.0, np.float32))]),
 ('div_scalar', 'Div', [('a', S)], None, [('p', np.array(8.0, np.float32))]),
 ('clip', 'Clip', [('a', X)], None, [('lo', np.array(0, np.float32)), ('hi', np.array(6, np.float32))]),
 ('hardswish', 'HardSwish', [('a', X)]),
 ('leakyrelu', 'LeakyRelu', [('a', X)], {'alpha': 0.1}),
 ('softmax_last', 'Softmax', [('a', f(1, 12, 128, 128))], {'axis': -1}),
 ('softmax_axis1', 'Softmax', [('a', f(1, 1000, 49))], {'axis': 1}),
 ('layernorm', 'LayerNormalization', [('a', S)], {'axis': -1}, [('g', f(768)), ('b', f(768))]),
 ('transpose_0213', 'Transpose', [('a', A4)], {'perm': [0, 2, 1, 3]}),
 ('transpose_0231', 'Transpose', [('a', X)], {'perm': [0, 2, 3, 1]}),
 ('concat_c', 'Concat', [('a', X), ('b', X)], {'axis': 1}),
 ('split_c', 'Split', [('a', X)], {'axis': 1}, [('s', np.array([32, 32], np.int64))], 17, 2),
 ('slice_c', 'Slice', [('a', X)], None, [('st', np.array([16], np.int64)), ('en', np.array([48], np.int64)), ('ax', np.array([1], np.int64))]),
 ('gather_embed', 'Gather', [('w', f(8000, 768)), ('i', rng.integers(0, 8000, (1, 128)).astype(np.int64))], {'axis': 0}),
 ('matmul_batched', 'MatMul', [('a', A4), ('b', f(1, 12, 64, 128))]),
 ('bn_standalone', 'BatchNormalization', [('a', X)], None, [('s', f(64)), ('b', f(64)), ('m', f(64)), ('v', np.abs(f(64)) + 0.5)]),
 ('where', 'Where', [('c', rng.random((1, 128, 768)) > 0.5), ('a', S), ('b', S)]),
 ('where_mask', 'Where', [('c', rng.random((1, 1, 128, 128)) > 0.5), ('a', f(1, 12, 128, 128)), ('b', np.array(-1e4, np.float32))]),
 ('cast_f2h', 'Cast', [('a', S)], {'to': TensorProto.FLOAT16}),
 ('cast_h2f', 'Cast', [('a', S.astype(np.float16))], {'to': TensorProto.FLOAT}),
 ('cast_i2f', 'Cast', [('a', rng.integers(0, 100, (1, 128, 768)).astype(np.int64))], {'to': TensorProto.FLOAT}),
 ('pad_reflect', 'Pad', [('a', X)], {'mode': 'reflect'}, [('p', np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64))]),
 ('resize_nearest2x', 'Resize', [('a', X)], {'mode': 'nearest'}, [('r', np.array([], np.float32)), ('s', np.array([1, 1, 2, 2], np.float32))]),
 ('reducesum_axis1', 'ReduceSum', [('a', X)], {'keepdims': 1}, [('ax', np.array([1], np.int64))]),
 ('argmax_last', 'ArgMax', [('a', f(1, 128, 30522))], {'axis': -1}),
 ('topk', 'TopK', [('a', f(1, 1000))], None, [('k', np.array([5], np.int64))], 17, 2),
 ('cumsum', 'CumSum', [('a', S)], None, [('ax', np.array(1, np.int64))]),
 ('expand', 'Expand', [('a', f(1, 1, 768))], None, [('s', np.array([1, 128, 768], np.int64))]),
 ('tile', 'Tile', [('a', f(1, 64, 28, 28))], None, [('r', np.array([1, 2, 2, 1], np.int64))]),
 ('instnorm', 'InstanceNormalization', [('a', X)], None, [('s', f(64)), ('b', f(64))]),
 ('groupnorm', 'GroupNormalization', [('a', X)], {'num_groups': 8}, [('s', f(64)), ('b', f(64))], 21),
 ('convtranspose', 'ConvTranspose', [('a', f(1, 64, 28, 28))], {'kernel_shape': [2, 2], 'strides': [2, 2]}, [('w', f(64, 32, 2, 2))]),
 ('depthtospace', 'DepthToSpace', [('a', f(1, 64, 28, 28))], {'blocksize': 2}),
 ('conv1x1_plain', 'Conv', [('a', X)], {'kernel_shape': [1, 1]}, [('w', f(128, 64, 1, 1))]),
 ('gemm_fc', 'Gemm', [('a', f(1, 2048))], {'transB': 1}, [('w', f(1000, 2048)), ('b', f(1000))]),
 ('matmul_2d_weights', 'MatMul', [('a', S)], None, [('w', f(768, 3072))]),
 ('einsum_bhqd', 'Einsum', [('a', A4), ('b', A4)], {'equation': 'bhqd,bhkd->bhqk'}),
 ('lstm', 'LSTM', [('a', f(32, 1, 128))], {'hidden_size': 128}, [('w', f(1, 512, 128)), ('r', f(1, 512, 128))]),
 ('gridsample', 'GridSample', [('a', f(1, 16, 64, 64)), ('g', np.clip(f(1, 64, 64, 2), -1, 1))], None, None, 16),
 ('nms', 'NonMaxSuppression', [('b', np.sort(rng.random((1, 1000, 4)).astype(np.float32), axis=2)), ('s', rng.random((1, 1, 1000)).astype(np.float32))], None, [('m', np.array([100], np.int64)), ('iou', np.array([0.5], np.float32))]),
]
for c in cases:
    if only and c[0] not in only: continue
    case(*c)
