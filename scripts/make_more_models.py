#!/usr/bin/env python3
"""More architectures than ../shared/models/make_models.py builds, the same way
(seeded random weights, torch.onnx.export, NAME.onnx + NAME.input_K.npy), to
check that speed and correctness hold beyond the five benchmark models:
EfficientNet-B0 (SiLU, squeeze-excitation), DenseNet-121 (standalone
BatchNormalization, Concat chains), ShuffleNetV2 (channel shuffle), GoogLeNet
(Inception branches), ConvNeXt-T (NHWC permutes, LayerNorm, 7x7 depthwise),
GPT-2 (causal attention), and twelve more torchvision models: MobileNetV3
large / small, MnasNet, ResNeXt-50, RegNetY-800MF, RegNetX-400MF (grouped
convs), Inception-v3, VGG-11, AlexNet, ResNet-18, ViT-B/32 and DeepLabV3 with
a MobileNetV3 backbone (its 'out' map).

Usage: /usr/bin/python3 scripts/make_more_models.py OUT [NAME ...]
Then: python3 ../shared/bench/compare_ort.py --onyx build/onyx --models OUT"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', '..', 'shared', 'models'))
import make_models as mm  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402


def vit_b_32():
    def build():
        m = torchvision.models.vit_b_32()
        m.export_in_train_mode = True
        return m, (torch.randn(1, 3, 224, 224),), ['input'], {'input': {0: 'batch'}}
    return build


class SegmentationOut(torch.nn.Module):
    """A segmentation model's 'out' map as its only output."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x)['out']


mm.MODELS.clear()
mm.MODELS.update({
    'efficientnet_b0': mm.vision(lambda: torchvision.models.efficientnet_b0()),
    'densenet121': mm.vision(lambda: torchvision.models.densenet121()),
    'shufflenet_v2': mm.vision(lambda: torchvision.models.shufflenet_v2_x1_0()),
    'googlenet': mm.vision(lambda: torchvision.models.googlenet(init_weights=True, aux_logits=False)),
    'convnext_tiny': mm.vision(lambda: torchvision.models.convnext_tiny()),
    'gpt2': mm.gpt2(),
    'mobilenet_v3_large': mm.vision(lambda: torchvision.models.mobilenet_v3_large()),
    'mobilenet_v3_small': mm.vision(lambda: torchvision.models.mobilenet_v3_small()),
    'mnasnet1_0': mm.vision(lambda: torchvision.models.mnasnet1_0()),
    'resnext50': mm.vision(lambda: torchvision.models.resnext50_32x4d()),
    'regnet_y_800mf': mm.vision(lambda: torchvision.models.regnet_y_800mf()),
    'regnet_x_400mf': mm.vision(lambda: torchvision.models.regnet_x_400mf()),
    'inception_v3': mm.vision(lambda: torchvision.models.inception_v3(init_weights=True, aux_logits=False)),
    'vgg11': mm.vision(lambda: torchvision.models.vgg11()),
    'alexnet': mm.vision(lambda: torchvision.models.alexnet()),
    'resnet18': mm.vision(lambda: torchvision.models.resnet18()),
    'vit_b_32': vit_b_32(),
    'deeplabv3_mnv3': mm.vision(lambda: SegmentationOut(torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(
        weights=None, weights_backbone=None, aux_loss=False))),
})

if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mm.main(sys.argv[1], sys.argv[2:])
