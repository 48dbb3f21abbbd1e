"""Types, scale / zero-point arithmetic and graph helpers shared by the quantizers."""
import os
import warnings
from enum import Enum

import numpy as np


class _NamedEnum(Enum):
    """An enum printed by name and parsed from its name, as onnxruntime's are."""

    def __str__(self):
        return self.name

    @classmethod
    def from_string(cls, name):
        try:
            return cls[name]
        except KeyError:
            raise ValueError(f"unknown {cls.__name__} {name!r}") from None


class QuantType(_NamedEnum):
    QInt8 = 0
    QUInt8 = 1
    QFLOAT8E4M3FN = 2
    QInt16 = 3
    QUInt16 = 4
    QInt4 = 5
    QUInt4 = 6


class QuantFormat(_NamedEnum):
    QOperator = 0
    QDQ = 1


# (numpy dtype, TensorProto elem type) of the 8-bit types Onyx's quantizer writes.
_SUPPORTED = {QuantType.QInt8: (np.int8, 3), QuantType.QUInt8: (np.uint8, 2)}

# Keys onnxruntime documents for extra_options that this quantizer honours.
# CalibMaxIntermediateOutputs bounds onnxruntime's memory during calibration; Onyx
# reduces each batch at once, so it is accepted with nothing to do. TensorQuantOverrides
# is accepted empty only (get_qdq_config passes {}); quantize_static refuses others.
KNOWN_EXTRA_OPTIONS = {
    "ActivationSymmetric", "WeightSymmetric", "MatMulConstBOnly", "CalibTensorRangeSymmetric",
    "CalibPercentile", "CalibMovingAverage", "CalibMovingAverageConstant", "CalibMaxIntermediateOutputs",
    "ForceQuantizeNoInputCheck", "MinimumRealRange", "QDQKeepRemovableActivations", "TensorQuantOverrides",
}


def check_quant_type(qtype, what):
    if isinstance(qtype, str):
        qtype = QuantType.from_string(qtype)
    if qtype not in _SUPPORTED:
        raise ValueError(f"{what}={qtype} is not supported by onyx.quantization: use QuantType.QInt8 or QuantType.QUInt8")
    return qtype


def np_dtype(qtype):
    return _SUPPORTED[qtype][0]


def onnx_dtype(qtype):
    return _SUPPORTED[qtype][1]


def check_extra_options(extra_options):
    extra = dict(extra_options or {})
    unknown = sorted(k for k in extra if k not in KNOWN_EXTRA_OPTIONS)
    if unknown:
        warnings.warn(f"onyx.quantization ignores these extra_options: {', '.join(unknown)}", stacklevel=3)
    return extra


def weight_symmetric(extra, weight_type):
    """extra_options' WeightSymmetric; unset or None (get_qdq_config's default) means
    symmetric for signed weights, as onnxruntime."""
    value = extra.get("WeightSymmetric")
    return weight_type == QuantType.QInt8 if value is None else bool(value)


def qrange(qtype, reduce_range=False, symmetric=False):
    """The integer range [qmin, qmax] values are quantized into.

    reduce_range keeps 7 bits (avoids int16 overflow in u8s8 dot-product
    instructions); symmetric drops the most negative int8 so +-absmax map to +-qmax."""
    if qtype == QuantType.QUInt8:
        return (0, 127) if reduce_range else (0, 255)
    if reduce_range:
        return (-63, 63) if symmetric else (-64, 63)
    return (-127, 127) if symmetric else (-128, 127)


def scale_zero_point(rmin, rmax, qmin, qmax, symmetric, min_real_range=None):
    """Affine parameters mapping [rmin, rmax] (widened to contain 0, so 0 is
    exact, and to at least min_real_range) onto [qmin, qmax]. Works on scalars or
    per-channel arrays."""
    rmin = np.minimum(np.asarray(rmin, np.float64), 0.0)
    rmax = np.maximum(np.asarray(rmax, np.float64), 0.0)
    if min_real_range is not None:
        rmax = np.maximum(rmax, rmin + float(min_real_range))
    if symmetric:
        absmax = np.maximum(-rmin, rmax)
        scale = 2.0 * absmax / (qmax - qmin)
        zero_point = np.full(scale.shape, (qmin + qmax + 1) // 2 if qmin == 0 else 0, np.int64)
    else:
        scale = (rmax - rmin) / (qmax - qmin)
        safe = np.where(scale > 0, scale, 1.0)
        zero_point = np.clip(np.round(qmin - rmin / safe), qmin, qmax).astype(np.int64)
    # An all-zero range: any scale represents it; 1 keeps the arithmetic finite.
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    return scale, zero_point


def quantize_array(x, scale, zero_point, qmin, qmax, dtype, axis=None):
    x = np.asarray(x, np.float32)
    if axis is not None:
        shape = [1] * x.ndim
        shape[axis] = -1
        scale = np.reshape(scale, shape)
        zero_point = np.reshape(zero_point, shape)
    q = np.rint(x / scale) + zero_point  # rint: round half to even, as QuantizeLinear
    return np.clip(q, qmin, qmax).astype(dtype)


def load_model(model_input, arg="model_input"):
    """A copy of `model_input` (an onnx.ModelProto or a path); `arg` names it in errors."""
    import onnx

    if isinstance(model_input, onnx.ModelProto):
        m = onnx.ModelProto()
        m.CopyFrom(model_input)
        return m
    if isinstance(model_input, (str, os.PathLike)):
        path = os.fspath(model_input)
        if not os.path.isfile(path):
            raise ValueError(f"{arg}: no such model file: {path}")
        return onnx.load(path)
    raise ValueError(f"{arg} must be a path or an onnx.ModelProto, got {type(model_input).__name__}")


def save_model(model, model_output, use_external_data_format=False):
    import onnx

    if not isinstance(model_output, (str, os.PathLike)):
        raise ValueError(f"model_output must be a path, got {type(model_output).__name__}")
    path = os.fspath(model_output)
    if use_external_data_format or model.ByteSize() > 2_000_000_000:
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location=os.path.basename(path) + ".data")
    else:
        onnx.save_model(model, path)


def opset_of(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 1


def require_opset(model, version, why):
    """Raises the default-domain opset to `version`. Only from 10..12 to 13, which
    changes no op the quantizers touch beyond adding per-axis Q/DQ; lower opsets
    would need op conversions, so they are refused."""
    current = opset_of(model)
    if current >= version:
        return
    if current < 10:
        raise ValueError(f"model opset {current} is too old to quantize ({why} needs opset {version}); "
                         "convert it with onnx.version_converter first")
    import onnx.version_converter

    converted = onnx.version_converter.convert_version(model, version)
    model.CopyFrom(converted)
    warnings.warn(f"model opset raised from {current} to {version}: {why}", stacklevel=3)


_REMOVED = "__onyx_removed__"


class Graph:
    """A light view over a GraphProto: initializers by name, producers, consumers,
    and fresh names; edits go straight into the proto."""

    def __init__(self, model):
        self.model = model
        self.graph = model.graph
        self._names = set()
        for n in self.graph.node:
            self._names.update(n.input)
            self._names.update(n.output)
            self._names.add(n.name)
        for v in list(self.graph.input) + list(self.graph.output) + list(self.graph.initializer):
            self._names.add(v.name)
        self.fold_constants()
        self.inits = {t.name: t for t in self.graph.initializer}

    def fold_constants(self):
        """Constant nodes and Identity-of-initializer become initializers, so
        weights and biases are found behind them (PyTorch exports share biases so)."""
        from onnx import numpy_helper

        inits = {t.name: t for t in self.graph.initializer}
        outputs = {o.name for o in self.graph.output}
        keep = []
        for n in self.graph.node:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx") and len(n.attribute) == 1 \
                    and n.attribute[0].name == "value" and n.output[0] not in outputs:
                t = numpy_helper.from_array(numpy_helper.to_array(n.attribute[0].t), n.output[0])
            elif n.op_type == "Identity" and n.input[0] in inits and n.output[0] not in outputs:
                t = numpy_helper.from_array(numpy_helper.to_array(inits[n.input[0]]), n.output[0])
            else:
                keep.append(n)
                continue
            self.graph.initializer.append(t)
            inits[t.name] = t
        if len(keep) != len(self.graph.node):
            del self.graph.node[:]
            self.graph.node.extend(keep)
            self.remove_unused_initializers()

    def remove_unused_initializers(self):
        used = {i for n in self.graph.node for i in n.input} | {o.name for o in self.graph.output}
        for n in self.graph.node:
            for a in n.attribute:
                for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    used |= {i for sn in g.node for i in sn.input}
        keep = [t for t in self.graph.initializer if t.name in used]
        del self.graph.initializer[:]
        self.graph.initializer.extend(keep)
        self.inits = {t.name: t for t in self.graph.initializer}

    def remove_node(self, node):
        """Marks `node` for removal. Removing from the repeated field at once would
        leave other Python references to its nodes stale, so purge() does it later."""
        del node.input[:]
        del node.output[:]
        node.op_type = _REMOVED

    def purge(self):
        keep = [n for n in self.graph.node if n.op_type != _REMOVED]
        del self.graph.node[:]
        self.graph.node.extend(keep)

    def fresh(self, base):
        name, k = base, 1
        while name in self._names:
            name, k = f"{base}_{k}", k + 1
        self._names.add(name)
        return name

    def const_array(self, name):
        from onnx import numpy_helper

        t = self.inits.get(name)
        return None if t is None else numpy_helper.to_array(t)

    def add_initializer(self, arr, base):
        from onnx import numpy_helper

        name = self.fresh(base)
        t = numpy_helper.from_array(np.asarray(arr), name)
        self.graph.initializer.append(t)
        self.inits[name] = t
        return name

    def producers(self):
        return {o: n for n in self.graph.node for o in n.output}

    def consumers(self):
        out = {}
        for n in self.graph.node:
            for i in n.input:
                out.setdefault(i, []).append(n)
        return out

    def graph_outputs(self):
        return {o.name for o in self.graph.output}


def attr(node, name, default=None):
    from onnx import helper

    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)
    return default


def select_nodes(nodes, op_types, op_types_to_quantize, nodes_to_quantize, nodes_to_exclude):
    allowed = set(op_types_to_quantize) if op_types_to_quantize else set(op_types)
    only = set(nodes_to_quantize or [])
    excluded = set(nodes_to_exclude or [])
    return [n for n in nodes
            if n.domain in ("", "ai.onnx") and n.op_type in allowed and n.op_type in op_types
            and (not only or n.name in only) and n.name not in excluded]


def topological_sort(graph):
    """Reorders graph.node so every node follows the producers of its inputs."""
    available = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    nodes = list(graph.node)
    producer = {o: idx for idx, n in enumerate(nodes) for o in n.output}
    order, state = [], [0] * len(nodes)

    def outer_inputs(n):
        ins = list(n.input)
        for a in n.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                ins += [i for sn in g.node for i in sn.input]
        return ins

    for start in range(len(nodes)):
        if state[start]:
            continue
        stack = [(start, iter(outer_inputs(nodes[start])))]
        state[start] = 1
        while stack:
            idx, it = stack[-1]
            for name in it:
                p = producer.get(name)
                if name in available or p is None or state[p] == 2:
                    continue
                if state[p] == 1:
                    raise ValueError(f"graph has a cycle through tensor {name!r}")
                state[p] = 1
                stack.append((p, iter(outer_inputs(nodes[p]))))
                break
            else:
                stack.pop()
                state[idx] = 2
                order.append(nodes[idx])
    del graph.node[:]
    graph.node.extend(order)


# ----------------------------------------------------------------------------------------------------------------------
# Calibration tables for TensorRT-style consumers, in onnxruntime's three files


def _table_value(data):
    """The one number a calibration table keeps per tensor: the larger of its range's ends."""
    if isinstance(data, tuple):
        lowest, highest = data[0], data[1]
    else:
        fields = data.to_dict()
        lowest, highest = fields.get("lowest", 0.0), fields.get("highest", 0.0)
    return str(max(float(np.max(highest)), float(np.max(lowest))))


def _write_trt_flatbuffer(path, pairs):
    """onnxruntime's calibration.flatbuffers: table TrtTable { dict: [KeyValue] },
    table KeyValue { key: string; value: string }, built with the flatbuffers package."""
    import flatbuffers

    builder = flatbuffers.Builder(1024)
    entries = []
    for key, value in pairs:
        key_offset, value_offset = builder.CreateString(key), builder.CreateString(value)
        builder.StartObject(2)
        builder.PrependUOffsetTRelativeSlot(0, key_offset, 0)
        builder.PrependUOffsetTRelativeSlot(1, value_offset, 0)
        entries.append(builder.EndObject())
    builder.StartVector(4, len(entries), 4)
    for entry in reversed(entries):  # a vector is built back to front
        builder.PrependUOffsetTRelative(entry)
    try:
        vector = builder.EndVector()
    except TypeError:  # flatbuffers < 2 wants the length
        vector = builder.EndVector(len(entries))
    builder.StartObject(1)
    builder.PrependUOffsetTRelativeSlot(0, vector, 0)
    builder.Finish(builder.EndObject())
    with open(path, "wb") as f:
        f.write(builder.Output())


def write_calibration_table(calibration_cache, dir="."):  # noqa: A002 - onnxruntime's argument name
    """Writes `calibration_cache` (tensor name -> TensorData or (lowest, highest), e.g.
    a calibrater's compute_data()) into `dir` as onnxruntime does: calibration.json
    (every statistic), calibration.cache (lines "name value", value the larger end of
    the range) and calibration.flatbuffers (the same pairs; skipped with a warning
    when the flatbuffers package is not installed)."""
    import json

    from .calibrate import CalibrationJSONEncoder

    with open(os.path.join(dir, "calibration.json"), "w") as f:
        f.write(json.dumps(calibration_cache, cls=CalibrationJSONEncoder))
    pairs = [(name, _table_value(calibration_cache[name])) for name in sorted(calibration_cache.keys())]
    try:
        _write_trt_flatbuffer(os.path.join(dir, "calibration.flatbuffers"), pairs)
    except ImportError:
        warnings.warn("write_calibration_table: the flatbuffers package is not installed, "
                      "calibration.flatbuffers is not written", stacklevel=2)
    with open(os.path.join(dir, "calibration.cache"), "w") as f:
        f.writelines(f"{name} {value}\n" for name, value in pairs)
