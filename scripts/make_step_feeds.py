#!/usr/bin/env python3
"""One decode step of an Optimum-exported decoder (model.onnx with past_key_values.* inputs,
or a merged decoder_model_merged.onnx) as a benchmark model: OUT/NAME.onnx (a link to the
model) and its feeds OUT/NAME.input_KK.npy in graph-input order, the layout of
`../shared/bench/compare_ort.py --models OUT` and `scripts/check_models.py`. One new token per
row after PAST cached ones (random cache contents), an all-ones attention mask, position ids
at PAST; for encoder-decoders, encoder states and cross-attention caches of ENC frames;
use_cache_branch true.
Usage: python3 scripts/make_step_feeds.py MODEL.onnx PAST OUT NAME [--batch B] [--enc ENC]"""
import argparse
import os

import numpy as np
import onnx


def feed(vi, batch, past, enc, rng):
    """One graph input's value for the step."""
    if vi.name == 'use_cache_branch':
        return np.array([True])
    if vi.name == 'attention_mask':
        return np.ones((batch, past + 1), np.int64)
    if vi.name == 'position_ids':
        return np.full((batch, 1), past, np.int64)
    size = {'batch': batch, 'encoder': enc, 'past': past}
    dims = [d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim]
    shape = [next((v for k, v in size.items() if k in d), 1) if isinstance(d, str) else d for d in dims]
    if vi.type.tensor_type.elem_type == onnx.TensorProto.INT64:
        return rng.integers(0, 100, shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('model')
    ap.add_argument('past', type=int)
    ap.add_argument('out')
    ap.add_argument('name')
    ap.add_argument('--batch', type=int, default=1)
    ap.add_argument('--enc', type=int, default=1500, help='encoder frames or tokens (encoder-decoders)')
    a = ap.parse_args()
    graph = onnx.load(a.model, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in initializers]
    os.makedirs(a.out, exist_ok=True)
    link = os.path.join(a.out, a.name + '.onnx')
    if os.path.lexists(link):
        os.remove(link)
    os.symlink(os.path.abspath(a.model), link)
    rng = np.random.default_rng(0)
    width = len(str(len(inputs) - 1))  # zero-padded: sorted file names keep the graph's order
    for k, vi in enumerate(inputs):
        np.save(os.path.join(a.out, f'{a.name}.input_{k:0{width}d}.npy'), feed(vi, a.batch, a.past, a.enc, rng))
    print(f'{link}: {len(inputs)} inputs, {a.past} cached tokens, batch {a.batch}')


if __name__ == '__main__':
    main()
