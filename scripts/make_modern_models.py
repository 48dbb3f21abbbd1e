#!/usr/bin/env python3
"""Architectures of the kind people deploy now, beyond torchvision's
classifiers, built the way ../shared/models/make_models.py builds its own
(seeded random weights, torch.onnx.export at opset 17, NAME.onnx +
NAME.input_K.npy), to check correctness and speed against onnxruntime:

- llama_tiny: a 4-layer LLaMA-style decoder (RMSNorm, rotary embeddings,
  SwiGLU, causal mask) over 128 tokens; llama_kv_decode / llama_kv_prefill:
  3 layers with past and present key/values as inputs and outputs (a decode
  step after 255 tokens, and a 64-token prefill from an empty cache), named
  as Hugging Face's exports name them;
- diff_unet: a diffusion U-Net (GroupNorm, SiLU, timestep embedding,
  self-attention over the 16x16 map, nearest upsampling);
- whisper_enc: a Whisper-style audio encoder (two Conv1d, 1500 positions,
  pre-norm TransformerEncoder); clip_text: a CLIP-style text encoder
  (causal nn.MultiheadAttention, pooled at the argmax token);
- detr_like: a ResNet-18 backbone and an nn.Transformer decoding 100 queries;
- torchvision: maxvit_t, vit_b_16, fcos and keypointrcnn (320x320, with
  their postprocessing), and the video models r2plus1d_18 and s3d.

Usage: /usr/bin/python3 scripts/make_modern_models.py OUT [NAME ...]
Then: python3 scripts/check_models.py --onyx build/onyx --models OUT
      python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

M = torchvision.models


def save(out, name, model, inputs, opset=17, grad=False, **kw):
    """Exports once (an existing NAME.onnx is kept). grad=True exports with
    autograd on, which keeps PyTorch's fused eval-mode attention kernels
    (not exportable) out of the trace."""
    path = os.path.join(out, name + ".onnx")
    if os.path.exists(path):
        return
    model.eval()
    with torch.set_grad_enabled(grad):
        torch.onnx.export(model, inputs, path, opset_version=opset, do_constant_folding=True, **kw)
    ins = inputs if isinstance(inputs, tuple) else (inputs,)
    if isinstance(ins[0], list):  # a detector's list of images
        ins = (ins[0][0],)
    for i, t in enumerate(ins):
        np.save(os.path.join(out, f"{name}.input_{i}.npy"), t.numpy())
    print("wrote", name, flush=True)


class RMSNorm(nn.Module):
    def __init__(s, d): super().__init__(); s.w = nn.Parameter(torch.rand(d) + 0.5)
    def forward(s, x):
        v = x.pow(2).mean(-1, keepdim=True)
        return x * torch.rsqrt(v + 1e-6) * s.w


def rotate_half(x):
    a, b = x.chunk(2, dim=-1); return torch.cat((-b, a), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(s, d, h, ff):
        super().__init__(); s.h = h; s.d = d
        s.q = nn.Linear(d, d, bias=False); s.k = nn.Linear(d, d, bias=False); s.v = nn.Linear(d, d, bias=False); s.o = nn.Linear(d, d, bias=False)
        s.g = nn.Linear(d, ff, bias=False); s.u = nn.Linear(d, ff, bias=False); s.dn = nn.Linear(ff, d, bias=False)
        s.n1 = RMSNorm(d); s.n2 = RMSNorm(d)
    def forward(s, x, cos, sin, mask, pk=None, pv=None):
        """The block's output and its keys / values, after the cached ones (pk, pv) if given."""
        B, T, _ = x.shape; hd = s.d // s.h
        y = s.n1(x)
        q = s.q(y).view(B, T, s.h, hd).transpose(1, 2)
        k = s.k(y).view(B, T, s.h, hd).transpose(1, 2)
        v = s.v(y).view(B, T, s.h, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if pk is not None:
            k = torch.cat([pk, k], 2); v = torch.cat([pv, v], 2)
        a = (q @ k.transpose(2, 3)) / math.sqrt(hd) + mask
        a = a.softmax(-1) @ v
        x = x + s.o(a.transpose(1, 2).reshape(B, T, s.d))
        y = s.n2(x)
        return x + s.dn(F.silu(s.g(y)) * s.u(y)), k, v


class Llama(nn.Module):
    def __init__(s, V=4000, d=512, h=8, ff=1408, L=4):
        super().__init__(); s.emb = nn.Embedding(V, d); s.blocks = nn.ModuleList([LlamaBlock(d, h, ff) for _ in range(L)])
        s.norm = RMSNorm(d); s.head = nn.Linear(d, V, bias=False); s.hd = d // h
    def forward(s, ids):
        T = ids.shape[1]
        pos = torch.arange(T, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, s.hd, 2, dtype=torch.float32) / s.hd))
        f = pos[:, None] * inv[None, :]
        e = torch.cat((f, f), -1)
        cos, sin = e.cos(), e.sin()
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = s.emb(ids)
        for b in s.blocks: x = b(x, cos, sin, mask)[0]
        return s.head(s.norm(x))


class ResBlockT(nn.Module):
    def __init__(s, c, o, tdim):
        super().__init__()
        s.n1 = nn.GroupNorm(32, c); s.c1 = nn.Conv2d(c, o, 3, padding=1); s.t = nn.Linear(tdim, o)
        s.n2 = nn.GroupNorm(32, o); s.c2 = nn.Conv2d(o, o, 3, padding=1)
        s.skip = nn.Conv2d(c, o, 1) if c != o else nn.Identity()
    def forward(s, x, t):
        h = s.c1(F.silu(s.n1(x))) + s.t(F.silu(t))[:, :, None, None]
        h = s.c2(F.silu(s.n2(h)))
        return s.skip(x) + h


class AttnBlock(nn.Module):
    def __init__(s, c):
        super().__init__(); s.n = nn.GroupNorm(32, c); s.qkv = nn.Conv2d(c, 3 * c, 1); s.o = nn.Conv2d(c, c, 1)
    def forward(s, x):
        B, C, H, W = x.shape
        q, k, v = s.qkv(s.n(x)).reshape(B, 3, C, H * W).unbind(1)
        a = torch.softmax(q.transpose(1, 2) @ k / math.sqrt(C), -1)
        return x + s.o((v @ a.transpose(1, 2)).reshape(B, C, H, W))


class DiffUNet(nn.Module):
    def __init__(s, ch=64):
        super().__init__(); s.ch = ch; td = ch * 4
        s.temb = nn.Sequential(nn.Linear(ch, td), nn.SiLU(), nn.Linear(td, td))
        s.inc = nn.Conv2d(3, ch, 3, padding=1)
        s.d1 = ResBlockT(ch, ch, td); s.down1 = nn.Conv2d(ch, ch, 3, 2, 1)
        s.d2 = ResBlockT(ch, 2 * ch, td); s.down2 = nn.Conv2d(2 * ch, 2 * ch, 3, 2, 1)
        s.mid = ResBlockT(2 * ch, 2 * ch, td); s.att = AttnBlock(2 * ch); s.mid2 = ResBlockT(2 * ch, 2 * ch, td)
        s.up2 = ResBlockT(4 * ch, 2 * ch, td); s.up1 = ResBlockT(3 * ch, ch, td)
        s.out = nn.Sequential(nn.GroupNorm(32, ch), nn.SiLU(), nn.Conv2d(ch, 3, 3, padding=1))
    def forward(s, x, t):
        half = s.ch // 2
        fr = torch.exp(-math.log(10000) * torch.arange(half, dtype=torch.float32) / half)
        a = t[:, None].float() * fr[None]
        te = s.temb(torch.cat([a.sin(), a.cos()], -1))
        h0 = s.inc(x); h1 = s.d1(h0, te); h2 = s.d2(s.down1(h1), te)
        m = s.mid2(s.att(s.mid(s.down2(h2), te)), te)
        u = F.interpolate(m, scale_factor=2.0, mode="nearest")
        u = s.up2(torch.cat([u, h2], 1), te)
        u = F.interpolate(u, scale_factor=2.0, mode="nearest")
        u = s.up1(torch.cat([u, h1], 1), te)
        return s.out(u)


class WhisperEnc(nn.Module):
    def __init__(s, n_mels=80, d=384, h=6, L=4, T=1500):
        super().__init__()
        s.c1 = nn.Conv1d(n_mels, d, 3, padding=1); s.c2 = nn.Conv1d(d, d, 3, stride=2, padding=1)
        s.pos = nn.Parameter(torch.randn(T, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, h, 4 * d, dropout=0.0, activation="gelu", batch_first=True, norm_first=True)
        s.enc = nn.TransformerEncoder(layer, L); s.ln = nn.LayerNorm(d)
    def forward(s, mel):
        x = F.gelu(s.c1(mel)); x = F.gelu(s.c2(x)).permute(0, 2, 1)
        x = x + s.pos[: x.shape[1]]
        return s.ln(s.enc(x))


class ClipText(nn.Module):
    def __init__(s, V=8000, d=512, h=8, L=4, T=77):
        super().__init__(); s.tok = nn.Embedding(V, d); s.pos = nn.Parameter(torch.randn(T, d) * 0.01)
        s.layers = nn.ModuleList([nn.MultiheadAttention(d, h, batch_first=True) for _ in range(L)])
        s.ln1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(L)]); s.ln2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(L)])
        s.mlp = nn.ModuleList([nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d)) for _ in range(L)])
        s.lnf = nn.LayerNorm(d); s.proj = nn.Linear(d, 512, bias=False)
    def forward(s, ids):
        T = ids.shape[1]
        x = s.tok(ids) + s.pos[:T]
        mask = torch.full((T, T), float("-inf")).triu(1)
        for a, l1, l2, m in zip(s.layers, s.ln1, s.ln2, s.mlp):
            y = l1(x); x = x + a(y, y, y, attn_mask=mask, need_weights=False)[0]
            x = x + m(l2(x))
        x = s.lnf(x)
        pooled = x[torch.arange(x.shape[0]), ids.argmax(-1)]
        return s.proj(pooled)


class DetrLike(nn.Module):
    def __init__(s, d=256, nq=100):
        super().__init__()
        bb = M.resnet18(); s.body = nn.Sequential(*list(bb.children())[:-2]); s.inp = nn.Conv2d(512, d, 1)
        s.tr = nn.Transformer(d, 8, 3, 3, 1024, dropout=0.0, batch_first=True)
        s.q = nn.Parameter(torch.randn(1, nq, d)); s.cls = nn.Linear(d, 92); s.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))
    def forward(s, x):
        f = s.inp(s.body(x)); B, C, H, W = f.shape
        src = f.flatten(2).transpose(1, 2)
        hs = s.tr(src, s.q.expand(B, -1, -1))
        return s.cls(hs), s.box(hs).sigmoid()


class LlamaKV(nn.Module):
    def __init__(s, V=4000, d=512, h=8, ff=1408, L=4):
        super().__init__(); s.emb = nn.Embedding(V, d); s.blocks = nn.ModuleList([LlamaBlock(d, h, ff) for _ in range(L)])
        s.norm = RMSNorm(d); s.head = nn.Linear(d, V, bias=False); s.hd = d // h
    def forward(s, ids, attention_mask, position_ids, *past):
        T = ids.shape[1]; P = past[0].shape[2]
        inv = 1.0 / (10000 ** (torch.arange(0, s.hd, 2, dtype=torch.float32) / s.hd))
        f = position_ids[0].float()[:, None] * inv[None, :]
        e = torch.cat((f, f), -1); cos, sin = e.cos(), e.sin()
        causal = torch.full((T, P + T), float("-inf")).triu(P + 1)
        mask = causal[None, None] + (1.0 - attention_mask[:, None, None, :].float()) * -10000.0
        x = s.emb(ids); presents = []
        for i, b in enumerate(s.blocks):
            x, k, v = b(x, cos, sin, mask, past[2 * i], past[2 * i + 1]); presents += [k, v]
        return (s.head(s.norm(x)),) + tuple(presents)


def llama_kv(out, name, past_len, new_len):
    L, h, hd = 3, 8, 64  # 3 layers: 9 inputs, so the K-th file still sorts as the K-th input
    past = tuple(torch.randn(1, h, past_len, hd) for _ in range(2 * L))
    kinds = [f"{i // 2}.{'key' if i % 2 == 0 else 'value'}" for i in range(2 * L)]
    names = ["input_ids", "attention_mask", "position_ids"] + [f"past_key_values.{k}" for k in kinds]
    dyn = {"input_ids": {1: "seq"}, "attention_mask": {1: "total"}, "position_ids": {1: "seq"}}
    dyn.update({n: {2: "past"} for n in names[3:]})
    inputs = (torch.randint(0, 4000, (1, new_len)), torch.ones(1, past_len + new_len, dtype=torch.int64),
              torch.arange(past_len, past_len + new_len)[None]) + past
    save(out, name, LlamaKV(L=L), inputs, input_names=names,
         output_names=["logits"] + [f"present.{k}" for k in kinds], dynamic_axes=dyn)


def jobs(out):
    img = torch.rand(1, 3, 224, 224)
    det = ([torch.rand(3, 320, 320)],)
    return {
        "llama_tiny": lambda: save(out, "llama_tiny", Llama(), (torch.randint(0, 4000, (1, 128)),),
                                   input_names=["input_ids"]),
        "llama_kv_decode": lambda: llama_kv(out, "llama_kv_decode", 255, 1),
        "llama_kv_prefill": lambda: llama_kv(out, "llama_kv_prefill", 0, 64),
        "diff_unet": lambda: save(out, "diff_unet", DiffUNet(), (torch.rand(1, 3, 64, 64), torch.tensor([500])),
                                  input_names=["x", "t"]),
        "whisper_enc": lambda: save(out, "whisper_enc", WhisperEnc(), (torch.randn(1, 80, 3000),), grad=True),
        "clip_text": lambda: save(out, "clip_text", ClipText(), (torch.randint(0, 8000, (2, 77)),)),
        "detr_like": lambda: save(out, "detr_like", DetrLike(), (torch.rand(1, 3, 320, 320),), grad=True),
        "maxvit_t": lambda: save(out, "maxvit_t", M.maxvit_t(), img),
        "vit_b_16": lambda: save(out, "vit_b_16", M.vit_b_16(), img, grad=True),
        "fcos": lambda: save(out, "fcos", M.detection.fcos_resnet50_fpn(weights=None, weights_backbone=None), det),
        "keypointrcnn": lambda: save(out, "keypointrcnn",
                                     M.detection.keypointrcnn_resnet50_fpn(weights=None, weights_backbone=None), det),
        "r2plus1d_18": lambda: save(out, "r2plus1d_18", M.video.r2plus1d_18(), torch.rand(1, 3, 8, 112, 112)),
        "s3d": lambda: save(out, "s3d", M.video.s3d(), torch.rand(1, 3, 16, 224, 224)),
    }


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    todo = jobs(out)
    for name in sys.argv[2:] or todo:
        if name not in todo:
            sys.exit(f"unknown model '{name}'; known: {' '.join(todo)}")
        torch.manual_seed(0)
        todo[name]()


if __name__ == "__main__":
    main()
