"""Reads a model's metadata (producer, domain, doc strings, metadata_props)
straight from the protobuf wire format, without loading the graph: large
fields such as initializers are skipped with seeks, so this is cheap even for
big models. (The C++ session exposes only the model name so far.)"""

from __future__ import annotations

import io
import os

INT64_MAX = 2**63 - 1

# ModelProto field numbers
_PRODUCER_NAME, _PRODUCER_VERSION, _DOMAIN, _MODEL_VERSION, _DOC_STRING, _GRAPH = 2, 3, 4, 5, 6, 7
_METADATA_PROPS = 14
# GraphProto field numbers
_GRAPH_NAME, _GRAPH_DOC_STRING = 2, 10


class _Reader:
    def __init__(self, f, end):
        self.f = f
        self.end = end

    def pos(self):
        return self.f.tell()

    def varint(self):
        shift = 0
        result = 0
        while True:
            b = self.f.read(1)
            if not b:
                raise ValueError("truncated protobuf")
            byte = b[0]
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return result
            shift += 7

    def fields(self):
        """Yields (field_number, wire_type) and leaves the stream at the payload."""
        while self.pos() < self.end:
            key = self.varint()
            yield key >> 3, key & 7

    def skip(self, wire):
        if wire == 0:
            self.varint()
        elif wire == 1:
            self.f.seek(8, io.SEEK_CUR)
        elif wire == 2:
            n = self.varint()
            self.f.seek(n, io.SEEK_CUR)
        elif wire == 5:
            self.f.seek(4, io.SEEK_CUR)
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")

    def string(self):
        n = self.varint()
        return self.f.read(n).decode("utf-8", errors="replace")


def _read_entry(r: _Reader):
    n = r.varint()
    end = r.pos() + n
    sub = _Reader(r.f, end)
    key = value = ""
    for field, wire in sub.fields():
        if field == 1 and wire == 2:
            key = sub.string()
        elif field == 2 and wire == 2:
            value = sub.string()
        else:
            sub.skip(wire)
    r.f.seek(end)
    return key, value


def read_model_metadata(source) -> dict:
    """`source`: a path or the model's bytes. Returns a dict of the fields
    onnxruntime's ModelMetadata has."""
    meta = {
        "producer_name": "",
        "producer_version": "",
        "domain": "",
        "version": INT64_MAX,
        "description": "",
        "graph_name": "",
        "graph_description": "",
        "custom_metadata_map": {},
    }
    if isinstance(source, (bytes, bytearray, memoryview)):
        f = io.BytesIO(source)
        size = len(source)
    else:
        f = open(os.fspath(source), "rb")
        size = os.fstat(f.fileno()).st_size
    try:
        r = _Reader(f, size)
        for field, wire in r.fields():
            if wire == 2 and field == _PRODUCER_NAME:
                meta["producer_name"] = r.string()
            elif wire == 2 and field == _PRODUCER_VERSION:
                meta["producer_version"] = r.string()
            elif wire == 2 and field == _DOMAIN:
                meta["domain"] = r.string()
            elif wire == 0 and field == _MODEL_VERSION:
                v = r.varint()
                meta["version"] = v - (1 << 64) if v >= 1 << 63 else v
            elif wire == 2 and field == _DOC_STRING:
                meta["description"] = r.string()
            elif wire == 2 and field == _METADATA_PROPS:
                k, v = _read_entry(r)
                meta["custom_metadata_map"][k] = v
            elif wire == 2 and field == _GRAPH:
                n = r.varint()
                end = r.pos() + n
                g = _Reader(f, end)
                for gfield, gwire in g.fields():
                    if gwire == 2 and gfield == _GRAPH_NAME:
                        meta["graph_name"] = g.string()
                    elif gwire == 2 and gfield == _GRAPH_DOC_STRING:
                        meta["graph_description"] = g.string()
                    else:
                        g.skip(gwire)
                f.seek(end)
            else:
                r.skip(wire)
    except (ValueError, IndexError):
        pass  # a damaged tail: keep what was read (the session loaded, so this is rare)
    finally:
        f.close()
    return meta
