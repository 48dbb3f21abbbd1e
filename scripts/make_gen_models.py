#!/usr/bin/env python3
"""Architectures the other scripts leave out: generators and image-to-image nets (a DCGAN
generator, ESPCN super-resolution, a fast style-transfer net, a Stable-Diffusion-like VAE
decoder), audio (a HiFi-GAN-like vocoder, a Conformer block), video and volumes (torchvision's
R3D-18, a 3-D U-Net), optical flow (torchvision's RAFT-small), a seq2seq nn.Transformer and an
FCOS detector. They bring ConvTranspose 1-D/2-D/3-D, DepthToSpace, InstanceNormalization,
reflect Pad, GroupNormalization chains, Conv3d / MaxPool3d, GridSample, GLU and dilated Conv1d;
also a YOLOv8-shaped detector, torchvision's EfficientNetV2-S, Swin-V2-T, MaxViT-T, LR-ASPP,
and SSD300, and a greedy GRU decoder.
Seeded random weights; `g_NAME` from the TorchScript exporter (opset 17), `gd_NAME` from the
default one of PyTorch 2 (`dynamo=True`). Output convention as the other scripts
(OUT/NAME.onnx + OUT/NAME.input_K.npy).

Needs: python3 -m venv VENV && VENV/bin/pip install torch torchvision onnxscript
Usage: VENV/bin/python scripts/make_gen_models.py OUT [NAME ...]"""
import inspect
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_each import export_each, parse_name  # noqa: E402


def dcgan():
    def up(cin, cout, k=4, s=2, p=1):
        return [nn.ConvTranspose2d(cin, cout, k, s, p, bias=False), nn.BatchNorm2d(cout), nn.ReLU(True)]
    net = nn.Sequential(*up(100, 256, 4, 1, 0), *up(256, 128), *up(128, 64), *up(64, 32),
                        nn.ConvTranspose2d(32, 3, 4, 2, 1, bias=False), nn.Tanh())
    return net, (torch.randn(1, 100, 1, 1),)


def espcn():
    net = nn.Sequential(nn.Conv2d(1, 64, 5, padding=2), nn.Tanh(), nn.Conv2d(64, 32, 3, padding=1), nn.Tanh(),
                        nn.Conv2d(32, 9, 3, padding=1), nn.PixelShuffle(3))
    return net, (torch.rand(1, 1, 96, 96),)


class StyleNet(nn.Module):
    """Johnson et al.'s fast style transfer: reflect padding, instance norm, nearest upsampling."""

    @staticmethod
    def conv(cin, cout, k, s=1):
        return nn.Sequential(nn.ReflectionPad2d(k // 2), nn.Conv2d(cin, cout, k, s))

    def __init__(self):
        super().__init__()
        c, n = self.conv, nn.InstanceNorm2d
        self.down = nn.Sequential(c(3, 16, 9), n(16, affine=True), nn.ReLU(), c(16, 32, 3, 2), n(32, affine=True),
                                  nn.ReLU(), c(32, 64, 3, 2), n(64, affine=True), nn.ReLU())
        self.res = nn.ModuleList(nn.Sequential(c(64, 64, 3), n(64, affine=True), nn.ReLU(), c(64, 64, 3),
                                               n(64, affine=True)) for _ in range(3))
        self.up1, self.n1 = c(64, 32, 3), n(32, affine=True)
        self.up2, self.n2 = c(32, 16, 3), n(16, affine=True)
        self.out = c(16, 3, 9)

    def forward(self, x):
        y = self.down(x)
        for block in self.res:
            y = y + block(y)
        y = F.relu(self.n1(self.up1(F.interpolate(y, scale_factor=2.0, mode='nearest'))))
        y = F.relu(self.n2(self.up2(F.interpolate(y, scale_factor=2.0, mode='nearest'))))
        return self.out(y)


def style():
    return StyleNet(), (torch.rand(1, 3, 128, 128),)


class VaeResBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(8, cin), nn.Conv2d(cin, cout, 3, padding=1)
        self.n2, self.c2 = nn.GroupNorm(8, cout), nn.Conv2d(cout, cout, 3, padding=1)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        y = self.c1(F.silu(self.n1(x)))
        return self.skip(x) + self.c2(F.silu(self.n2(y)))


class VaeAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.norm, self.qkv, self.proj = nn.GroupNorm(8, c), nn.Linear(c, 3 * c), nn.Linear(c, c)

    def forward(self, x):
        b, c, h, w = x.shape
        t = self.norm(x).flatten(2).transpose(1, 2)
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        a = torch.softmax(q @ k.transpose(1, 2) / c ** 0.5, dim=-1) @ v
        return x + self.proj(a).transpose(1, 2).reshape(b, c, h, w)


class VaeDecoder(nn.Module):
    """The shape of Stable Diffusion's VAE decoder at small widths: GroupNorm + SiLU residual blocks,
    one spatial self-attention, nearest 2x upsampling."""

    def __init__(self):
        super().__init__()
        self.inp = nn.Conv2d(4, 64, 3, padding=1)
        self.mid = nn.Sequential(VaeResBlock(64, 64), VaeAttention(64), VaeResBlock(64, 64))
        self.ups = nn.ModuleList([VaeResBlock(64, 64), VaeResBlock(64, 32), VaeResBlock(32, 32)])
        self.convs = nn.ModuleList([nn.Conv2d(64, 64, 3, padding=1), nn.Conv2d(32, 32, 3, padding=1)])
        self.norm, self.out = nn.GroupNorm(8, 32), nn.Conv2d(32, 3, 3, padding=1)

    def forward(self, z):
        y = self.mid(self.inp(z))
        for i, block in enumerate(self.ups):
            y = block(y)
            if i < len(self.convs):
                y = self.convs[i](F.interpolate(y, scale_factor=2.0, mode='nearest'))
        return self.out(F.silu(self.norm(y)))


def vae_decoder():
    return VaeDecoder(), (torch.randn(1, 4, 16, 16),)


class HifiResBlock(nn.Module):
    def __init__(self, c, k=3, dilations=(1, 3, 5)):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv1d(c, c, k, dilation=d, padding=d * (k - 1) // 2) for d in dilations)

    def forward(self, x):
        for conv in self.convs:
            x = x + conv(F.leaky_relu(x, 0.1))
        return x


class HifiGan(nn.Module):
    """HiFi-GAN's generator at small widths: transposed Conv1d upsampling (8x, 8x, 2x, 2x) and
    dilated residual blocks with LeakyReLU."""

    def __init__(self):
        super().__init__()
        self.pre = nn.Conv1d(80, 128, 7, padding=3)
        ups, blocks, c = [], [], 128
        for rate, k in ((8, 16), (8, 16), (2, 4), (2, 4)):
            ups.append(nn.ConvTranspose1d(c, c // 2, k, rate, padding=(k - rate) // 2))
            c //= 2
            blocks.append(HifiResBlock(c))
        self.ups, self.blocks = nn.ModuleList(ups), nn.ModuleList(blocks)
        self.post = nn.Conv1d(c, 1, 7, padding=3)

    def forward(self, mel):
        x = self.pre(mel)
        for up, block in zip(self.ups, self.blocks):
            x = block(up(F.leaky_relu(x, 0.1)))
        return torch.tanh(self.post(F.leaky_relu(x)))


def hifigan():
    return HifiGan(), (torch.randn(1, 80, 32),)


class ConformerBlock(nn.Module):
    """Feed-forward (SiLU) halves, self-attention, and the convolution module (pointwise, GLU,
    depthwise Conv1d of 31 taps, BatchNorm, SiLU, pointwise)."""

    def __init__(self, d=144, heads=4, k=31):
        super().__init__()
        self.ff1 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.ff2 = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Linear(4 * d, d))
        self.attn_norm, self.attn = nn.LayerNorm(d), nn.MultiheadAttention(d, heads, batch_first=True)
        self.conv_norm, self.pw1 = nn.LayerNorm(d), nn.Conv1d(d, 2 * d, 1)
        self.dw, self.bn = nn.Conv1d(d, d, k, padding=k // 2, groups=d), nn.BatchNorm1d(d)
        self.pw2, self.out_norm = nn.Conv1d(d, d, 1), nn.LayerNorm(d)

    def forward(self, x):
        x = x + 0.5 * self.ff1(x)
        a = self.attn_norm(x)
        x = x + self.attn(a, a, a, need_weights=False)[0]
        c = F.glu(self.pw1(self.conv_norm(x).transpose(1, 2)), dim=1)
        x = x + self.pw2(F.silu(self.bn(self.dw(c)))).transpose(1, 2)
        return self.out_norm(x + 0.5 * self.ff2(x))


def conformer():
    return nn.Sequential(ConformerBlock(), ConformerBlock()), (torch.randn(2, 100, 144),)


class Unet3d(nn.Module):
    def __init__(self):
        super().__init__()

        def block(cin, cout):
            return nn.Sequential(nn.Conv3d(cin, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU(),
                                 nn.Conv3d(cout, cout, 3, padding=1), nn.BatchNorm3d(cout), nn.ReLU())
        self.e1, self.e2, self.mid = block(1, 8), block(8, 16), block(16, 32)
        self.u2, self.d2 = nn.ConvTranspose3d(32, 16, 2, 2), block(32, 16)
        self.u1, self.d1 = nn.ConvTranspose3d(16, 8, 2, 2), block(16, 8)
        self.head = nn.Conv3d(8, 3, 1)

    def forward(self, x):
        e1 = self.e1(x)
        e2 = self.e2(F.max_pool3d(e1, 2))
        m = self.mid(F.max_pool3d(e2, 2))
        d2 = self.d2(torch.cat([self.u2(m), e2], 1))
        return self.head(self.d1(torch.cat([self.u1(d2), e1], 1)))


def unet3d():
    return Unet3d(), (torch.randn(1, 1, 32, 32, 32),)


def r3d_18():
    return torchvision.models.video.r3d_18(num_classes=10), (torch.randn(1, 3, 4, 64, 64),)


class FlowOut(nn.Module):
    """RAFT returns one flow per refinement step: keep the last."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, a, b):
        return self.model(a, b, num_flow_updates=4)[-1]


def raft_small():
    return FlowOut(torchvision.models.optical_flow.raft_small()), (torch.rand(1, 3, 128, 128) * 2 - 1,
                                                                   torch.rand(1, 3, 128, 128) * 2 - 1)


class Seq2Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb, self.head = nn.Embedding(500, 64), nn.Linear(64, 500)
        self.net = nn.Transformer(64, 4, 2, 2, 128, dropout=0.0, batch_first=True)

    def forward(self, src, tgt):
        mask = nn.Transformer.generate_square_subsequent_mask(tgt.shape[1])
        return self.head(self.net(self.emb(src), self.emb(tgt), tgt_mask=mask, tgt_is_causal=True))


def seq2seq():
    return Seq2Seq(), (torch.randint(0, 500, (2, 13)), torch.randint(0, 500, (2, 9)))


class SegmentationOut(nn.Module):
    """A torchvision segmentation model's dict as its 'out' tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)['out']


class DetectionOut(nn.Module):
    """A torchvision detector's list of dicts as plain tensors."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        out = self.model(list(x))[0]
        return out['boxes'], out['scores'], out['labels']


def fcos():
    det = torchvision.models.detection.fcos_resnet50_fpn(num_classes=91, weights_backbone=None, min_size=320,
                                                         max_size=320)
    return DetectionOut(det), (torch.rand(1, 3, 320, 320),)


class ConvSilu(nn.Sequential):
    def __init__(self, cin, cout, k=1, s=1):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class C2f(nn.Module):
    """YOLOv8's block: split the channels, a chain of bottlenecks, concatenate every stage."""

    def __init__(self, cin, cout, n=1):
        super().__init__()
        self.c = cout // 2
        self.cv1, self.cv2 = ConvSilu(cin, 2 * self.c), ConvSilu((2 + n) * self.c, cout)
        self.m = nn.ModuleList(nn.Sequential(ConvSilu(self.c, self.c, 3), ConvSilu(self.c, self.c, 3)) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        for m in self.m:
            y.append(y[-1] + m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class YoloLike(nn.Module):
    """A YOLOv8-n-shaped detector at 1/4 width: C2f backbone, SPPF (chained max pools), an FPN
    with nearest upsampling, and the head's box decoding (sigmoid scores, grid offsets)."""

    def __init__(self, nc=20):
        super().__init__()
        self.stem = nn.Sequential(ConvSilu(3, 8, 3, 2), ConvSilu(8, 16, 3, 2), C2f(16, 16))
        self.p3 = nn.Sequential(ConvSilu(16, 32, 3, 2), C2f(32, 32, 2))
        self.p4 = nn.Sequential(ConvSilu(32, 64, 3, 2), C2f(64, 64, 2))
        self.p5 = nn.Sequential(ConvSilu(64, 128, 3, 2), C2f(128, 128))
        self.sppf_in, self.sppf_out = ConvSilu(128, 64), ConvSilu(256, 128)
        self.up4, self.up3 = C2f(192, 64), C2f(96, 32)
        self.heads = nn.ModuleList(nn.Sequential(ConvSilu(c, 32, 3), nn.Conv2d(32, 4 + nc, 1)) for c in (32, 64, 128))
        self.nc = nc

    def forward(self, x):
        p3 = self.p3(self.stem(x))
        p4 = self.p4(p3)
        y = self.sppf_in(self.p5(p4))
        pools = [y]
        for _ in range(3):
            pools.append(F.max_pool2d(pools[-1], 5, 1, 2))
        p5 = self.sppf_out(torch.cat(pools, 1))
        n4 = self.up4(torch.cat([F.interpolate(p5, scale_factor=2.0, mode='nearest'), p4], 1))
        n3 = self.up3(torch.cat([F.interpolate(n4, scale_factor=2.0, mode='nearest'), p3], 1))
        outs = []
        for feat, head, stride in zip((n3, n4, p5), self.heads, (8, 16, 32)):
            o = head(feat)
            b, _, h, w = o.shape
            gy, gx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32),
                                    indexing='ij')
            grid = torch.stack([gx, gy], 0).reshape(1, 2, h * w)
            o = o.flatten(2)
            xy = (o[:, :2].sigmoid() * 2 - 0.5 + grid) * stride
            wh = o[:, 2:4].exp() * stride
            outs.append(torch.cat([xy, wh, o[:, 4:].sigmoid()], 1))
        return torch.cat(outs, 2)


def yolo_like():
    return YoloLike(), (torch.rand(1, 3, 256, 256),)


def tv(ctor, *shape):
    return lambda: (ctor(), (torch.rand(*shape),))


class GreedyGru(nn.Module):
    """A GRU decoder run greedily for a fixed number of steps inside the graph (a Loop when
    scripted), each step's argmax fed back through the embedding."""

    def __init__(self):
        super().__init__()
        self.emb, self.cell, self.out = nn.Embedding(300, 48), nn.GRUCell(48, 64), nn.Linear(64, 300)

    def forward(self, h, steps: int = 12):
        tok = torch.zeros(h.shape[0], dtype=torch.long)
        toks = []
        for _ in range(steps):
            h = self.cell(self.emb(tok), h)
            tok = self.out(h).argmax(-1)
            toks.append(tok)
        return torch.stack(toks, 1)


def greedy_gru():
    return GreedyGru(), (torch.randn(3, 64),)


MODELS = {'dcgan': dcgan, 'espcn': espcn, 'style': style, 'vae_decoder': vae_decoder, 'hifigan': hifigan,
          'conformer': conformer, 'unet3d': unet3d, 'r3d_18': r3d_18, 'raft_small': raft_small,
          'seq2seq': seq2seq, 'fcos': fcos, 'yolo_like': yolo_like, 'greedy_gru': greedy_gru,
          'efficientnet_v2_s': tv(lambda: torchvision.models.efficientnet_v2_s(), 1, 3, 192, 192),
          'swin_v2_t': tv(lambda: torchvision.models.swin_v2_t(), 1, 3, 128, 128),
          'maxvit_t': tv(lambda: torchvision.models.maxvit_t(), 1, 3, 224, 224),
          'lraspp': tv(lambda: SegmentationOut(torchvision.models.segmentation.lraspp_mobilenet_v3_large(
              weights=None, weights_backbone=None)), 1, 3, 224, 224),
          'ssd300': tv(lambda: DetectionOut(torchvision.models.detection.ssd300_vgg16(
              num_classes=21, weights_backbone=None)), 1, 3, 300, 300)}


def export(name, out):
    dynamo, arch = parse_name(name, ('g_', 'gd_'), MODELS)
    torch.manual_seed(0)
    model, args = MODELS[arch]()
    model.eval()
    path = os.path.join(out, name + '.onnx')
    in_names = [f'input_{i}' for i in range(len(args))]
    if dynamo:
        with torch.no_grad():
            torch.onnx.export(model, args, path, dynamo=True, input_names=in_names, external_data=False)
    else:  # with gradients on, so that nn.MultiheadAttention does not take its fused path, which has no ONNX form
        # (PyTorch before 2.5, such as Debian's, has only the TorchScript exporter and no dynamo argument)
        legacy = {'dynamo': False} if 'dynamo' in inspect.signature(torch.onnx.export).parameters else {}
        torch.onnx.export(model, args, path, opset_version=17, input_names=in_names, **legacy)
    for i, a in enumerate(args):
        np.save(os.path.join(out, f'{name}.input_{i}.npy'), a.numpy())
    print(f'{path} {os.path.getsize(path) / 1e6:.1f} MB', flush=True)


def main(out, names):
    export_each(out, names or [p + a for a in MODELS for p in ('g_', 'gd_')], export)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
