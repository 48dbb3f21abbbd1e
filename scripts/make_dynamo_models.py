#!/usr/bin/env python3
"""Models exported by PyTorch 2's default ONNX exporter (torch.export + onnxscript,
`torch.onnx.export(..., dynamo=True)`), which writes different graphs from the
TorchScript exporter the other model scripts use: newer opsets, decomposed ops,
symbolic shapes computed in the graph, and the ONNX Attention / RMSNormalization
ops where the opset has them. Same output convention as the other scripts
(OUT/NAME.onnx + OUT/NAME.input_K.npy, seeded random weights), so
`scripts/check_models.py` and `../shared/bench/compare_ort.py` take them as they are.

Needs a PyTorch 2.x with onnxscript (Debian's torch 1.13 has no such exporter):
  python3 -m venv VENV && VENV/bin/pip install torch torchvision onnxscript
Usage: VENV/bin/python scripts/make_dynamo_models.py OUT [NAME ...]"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'shared', 'models'))
import make_models as mm  # noqa: E402


class LlamaBlock(nn.Module):
    """Pre-norm decoder layer as in Llama: RMSNorm, rotary q/k, grouped KV heads,
    scaled_dot_product_attention (causal over a prompt; one step after a KV
    cache), SiLU-gated MLP. Returns the new x and the layer's full K and V."""

    def __init__(self, hidden, heads, kv_heads, ffn):
        super().__init__()
        self.h, self.kv, self.d = heads, kv_heads, hidden // heads
        self.norm1 = nn.RMSNorm(hidden, eps=1e-6)
        self.norm2 = nn.RMSNorm(hidden, eps=1e-6)
        self.q = nn.Linear(hidden, hidden, bias=False)
        self.k = nn.Linear(hidden, kv_heads * self.d, bias=False)
        self.v = nn.Linear(hidden, kv_heads * self.d, bias=False)
        self.o = nn.Linear(hidden, hidden, bias=False)
        self.gate = nn.Linear(hidden, ffn, bias=False)
        self.up = nn.Linear(hidden, ffn, bias=False)
        self.down = nn.Linear(ffn, hidden, bias=False)

    @staticmethod
    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return x * cos + torch.cat([-x2, x1], dim=-1) * sin

    def forward(self, x, cos, sin, past_k=None, past_v=None):
        b, s, _ = x.shape
        y = self.norm1(x)
        q = self.q(y).view(b, s, self.h, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.d).transpose(1, 2)
        q, k = self.rotate(q, cos, sin), self.rotate(k, cos, sin)
        if past_k is not None:
            k = torch.cat([past_k, k], dim=2)
            v = torch.cat([past_v, v], dim=2)
        rep = self.h // self.kv
        a = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=1), v.repeat_interleave(rep, dim=1),
                                           is_causal=past_k is None)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        y = self.norm2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y)), k, v


class TinyLlama(nn.Module):
    """A prompt (input_ids only: logits out) or one generation step (the KV
    cache of every layer in: logits and the grown cache out)."""

    def __init__(self, vocab=32000, hidden=256, layers=4, heads=8, kv_heads=2, ffn=688):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.layers = nn.ModuleList(LlamaBlock(hidden, heads, kv_heads, ffn) for _ in range(layers))
        self.norm = nn.RMSNorm(hidden, eps=1e-6)
        self.head = nn.Linear(hidden, vocab, bias=False)
        d = hidden // heads
        self.register_buffer('inv_freq', 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d)), persistent=False)

    def forward(self, input_ids, past_k=None, past_v=None):
        pos = 0 if past_k is None else past_k.shape[3]
        t = torch.arange(pos, pos + input_ids.shape[1], dtype=torch.float32)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat([freqs, freqs], dim=-1)
        cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        x = self.embed(input_ids)
        ks, vs = [], []
        for i, layer in enumerate(self.layers):
            cache = () if past_k is None else (past_k[i], past_v[i])
            x, k, v = layer(x, cos, sin, *cache)
            ks.append(k)
            vs.append(v)
        logits = self.head(self.norm(x))
        return logits if past_k is None else (logits, torch.stack(ks), torch.stack(vs))


class MhaEncoder(nn.Module):
    """nn.TransformerEncoder (batch_first, GELU, norm_first) with a padding mask."""

    def __init__(self, hidden=256, heads=4, layers=3):
        super().__init__()
        layer = nn.TransformerEncoderLayer(hidden, heads, 4 * hidden, dropout=0.0, activation='gelu',
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class ConvLstm(nn.Module):
    """Conv1d front end, a bidirectional LSTM and a GRU (speech-style)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv1d(40, 64, 5, padding=2), nn.BatchNorm1d(64), nn.ReLU())
        self.lstm = nn.LSTM(64, 96, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(192, 64, batch_first=True)
        self.out = nn.Linear(64, 30)

    def forward(self, x):
        y = self.conv(x).transpose(1, 2)
        y, _ = self.lstm(y)
        y, _ = self.gru(y)
        return self.out(y).log_softmax(-1)


def vision(ctor, size=224, batch=1):
    return lambda: (ctor(), (torch.randn(batch, 3, size, size),), ['input'], {'input': {0: 'batch'}})


def bert_tiny():
    ids = torch.randint(0, 30522, (2, 64))
    mask = torch.ones(2, 64, dtype=torch.int64)
    mask[1, 40:] = 0
    axes = {'input_ids': {0: 'batch', 1: 'seq'}, 'attention_mask': {0: 'batch', 1: 'seq'}}
    model = mm.Bert(hidden=128, layers=2, heads=2, ffn=512)
    return model, (ids, mask), ['input_ids', 'attention_mask'], axes


def tiny_llama(opset=None):
    def build():
        model = TinyLlama()
        model.export_opset = opset
        return model, (torch.randint(0, 32000, (1, 48)),), ['input_ids'], {'input_ids': {1: 'seq'}}
    return build


def tiny_llama_decode(opset=None):
    def build():
        model = TinyLlama()
        model.export_opset = opset
        model.output_names = ['logits', 'present_k', 'present_v']
        past = 200
        ids = torch.randint(0, 32000, (1, 1))
        cache = [torch.randn(4, 1, 2, past, 32) for _ in range(2)]
        past_len = torch.export.Dim('past', min=1, max=4096)
        model.dynamic_shapes = {'input_ids': None, 'past_k': {3: past_len}, 'past_v': {3: past_len}}
        return model, (ids, *cache), ['input_ids', 'past_k', 'past_v'], None
    return build


def mha_encoder():
    x = torch.randn(2, 40, 256)
    pad = torch.zeros(2, 40, dtype=torch.bool)
    pad[1, 30:] = True
    return MhaEncoder(), (x, pad), ['x', 'pad'], None


def conv_lstm():
    return ConvLstm(), (torch.randn(1, 40, 100),), ['features'], None


MODELS = {
    'dyn_resnet18': vision(lambda: torchvision.models.resnet18()),
    'dyn_mobilenet_v2': vision(lambda: torchvision.models.mobilenet_v2()),
    'dyn_efficientnet_b0': vision(lambda: torchvision.models.efficientnet_b0()),
    'dyn_convnext_tiny': vision(lambda: torchvision.models.convnext_tiny()),
    'dyn_swin_t': vision(lambda: torchvision.models.swin_t()),
    'dyn_vit_b_32': vision(lambda: torchvision.models.vit_b_32()),
    'dyn_bert_tiny': bert_tiny,
    'dyn_tiny_llama': tiny_llama(),
    # opset 23: scaled_dot_product_attention as the ONNX Attention op, RMSNorm as RMSNormalization
    'dyn_tiny_llama_op23': tiny_llama(23),
    'dyn_llama_decode': tiny_llama_decode(),
    'dyn_llama_decode_op23': tiny_llama_decode(23),
    'dyn_mha_encoder': mha_encoder,
    'dyn_conv_lstm': conv_lstm,
}


def main(out, names):
    os.makedirs(out, exist_ok=True)
    for name in names or MODELS:
        torch.manual_seed(0)
        model, args, in_names, axes = MODELS[name]()
        model.eval()
        path = os.path.join(out, name + '.onnx')
        with torch.no_grad():
            out_names = getattr(model, 'output_names', ['output'])
            torch.onnx.export(model, args, path, dynamo=True, input_names=in_names, output_names=out_names,
                              dynamic_axes=axes, dynamic_shapes=getattr(model, 'dynamic_shapes', None),
                              external_data=False,
                              opset_version=getattr(model, 'export_opset', None))
        for i, a in enumerate(args):
            np.save(os.path.join(out, f'{name}.input_{i}.npy'), a.numpy())
        print(f'{path} {os.path.getsize(path) / 1e6:.1f} MB')


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
