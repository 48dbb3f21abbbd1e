#!/usr/bin/env python3
"""Diffusion-model architectures from Hugging Face diffusers at small sizes: the Stable
Diffusion UNet (cross-attention, timestep embedding), an SDXL-style UNet (text_time added
embeddings, several transformer layers per block), a ControlNet, the KL VAE's encoder and
decoder, a VQ-GAN, the tiny autoencoder TAESD, an unconditional DDPM UNet, a video UNet
(UNet3DConditionModel: temporal convolutions and attention), and the transformer denoisers
DiT, PixArt, SD3 (MM-DiT joint attention) and Flux (rotary embeddings, single and double
stream blocks); and, for timing, a UNet and a VAE decoder of realistic widths (`*_mid`).
They bring GroupNormalization chains, nearest Resize, sinusoidal embeddings (Exp, Sin, Cos
of a timestep), adaptive LayerNorm modulation, and attention of every shape.
Seeded random weights with noise added, since diffusers zero-initializes output layers (a
zero output would compare equal whatever a runtime computes); `f_NAME` from the TorchScript
exporter (opset 17), `fd_NAME` from the default one of PyTorch 2 (`dynamo=True`). Output
convention as the other scripts (OUT/NAME.onnx + OUT/NAME.input_K.npy).

Needs: python3 -m venv VENV && VENV/bin/pip install torch onnxscript "diffusers<0.36" transformers
Usage: VENV/bin/python scripts/make_diffusers_models.py OUT [NAME ...]"""
import os
import sys

import torch
import torch.nn as nn
import diffusers as df

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_each import export_each, export_torch, parse_name  # noqa: E402


class FirstOutput(nn.Module):
    """A diffusers model's output dataclass (or tuple) as its first tensor."""

    def __init__(self, model, call=None):
        super().__init__()
        self.model = model
        self.call = call or model

    def forward(self, *args):
        out = self.call(*args, return_dict=False)
        return out[0]


UNET_CONFIG = dict(sample_size=16, in_channels=4, out_channels=4, layers_per_block=1, block_out_channels=(32, 64),
                   down_block_types=('CrossAttnDownBlock2D', 'DownBlock2D'),
                   up_block_types=('UpBlock2D', 'CrossAttnUpBlock2D'), cross_attention_dim=32,
                   attention_head_dim=8, norm_num_groups=8)


def latents(batch=2, channels=4, size=16):
    return torch.randn(batch, channels, size, size)


def sd_unet():
    model = df.UNet2DConditionModel(**UNET_CONFIG)
    return FirstOutput(model), (latents(), torch.tensor([999.0, 17.0]), torch.randn(2, 7, 32))


class SdxlUnet(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = dict(UNET_CONFIG, addition_embed_type='text_time', addition_time_embed_dim=8,
                   projection_class_embeddings_input_dim=32 + 6 * 8, transformer_layers_per_block=(1, 2),
                   down_block_types=('DownBlock2D', 'CrossAttnDownBlock2D'),
                   up_block_types=('CrossAttnUpBlock2D', 'UpBlock2D'), use_linear_projection=True)
        self.model = df.UNet2DConditionModel(**cfg)

    def forward(self, sample, t, text, text_embeds, time_ids):
        cond = {'text_embeds': text_embeds, 'time_ids': time_ids}
        return self.model(sample, t, text, added_cond_kwargs=cond, return_dict=False)[0]


def sd_unet_mid():
    """A UNet of realistic widths for timing: 128 / 256 channels, heads of 32 and 64 values,
    77 text tokens, a 32x32 latent."""
    cfg = dict(UNET_CONFIG, sample_size=32, block_out_channels=(128, 256), attention_head_dim=4,
               cross_attention_dim=256, norm_num_groups=32, layers_per_block=2)
    return FirstOutput(df.UNet2DConditionModel(**cfg)), (latents(1, 4, 32), torch.tensor([500.0]),
                                                         torch.randn(1, 77, 256))


def sdxl_unet():
    return SdxlUnet(), (latents(), torch.tensor([500, 3]), torch.randn(2, 7, 32), torch.randn(2, 32),
                        torch.tensor([[64.0, 64, 0, 0, 64, 64]] * 2))


class ControlNetOut(nn.Module):
    def __init__(self):
        super().__init__()
        cfg = {k: v for k, v in UNET_CONFIG.items() if k not in ('sample_size', 'out_channels', 'up_block_types')}
        self.model = df.ControlNetModel(**cfg, conditioning_embedding_out_channels=(8, 16))

    def forward(self, sample, t, text, image):
        down, mid = self.model(sample, t, text, image, return_dict=False)
        return (mid,) + tuple(down)


def controlnet():
    return ControlNetOut(), (latents(), torch.tensor([10.0, 700.0]), torch.randn(2, 7, 32), torch.rand(2, 3, 32, 32))


VAE_CONFIG = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=(16, 32),
                  down_block_types=('DownEncoderBlock2D',) * 2, up_block_types=('UpDecoderBlock2D',) * 2,
                  norm_num_groups=8, layers_per_block=1)


class VaeEncode(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = df.AutoencoderKL(**VAE_CONFIG)

    def forward(self, image):
        return self.model.encode(image).latent_dist.mean


def vae_encoder():
    return VaeEncode(), (torch.rand(1, 3, 48, 48) * 2 - 1,)


def vae_decoder():
    model = df.AutoencoderKL(**VAE_CONFIG)
    return FirstOutput(model, model.decode), (torch.randn(1, 4, 12, 12),)


def vae_decoder_mid():
    """The decoder at realistic widths for timing (64 / 128 / 128 channels, 32x32 -> 128x128)."""
    model = df.AutoencoderKL(**dict(VAE_CONFIG, block_out_channels=(64, 128, 128), norm_num_groups=32,
                                    down_block_types=('DownEncoderBlock2D',) * 3,
                                    up_block_types=('UpDecoderBlock2D',) * 3, layers_per_block=2))
    return FirstOutput(model, model.decode), (torch.randn(1, 4, 32, 32),)


def vqgan():
    model = df.VQModel(**VAE_CONFIG, num_vq_embeddings=64, vq_embed_dim=4)
    return FirstOutput(model), (torch.rand(1, 3, 32, 32),)


def taesd():
    model = df.AutoencoderTiny(encoder_block_out_channels=(16, 16, 16, 16),
                               decoder_block_out_channels=(16, 16, 16, 16))
    return FirstOutput(model), (torch.rand(1, 3, 64, 64),)


def ddpm_unet():
    model = df.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                           block_out_channels=(16, 32), norm_num_groups=8,
                           down_block_types=('DownBlock2D', 'AttnDownBlock2D'),
                           up_block_types=('AttnUpBlock2D', 'UpBlock2D'))
    return FirstOutput(model), (torch.randn(2, 3, 16, 16), torch.tensor([250, 40]))


def video_unet():
    model = df.UNet3DConditionModel(sample_size=8, in_channels=4, out_channels=4, layers_per_block=1,
                                    block_out_channels=(32, 64), cross_attention_dim=32, attention_head_dim=8,
                                    norm_num_groups=8,
                                    down_block_types=('CrossAttnDownBlock3D', 'DownBlock3D'),
                                    up_block_types=('UpBlock3D', 'CrossAttnUpBlock3D'))
    return FirstOutput(model), (torch.randn(1, 4, 3, 8, 8), torch.tensor([321.0]), torch.randn(1, 5, 32))


def dit():
    model = df.DiTTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4, out_channels=8,
                                     num_layers=2, sample_size=8, patch_size=2, num_embeds_ada_norm=10)
    return FirstOutput(model), (latents(2, 4, 8), torch.tensor([3, 900]), torch.tensor([1, 7]))


class PixArtOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = df.PixArtTransformer2DModel(num_attention_heads=2, attention_head_dim=16, in_channels=4,
                                                 out_channels=8, num_layers=2, sample_size=8, patch_size=2,
                                                 cross_attention_dim=32, caption_channels=24,
                                                 use_additional_conditions=False)

    def forward(self, sample, text, t):
        return self.model(sample, encoder_hidden_states=text, timestep=t, return_dict=False)[0]


def pixart():
    return PixArtOut(), (latents(2, 4, 8), torch.randn(2, 6, 24), torch.tensor([5, 600]))


class Sd3Out(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = df.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, out_channels=4,
                                              num_layers=2, attention_head_dim=16, num_attention_heads=2,
                                              joint_attention_dim=24, caption_projection_dim=32,
                                              pooled_projection_dim=20, pos_embed_max_size=16)

    def forward(self, sample, text, pooled, t):
        return self.model(sample, encoder_hidden_states=text, pooled_projections=pooled, timestep=t,
                          return_dict=False)[0]


def sd3():
    return Sd3Out(), (latents(2, 4, 8), torch.randn(2, 6, 24), torch.randn(2, 20), torch.tensor([0.3, 0.9]))


class FluxOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = df.FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=2,
                                               attention_head_dim=16, num_attention_heads=2, joint_attention_dim=24,
                                               pooled_projection_dim=20, guidance_embeds=False,
                                               axes_dims_rope=(4, 6, 6))

    def forward(self, hidden, text, pooled, t, img_ids, txt_ids):
        return self.model(hidden, encoder_hidden_states=text, pooled_projections=pooled, timestep=t, img_ids=img_ids,
                          txt_ids=txt_ids, return_dict=False)[0]


def flux():
    side = 4
    rows, cols = torch.meshgrid(torch.arange(side), torch.arange(side), indexing='ij')
    img_ids = torch.stack([torch.zeros(side * side), rows.flatten().float(), cols.flatten().float()], 1)
    return FluxOut(), (torch.randn(1, side * side, 16), torch.randn(1, 5, 24), torch.randn(1, 20),
                       torch.tensor([0.7]), img_ids, torch.zeros(5, 3))


MODELS = {'sd_unet': sd_unet, 'sdxl_unet': sdxl_unet, 'controlnet': controlnet, 'vae_encoder': vae_encoder,
          'vae_decoder': vae_decoder, 'vqgan': vqgan, 'taesd': taesd, 'ddpm_unet': ddpm_unet,
          'video_unet': video_unet, 'dit': dit, 'pixart': pixart, 'sd3': sd3, 'flux': flux,
          'sd_unet_mid': sd_unet_mid, 'vae_decoder_mid': vae_decoder_mid}


def add_noise(model):
    """Zero-initialized layers would make outputs constant: give every weight some spread."""
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn_like(p))


def export(name, out):
    dynamo, arch = parse_name(name, ('f_', 'fd_'), MODELS)
    torch.manual_seed(0)
    model, args = MODELS[arch]()
    add_noise(model)
    export_torch(model.eval(), args, out, name, dynamo)


def main(out, names):
    export_each(out, names or [p + a for a in MODELS for p in ('f_', 'fd_')], export)


if __name__ == '__main__':
    main(sys.argv[1], sys.argv[2:])
