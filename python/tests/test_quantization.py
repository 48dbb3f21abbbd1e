"""onyx.quantization on small models built here: the quantized models must run in
Onyx and in onnxruntime with the same numbers, stay close to the float model,
and hold the expected integer ops."""
import numpy as np
import onnx
import onnxruntime
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.quantization import (CalibrationDataReader, CalibrationMethod, QuantFormat, QuantType, quantize_dynamic,
                               quantize_static)

RNG_SEED = 0


def _model(nodes, inputs, outputs, inits, opset=17):
    graph = helper.make_graph(nodes, "g", inputs, outputs, [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp_model():
    """y = Relu(x @ W1 + b1) @ W2 + b2 as MatMul+Add, then a Gemm head."""
    rng = np.random.default_rng(RNG_SEED)
    inits = {"w1": rng.standard_normal((24, 40)).astype(np.float32) * 0.3,
             "b1": rng.standard_normal(40).astype(np.float32) * 0.1,
             "w2": rng.standard_normal((40, 20)).astype(np.float32) * 0.2,
             "b2": rng.standard_normal(20).astype(np.float32) * 0.1,
             "w3": rng.standard_normal((10, 20)).astype(np.float32) * 0.3,
             "b3": rng.standard_normal(10).astype(np.float32) * 0.1}
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="mm1"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="add1"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
             helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="mm2"),
             helper.make_node("Add", ["h3", "b2"], ["h4"], name="add2"),
             helper.make_node("Gemm", ["h4", "w3", "b3"], ["y"], name="gemm", transB=1)]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 24])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], inits)


def conv_model():
    """Conv-Relu, a residual block (Conv-Relu-Conv + Add), MaxPool, AveragePool,
    GlobalAveragePool, Flatten, Gemm."""
    rng = np.random.default_rng(RNG_SEED + 1)

    def w(*shape, k=0.3):
        return (rng.standard_normal(shape) * k).astype(np.float32)

    inits = {"w0": w(8, 3, 3, 3), "b0": w(8, k=0.1), "w1": w(8, 8, 3, 3, k=0.15), "b1": w(8, k=0.1),
             "w2": w(8, 8, 1, 1), "b2": w(8, k=0.1), "wf": w(5, 8), "bf": w(5, k=0.1)}
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("MaxPool", ["r0"], ["p0"], name="maxpool", kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p0", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
             helper.make_node("Add", ["c2", "p0"], ["s"], name="residual"),
             helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
             helper.make_node("AveragePool", ["r2"], ["a"], name="avgpool", kernel_shape=[2, 2]),
             helper.make_node("GlobalAveragePool", ["a"], ["g"], name="gap"),
             helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
             helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], name="fc", transB=1)]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 12, 12])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)


class Reader(CalibrationDataReader):
    """`count` random feeds, plus `also` (the test feed: calibration data should
    cover what the model will see, else clipping dominates the error)."""

    def __init__(self, name, shape, count=8, seed=7, also=None):
        rng = np.random.default_rng(seed)
        feeds = [{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(count)]
        self.feeds = iter(feeds + ([also] if also and count else []))

    def get_next(self):
        return next(self.feeds, None)


def run_onyx(path, feed):
    return onyx.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feed)[0]


def cpu_lacks_vnni():
    """x86 with AVX2 but neither AVX-512 VNNI nor AVX-VNNI: there onnxruntime's
    u8 x s8 kernels saturate pairs of products at 16 bits."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "").split()
    except OSError:
        return False
    return "avx2" in flags and "avx512_vnni" not in flags and "avx_vnni" not in flags


INTEGER_PRODUCTS = {"MatMulInteger", "QLinearMatMul", "QLinearConv", "ConvInteger"}


def run_ort(path, feed):
    """onnxruntime's output. Where its int8 products saturate (cpu_lacks_vnni)
    and the model has them, the exact one of ONNX's reference evaluator
    instead, or a skip that says why where that cannot run the model."""
    if cpu_lacks_vnni() and op_types(path) & INTEGER_PRODUCTS:
        from onnx.reference import ReferenceEvaluator
        try:
            return ReferenceEvaluator(str(path)).run(None, feed)[0]
        except Exception as e:  # ops or opsets the evaluator lacks
            pytest.skip("onnxruntime's int8 products saturate on this CPU (no VNNI) and ONNX's reference "
                        f"evaluator cannot run the model ({type(e).__name__}): no exact reference here")
    so = onnxruntime.SessionOptions()
    so.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
    return onnxruntime.InferenceSession(str(path), so, providers=["CPUExecutionProvider"]).run(None, feed)[0]


def op_types(path):
    return {n.op_type for n in onnx.load(str(path)).graph.node}


def output_scale(path, output="y"):
    """Scale of the DequantizeLinear that computes the graph output, if any."""
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == output:
            return float(inits[n.input[1]])
    return None


def check_agreement(float_path, quant_path, feed, rel_tol):
    """Onyx and onnxruntime agree on the quantized model (within one output step:
    they may round a requantization differently), and it tracks the float model."""
    got, ref = run_onyx(quant_path, feed), run_ort(quant_path, feed)
    step = output_scale(quant_path)
    span = float(np.abs(ref).max())
    np.testing.assert_allclose(got, ref, rtol=0, atol=(step * 1.01) if step else 1e-3 * span + 1e-5)
    expected = run_ort(float_path, feed)
    err = float(np.abs(got - expected).max()) / float(np.abs(expected).max())
    assert err < rel_tol, f"quantized output is {err:.3%} off the float model"


@pytest.fixture
def mlp(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return path


@pytest.fixture
def convnet(tmp_path):
    path = tmp_path / "conv.onnx"
    onnx.save(conv_model(), str(path))
    return path


MLP_FEED = {"x": np.random.default_rng(3).standard_normal((5, 24)).astype(np.float32)}
CONV_FEED = {"x": np.random.default_rng(3).standard_normal((2, 3, 12, 12)).astype(np.float32)}


@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("reduce_range", [False, True])
def test_dynamic_mlp(mlp, tmp_path, per_channel, reduce_range):
    out = tmp_path / "q.onnx"
    quantize_dynamic(mlp, out, per_channel=per_channel, reduce_range=reduce_range)
    ops = op_types(out)
    assert {"DynamicQuantizeLinear", "MatMulInteger", "Cast", "Mul"} <= ops
    assert "MatMul" not in ops and "Gemm" not in ops
    weights = [t for t in onnx.load(str(out)).graph.initializer if t.data_type == TensorProto.INT8]
    assert len(weights) >= 3
    check_agreement(mlp, out, MLP_FEED, rel_tol=0.05 if reduce_range else 0.03)


def test_dynamic_conv_and_model_proto(convnet, tmp_path):
    out = tmp_path / "q.onnx"
    quantize_dynamic(onnx.load(str(convnet)), out, weight_type=QuantType.QUInt8, per_channel=True)
    assert {"ConvInteger", "MatMulInteger"} <= op_types(out)
    assert "Conv" not in op_types(out)
    check_agreement(convnet, out, CONV_FEED, rel_tol=0.05)


def test_dynamic_gather_embedding(tmp_path):
    rng = np.random.default_rng(5)
    table = rng.standard_normal((50, 16)).astype(np.float32)
    w = (rng.standard_normal((16, 8)) * 0.3).astype(np.float32)
    model = _model([helper.make_node("Gather", ["table", "ids"], ["e"], name="embed"),
                    helper.make_node("MatMul", ["e", "w"], ["y"], name="mm")],
                   [helper.make_tensor_value_info("ids", TensorProto.INT64, ["B", "S"])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", "S", 8])], {"table": table, "w": w})
    src, out = tmp_path / "emb.onnx", tmp_path / "q.onnx"
    onnx.save(model, str(src))
    quantize_dynamic(src, out)
    quantized = onnx.load(str(out))
    assert {t.name: t.data_type for t in quantized.graph.initializer}.get("table") is None  # float table gone
    assert {"Gather", "DequantizeLinear", "MatMulInteger"} <= op_types(out)
    check_agreement(src, out, {"ids": rng.integers(0, 50, (2, 7))}, rel_tol=0.05)


def test_dynamic_respects_node_selection(mlp, tmp_path):
    out = tmp_path / "q.onnx"
    quantize_dynamic(mlp, out, nodes_to_exclude=["mm2"], op_types_to_quantize=["MatMul"])
    nodes = onnx.load(str(out)).graph.node
    assert [n.op_type for n in nodes].count("MatMulInteger") == 1
    assert any(n.name == "mm2" and n.op_type == "MatMul" for n in nodes)
    assert any(n.name == "gemm" and n.op_type == "Gemm" for n in nodes)


@pytest.mark.parametrize("fmt", [QuantFormat.QDQ, QuantFormat.QOperator])
@pytest.mark.parametrize("act", [QuantType.QUInt8, QuantType.QInt8])
@pytest.mark.parametrize("per_channel", [False, True])
def test_static_convnet(convnet, tmp_path, fmt, act, per_channel):
    out = tmp_path / "q.onnx"
    quantize_static(convnet, out, Reader("x", (2, 3, 12, 12), also=CONV_FEED), quant_format=fmt, activation_type=act,
                    per_channel=per_channel)
    ops = op_types(out)
    if fmt == QuantFormat.QDQ:
        assert {"QuantizeLinear", "DequantizeLinear", "Conv", "Add", "MaxPool", "Gemm"} <= ops
        assert "Relu" not in ops  # folded into the quantization of the Conv outputs
    else:
        assert {"QLinearConv", "QuantizeLinear", "DequantizeLinear", "MaxPool"} <= ops
        assert "Conv" not in ops
    model = onnx.load(str(out))
    biases = [t for t in model.graph.initializer if t.data_type == TensorProto.INT32]
    assert len(biases) >= 4
    check_agreement(convnet, out, CONV_FEED, rel_tol=0.03)


@pytest.mark.parametrize("fmt", [QuantFormat.QDQ, QuantFormat.QOperator])
@pytest.mark.parametrize("method", [CalibrationMethod.MinMax, CalibrationMethod.Percentile])
@pytest.mark.parametrize("per_channel", [False, True])
def test_static_mlp(mlp, tmp_path, fmt, method, per_channel):
    out = tmp_path / "q.onnx"
    quantize_static(str(mlp), str(out), Reader("x", (4, 24), also=MLP_FEED), quant_format=fmt, calibrate_method=method,
                    activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8, per_channel=per_channel)
    ops = op_types(out)
    assert ("QLinearMatMul" in ops) == (fmt == QuantFormat.QOperator)
    assert "Relu" not in ops
    check_agreement(mlp, out, MLP_FEED, rel_tol=0.03)


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_static_matches_onnxruntime_quantizer(convnet, tmp_path, fmt):
    """Same formulas as onnxruntime.quantization: its quantized model computes the
    same numbers as ours (within an output step)."""
    from onnxruntime import quantization as ortq

    ours, theirs = tmp_path / "ours.onnx", tmp_path / "theirs.onnx"
    quantize_static(convnet, ours, Reader("x", (2, 3, 12, 12), also=CONV_FEED), quant_format=QuantFormat[fmt],
                    activation_type=QuantType.QUInt8, per_channel=True)
    ortq.quantize_static(str(convnet), str(theirs), Reader("x", (2, 3, 12, 12), also=CONV_FEED),
                         quant_format=ortq.QuantFormat[fmt], activation_type=ortq.QuantType.QUInt8, per_channel=True)
    step = output_scale(ours)
    np.testing.assert_allclose(run_onyx(ours, CONV_FEED), run_ort(theirs, CONV_FEED), rtol=0, atol=2.01 * step)


def test_static_scales_cover_calibrated_range(mlp, tmp_path):
    """uint8 asymmetric: the scale spans [min(0, lo), max(0, hi)] of the calibration data."""
    out = tmp_path / "q.onnx"
    feeds = [{"x": np.full((1, 24), v, np.float32)} for v in (-2.0, 3.0)]

    class Fixed(CalibrationDataReader):
        def get_next(self):
            return feeds.pop(0) if feeds else None

    quantize_static(mlp, out, Fixed(), activation_type=QuantType.QUInt8, op_types_to_quantize=["MatMul"],
                    nodes_to_quantize=["mm1"])
    m = onnx.load(str(out))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "x")
    assert float(inits[q.input[1]]) == pytest.approx(5.0 / 255, rel=1e-6)
    assert int(inits[q.input[2]]) == round(2.0 / (5.0 / 255))
    assert [n.op_type for n in m.graph.node].count("MatMul") == 2  # mm2 left float


def test_config_objects(mlp, tmp_path):
    from onyx.quantization import DynamicQuantConfig, StaticQuantConfig, quantize

    quantize(mlp, tmp_path / "d.onnx", DynamicQuantConfig(per_channel=True))
    assert "MatMulInteger" in op_types(tmp_path / "d.onnx")
    quantize(mlp, tmp_path / "s.onnx", StaticQuantConfig(Reader("x", (4, 24), also=MLP_FEED),
                                                         quant_format=QuantFormat.QOperator))
    assert "QLinearMatMul" in op_types(tmp_path / "s.onnx")
    with pytest.raises(ValueError, match="quant_config"):
        quantize(mlp, tmp_path / "x.onnx", {"per_channel": True})


def _input_scale(path):
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "x")
    return float(inits[q.input[1]]), inits[q.input[2]]


def test_percentile_clips_outliers(mlp, tmp_path):
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (64, 24)).astype(np.float32)
    x[0, 0] = 100.0  # one outlier among 1536 values

    class One(CalibrationDataReader):
        def __init__(self):
            self.feeds = [{"x": x}]

        def get_next(self):
            return self.feeds.pop() if self.feeds else None

    quantize_static(mlp, tmp_path / "mm.onnx", One(), activation_type=QuantType.QUInt8)
    quantize_static(mlp, tmp_path / "pc.onnx", One(), activation_type=QuantType.QUInt8,
                    calibrate_method=CalibrationMethod.Percentile, extra_options={"CalibPercentile": 99.9})
    assert _input_scale(tmp_path / "mm.onnx")[0] == pytest.approx(101.0 / 255, rel=1e-3)
    assert _input_scale(tmp_path / "pc.onnx")[0] < 2.1 / 255


def test_symmetric_activations_and_reduce_range(mlp, tmp_path):
    out = tmp_path / "q.onnx"
    quantize_static(mlp, out, Reader("x", (4, 24), also=MLP_FEED), reduce_range=True,
                    activation_type=QuantType.QInt8, extra_options={"ActivationSymmetric": True})
    scale, zero_point = _input_scale(out)
    assert zero_point.dtype == np.int8 and int(zero_point) == 0
    m = onnx.load(str(out))
    weights = [numpy_helper.to_array(t) for t in m.graph.initializer if t.name == "w1_quantized"]
    assert weights and weights[0].dtype == np.int8 and np.abs(weights[0]).max() == 63  # 7-bit, symmetric
    assert "Relu" in op_types(out)  # a symmetric range cannot clamp at 0, so Relu stays
    check_agreement(mlp, out, MLP_FEED, rel_tol=0.06)


def test_unknown_extra_option_warns(mlp, tmp_path):
    with pytest.warns(UserWarning, match="NoSuchOption"):
        quantize_dynamic(mlp, tmp_path / "q.onnx", extra_options={"NoSuchOption": 1, "WeightSymmetric": True})


def test_missing_model_file(tmp_path):
    with pytest.raises(ValueError, match="no such model file"):
        quantize_dynamic(tmp_path / "absent.onnx", tmp_path / "q.onnx")


def test_reader_with_wrong_input_name(mlp, tmp_path):
    with pytest.raises(ValueError, match=r"unknown \['not_x'\].*missing \['x'\]"):
        quantize_static(mlp, tmp_path / "q.onnx", Reader("not_x", (1, 24)))


def test_empty_reader(mlp, tmp_path):
    with pytest.raises(ValueError, match="yielded no data"):
        quantize_static(mlp, tmp_path / "q.onnx", Reader("x", (1, 24), count=0))


@pytest.mark.parametrize("kwargs", [{"activation_type": QuantType.QInt16}, {"weight_type": QuantType.QInt4},
                                    {"weight_type": QuantType.QFLOAT8E4M3FN},
                                    {"calibrate_method": CalibrationMethod.Entropy}])
def test_unsupported_settings(mlp, tmp_path, kwargs):
    with pytest.raises(ValueError, match="not supported"):
        quantize_static(mlp, tmp_path / "q.onnx", Reader("x", (1, 24)), **kwargs)


def test_dynamic_unsupported_weight_type(mlp, tmp_path):
    with pytest.raises(ValueError, match="weight_type=QUInt16 is not supported"):
        quantize_dynamic(mlp, tmp_path / "q.onnx", weight_type=QuantType.QUInt16)


def test_missing_reader(mlp, tmp_path):
    with pytest.raises(ValueError, match="calibration_data_reader"):
        quantize_static(mlp, tmp_path / "q.onnx", None)
