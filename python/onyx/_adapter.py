"""onnxruntime's LoRA adapter files (.onnx_adapter): reading and writing.

The file is a FlatBuffer with the identifier "TORT" whose root table is
Adapter {format_version: int32, adapter_version: int32, model_version: int32,
parameters: [Parameter]} and Parameter {name: string, dims: [int64],
data_type: int32 (the ONNX element type), raw_data: [uint8]}, each table's
fields in that order. Only these two tables exist, so the reader and writer
below handle exactly them, without a FlatBuffers library.
"""

from __future__ import annotations

import mmap
import os
import struct

import numpy as np

FILE_IDENTIFIER = b"TORT"
FORMAT_VERSION = 1


class AdapterFileError(RuntimeError):
    """An adapter file that cannot be read (a RuntimeError, as onnxruntime raises)."""


# ---------------------------------------------------------------- reading


class _Reader:
    def __init__(self, buf, path: str):
        self.buf = buf
        self.path = path

    def fail(self, what: str):
        raise AdapterFileError(f"'{self.path}' is not a valid onnxruntime adapter file: {what}")

    def u32(self, pos: int) -> int:
        if pos < 0 or pos + 4 > len(self.buf):
            self.fail(f"offset {pos} is outside the file ({len(self.buf)} bytes)")
        return struct.unpack_from("<I", self.buf, pos)[0]

    def i32(self, pos: int) -> int:
        return struct.unpack_from("<i", self.buf, pos)[0] if pos + 4 <= len(self.buf) else self.fail("truncated")

    def field(self, table: int, index: int) -> int | None:
        """Where field `index` of the table at `table` lies, or None when it is absent (default)."""
        vtable = table - self.i32(table)
        vtable_size = struct.unpack_from("<H", self.buf, vtable)[0] if vtable + 2 <= len(self.buf) else 0
        slot = 4 + 2 * index
        if vtable < 0 or slot + 2 > vtable_size:
            return None
        offset = struct.unpack_from("<H", self.buf, vtable + slot)[0]
        return table + offset if offset else None

    def scalar(self, table: int, index: int, default: int = 0) -> int:
        pos = self.field(table, index)
        return default if pos is None else self.i32(pos)

    def target(self, table: int, index: int) -> int | None:
        pos = self.field(table, index)
        return None if pos is None else pos + self.u32(pos)

    def vector(self, start: int | None, element_size: int) -> tuple[int, int]:
        """(position of the first element, count) of the vector at `start`."""
        if start is None:
            return 0, 0
        count = self.u32(start)
        if start + 4 + count * element_size > len(self.buf):
            self.fail("a vector runs past the end of the file")
        return start + 4, count


def read_adapter_buffer(buf, path: str = "<buffer>") -> tuple[int, int, int, dict[str, np.ndarray]]:
    """(format_version, adapter_version, model_version, {name: array over `buf`})."""
    r = _Reader(buf, path)
    if len(buf) < 8 or bytes(buf[4:8]) != FILE_IDENTIFIER:
        r.fail(f"it does not start with the identifier {FILE_IDENTIFIER.decode()}")
    root = r.u32(0)
    format_version = r.scalar(root, 0)
    if format_version != FORMAT_VERSION:
        r.fail(f"format version {format_version}, Onyx reads version {FORMAT_VERSION}")
    from onyx._core import OrtValue  # element types -> numpy dtypes, as the runtime maps them

    params: dict[str, np.ndarray] = {}
    first, count = r.vector(r.target(root, 3), 4)
    for i in range(count):
        table = first + 4 * i + r.u32(first + 4 * i)
        name_at, name_len = r.vector(r.target(table, 0), 1)
        name = bytes(buf[name_at : name_at + name_len]).decode("utf-8")
        dims_at, rank = r.vector(r.target(table, 1), 8)
        dims = [int(d) for d in np.frombuffer(buf, np.int64, rank, dims_at)] if rank else []
        data_type = r.scalar(table, 2)
        raw_at, nbytes = r.vector(r.target(table, 3), 1)
        try:
            dtype = OrtValue.ortvalue_from_shape_and_type([0], data_type).numpy().dtype
        except Exception as e:
            r.fail(f"parameter '{name}' has element type {data_type}, which Onyx cannot hold: {e}")
        if dtype.kind in "OUS":
            r.fail(f"parameter '{name}' holds strings, which adapter files cannot")
        want = int(np.prod(dims, dtype=np.int64)) * dtype.itemsize
        if want != nbytes:
            r.fail(f"parameter '{name}' of shape {dims} needs {want} bytes, the file has {nbytes}")
        params[name] = np.frombuffer(buf, dtype, want // dtype.itemsize, raw_at).reshape(dims)
    return format_version, r.scalar(root, 1), r.scalar(root, 2), params


def map_adapter_file(path) -> tuple[int, int, int, dict[str, np.ndarray]]:
    """Reads an adapter file through a memory map (parameters are views of it)."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                raise AdapterFileError(f"'{path}' is empty, not an onnxruntime adapter file")
            # Copy-on-write: a parameter updated in place (OrtValue.update_inplace) changes this process only.
            buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    except OSError as e:
        raise AdapterFileError(f"cannot read the adapter file '{path}': {e.strerror or e}") from e
    return read_adapter_buffer(memoryview(buf), path)


# ---------------------------------------------------------------- writing


def _align(out: bytearray, alignment: int, remainder: int = 0) -> None:
    """Pads so that len(out) % alignment == remainder."""
    out.extend(b"\0" * ((remainder - len(out)) % alignment))


def write_adapter(path, adapter_version: int, model_version: int, params: dict[str, np.ndarray]) -> None:
    """Writes the file front to back: every offset points forward, as FlatBuffers requires
    of uoffsets; both tables share one vtable (four 4-byte fields at 4, 8, 12, 16)."""
    for name, array in params.items():
        if np.ndim(array) == 0:
            # onnxruntime refuses parameters without dims when it loads a file (though it writes them).
            raise ValueError(
                f"adapter parameter '{name}' is a scalar, which onnxruntime cannot load: give it shape [1]"
            )
    out = bytearray(8)
    out[4:8] = FILE_IDENTIFIER
    vtable = len(out)
    out += struct.pack("<6H", 12, 20, 4, 8, 12, 16)

    def table(*fields) -> tuple[int, list[int]]:
        """A table of four int32 / offset fields; returns its position and the fields' positions."""
        _align(out, 4)
        pos = len(out)
        out.extend(struct.pack("<i", pos - vtable))
        slots = []
        for value in fields:
            slots.append(len(out))
            out.extend(struct.pack("<i", value))
        return pos, slots

    def point(slot: int, target: int) -> None:
        struct.pack_into("<I", out, slot, target - slot)

    root, root_slots = table(FORMAT_VERSION, int(adapter_version), int(model_version), 0)
    struct.pack_into("<I", out, 0, root)
    _align(out, 4)
    point(root_slots[3], len(out))
    out += struct.pack("<I", len(params))
    element_slots = []
    for _ in params:
        element_slots.append(len(out))
        out += b"\0\0\0\0"
    from onyx._core import OrtValue

    for (name, array), element_slot in zip(params.items(), element_slots):
        array = np.asarray(array, order="C")  # (ascontiguousarray would make a scalar 1-D)
        if array.dtype.kind in "OUS":
            raise TypeError(f"adapter parameter '{name}' holds strings, which adapter files cannot")
        data_type = OrtValue.ortvalue_from_numpy(array).element_type()
        pos, slots = table(0, 0, data_type, 0)
        point(element_slot, pos)
        _align(out, 4)
        point(slots[0], len(out))
        encoded = str(name).encode("utf-8")
        out += struct.pack("<I", len(encoded)) + encoded + b"\0"
        _align(out, 8, 4)  # int64 dims start 8-aligned
        point(slots[1], len(out))
        out += struct.pack(f"<I{array.ndim}q", array.ndim, *array.shape)
        _align(out, 16, 12)  # raw data starts 16-aligned, so a mapped file can be viewed in place
        point(slots[3], len(out))
        raw = array.tobytes()
        out += struct.pack("<I", len(raw)) + raw
    _align(out, 8)
    with open(os.fspath(path), "wb") as f:
        f.write(out)
