"""quantize_dynamic and quantize_static: onnxruntime's quantization entry points,
writing only standard ONNX ops (QuantizeLinear / DequantizeLinear, QLinearConv,
QLinearMatMul, MatMulInteger, ConvInteger, DynamicQuantizeLinear) so that any
ONNX runtime, Onyx and onnxruntime included, runs the result."""
import warnings

import numpy as np
from onnx import TensorProto, helper

from .calibrate import (CalibrationMethod, check_calibrate_method, collect_ranges, float_tensor_names,
                        static_calibrater)
from .quant_utils import (Graph, QuantFormat, QuantType, attr, check_extra_options, check_quant_type, load_model,
                          np_dtype, onnx_dtype, opset_of, qrange, quantize_array, require_opset, save_model,
                          scale_zero_point, select_nodes, topological_sort, weight_symmetric)

DYNAMIC_OP_TYPES = ("MatMul", "Gemm", "Conv", "Gather")
STATIC_OP_TYPES = ("Conv", "MatMul", "Gemm", "Add", "Mul", "Concat", "MaxPool", "GlobalMaxPool", "AveragePool",
                   "GlobalAveragePool")
# Ops whose output takes the input's quantization (they only select or move values),
# so the quantized op is exact and QOperator can run it on the integers.
_SAME_SCALE_OPS = ("MaxPool", "GlobalMaxPool")


class _Weights:
    """Quantizes constant weights (per tensor or per channel along `axis`)."""

    def __init__(self, g, qtype, reduce_range, symmetric, min_real_range=None):
        self.g, self.qtype, self.symmetric, self.reduce_range = g, qtype, symmetric, reduce_range
        self.min_real_range = min_real_range
        self.qmin, self.qmax = qrange(qtype, reduce_range, symmetric)

    def params(self, w, axis):
        if axis is None:
            lo, hi = w.min(), w.max()
        else:
            moved = np.moveaxis(w, axis, 0).reshape(w.shape[axis], -1)
            lo, hi = moved.min(axis=1), moved.max(axis=1)
        return scale_zero_point(lo, hi, self.qmin, self.qmax, self.symmetric, self.min_real_range)

    def quantize(self, w, axis, base, scalar_zero_point=False):
        """Adds the quantized weight, its scale and zero point; returns their names and the scale."""
        scale, zp = self.params(w, axis)
        q = quantize_array(w, scale, zp, self.qmin, self.qmax, np_dtype(self.qtype), axis)
        dtype = np_dtype(self.qtype)
        if scalar_zero_point:
            zp = zp.reshape(-1)[:1].reshape(())
        names = (self.g.add_initializer(q, base + "_quantized"), self.g.add_initializer(scale, base + "_scale"),
                 self.g.add_initializer(zp.astype(dtype), base + "_zero_point"))
        return names, scale


# ----------------------------------------------------------------------------------------------------------------------
# Dynamic quantization


def quantize_dynamic(model_input, model_output, op_types_to_quantize=None, per_channel=False, reduce_range=False,
                     weight_type=QuantType.QInt8, nodes_to_quantize=None, nodes_to_exclude=None,
                     use_external_data_format=False, extra_options=None):
    """Quantizes the constant weights of MatMul / Gemm / Conv to 8 bits; activations
    are quantized at run time by DynamicQuantizeLinear (uint8), the integer product
    (MatMulInteger / ConvInteger) is rescaled to float by a Mul."""
    weight_type = check_quant_type(weight_type, "weight_type")
    extra = check_extra_options(extra_options)
    model = load_model(model_input)
    if opset_of(model) < 11:
        require_opset(model, 11, "DynamicQuantizeLinear")
    g = Graph(model)
    weights = _Weights(g, weight_type, reduce_range, weight_symmetric(extra, weight_type),
                       extra.get("MinimumRealRange"))
    dq = _DynamicQuantizer(g, weights, per_channel)
    for node in select_nodes(g.graph.node, DYNAMIC_OP_TYPES, op_types_to_quantize, nodes_to_quantize,
                             nodes_to_exclude):
        dq.quantize(node)
    _finish(g)
    save_model(model, model_output, use_external_data_format)


class _DynamicQuantizer:
    def __init__(self, g, weights, per_channel):
        self.g, self.weights, self.per_channel = g, weights, per_channel
        self.dynamic = {}  # float tensor -> (quantized, scale, zero point) from DynamicQuantizeLinear
        self.removed = []

    def activation(self, name):
        if name not in self.dynamic:
            base = name.replace("/", "_").strip("_") or "x"
            outs = [self.g.fresh(base + s) for s in ("_quantized", "_scale", "_zero_point")]
            self.g.graph.node.append(helper.make_node("DynamicQuantizeLinear", [name], outs,
                                                      name=self.g.fresh(base + "_DynamicQuantizeLinear")))
            self.dynamic[name] = outs
        return self.dynamic[name]

    def quantize(self, node):
        if node.op_type == "MatMul":
            self.matmul(node, node.input[1], None, 1.0, None)
        elif node.op_type == "Gemm":
            if attr(node, "transA", 0):
                return
            c = node.input[2] if len(node.input) > 2 and node.input[2] else None
            beta = attr(node, "beta", 1.0)
            self.matmul(node, node.input[1], c, attr(node, "alpha", 1.0), beta, trans_b=attr(node, "transB", 0))
        elif node.op_type == "Conv":
            self.conv(node)
        elif node.op_type == "Gather":
            self.gather(node)

    def gather(self, node):
        """Embedding tables: stored 8-bit, the gathered rows dequantized (per tensor,
        so the scale holds whatever the index picks)."""
        table = self.g.const_array(node.input[0])
        if table is None or table.dtype != np.float32:
            return
        (q, s, z), _ = self.weights.quantize(table, None, node.input[0])
        base = node.name or node.output[0]
        rows = self.g.fresh(base + "_quantized_rows")
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self._replace(node, [
            helper.make_node("Gather", [q, node.input[1]], [rows], name=self.g.fresh(base + "_Gather"), **attrs),
            helper.make_node("DequantizeLinear", [rows, s, z], [node.output[0]], name=self.g.fresh(base + "_Dequantize"))])

    def matmul(self, node, b_name, c_name, alpha, beta, trans_b=0):
        w = self.g.const_array(b_name)
        if w is None or w.dtype != np.float32 or w.ndim < 2 or (node.op_type == "Gemm" and w.ndim != 2):
            return
        if trans_b:
            w = w.T
        axis = w.ndim - 1 if self.per_channel and w.ndim == 2 else None
        (wq, ws, wz), scale = self.weights.quantize(w, axis, b_name)
        xq, xs, xz = self.activation(node.input[0])
        base = node.name or node.output[0]
        acc = self.g.fresh(base + "_MatMulInteger_output")
        as_float = self.g.fresh(base + "_cast_output")
        product_scale = self.g.fresh(base + "_scale_product")
        new = [helper.make_node("MatMulInteger", [xq, wq, xz, wz], [acc], name=self.g.fresh(base + "_MatMulInteger")),
               helper.make_node("Cast", [acc], [as_float], to=TensorProto.FLOAT, name=self.g.fresh(base + "_Cast"))]
        if alpha != 1.0:
            ws = self.g.add_initializer((scale * np.float32(alpha)).astype(np.float32), b_name + "_scale_alpha")
        new.append(helper.make_node("Mul", [xs, ws], [product_scale], name=self.g.fresh(base + "_scale_Mul")))
        y = node.output[0]
        scaled = self.g.fresh(base + "_scaled") if c_name else y
        new.append(helper.make_node("Mul", [as_float, product_scale], [scaled], name=self.g.fresh(base + "_Mul")))
        if c_name:
            c = self.g.const_array(c_name)
            if beta != 1.0:
                c_name = (self.g.add_initializer((c * np.float32(beta)).astype(np.float32), c_name + "_beta")
                          if c is not None else self._mul_const(new, c_name, beta, base))
            new.append(helper.make_node("Add", [scaled, c_name], [y], name=self.g.fresh(base + "_bias_Add")))
        self._replace(node, new)

    def _mul_const(self, new, name, k, base):
        out = self.g.fresh(base + "_beta_C")
        factor = self.g.add_initializer(np.array(k, np.float32), base + "_beta")
        new.append(helper.make_node("Mul", [name, factor], [out], name=self.g.fresh(base + "_beta_Mul")))
        return out

    def conv(self, node):
        w = self.g.const_array(node.input[1])
        bias = node.input[2] if len(node.input) > 2 and node.input[2] else None
        if w is None or w.dtype != np.float32 or (bias and self.g.const_array(bias) is None):
            return
        weights = self.weights
        if self.per_channel and not weights.symmetric:
            # onnxruntime's ConvInteger takes one weight zero point only: symmetric
            # per-channel weights share it, while the scales still differ per channel.
            weights = _Weights(self.g, weights.qtype, weights.reduce_range, True, weights.min_real_range)
        (wq, ws, wz), scale = weights.quantize(w, 0 if self.per_channel else None, node.input[1],
                                               scalar_zero_point=self.per_channel)
        per_out_channel = [1, -1] + [1] * (w.ndim - 2)
        if self.per_channel:
            # Per-channel scales multiply the [N, M, ...] output along M.
            ws = self.g.add_initializer(scale.reshape(per_out_channel), node.input[1] + "_scale_nchw")
        xq, xs, xz = self.activation(node.input[0])
        base = node.name or node.output[0]
        acc, as_float, product_scale = (self.g.fresh(base + s) for s in ("_ConvInteger_output", "_cast_output",
                                                                       "_scale_product"))
        y = node.output[0]
        scaled = self.g.fresh(base + "_scaled") if bias else y
        conv_attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        new = [helper.make_node("ConvInteger", [xq, wq, xz, wz], [acc], name=self.g.fresh(base + "_ConvInteger"),
                                **conv_attrs),
               helper.make_node("Cast", [acc], [as_float], to=TensorProto.FLOAT, name=self.g.fresh(base + "_Cast")),
               helper.make_node("Mul", [xs, ws], [product_scale], name=self.g.fresh(base + "_scale_Mul")),
               helper.make_node("Mul", [as_float, product_scale], [scaled], name=self.g.fresh(base + "_Mul"))]
        if bias:
            b = self.g.const_array(bias).reshape(per_out_channel)
            new.append(helper.make_node("Add", [scaled, self.g.add_initializer(b, bias + "_nchw")], [y],
                                        name=self.g.fresh(base + "_bias_Add")))
        self._replace(node, new)

    def _replace(self, node, new):
        self.g.remove_node(node)
        self.g.graph.node.extend(new)


# ----------------------------------------------------------------------------------------------------------------------
# Static quantization


def quantize_static(model_input, model_output, calibration_data_reader=None, quant_format=QuantFormat.QDQ,
                    op_types_to_quantize=None, per_channel=False, reduce_range=False,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, nodes_to_quantize=None,
                    nodes_to_exclude=None, use_external_data_format=False, calibrate_method=CalibrationMethod.MinMax,
                    calibration_providers=None, extra_options=None, calibration_cache_path=None):
    """Calibrates activation ranges by running the float model with Onyx on the
    reader's feeds, then writes QuantizeLinear / DequantizeLinear pairs (QDQ) or
    QLinearConv / QLinearMatMul (QOperator, with Q/DQ around ops that have no
    standard integer form)."""
    activation_type = check_quant_type(activation_type, "activation_type")
    weight_type = check_quant_type(weight_type, "weight_type")
    if isinstance(quant_format, str):
        quant_format = QuantFormat.from_string(quant_format)
    if quant_format not in (QuantFormat.QDQ, QuantFormat.QOperator):
        raise ValueError(f"quant_format={quant_format!r} is not a QuantFormat")
    if calibration_cache_path is not None:
        check_extra_options({"calibration_cache_path": calibration_cache_path})
    extra = check_extra_options(extra_options)
    if extra.get("TensorQuantOverrides"):
        raise NotImplementedError("extra_options TensorQuantOverrides is not supported by onyx.quantization: "
                                  "per-tensor overrides of type, scale or range are not implemented")
    calibrate_method = check_calibrate_method(calibrate_method)
    model = load_model(model_input)
    if calibration_data_reader is None:
        raise ValueError("quantize_static needs a calibration_data_reader (a CalibrationDataReader)")
    require_opset(model, 13 if per_channel else 10, "per-channel QuantizeLinear" if per_channel else "QuantizeLinear")
    g = Graph(model)
    selected = select_nodes(g.graph.node, STATIC_OP_TYPES, op_types_to_quantize, nodes_to_quantize, nodes_to_exclude)
    act_symmetric = bool(extra.get("ActivationSymmetric", False))
    min_real_range = extra.get("MinimumRealRange")

    calibrater = static_calibrater(model, calibrate_method, extra)
    floats = float_tensor_names(calibrater.model)
    consumers = g.consumers()
    wanted = set()
    for node in selected:
        for name in list(node.input) + list(node.output):
            if name in floats and name not in g.inits:
                wanted.add(name)
        for user in consumers.get(node.output[0], []):
            if user.op_type in ("Relu", "Clip"):
                wanted.add(user.output[0])
    ranges = collect_ranges(calibrater, sorted(wanted), calibration_data_reader, extra, calibration_providers)

    # QDQKeepRemovableActivations keeps Relu / Clip for tools that later strip the Q/DQ pairs.
    if not act_symmetric and not extra.get("QDQKeepRemovableActivations", False):
        _fuse_relu(g, selected, ranges)
    weights = _Weights(g, weight_type, reduce_range, weight_symmetric(extra, weight_type), min_real_range)
    qdq = _QDQBuilder(g, ranges, activation_type, reduce_range, act_symmetric, weights, per_channel, min_real_range)
    for node in selected:
        qdq.quantize(node)
    if quant_format == QuantFormat.QOperator:
        _QOperatorLowering(g, qdq).run(selected)
    _finish(g)
    save_model(model, model_output, use_external_data_format)


def _fuse_relu(g, selected, ranges):
    """Conv/MatMul/Gemm/Add -> Relu (or Clip at 0..max) becomes the op alone with the
    activation's range: quantizing with rmin = 0 maps 0 to qmin, so the
    QuantizeLinear clamps exactly as Relu does (and at max as Clip does)."""
    consumers = g.consumers()
    outputs = g.graph_outputs()
    fusable = {id(n) for n in selected if n.op_type in ("Conv", "MatMul", "Gemm", "Add")}
    for node in selected:
        if id(node) not in fusable or node.output[0] in outputs:
            continue
        users = consumers.get(node.output[0], [])
        if len(users) != 1 or users[0].op_type not in ("Relu", "Clip") or users[0].output[0] not in ranges:
            continue
        act = users[0]
        lo, hi = ranges[act.output[0]]
        if act.op_type == "Clip":
            cmin, cmax = _clip_bounds(g, act)
            if cmin is None or cmin != 0.0:
                continue
            hi = min(hi, cmax)
        if lo < 0:
            continue
        node.output[0] = act.output[0]
        ranges[act.output[0]] = (0.0, hi)
        g.remove_node(act)


def _clip_bounds(g, node):
    if len(node.input) > 1 or not node.attribute:
        vals = []
        for i, default in ((1, -np.inf), (2, np.inf)):
            if len(node.input) > i and node.input[i]:
                c = g.const_array(node.input[i])
                if c is None:
                    return None, None
                vals.append(float(c))
            else:
                vals.append(default)
        return vals
    return attr(node, "min", -np.inf), attr(node, "max", np.inf)


class _QDQBuilder:
    """Inserts QuantizeLinear -> DequantizeLinear on each quantized activation (once
    per tensor, all its readers switched to the dequantized copy) and stores
    weights quantized behind a DequantizeLinear."""

    def __init__(self, g, ranges, act_type, reduce_range, act_symmetric, weights, per_channel, min_real_range=None):
        self.g, self.ranges, self.act_type = g, ranges, act_type
        self.act_symmetric, self.weights, self.per_channel = act_symmetric, weights, per_channel
        self.min_real_range = min_real_range
        # Activations keep 8 bits under reduce_range, as onnxruntime: it only narrows weights.
        self.qmin, self.qmax = qrange(act_type, False, act_symmetric)
        self.params = {}  # activation -> (scale name, zero point name, scale value)
        self.dequantized = {}  # tensor -> name of its DequantizeLinear output
        self.quantized = {}  # tensor -> name of its QuantizeLinear output
        self.source = {}  # DequantizeLinear output -> the tensor it stands for
        self.created = set()  # names of the Q/DQ nodes added
        self.weight_cache = {}
        self.outputs = g.graph_outputs()
        self.producers = g.producers()

    def _node(self, op, inputs, outputs, base, **attrs):
        name = self.g.fresh(base + "_" + op)
        self.g.graph.node.append(helper.make_node(op, inputs, outputs, name=name, **attrs))
        self.created.add(name)

    def _base(self, name):
        return name.replace("/", "_").strip("_") or "t"

    def activation_params(self, name):
        if name not in self.params:
            lo, hi = self.ranges[name]
            scale, zp = scale_zero_point(lo, hi, self.qmin, self.qmax, self.act_symmetric, self.min_real_range)
            base = self._base(name)
            self.params[name] = (self.g.add_initializer(scale, base + "_scale"),
                                 self.g.add_initializer(zp.astype(np_dtype(self.act_type)), base + "_zero_point"),
                                 float(scale))
        return self.params[name]

    def origin(self, name):
        """Readers are switched to the dequantized copy as soon as a tensor is
        quantized, so a node handled later sees that name: this maps it back."""
        return self.source.get(name, name)

    def can_quantize(self, name):
        name = self.origin(name)
        return bool(name) and (name in self.ranges or self.g.const_array(name) is not None)

    def activation(self, name):
        """Returns the dequantized name readers of `name` now use."""
        name = self.origin(name)
        if name in self.dequantized:
            return self.dequantized[name]
        if name in self.g.inits:
            return self.constant_activation(name)
        s, z, _ = self.activation_params(name)
        base = self._base(name)
        q_out = self.g.fresh(base + "_QuantizeLinear_Output")
        if name in self.outputs and name in self.producers:
            # The graph output keeps its name, now computed by the DequantizeLinear.
            pre = self.g.fresh(base + "_float")
            producer = self.producers[name]
            producer.output[list(producer.output).index(name)] = pre
            self._node("QuantizeLinear", [pre, s, z], [q_out], base)
            self._node("DequantizeLinear", [q_out, s, z], [name], base)
            self.dequantized[name], self.quantized[name] = name, q_out
            self.source[name] = name
            return name
        dq_out = self.g.fresh(base + "_DequantizeLinear_Output")
        self._node("QuantizeLinear", [name, s, z], [q_out], base)
        self._node("DequantizeLinear", [q_out, s, z], [dq_out], base)
        for node in self.g.graph.node:
            if node.name in self.created:
                continue
            for i, inp in enumerate(node.input):
                if inp == name:
                    node.input[i] = dq_out
        self.dequantized[name], self.quantized[name] = dq_out, q_out
        self.source[dq_out] = name
        return dq_out

    def constant_activation(self, name):
        """A constant read where an activation is expected (Add's bias, Mul's factor):
        quantized as the activation type, per tensor."""
        w = self.g.const_array(name)
        scale, zp = scale_zero_point(w.min(), w.max(), self.qmin, self.qmax, self.act_symmetric, self.min_real_range)
        dtype = np_dtype(self.act_type)
        q = self.g.add_initializer(quantize_array(w, scale, zp, self.qmin, self.qmax, dtype), name + "_quantized")
        s = self.g.add_initializer(scale, name + "_scale")
        z = self.g.add_initializer(zp.astype(dtype), name + "_zero_point")
        out = self.g.fresh(name + "_DequantizeLinear_Output")
        self._node("DequantizeLinear", [q, s, z], [out], self._base(name))
        self.params[name] = (s, z, float(scale))
        self.dequantized[name], self.quantized[name] = out, q
        self.source[out] = name
        return out

    def weight(self, name, axis):
        key = (name, axis)
        if key not in self.weight_cache:
            (q, s, z), scale = self.weights.quantize(self.g.const_array(name), axis, name)
            out = self.g.fresh(name + "_DequantizeLinear_Output")
            self._node("DequantizeLinear", [q, s, z], [out], self._base(name), **({} if axis is None else {"axis": axis}))
            self.weight_cache[key] = (out, scale, q, s, z)
        return self.weight_cache[key]

    def bias(self, name, x_scale, w_scale, beta=1.0):
        b = self.g.const_array(name).astype(np.float64) * beta
        scale = (np.float32(x_scale) * w_scale).astype(np.float32)
        if scale.size == 1:
            scale = scale.reshape(())
        safe = np.where(scale > 0, scale, 1.0)
        q = np.clip(np.rint(b / safe), -2**31, 2**31 - 1).astype(np.int32)
        qn = self.g.add_initializer(q, name + "_quantized")
        sn = self.g.add_initializer(scale, name + "_scale")
        zn = self.g.add_initializer(np.zeros(scale.shape, np.int32), name + "_zero_point")
        out = self.g.fresh(name + "_DequantizeLinear_Output")
        self._node("DequantizeLinear", [qn, sn, zn], [out], self._base(name), **({"axis": 0} if scale.ndim else {}))
        return out

    def quantize(self, node):
        op = node.op_type
        if op == "Conv":
            self.weighted(node, 0 if self.per_channel else None, bias_index=2)
        elif op == "Gemm":
            if attr(node, "transA", 0):
                return
            axis = (0 if attr(node, "transB", 0) else 1) if self.per_channel else None
            self.weighted(node, axis, bias_index=2, bias_beta=attr(node, "beta", 1.0),
                          bias_ok=attr(node, "alpha", 1.0) == 1.0)
        elif op == "MatMul":
            w = self.g.const_array(node.input[1])
            if w is not None:
                self.weighted(node, 1 if self.per_channel and w.ndim == 2 else None, bias_index=None)
            elif all(self.can_quantize(i) for i in node.input):
                self.generic(node)
        elif op in _SAME_SCALE_OPS:
            x = self.origin(node.input[0])
            if len(node.output) == 1 and x in self.ranges and node.output[0] not in self.params:
                self.ranges[node.output[0]] = self.ranges[x]
                self.params[node.output[0]] = self.activation_params(x)
                self.generic(node)
        else:
            self.generic(node)

    def generic(self, node):
        if not all(self.can_quantize(i) for i in node.input if i) or node.output[0] not in self.ranges:
            return
        for i, name in enumerate(list(node.input)):
            if name:
                node.input[i] = self.activation(name)
        self.activation(node.output[0])

    def weighted(self, node, axis, bias_index, bias_beta=1.0, bias_ok=True):
        w = self.g.const_array(node.input[1])
        x = self.origin(node.input[0])
        if w is None or w.dtype != np.float32 or x not in self.ranges or node.output[0] not in self.ranges:
            return
        node.input[0] = self.activation(x)
        out, w_scale, *_ = self.weight(node.input[1], axis)
        node.input[1] = out
        if bias_index is not None and len(node.input) > bias_index and node.input[bias_index]:
            b = node.input[bias_index]
            b_arr = self.g.const_array(b)
            if b_arr is not None and bias_ok and b_arr.ndim == 1 and (w_scale.size == 1 or b_arr.size == w_scale.size):
                node.input[bias_index] = self.bias(b, self.params[x][2], w_scale, bias_beta)
                if bias_beta != 1.0:
                    node.attribute.remove(next(a for a in node.attribute if a.name == "beta"))
        self.activation(node.output[0])


class _QOperatorLowering:
    """Turns DequantizeLinear -> Conv/MatMul -> QuantizeLinear into QLinearConv /
    QLinearMatMul, and runs MaxPool on the integers; everything else keeps its
    Q/DQ pairs (standard ONNX has no integer Add, Gemm, AveragePool...)."""

    def __init__(self, g, qdq):
        self.g, self.qdq = g, qdq

    def run(self, selected):
        producers = self.g.producers()
        consumers = self.g.consumers()
        int8_maxpool = opset_of(self.g.model) >= 12
        for node in selected:
            if node.op_type == "Conv":
                self.lower(node, "QLinearConv", producers, consumers, with_bias=True)
            elif node.op_type == "MatMul":
                self.lower(node, "QLinearMatMul", producers, consumers, with_bias=False)
            elif node.op_type in _SAME_SCALE_OPS and int8_maxpool:
                self.lower_same_scale(node, producers, consumers)

    def _dq_inputs(self, name, producers):
        p = producers.get(name)
        if p is None or p.op_type != "DequantizeLinear" or p.name not in self.qdq.created:
            return None
        return list(p.input) + [None] * (3 - len(p.input))

    def _output_q(self, node, consumers):
        users = consumers.get(node.output[0], [])
        if len(users) != 1 or users[0].op_type != "QuantizeLinear" or users[0].name not in self.qdq.created:
            return None
        return users[0]

    def lower(self, node, qop, producers, consumers, with_bias):
        ins = [self._dq_inputs(i, producers) for i in node.input[:2]]
        q = self._output_q(node, consumers)
        if None in ins or q is None:
            return
        inputs = ins[0] + ins[1] + list(q.input[1:3])
        if with_bias and len(node.input) > 2 and node.input[2]:
            b = self._dq_inputs(node.input[2], producers)
            if b is None:
                return
            inputs.append(b[0])
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        new = helper.make_node(qop, inputs, [q.output[0]], name=self.g.fresh((node.name or node.output[0]) + "_quant"),
                               **attrs)
        self.g.remove_node(node)
        self.g.remove_node(q)
        self.g.graph.node.append(new)

    def lower_same_scale(self, node, producers, consumers):
        x = self._dq_inputs(node.input[0], producers)
        q = self._output_q(node, consumers)
        if x is None or q is None or list(q.input[1:3]) != x[1:3]:
            return
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        new = helper.make_node(node.op_type, [x[0]], [q.output[0]], name=self.g.fresh(node.name or node.op_type), **attrs)
        self.g.remove_node(node)
        self.g.remove_node(q)
        self.g.graph.node.append(new)


def _finish(g):
    """Drops what no longer feeds anything and restores topological order."""
    g.purge()
    graph = g.graph
    outputs = g.graph_outputs()
    while True:
        used = {i for n in graph.node for i in n.input} | outputs
        for n in graph.node:
            for a in n.attribute:
                for sub in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                    used |= {i for sn in sub.node for i in sn.input}
        dead = [n for n in graph.node if n.op_type in ("QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear")
                and not any(o in used for o in n.output)]
        if not dead:
            break
        for n in dead:
            graph.node.remove(n)
    g.remove_unused_initializers()
    topological_sort(graph)


# ----------------------------------------------------------------------------------------------------------------------
# onnxruntime's config-object form: quantize(model_input, model_output, StaticQuantConfig(...) / DynamicQuantConfig(...))


class QuantConfig:
    def __init__(self, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, op_types_to_quantize=None,
                 nodes_to_quantize=None, nodes_to_exclude=None, per_channel=False, reduce_range=False,
                 use_external_data_format=False):
        self.activation_type, self.weight_type = activation_type, weight_type
        self.op_types_to_quantize, self.nodes_to_quantize = op_types_to_quantize, nodes_to_quantize
        self.nodes_to_exclude, self.per_channel, self.reduce_range = nodes_to_exclude, per_channel, reduce_range
        self.use_external_data_format = use_external_data_format


class StaticQuantConfig(QuantConfig):
    def __init__(self, calibration_data_reader, calibrate_method=CalibrationMethod.MinMax,
                 quant_format=QuantFormat.QDQ, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8,
                 op_types_to_quantize=None, nodes_to_quantize=None, nodes_to_exclude=None, per_channel=False,
                 reduce_range=False, use_external_data_format=False, calibration_providers=None, extra_options=None):
        super().__init__(activation_type, weight_type, op_types_to_quantize, nodes_to_quantize, nodes_to_exclude,
                         per_channel, reduce_range, use_external_data_format)
        self.calibration_data_reader, self.calibrate_method = calibration_data_reader, calibrate_method
        self.quant_format, self.calibration_providers = quant_format, calibration_providers
        self.extra_options = extra_options or {}


class DynamicQuantConfig(QuantConfig):
    def __init__(self, weight_type=QuantType.QInt8, op_types_to_quantize=None, nodes_to_quantize=None,
                 nodes_to_exclude=None, per_channel=False, reduce_range=False, use_external_data_format=False,
                 extra_options=None):
        super().__init__(QuantType.QUInt8, weight_type, op_types_to_quantize, nodes_to_quantize, nodes_to_exclude,
                         per_channel, reduce_range, use_external_data_format)
        self.extra_options = extra_options or {}


# get_qdq_config's calibrate_args keys and the extra_options they become.
_CALIBRATE_ARGS = {"symmetric": "CalibTensorRangeSymmetric", "moving_average": "CalibMovingAverage",
                   "averaging_constant": "CalibMovingAverageConstant",
                   "max_intermediate_outputs": "CalibMaxIntermediateOutputs", "percentile": "CalibPercentile"}
_MODEL_SIZE_THRESHOLD = 2**31  # protobuf's limit: larger models need external data


def get_qdq_config(model_input, calibration_data_reader, calibrate_method=CalibrationMethod.MinMax,
                   calibrate_args=None, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                   activation_symmetric=False, weight_symmetric=None, per_channel=False, reduce_range=False,
                   keep_removable_activations=False, min_real_range=None, tensor_quant_overrides=None,
                   calibration_providers=None, op_types_to_quantize=None, nodes_to_exclude=None, extra_options=None):
    """A StaticQuantConfig (QDQ format) that quantizes every op of the model Onyx can
    quantize, as onnxruntime's get_qdq_config: the keyword arguments become
    quantize_static's extra_options. `nodes_to_exclude` may be a list of names or a
    function (model, node) -> bool. Settings Onyx cannot honour raise here, before
    any calibration runs: 16/4-bit and float8 types, calibration methods other than
    MinMax / Percentile, and tensor_quant_overrides."""
    import onnx

    check_quant_type(activation_type, "activation_type")
    check_quant_type(weight_type, "weight_type")
    check_calibrate_method(calibrate_method)
    if tensor_quant_overrides:
        raise NotImplementedError("get_qdq_config(tensor_quant_overrides=...) is not supported by onyx.quantization: "
                                  "per-tensor overrides of type, scale or range are not implemented")
    model = (model_input if isinstance(model_input, onnx.ModelProto)
             else onnx.load_model(model_input, load_external_data=False))
    op_types, excluded = _op_types_and_exclusions(model, op_types_to_quantize, nodes_to_exclude)
    options = {"MinimumRealRange": min_real_range, "QDQKeepRemovableActivations": keep_removable_activations,
               "ActivationSymmetric": activation_symmetric, "WeightSymmetric": weight_symmetric,
               "ForceQuantizeNoInputCheck": True, "TensorQuantOverrides": {}}
    options.update(_calibration_options(calibrate_args))
    options.update(extra_options or {})
    external = any(onnx.external_data_helper.uses_external_data(t) for t in model.graph.initializer)
    return StaticQuantConfig(calibration_data_reader, calibrate_method=calibrate_method, quant_format=QuantFormat.QDQ,
                             activation_type=activation_type, weight_type=weight_type,
                             op_types_to_quantize=op_types_to_quantize or sorted(op_types),
                             nodes_to_exclude=sorted(excluded), per_channel=per_channel, reduce_range=reduce_range,
                             use_external_data_format=external or model.ByteSize() >= _MODEL_SIZE_THRESHOLD,
                             calibration_providers=calibration_providers, extra_options=options)


def _op_types_and_exclusions(model, op_types_to_quantize, nodes_to_exclude):
    """The op types of the nodes to quantize (those of op_types_to_quantize, if given,
    never the Q/DQ/Cast plumbing) and the names of the nodes to exclude, calling
    nodes_to_exclude on each candidate node when it is a function."""
    allowed = set(op_types_to_quantize) if op_types_to_quantize else None
    excluded = set() if callable(nodes_to_exclude) else set(nodes_to_exclude or [])
    op_types = set()
    for node in model.graph.node:
        if (allowed and node.op_type not in allowed) or node.name in excluded:
            continue
        if callable(nodes_to_exclude) and nodes_to_exclude(model, node):
            excluded.add(node.name)
        else:
            op_types.add(node.op_type)
    return op_types - {"Cast", "DequantizeLinear", "QuantizeLinear"}, excluded


def _calibration_options(calibrate_args):
    calibrate_args = dict(calibrate_args or {})
    unknown = sorted(set(calibrate_args) - set(_CALIBRATE_ARGS))
    if unknown:
        warnings.warn(f"get_qdq_config ignores these calibrate_args (as onnxruntime does): {', '.join(unknown)}",
                      stacklevel=3)
    return {_CALIBRATE_ARGS[k]: v for k, v in calibrate_args.items() if k in _CALIBRATE_ARGS}


def quantize(model_input, model_output, quant_config):
    if not isinstance(quant_config, (StaticQuantConfig, DynamicQuantConfig)):
        raise ValueError(f"quant_config must be a StaticQuantConfig or DynamicQuantConfig, "
                         f"got {type(quant_config).__name__}")
    common = dict(op_types_to_quantize=quant_config.op_types_to_quantize, per_channel=quant_config.per_channel,
                  reduce_range=quant_config.reduce_range, weight_type=quant_config.weight_type,
                  nodes_to_quantize=quant_config.nodes_to_quantize, nodes_to_exclude=quant_config.nodes_to_exclude,
                  use_external_data_format=quant_config.use_external_data_format,
                  extra_options=quant_config.extra_options)
    if isinstance(quant_config, StaticQuantConfig):
        quantize_static(model_input, model_output, quant_config.calibration_data_reader,
                        quant_format=quant_config.quant_format, activation_type=quant_config.activation_type,
                        calibrate_method=quant_config.calibrate_method,
                        calibration_providers=quant_config.calibration_providers, **common)
    else:
        quantize_dynamic(model_input, model_output, **common)
