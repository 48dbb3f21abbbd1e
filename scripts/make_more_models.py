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
a MobileNetV3 backbone (its 'out' map); and nine beyond classification:
SSDlite, Faster / Mask / Keypoint R-CNN and RetinaNet (torchvision detectors
with their postprocessing), an LSTM + GRU stack, a PyTorch
TransformerEncoder, a small image-to-image net and a 1-D audio classifier.

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


def detection(ctor):
    """A torchvision detector on one 320x320 image (boxes, labels, scores...)."""
    def build():
        return ctor(), (torch.rand(1, 3, 320, 320),), ['input'], None
    return build


class LstmGru(torch.nn.Module):
    """A 2-layer bidirectional LSTM, a GRU and a linear head."""

    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(32, 64, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = torch.nn.GRU(128, 48, batch_first=True)
        self.fc = torch.nn.Linear(48, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        y, _ = self.gru(y)
        return self.fc(y)


class UnetLike(torch.nn.Module):
    """Down and up again: InstanceNorm, LeakyReLU, ConvTranspose, GroupNorm, SiLU, Upsample, Tanh."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.down = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.InstanceNorm2d(16), nn.LeakyReLU(0.2),
                                  nn.Conv2d(16, 32, 4, 2, 1), nn.BatchNorm2d(32), nn.ReLU())
        self.up = nn.Sequential(nn.ConvTranspose2d(32, 16, 4, 2, 1), nn.GroupNorm(4, 16), nn.SiLU(),
                                nn.Upsample(scale_factor=2, mode='nearest'), nn.Conv2d(16, 3, 3, padding=1), nn.Tanh())

    def forward(self, x):
        return self.up(self.down(x))


class Conv1dAudio(torch.nn.Module):
    """A 1-D conv classifier: strided, dilated and grouped Conv1d, GELU, LayerNorm over [C, T], adaptive pooling."""

    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.net = nn.Sequential(nn.Conv1d(1, 16, 9, stride=2, padding=4), nn.GELU(),
                                 nn.Conv1d(16, 32, 5, dilation=2, padding=4, groups=4), nn.LayerNorm([32, 500]),
                                 nn.AdaptiveAvgPool1d(50), nn.Flatten(), nn.Linear(1600, 8), nn.Softmax(-1))

    def forward(self, x):
        return self.net(x)


def transformer_encoder():
    """Two nn.TransformerEncoderLayer; exported in train mode (the eval fast
    path has no ONNX form) with dropout 0, so outputs are the eval ones."""
    m = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True), 2)
    m.export_in_train_mode = True
    return m


def sequence_model(ctor, *shape, opset=17):
    def build():
        m = ctor()
        m.export_opset = opset
        return m, (torch.randn(*shape),), ['input'], None
    return build


det = torchvision.models.detection
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
    # Beyond image classification: detectors (NonMaxSuppression, RoiAlign, TopK, Loop-free
    # postprocessing), recurrent layers, a PyTorch TransformerEncoder, an image-to-image
    # net and a 1-D audio classifier.
    'ssdlite': detection(lambda: det.ssdlite320_mobilenet_v3_large(num_classes=91, weights_backbone=None)),
    'fasterrcnn': detection(lambda: det.fasterrcnn_mobilenet_v3_large_320_fpn(num_classes=91, weights_backbone=None)),
    'retinanet': detection(lambda: det.retinanet_resnet50_fpn(num_classes=91, weights_backbone=None, min_size=320,
                                                              max_size=320)),
    'maskrcnn': detection(lambda: det.maskrcnn_resnet50_fpn(num_classes=91, weights_backbone=None, min_size=320,
                                                            max_size=320)),
    'keypointrcnn': detection(lambda: det.keypointrcnn_resnet50_fpn(num_classes=2, weights_backbone=None,
                                                                    min_size=320, max_size=320)),
    'lstm_gru': sequence_model(LstmGru, 2, 25, 32, opset=14),
    'torch_transformer': sequence_model(transformer_encoder, 2, 17, 64, opset=14),
    'unet_like': sequence_model(UnetLike, 1, 3, 64, 64),
    'conv1d_audio': sequence_model(Conv1dAudio, 3, 1, 1000),
})

if __name__ == '__main__':
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    mm.main(sys.argv[1], sys.argv[2:])
