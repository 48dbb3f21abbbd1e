"""Shared pieces of the scripts that check Onyx against ONNX Runtime
(check_sklearn_models.py, check_contrib_ops.py): run a model through
`onyx run --output-dir`, read its outputs back, compare them with
onnxruntime's."""
import os
import subprocess

import numpy as np
import onnx
from onnx import numpy_helper


def run_onyx(onyx, model_path, feeds, workdir, threads):
    inputs = []
    for name, value in feeds.items():
        path = os.path.join(workdir, f"{name}.npy")
        np.save(path, value)
        inputs += ["--input", f"{name}={path}"]
    out_dir = os.path.join(workdir, "onyx_out")
    cmd = [onyx, "run", model_path, *inputs, "--output-dir", out_dir, "--threads", str(threads)]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1][:300])
    outputs, k = [], 0
    while os.path.exists(os.path.join(out_dir, f"output_{k}.pb")):
        with open(os.path.join(out_dir, f"output_{k}.pb"), "rb") as f:
            data = f.read()
        outputs.append(data)
        k += 1
    return outputs


def parse_output(data, expected):
    """An output file as the Python value onnxruntime gives: an array, or a
    list of dicts for ZipMap's sequence of maps."""
    if isinstance(expected, list):
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def compare_maps(name, expected, got, rtol, atol):
    """ZipMap outputs: the same keys per row, values within tolerance."""
    if len(got) != len(expected):
        return 0.0, f"{name}: {len(got)} maps, expected {len(expected)}"
    worst = 0.0
    for i, (e, g) in enumerate(zip(expected, got)):
        g = {k.decode() if isinstance(k, bytes) else k: float(v) for k, v in g.items()}
        if set(g) != set(e):
            return worst, f"{name}: map {i} has keys {sorted(g)}, expected {sorted(e)}"
        for key, value in e.items():
            worst = max(worst, abs(g[key] - value))
            if abs(g[key] - value) > atol + rtol * abs(value):
                return worst, f"{name}: map {i} key {key}: {g[key]:.7g} vs {value:.7g}"
    return worst, None


def compare(name, expected, got, rtol, atol):
    """Returns (max float difference, problem or None) for one output."""
    if got.shape != expected.shape:
        return 0.0, f"{name}: shape {got.shape} != {expected.shape}"
    if (expected.dtype.kind in "OUS") != (got.dtype.kind in "OUS") or (expected.dtype.kind not in "OUS" and
                                                                      got.dtype != expected.dtype):
        return 0.0, f"{name}: type {got.dtype} != {expected.dtype}"
    if expected.dtype.kind in "OUS":  # string labels; onnx may give bytes
        g = np.array([v.decode() if isinstance(v, bytes) else v for v in got.ravel()], dtype=object)
        bad = int(np.sum(g != expected.ravel().astype(object)))
        return 0.0, (f"{name}: {bad} of {expected.size} labels differ" if bad else None)
    if expected.dtype.kind in "iub":
        bad = int(np.sum(got != expected))
        return 0.0, (f"{name}: {bad} of {expected.size} labels differ" if bad else None)
    e, g = expected.astype(np.float64), got.astype(np.float64)
    same = (e == g) | (np.isnan(e) & np.isnan(g))  # equal infinities and NaNs differ by 0
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(g - e))
    max_diff = float(np.nanmax(diff)) if diff.size else 0.0
    ok = np.isclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    if not ok.all():
        i = np.unravel_index(np.argmin(ok), ok.shape)
        return max_diff, f"{name}: {int((~ok).sum())} values off, e.g. at {tuple(map(int, i))} {g[i]:.7g} vs {e[i]:.7g}"
    return max_diff, None


