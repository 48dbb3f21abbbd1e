"""onyx.quantization's tools around the quantizers, side by side with
onnxruntime.quantization: quant_pre_process (and its command line), the
calibraters (create_calibrator, TensorsData, calibration tables and caches) and
get_qdq_config."""
import json
import subprocess
import sys

import numpy as np
import onnx
import onnxruntime
import onnxruntime.quantization as ortq
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_quantization import (CONV_FEED, MLP_FEED, Reader, _model, check_agreement, conv_model, mlp_model,
                               op_types, output_scale, run_onyx, run_ort)

import onyx
from onyx.quantization import (CalibrationMethod, MinMaxCalibrater, QuantFormat, QuantType, StaticQuantConfig,
                               TensorData, TensorsData, create_calibrator, get_qdq_config, load_tensors_data,
                               quant_pre_process, quantize, quantize_dynamic, quantize_static, save_tensors_data,
                               write_calibration_table)


def foldable_model():
    """Conv -> BatchNormalization -> Relu -> Identity -> Dropout -> a Reshape whose shape
    comes from Shape / Gather / Concat -> MatMul: work for the optimizer and for shape
    inference (the Reshape's output shape needs data propagation)."""
    rng = np.random.default_rng(11)

    def w(*shape, k=0.3):
        return (rng.standard_normal(shape) * k).astype(np.float32)

    inits = {"w0": w(8, 3, 3, 3), "b0": w(8), "scale": np.abs(w(8)) + 0.5, "bias": w(8), "mean": w(8),
             "var": np.abs(w(8)) + 0.5, "wf": w(8 * 10 * 10, 5, k=0.05), "zero": np.array(0, np.int64),
             "axes0": np.array([0], np.int64), "minus1": np.array([-1], np.int64)}
    nodes = [helper.make_node("Conv", ["x", "w0", "b0"], ["c0"], name="conv0"),
             helper.make_node("BatchNormalization", ["c0", "scale", "bias", "mean", "var"], ["bn"], name="bn"),
             helper.make_node("Relu", ["bn"], ["r"], name="relu"),
             helper.make_node("Identity", ["r"], ["r2"], name="identity"),
             helper.make_node("Dropout", ["r2"], ["d"], name="dropout"),
             helper.make_node("Shape", ["d"], ["s"], name="shape"),
             helper.make_node("Gather", ["s", "zero"], ["n"], name="batch", axis=0),
             helper.make_node("Unsqueeze", ["n", "axes0"], ["n1"], name="unsqueeze"),
             helper.make_node("Concat", ["n1", "minus1"], ["target"], name="concat", axis=0),
             helper.make_node("Reshape", ["d", "target"], ["f"], name="flatten"),
             helper.make_node("MatMul", ["f", "wf"], ["y"], name="fc")]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 12, 12])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)


MODELS = {"mlp": (mlp_model, MLP_FEED), "conv": (conv_model, CONV_FEED), "foldable": (foldable_model, CONV_FEED)}


def saved(tmp_path, name):
    path = tmp_path / f"{name}.onnx"
    onnx.save(MODELS[name][0](), str(path))
    return path


def assert_same_outputs(path, reference_path, feed):
    """`path` computes what `reference_path` does, in Onyx and in onnxruntime."""
    expected = run_ort(reference_path, feed)
    for got in (run_onyx(path, feed), run_ort(path, feed)):
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5 * float(np.abs(expected).max()))


# ----------------------------------------------------------------------------------------------------------------------
# quant_pre_process


@pytest.mark.parametrize("name", sorted(MODELS))
def test_pre_process_keeps_outputs(tmp_path, name):
    src, out = saved(tmp_path, name), tmp_path / "pre.onnx"
    quant_pre_process(str(src), str(out))
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert {p.key: p.value for p in model.metadata_props} == {"onnx.quant.pre_process": "onnxruntime.quant"}
    intermediate = {o for n in model.graph.node for o in n.output} - {o.name for o in model.graph.output}
    assert intermediate <= {v.name for v in model.graph.value_info}  # every tensor has its type and shape
    assert_same_outputs(out, src, MODELS[name][1])


def test_pre_process_optimizes_and_infers_shapes(tmp_path):
    src = saved(tmp_path, "foldable")
    quant_pre_process(onnx.load(str(src)), tmp_path / "pre.onnx")  # a ModelProto and a Path work too
    quant_pre_process(str(src), str(tmp_path / "kept.onnx"), skip_optimization=True)
    optimized, kept = onnx.load(str(tmp_path / "pre.onnx")), onnx.load(str(tmp_path / "kept.onnx"))
    # Basic folds the batch norm into the conv, as onnxruntime's basic level does.
    assert not {"Identity", "Dropout", "BatchNormalization"} & {n.op_type for n in optimized.graph.node}
    assert [n.op_type for n in kept.graph.node] == [n.op_type for n in onnx.load(str(src)).graph.node]
    # Data propagation carries the batch dimension N through Shape / Gather / Concat into
    # the Reshape's output (plain shape inference leaves both dimensions unknown).
    f = next(v for v in kept.graph.value_info if v.name == "f")
    assert f.type.tensor_type.shape.dim[0].dim_param == "N"


@pytest.mark.parametrize("name", ["conv", "foldable"])
def test_pre_processed_model_quantizes(tmp_path, name):
    src, pre = saved(tmp_path, name), tmp_path / "pre.onnx"
    quant_pre_process(src, pre)
    quantize_static(pre, tmp_path / "s.onnx", Reader("x", (2, 3, 12, 12), also=CONV_FEED),
                    activation_type=QuantType.QUInt8)
    quantize_dynamic(pre, tmp_path / "d.onnx")
    assert "QuantizeLinear" in op_types(tmp_path / "s.onnx")
    assert "ConvInteger" in op_types(tmp_path / "d.onnx")
    check_agreement(src, tmp_path / "s.onnx", CONV_FEED, rel_tol=0.05)
    check_agreement(src, tmp_path / "d.onnx", CONV_FEED, rel_tol=0.05)


def test_pre_process_upgrades_old_opset(tmp_path):
    """Below opset 11 the model is converted first, Upsample becoming Resize, as onnxruntime does."""
    model = _model([helper.make_node("Upsample", ["x", "scales"], ["u"], mode="nearest"),
                    helper.make_node("Relu", ["u"], ["y"])],
                   [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 3, 3])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 6, 6])],
                   {"scales": np.array([1, 1, 2, 2], np.float32)}, opset=9)
    src, out = tmp_path / "old.onnx", tmp_path / "pre.onnx"
    onnx.save(model, str(src))
    quant_pre_process(src, out)
    upgraded = onnx.load(str(out))
    assert upgraded.opset_import[0].version == 11 and "Resize" in {n.op_type for n in upgraded.graph.node}
    assert_same_outputs(out, src, {"x": np.random.default_rng(0).standard_normal((1, 2, 3, 3)).astype(np.float32)})


def test_pre_process_external_data(tmp_path):
    src, out = saved(tmp_path, "conv"), tmp_path / "pre.onnx"
    quant_pre_process(src, out, save_as_external_data=True, all_tensors_to_one_file=True,
                      external_data_location="pre.weights", external_data_size_threshold=0)
    assert (tmp_path / "pre.weights").stat().st_size > 0
    model = onnx.load(str(out), load_external_data=False)
    assert all(onnx.external_data_helper.uses_external_data(t) for t in model.graph.initializer)
    assert_same_outputs(out, src, CONV_FEED)


def test_pre_process_arguments(tmp_path):
    src = saved(tmp_path, "mlp")
    quant_pre_process(input_model_path=str(src), output_model_path=str(tmp_path / "old_name.onnx"))
    assert (tmp_path / "old_name.onnx").exists()
    with pytest.warns(UserWarning, match="ignores auto_merge"):
        quant_pre_process(src, tmp_path / "merged.onnx", auto_merge=True)
    with pytest.raises(ValueError, match="output_model_path"):
        quant_pre_process(src)
    with pytest.raises(ValueError, match="no such model file"):
        quant_pre_process(tmp_path / "absent.onnx", tmp_path / "x.onnx")


def test_pre_process_keeps_a_model_onyx_cannot_load(tmp_path, caplog):
    """As onnxruntime: a failed optimization is logged and the model kept as it was."""
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["r"]),
                               helper.make_node("Mystery", ["r"], ["y"], domain="ext")], "g",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ext", 1)])
    src, out = tmp_path / "custom.onnx", tmp_path / "pre.onnx"
    onnx.save(model, str(src))
    quant_pre_process(src, out)
    assert "could not optimize" in caplog.text
    assert [n.op_type for n in onnx.load(str(out)).graph.node] == ["Relu", "Mystery"]


def test_preprocess_command_line(tmp_path):
    src, out = saved(tmp_path, "foldable"), tmp_path / "pre.onnx"
    cmd = [sys.executable, "-m", "onyx.quantization.preprocess", "--input", str(src), "--output", str(out)]
    done = subprocess.run(cmd + ["--skip_symbolic_shape", "True"], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Dropout" not in {n.op_type for n in onnx.load(str(out)).graph.node}
    assert_same_outputs(out, src, CONV_FEED)
    everything_skipped = cmd + ["--skip_optimization", "--skip_onnx_shape", "true", "--skip_symbolic_shape", "1"]
    done = subprocess.run(everything_skipped, cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and "nothing to do" in done.stderr


# ----------------------------------------------------------------------------------------------------------------------
# Calibraters


def calibrate(lib, path, tmp_path, passes, **kwargs):
    calibrater = lib.create_calibrator(str(path), augmented_model_path=str(tmp_path / f"aug_{lib.__name__}.onnx"),
                                       **kwargs)
    for reader in passes():
        calibrater.collect_data(reader)
    return calibrater.compute_data()


def assert_same_ranges(ours, theirs, tol=1e-6):
    assert set(ours.keys()) == set(theirs.keys())
    for name in theirs:
        expected = theirs[name].range_value
        span = max(float(np.abs(expected).max()), 1e-6)
        for got, want in zip(ours[name].range_value, expected):
            assert got.shape == want.shape and got.dtype == want.dtype
            np.testing.assert_allclose(got, want, rtol=0, atol=tol * span, err_msg=name)


@pytest.mark.parametrize("name", ["mlp", "conv"])
@pytest.mark.parametrize("options", [{}, {"moving_average": True}, {"moving_average": True, "averaging_constant": 0.3},
                                     {"symmetric": True}, {"per_channel": True}])
def test_minmax_calibrater_matches_onnxruntime(tmp_path, name, options):
    path = saved(tmp_path, name)
    shape = MODELS[name][1]["x"].shape

    def passes():
        first = [Reader("x", shape, count=5, seed=1)]
        # onnxruntime cannot merge per-channel ranges across collect_data calls.
        return first if options.get("per_channel") else first + [Reader("x", shape, count=3, seed=2)]

    ours = calibrate(onyx.quantization, path, tmp_path, passes, extra_options=options)
    theirs = calibrate(ortq, path, tmp_path, passes, extra_options=options)
    assert ours.calibration_method == CalibrationMethod.MinMax
    assert_same_ranges(ours, theirs)


def test_calibrater_op_types_and_augmented_model(tmp_path):
    path = saved(tmp_path, "conv")

    def passes():
        return [Reader("x", (2, 3, 12, 12), count=3)]

    ours = calibrate(onyx.quantization, path, tmp_path, passes, op_types_to_calibrate=["Conv", "Add"])
    theirs = calibrate(ortq, path, tmp_path, passes, op_types_to_calibrate=["Conv", "Add"])
    assert_same_ranges(ours, theirs)
    assert set(ours) == {"x", "p0", "c0", "r1", "c1", "c2", "s"}
    augmented = onnx.load(str(tmp_path / "aug_onyx.quantization.onnx"))
    assert {o.name for o in augmented.graph.output} == set(ours) | {"y"}


def test_calibrater_from_model_proto_and_explicit_steps(tmp_path):
    calibrater = MinMaxCalibrater(mlp_model(), augmented_model_path=None)
    tensors, value_infos = calibrater.select_tensors_to_calibrate(calibrater.model)
    assert tensors == {"x", "h0", "h1", "h2", "h3", "h4", "y"} and value_infos["h2"].type.tensor_type.elem_type == 1
    calibrater.augment_graph()
    calibrater.create_inference_session()
    feeds = [{"x": np.full((1, 24), v, np.float32)} for v in (-2.0, 3.0)]
    calibrater.collect_data(iter_reader(feeds))
    x = calibrater.compute_data()["x"]
    assert (float(x.lowest[0]), float(x.highest[0])) == (-2.0, 3.0)
    calibrater.clear_collected_data()
    assert float(calibrater.compute_data()["x"].highest[0]) == 3.0  # merged ranges stay


def iter_reader(feeds):
    class Feeds(onyx.quantization.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(feeds)

        def get_next(self):
            return next(self.feeds, None)

    return Feeds()


def test_percentile_calibrater_close_to_onnxruntime(tmp_path):
    """Both clip at a percentile of |x| from a 2048-bin histogram; the bins' edges
    differ (Onyx's start at 0), so they agree within a few bins."""
    path = saved(tmp_path, "mlp")

    def passes():
        return [Reader("x", (256, 24), count=1, seed=4)]

    options = {"percentile": 99.9}
    ours = calibrate(onyx.quantization, path, tmp_path, passes, calibrate_method=CalibrationMethod.Percentile,
                     extra_options=options)
    theirs = calibrate(ortq, path, tmp_path, passes, calibrate_method=ortq.CalibrationMethod.Percentile,
                       extra_options=options)
    assert ours.calibration_method == CalibrationMethod.Percentile
    assert set(ours) == set(theirs)
    for name in theirs:
        lo, hi = (float(v) for v in theirs[name].range_value)
        bin_width = max(abs(lo), abs(hi)) / 2048
        np.testing.assert_allclose([float(v) for v in ours[name].range_value], [lo, hi], rtol=0,
                                   atol=4 * bin_width, err_msg=name)
    assert ours["x"].hist.sum() == 256 * 24 and ours["x"].hist_edges.dtype == np.float32


@pytest.mark.parametrize("method", [CalibrationMethod.Entropy, CalibrationMethod.Distribution, "Entropy"])
def test_unsupported_calibration_methods(tmp_path, method):
    with pytest.raises(ValueError, match="not supported"):
        create_calibrator(mlp_model(), augmented_model_path=None, calibrate_method=method)


def test_signed_percentile_refused():
    with pytest.raises(NotImplementedError, match="symmetric=False"):
        create_calibrator(mlp_model(), augmented_model_path=None, calibrate_method=CalibrationMethod.Percentile,
                          extra_options={"symmetric": False})


def input_scale(path):
    m = onnx.load(str(path))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    q = next(n for n in m.graph.node if n.op_type == "QuantizeLinear" and n.input[0] == "x")
    return float(inits[q.input[1]])


@pytest.mark.parametrize("moving_average", [False, True])
def test_quantize_static_calibrates_as_the_calibrater(mlp, tmp_path, moving_average):
    """One calibration path: quantize_static's scale for x spans the calibrater's range
    (onnxruntime's moving average: the mean of the batches' extremes)."""
    data = calibrate(onyx.quantization, mlp, tmp_path, lambda: [Reader("x", (4, 24))],
                     extra_options={"moving_average": moving_average})
    lo, hi = (float(v[0]) for v in data["x"].range_value)
    quantize_static(mlp, tmp_path / "q.onnx", Reader("x", (4, 24)), activation_type=QuantType.QUInt8,
                    extra_options={"CalibMovingAverage": moving_average})
    assert input_scale(tmp_path / "q.onnx") == pytest.approx((max(hi, 0) - min(lo, 0)) / 255, rel=1e-6)


@pytest.fixture
def mlp(tmp_path):
    return saved(tmp_path, "mlp")


# ----------------------------------------------------------------------------------------------------------------------
# Results: TensorsData, caches, calibration tables


def test_tensors_data_mapping():
    f32 = np.float32
    data = TensorsData(CalibrationMethod.MinMax, {"a": (f32(-1), f32(2)), "b": TensorData(lowest=np.array([0], f32),
                                                                                           highest=np.array([1], f32))})
    assert list(data) == ["a", "b"] and len(data) == 2 and "a" in data and "z" not in data
    assert data["a"].range_value == (-1, 2) and dict(data.items())["b"] is data.data["b"]
    data["a"] = TensorData(lowest=f32(-3), highest=f32(3))
    assert float(data["a"].lowest) == -3
    with pytest.raises(RuntimeError, match="'z'"):
        data["z"] = data["a"]
    with pytest.raises(ValueError, match="no field 'median'"):
        TensorData(median=f32(0))
    with pytest.raises(ValueError, match="float32 or float16"):
        TensorData(lowest=0.5)
    with pytest.raises(AttributeError, match="avg"):
        data["a"].avg_std  # noqa: B018


def test_tensors_data_cache_round_trip_with_onnxruntime(tmp_path):
    """save_tensors_data / load_tensors_data read and write onnxruntime's JSON layout."""
    path = saved(tmp_path, "mlp")
    ours = calibrate(onyx.quantization, path, tmp_path, lambda: [Reader("x", (4, 24))])
    save_tensors_data(ours, tmp_path / "ours.json")
    for loaded in (load_tensors_data(tmp_path / "ours.json"), ortq.load_tensors_data(tmp_path / "ours.json")):
        assert str(loaded.calibration_method) == "CalibrationMethod.MinMax"
        assert_same_ranges(loaded, ours, tol=0)
    theirs = calibrate(ortq, path, tmp_path, lambda: [Reader("x", (4, 24))])
    ortq.save_tensors_data(theirs, tmp_path / "theirs.json")
    loaded = load_tensors_data(tmp_path / "theirs.json")
    assert loaded.calibration_method == CalibrationMethod.MinMax
    assert_same_ranges(loaded, theirs, tol=0)
    with pytest.raises(FileNotFoundError):
        load_tensors_data(tmp_path / "absent.json")


def test_write_calibration_table_as_onnxruntime(tmp_path):
    from onnxruntime.quantization.CalTableFlatBuffers import TrtTable

    path = saved(tmp_path, "mlp")
    ours = calibrate(onyx.quantization, path, tmp_path, lambda: [Reader("x", (4, 24))])
    as_ort = ortq.TensorsData(ortq.CalibrationMethod.MinMax,
                              {k: ortq.TensorData(lowest=v.lowest, highest=v.highest) for k, v in ours.items()})
    (tmp_path / "onyx").mkdir()
    (tmp_path / "ort").mkdir()
    write_calibration_table(ours.data, dir=str(tmp_path / "onyx"))
    ortq.write_calibration_table(as_ort.data, dir=str(tmp_path / "ort"))

    with open(tmp_path / "onyx" / "calibration.json") as f:
        table = json.load(f)
    assert set(table) == set(ours) and table["h2"]["lowest"]["data"] == [0.0]
    with open(tmp_path / "ort" / "calibration.json") as f:
        assert table == json.load(f)
    assert (tmp_path / "onyx" / "calibration.cache").read_text() == (tmp_path / "ort" / "calibration.cache").read_text()

    def entries(folder):
        table = TrtTable.TrtTable.GetRootAsTrtTable((tmp_path / folder / "calibration.flatbuffers").read_bytes(), 0)
        return {table.Dict(i).Key(): table.Dict(i).Value() for i in range(table.DictLength())}

    assert entries("onyx") == entries("ort") and len(entries("onyx")) == len(ours)


def test_write_calibration_table_without_flatbuffers(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "flatbuffers", None)  # import flatbuffers now raises ImportError
    f32 = np.float32
    with pytest.warns(UserWarning, match="flatbuffers"):
        write_calibration_table({"a": (f32(-1.5), f32(0.5)), "b": (f32(-1), f32(2))}, dir=str(tmp_path))
    assert (tmp_path / "calibration.cache").read_text() == "a 0.5\nb 2.0\n"
    assert set(json.loads((tmp_path / "calibration.json").read_text())) == {"a", "b"}
    assert not (tmp_path / "calibration.flatbuffers").exists()


# ----------------------------------------------------------------------------------------------------------------------
# get_qdq_config


def initializers(path):
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


@pytest.mark.parametrize("per_channel", [False, True])
def test_get_qdq_config_matches_quantize_static(convnet_path, tmp_path, per_channel):
    config = get_qdq_config(convnet_path, Reader("x", (2, 3, 12, 12), also=CONV_FEED), per_channel=per_channel)
    assert isinstance(config, StaticQuantConfig) and config.quant_format == QuantFormat.QDQ
    assert config.activation_type == QuantType.QUInt8 and config.weight_type == QuantType.QInt8
    assert config.op_types_to_quantize == sorted({n.op_type for n in conv_model().graph.node})
    quantize(convnet_path, tmp_path / "config.onnx", config)
    quantize_static(convnet_path, tmp_path / "static.onnx", Reader("x", (2, 3, 12, 12), also=CONV_FEED),
                    quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                    per_channel=per_channel)
    ours, reference = initializers(tmp_path / "config.onnx"), initializers(tmp_path / "static.onnx")
    assert ours.keys() == reference.keys()
    for name, value in reference.items():
        np.testing.assert_array_equal(ours[name], value, err_msg=name)
    np.testing.assert_array_equal(run_onyx(tmp_path / "config.onnx", CONV_FEED),
                                  run_onyx(tmp_path / "static.onnx", CONV_FEED))
    check_agreement(convnet_path, tmp_path / "config.onnx", CONV_FEED, rel_tol=0.03)


def test_get_qdq_config_matches_onnxruntime(convnet_path, tmp_path):
    quantize(convnet_path, tmp_path / "ours.onnx",
             get_qdq_config(convnet_path, Reader("x", (2, 3, 12, 12), also=CONV_FEED), per_channel=True))
    ortq.quantize(str(convnet_path), str(tmp_path / "theirs.onnx"),
                  ortq.get_qdq_config(str(convnet_path), Reader("x", (2, 3, 12, 12), also=CONV_FEED),
                                      per_channel=True))
    step = output_scale(tmp_path / "ours.onnx")
    got, expected = run_onyx(tmp_path / "ours.onnx", CONV_FEED), run_ort(tmp_path / "theirs.onnx", CONV_FEED)
    np.testing.assert_allclose(got, expected, rtol=0, atol=2.01 * step)


@pytest.fixture
def convnet_path(tmp_path):
    return saved(tmp_path, "conv")


def test_get_qdq_config_options(convnet_path, tmp_path):
    def quantized(name, **kwargs):
        out = tmp_path / f"{name}.onnx"
        quantize(convnet_path, out, get_qdq_config(convnet_path, Reader("x", (2, 3, 12, 12), also=CONV_FEED), **kwargs))
        return out

    kept = quantized("kept", keep_removable_activations=True)
    assert [n.op_type for n in onnx.load(str(kept)).graph.node].count("Relu") == 3
    check_agreement(convnet_path, kept, CONV_FEED, rel_tol=0.03)

    assert input_scale(quantized("wide", min_real_range=100.0)) == pytest.approx(100.0 / 255, rel=1e-6)

    symmetric = initializers(quantized("symmetric", activation_symmetric=True))
    assert all(int(v) == 128 for k, v in symmetric.items() if k.endswith("_zero_point") and v.dtype == np.uint8)

    asymmetric = initializers(quantized("asym_weights", weight_symmetric=False))
    assert any(int(v) != 0 for k, v in asymmetric.items() if k.endswith("_zero_point") and v.dtype == np.int8)

    excluded = quantized("excluded", nodes_to_exclude=lambda model, node: node.name == "conv1")
    model = onnx.load(str(excluded))
    conv1 = next(n for n in model.graph.node if n.name == "conv1")
    assert conv1.input[1] == "w1"  # its weight stays float


def test_get_qdq_config_calibrate_args(mlp):
    with pytest.warns(UserWarning, match="num_bins"):
        config = get_qdq_config(mlp, Reader("x", (4, 24)), calibrate_method=CalibrationMethod.Percentile,
                                calibrate_args={"percentile": 99.0, "moving_average": True, "num_bins": 512},
                                extra_options={"ActivationSymmetric": True})
    assert config.extra_options["CalibPercentile"] == 99.0 and config.extra_options["CalibMovingAverage"] is True
    assert config.extra_options["ActivationSymmetric"] is True  # extra_options win, as in onnxruntime
    assert config.nodes_to_exclude == [] and config.calibrate_method == CalibrationMethod.Percentile


@pytest.mark.parametrize("kwargs, error, match", [
    ({"tensor_quant_overrides": {"x": [{"scale": 0.1, "zero_point": 0}]}}, NotImplementedError,
     "tensor_quant_overrides"),
    ({"activation_type": QuantType.QInt16}, ValueError, "activation_type=QInt16"),
    ({"weight_type": QuantType.QInt4}, ValueError, "weight_type=QInt4"),
    ({"calibrate_method": CalibrationMethod.Entropy}, ValueError, "calibrate_method"),
])
def test_get_qdq_config_refuses_what_onyx_cannot_do(mlp, kwargs, error, match):
    with pytest.raises(error, match=match):
        get_qdq_config(mlp, Reader("x", (4, 24)), **kwargs)


def test_tensor_quant_overrides_refused_by_quantize_static(mlp, tmp_path):
    with pytest.raises(NotImplementedError, match="TensorQuantOverrides"):
        quantize_static(mlp, tmp_path / "q.onnx", Reader("x", (4, 24)),
                        extra_options={"TensorQuantOverrides": {"x": [{"symmetric": True}]}})


def test_onnxruntime_runs_quantized_pre_processed_model(tmp_path):
    """The whole chain of the README: quant_pre_process, get_qdq_config, quantize, then
    onnxruntime (and Onyx) run the result close to the float model."""
    src, pre, out = saved(tmp_path, "foldable"), tmp_path / "pre.onnx", tmp_path / "q.onnx"
    quant_pre_process(src, pre)
    quantize(pre, out, get_qdq_config(pre, Reader("x", (2, 3, 12, 12), also=CONV_FEED)))
    so = onnxruntime.SessionOptions()
    got = onnxruntime.InferenceSession(str(out), so, providers=["CPUExecutionProvider"]).run(None, CONV_FEED)[0]
    expected = run_ort(src, CONV_FEED)
    assert float(np.abs(got - expected).max()) / float(np.abs(expected).max()) < 0.05
    check_agreement(src, out, CONV_FEED, rel_tol=0.05)
