#!/usr/bin/env python3
"""compare_outputs.py DIR_A DIR_B [MAX_REL_DIFF] [LABEL]

Compares output_K.pb files (TensorProto) of two `onyx run --output-dir` runs:
relative difference max|a - b| / max|a| per output; fails above MAX_REL_DIFF
(default 1e-3)."""
import glob
import os
import sys

import struct

import numpy as np

try:
    from onnx import TensorProto, numpy_helper
except ImportError:  # no onnx package: read the few TensorProto fields by hand
    TensorProto = None

# TensorProto data_type -> numpy dtype (the types model outputs have here)
_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
           10: np.float16, 11: np.float64}


def _varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def _parse_tensor(buf):
    dims, dtype, raw, floats, ints = [], 1, None, [], []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            v, i = _varint(buf, i)
            if field == 1:
                dims.append(v)
            elif field == 2:
                dtype = v
            elif field == 7:
                ints.append(v - (1 << 64) if v >= 1 << 63 else v)
        elif wire == 2:
            n, i = _varint(buf, i)
            chunk = buf[i:i + n]
            i += n
            if field == 1:  # packed dims
                j = 0
                while j < len(chunk):
                    v, j = _varint(chunk, j)
                    dims.append(v)
            elif field == 4:
                floats.extend(struct.unpack(f"<{len(chunk) // 4}f", chunk))
            elif field == 7:
                j = 0
                while j < len(chunk):
                    v, j = _varint(chunk, j)
                    ints.append(v - (1 << 64) if v >= 1 << 63 else v)
            elif field == 9:
                raw = chunk
        elif wire == 5:
            if field == 4:
                floats.append(struct.unpack("<f", buf[i:i + 4])[0])
            i += 4
        elif wire == 1:
            i += 8
    dt = _DTYPES.get(dtype, np.float32)
    if raw is not None:
        a = np.frombuffer(raw, dtype=dt)
    elif floats:
        a = np.array(floats, dtype=dt)
    else:
        a = np.array(ints, dtype=dt)
    return a.reshape(dims)


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if TensorProto is None:
        return _parse_tensor(data)
    t = TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def main():
    a_dir, b_dir = sys.argv[1], sys.argv[2]
    limit = float(sys.argv[3]) if len(sys.argv) > 3 else 1e-3
    label = sys.argv[4] if len(sys.argv) > 4 else a_dir
    files = sorted(glob.glob(os.path.join(a_dir, "output_*.pb")))
    if not files:
        print(f"{label}: no outputs in {a_dir}")
        return 1
    ok = True
    for fa in files:
        fb = os.path.join(b_dir, os.path.basename(fa))
        if not os.path.exists(fb):
            print(f"{label}: {os.path.basename(fa)} missing in {b_dir}")
            ok = False
            continue
        a, b = load(fa), load(fb)
        if a.shape != b.shape:
            print(f"{label}: {os.path.basename(fa)} shapes differ {a.shape} vs {b.shape}")
            ok = False
            continue
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        scale = max(np.max(np.abs(a64)) if a.size else 0.0, 1e-12)
        rel = float(np.max(np.abs(a64 - b64)) / scale) if a.size else 0.0
        status = "ok" if rel <= limit else "FAIL"
        print(f"  {label} {os.path.basename(fa)} {tuple(a.shape)}: rel diff {rel:.2e} {status}")
        ok &= rel <= limit
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
