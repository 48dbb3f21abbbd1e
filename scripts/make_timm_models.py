#!/usr/bin/env python3
"""Architectures from timm (PyTorch Image Models) beyond torchvision's, with
seeded random weights, exported by torch.onnx.export (TorchScript exporter,
opset 17, dynamic batch) as NAME.onnx + NAME.input_0.npy (timm_ + the timm
model name), to check Onyx on designs the other model sets lack: GhostNet,
MobileViT, LeViT, PoolFormer (GroupNorm, pooling mixer), EdgeNeXt, RepVGG,
HRNet, Res2Net, DLA, CSPDarknet, Xception, Inception-v4, NF-ResNet, CoaT,
CrossViT, BEiT, TNT, XCiT, MLP-Mixer, ResMLP, gMLP, EfficientFormer, LCNet,
TinyNet, FBNetV3, ReXNet, HardCoReNAS, MobileNetV4, FastViT (depthwise convs
with a channel multiplier); and 30 more (ConvNeXt-atto, EfficientViT, RegNetZ,
VoVNet, SelecSLS, DPN, MobileOne, RepGhostNet, GhostNetV2, TResNet, ViT-S,
DeiT distilled, MaxViT, CoAtNet, EfficientNetV2, NesT and Twins (windowed
attention of rank 5), PiT, Visformer, Sequencer2D (LSTMs), GCViT, DaViT,
PVTv2, FocalNet, InceptionNeXt, HGNetV2, StarNet, EVA-02 (rotary
embeddings), CaiT, ConViT).

Needs torch and timm: Debian's python3-torch and python3-torchvision, then
`/usr/bin/python3 -m pip install --break-system-packages timm huggingface_hub safetensors`
(timm's own dependencies; weights are not downloaded).

Usage: /usr/bin/python3 scripts/make_timm_models.py OUT [NAME ...]
Then: python3 scripts/check_models.py --onyx build/onyx --models OUT
      python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT"""
import os
import sys
import warnings

import numpy as np
import timm
import torch

MODELS = [
    "ghostnet_100", "mobilevit_s", "levit_128s", "poolformer_s12", "edgenext_small", "repvgg_a2",
    "hrnet_w18_small", "res2net50_26w_4s", "dla34", "cspdarknet53", "xception41", "inception_v4",
    "nf_resnet26", "coat_lite_tiny", "crossvit_9_240", "beit_base_patch16_224", "tnt_s_patch16_224",
    "xcit_tiny_12_p16_224", "mixer_b16_224", "resmlp_12_224", "gmlp_s16_224", "efficientformer_l1",
    "lcnet_050", "tinynet_a", "fbnetv3_b", "rexnet_100", "hardcorenas_a", "mobilenetv4_conv_small",
    "fastvit_t8",
    # a second batch: more hybrids, windowed and pyramid attention, reparameterizable nets
    "convnext_atto", "efficientvit_b0", "regnetz_b16", "ese_vovnet19b_dw", "selecsls42b", "dpn68", "mobileone_s0",
    "repghostnet_050", "ghostnetv2_100", "tresnet_m", "vit_small_patch16_224", "deit_tiny_distilled_patch16_224",
    "maxvit_nano_rw_256", "coatnet_nano_rw_224", "efficientnetv2_rw_t", "nest_tiny", "pit_ti_224",
    "twins_svt_small", "visformer_tiny", "sequencer2d_s", "gcvit_xxtiny", "davit_tiny", "pvt_v2_b0",
    "focalnet_tiny_srf", "inception_next_tiny", "hgnetv2_b0", "starnet_s1", "eva02_tiny_patch14_224",
    "cait_xxs24_224", "convit_tiny",
    # a third batch: split attention and selective kernels, pre-activation ResNets with GroupNorm /
    # EvoNorm / FilterResponseNorm and weight-standardized convs, NFNets, mixed kernel sizes,
    # TF "same" padding, self-attention inside conv nets (BoTNet, LambdaNet),
    # GRN, RMSNorm, multiscale / masked-unit attention (MViTv2, Hiera),
    # Swin and Swin-V2, rel-pos and rotary ViTs, MobileNetV4 hybrid, partial convs (FasterNet)
    "resnest14d", "skresnet18", "resnetv2_18", "resnetv2_50d_gn", "resnetv2_50d_evos", "resnetv2_50d_frn",
    "nf_regnet_b0", "test_nfnet", "mixnet_s", "tf_mixnet_s", "tf_efficientnet_b0", "efficientnet_x_b3",
    "gernet_s", "cspresnext50", "rexnetr_100", "dpn48b", "botnet26t_256", "lambda_resnet26t",
    "deit3_small_patch16_224", "convnextv2_atto",
    "convnext_zepto_rms", "rdnet_tiny", "efficientvit_m0", "mobilevitv2_050", "tiny_vit_5m_224",
    "nextvit_small", "fastvit_sa12", "fastvit_mci0", "swiftformer_xs", "hiera_tiny_224", "vitamin_small_224",
    "twins_pcpvt_small", "coat_tiny", "mambaout_femto", "ghostnetv3_050",
    "swin_tiny_patch4_window7_224", "swinv2_cr_tiny_ns_224", "mvitv2_tiny", "caformer_s18", "repvit_m0_9",
    "shvit_s1", "fasternet_t0", "efficientformerv2_s0", "cs3darknet_focus_s", "gcresnet33ts",
    "vit_relpos_small_patch16_224", "vit_small_patch16_rope_224",
    "mobilenetv4_hybrid_medium", "regnety_002", "semnasnet_050", "coatnet_rmlp_nano_rw_224",
    "maxxvitv2_nano_rw_256", "vit_little_patch16_reg4_gap_256",
    # not exported by Debian's torch 1.13 TorchScript exporter at opset 17: halonet26t (Unfold of an
    # unknown size), volo_d1_224 (col2im), convmixer_1024_20_ks9_p14 (padding="same"), bat_resnext26ts
    # (adaptive_max_pool2d of an unknown size), sam2_hiera_tiny (aten::tile); too large (>150 MB):
    # inception_resnet_v2, nasnetalarge, pnasnet5large, and resnetv2_50x1_bit and eca_nfnet_l0 (their
    # weight-standardized convs keep both weights)
]


def export(name, out):
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False).eval()
    size = model.default_cfg.get("input_size", (3, 224, 224))
    x = torch.randn(1, *size)
    path = os.path.join(out, f"timm_{name}.onnx")
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, path, opset_version=17, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {0: "batch"}})
    np.save(os.path.join(out, f"timm_{name}.input_0.npy"), x.numpy())
    print(f"{path} {os.path.getsize(path) / 1e6:.1f} MB", flush=True)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    failed = 0
    for name in sys.argv[2:] or MODELS:
        try:
            export(name, out)
        except Exception as e:  # one model's exporter problem does not stop the others
            failed += 1
            print(f"{name}: not exported: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
