#!/usr/bin/env python3
"""More architectures than ../shared/models/make_models.py builds, the same way
(seeded random weights, torch.onnx.export, NAME.onnx + NAME.input_K.npy), to
check that speed and correctness hold beyond the five benchmark models:
EfficientNet-B0 (SiLU, squeeze-excitation), DenseNet-121 (standalone
BatchNormalization, Concat chains), ShuffleNetV2 (channel shuffle), GoogLeNet
(Inception branches), ConvNeXt-T (NHWC permutes, LayerNorm, 7x7 depthwise)
and GPT-2 (causal attention).

Usage: /usr/bin/python3 scripts/make_more_models.py OUT [NAME ...]
Then: python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'shared', 'models'))
import make_models as mm  # noqa: E402
import torchvision  # noqa: E402

mm.MODELS.clear()
mm.MODELS.update({
    'efficientnet_b0': mm.vision(lambda: torchvision.models.efficientnet_b0()),
    'densenet121': mm.vision(lambda: torchvision.models.densenet121()),
    'shufflenet_v2': mm.vision(lambda: torchvision.models.shufflenet_v2_x1_0()),
    'googlenet': mm.vision(lambda: torchvision.models.googlenet(init_weights=True, aux_logits=False)),
    'convnext_tiny': mm.vision(lambda: torchvision.models.convnext_tiny()),
    'gpt2': mm.gpt2(),
})

if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mm.main(sys.argv[1], sys.argv[2:])
