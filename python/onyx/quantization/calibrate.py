"""Calibration: run the float model with Onyx on the user's data and record the
statistics (range, histogram) of the activations to quantize.

onnxruntime's calibration API lives here (create_calibrator, CalibraterBase,
MinMaxCalibrater, PercentileCalibrater, TensorData, TensorsData,
save_tensors_data / load_tensors_data), and quantize_static calibrates through
the same calibraters (collect_ranges), so both give the same ranges."""
import abc
import contextlib
import json
import os
import tempfile
from enum import Enum

import numpy as np


class CalibrationMethod(Enum):
    MinMax = 0
    Entropy = 1
    Percentile = 2
    Distribution = 3


class CalibrationDataReader(metaclass=abc.ABCMeta):
    """Yields one input feed (dict name -> array) per get_next() call, None when done."""

    @classmethod
    def __subclasshook__(cls, subclass):
        return hasattr(subclass, "get_next") and callable(subclass.get_next) or NotImplemented

    @abc.abstractmethod
    def get_next(self) -> dict:
        raise NotImplementedError

    def __iter__(self):
        return self

    def __next__(self):
        feed = self.get_next()
        if feed is None:
            raise StopIteration
        return feed

    def __len__(self):
        raise NotImplementedError

    def set_range(self, start_index: int, end_index: int):
        raise NotImplementedError


SUPPORTED_METHODS = (CalibrationMethod.MinMax, CalibrationMethod.Percentile)


def check_calibrate_method(method):
    """The CalibrationMethod named by `method` (an enum member or its name), if Onyx implements it."""
    if isinstance(method, str):
        method = CalibrationMethod[method]
    if method not in SUPPORTED_METHODS:
        raise ValueError(f"calibrate_method={method} is not supported by onyx.quantization: "
                         "use CalibrationMethod.MinMax or CalibrationMethod.Percentile")
    return method


# ----------------------------------------------------------------------------------------------------------------------
# Results: one TensorData per tensor, gathered in a TensorsData


def _is_float_array(value):
    return getattr(value, "dtype", None) in (np.float16, np.float32)


class TensorData:
    """Statistics of one tensor: `lowest` / `highest` (its range) and, depending on
    the method, `avg`, `std`, `hist`, `hist_edges`, `bins`."""

    FIELDS = ("avg", "std", "lowest", "highest", "hist", "hist_edges", "bins")
    # The quantizer computes scales from these, so they keep the tensor's float type.
    FLOAT_FIELDS = ("avg", "std", "lowest", "highest", "hist_edges")

    def __init__(self, **fields):
        for name, value in fields.items():
            if name not in self.FIELDS:
                raise ValueError(f"TensorData has no field {name!r}: expected some of {', '.join(self.FIELDS)}")
            if name in self.FLOAT_FIELDS and not _is_float_array(value):
                raise ValueError(f"TensorData.{name} must be a float32 or float16 numpy value, "
                                 f"got {type(value).__name__} {getattr(value, 'dtype', '')}")
            setattr(self, name, value)
        self._fields = list(fields)

    @property
    def range_value(self):
        if not (hasattr(self, "lowest") and hasattr(self, "highest")):
            raise AttributeError("this TensorData has no range: it lacks 'lowest' or 'highest'")
        return self.lowest, self.highest

    @property
    def avg_std(self):
        if not (hasattr(self, "avg") and hasattr(self, "std")):
            raise AttributeError("this TensorData has no 'avg' and 'std'")
        return self.avg, self.std

    def to_dict(self):
        return {**{name: getattr(self, name) for name in self._fields}, "CLS": type(self).__name__}

    @classmethod
    def from_dict(cls, d):
        fields = {}
        for name, value in d.items():
            if name == "CLS":
                continue
            if isinstance(value, dict) and value.get("CLS") == "numpy.array":
                value = np.array(value["data"], dtype=np.dtype(value["dtype"]))
            elif name in cls.FLOAT_FIELDS and isinstance(value, (int, float)):
                value = np.array(value, dtype=np.float32)
            fields[name] = value
        return cls(**fields)

    def __repr__(self):
        return "TensorData(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self._fields) + ")"


def _as_float(value):
    return value if _is_float_array(value) else np.asarray(value, dtype=np.float32)


class TensorsData:
    """The calibration result: tensor name -> TensorData, read like a dict, and the
    CalibrationMethod that made it."""

    def __init__(self, calibration_method, data):
        self.calibration_method = calibration_method
        self.data = {}
        for name, value in data.items():
            if not isinstance(name, str):
                raise TypeError(f"TensorsData keys are tensor names (str), got {type(name).__name__}")
            if isinstance(value, tuple) and len(value) == 2:
                value = TensorData(lowest=_as_float(value[0]), highest=_as_float(value[1]))
            elif isinstance(value, tuple) and len(value) == 4:
                value = TensorData(lowest=_as_float(value[0]), highest=_as_float(value[1]), hist=value[2],
                                   bins=value[3])
            elif not isinstance(value, TensorData):
                raise TypeError(f"TensorsData[{name!r}] must be a TensorData or a (lowest, highest) tuple, "
                                f"got {type(value).__name__}")
            self.data[name] = value

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)

    def __contains__(self, name):
        return name in self.data

    def __getitem__(self, name):
        return self.data[name]

    def __setitem__(self, name, value):
        # As onnxruntime: the set of calibrated tensors is fixed by the calibration.
        if name not in self.data:
            raise RuntimeError(f"only a calibrated tensor can be replaced, {name!r} is not one")
        self.data[name] = value

    def keys(self):
        return self.data.keys()

    def values(self):
        return self.data.values()

    def items(self):
        return self.data.items()

    def to_dict(self):
        return {"CLS": type(self).__name__, "data": self.data, "calibration_method": self.calibration_method}

    @classmethod
    def from_dict(cls, d):
        method = d["calibration_method"]
        if isinstance(method, dict) and method.get("CLS") == "CalibrationMethod":
            method = CalibrationMethod[method["value"].rsplit(".", 1)[-1]]
        return cls(method, {name: TensorData.from_dict(v) for name, v in d["data"].items()})


class CalibrationJSONEncoder(json.JSONEncoder):
    """JSON for calibration results, in onnxruntime's layout (arrays as
    {"data", "dtype", "CLS": "numpy.array"}), so either library reads the other's files."""

    def default(self, obj):
        if isinstance(obj, (TensorData, TensorsData)):
            return obj.to_dict()
        if isinstance(obj, np.ndarray):
            return {"data": obj.tolist(), "dtype": str(obj.dtype), "CLS": "numpy.array"}
        if isinstance(obj, CalibrationMethod):
            return {"CLS": type(obj).__name__, "value": str(obj)}
        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj)
        return super().default(obj)


def save_tensors_data(tensors_data, path, *, smooth_quant=False):
    """Writes `tensors_data` as JSON to `path` (through a temporary file, so a
    reader never sees half a file). `smooth_quant` is recorded as onnxruntime does."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".calibration_", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump({**tensors_data.to_dict(), "smooth_quant": bool(smooth_quant)}, f, cls=CalibrationJSONEncoder)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def load_tensors_data(path):
    """Reads a TensorsData written by save_tensors_data (Onyx's or onnxruntime's)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"calibration cache not found: {path}")
    if not os.path.isfile(path):
        raise ValueError(f"calibration cache path is not a file: {path}")
    with open(path) as f:
        return TensorsData.from_dict(json.load(f))


# ----------------------------------------------------------------------------------------------------------------------
# Statistics of one tensor. Each batch is reduced as soon as it arrives, so memory does
# not grow with the number of calibration batches.


class _MinMax:
    """Range of one tensor, as onnxruntime's MinMaxCalibrater computes it: one
    collect_data pass reduces its batches' extremes (min / max, or their mean with
    moving_average); later passes merge in by min / max, or by an exponential moving
    average. per_channel keeps one range per index of axis 1."""

    def __init__(self, moving_average=False, averaging_constant=0.01, symmetric=False, per_channel=False):
        self.moving_average, self.averaging_constant = moving_average, averaging_constant
        self.symmetric, self.per_channel = symmetric, per_channel
        self.batch_lows, self.batch_highs = [], []
        self.low = self.high = None

    def add(self, x):
        if x.size == 0:
            return
        axes = (0,) + tuple(range(2, x.ndim)) if self.per_channel and x.ndim >= 2 else None
        self.batch_lows.append(np.min(x, axis=axes).reshape(-1))
        self.batch_highs.append(np.max(x, axis=axes).reshape(-1))

    def end_pass(self):
        if not self.batch_lows:
            return
        if self.moving_average:
            low, high = np.nanmean(self.batch_lows, axis=0), np.nanmean(self.batch_highs, axis=0)
        else:
            low, high = np.nanmin(self.batch_lows, axis=0), np.nanmax(self.batch_highs, axis=0)
        if self.symmetric:
            high = np.nanmax([np.abs(low), np.abs(high)], axis=0)
            low = -high
        if self.low is None:
            self.low, self.high = low, high
        elif self.moving_average:
            self.low = self.low + self.averaging_constant * (low - self.low)
            self.high = self.high + self.averaging_constant * (high - self.high)
        else:
            self.low, self.high = np.minimum(self.low, low), np.maximum(self.high, high)
        self.clear()

    def clear(self):
        self.batch_lows, self.batch_highs = [], []

    def result(self):
        if self.low is None:  # only empty tensors were seen
            return TensorData(lowest=np.zeros(1, np.float32), highest=np.zeros(1, np.float32))
        return TensorData(lowest=self.low, highest=self.high)


class _Percentile:
    """Clips each side of the range at a percentile of |x| (onnxruntime's symmetric
    percentile), from a histogram that doubles its span (merging bin pairs) when
    larger values arrive, so memory stays constant however many batches are fed."""

    def __init__(self, percentile=99.999, num_bins=2048):
        if not 0 <= percentile <= 100:
            raise ValueError(f"percentile={percentile} must be within [0, 100]")
        if num_bins < 2 or num_bins % 2:
            raise ValueError(f"num_bins={num_bins} must be an even number >= 2 (the histogram merges bin pairs)")
        self.percentile, self.num_bins = percentile, num_bins
        self.low = self.high = None
        self.hist = np.zeros(num_bins, np.int64)
        self.span = 0.0

    def add(self, x):
        if x.size == 0:
            return
        lo, hi = float(x.min()), float(x.max())
        self.low = lo if self.low is None else min(self.low, lo)
        self.high = hi if self.high is None else max(self.high, hi)
        a = np.abs(x.astype(np.float32, copy=False)).ravel()
        top = float(a.max())
        if self.span == 0.0:
            self.span = top if top > 0 else 1.0
        while top > self.span:
            merged = self.hist.reshape(-1, 2).sum(axis=1)
            self.hist = np.concatenate([merged, np.zeros(self.num_bins // 2, np.int64)])
            self.span *= 2
        self.hist += np.histogram(a, bins=self.num_bins, range=(0.0, self.span))[0]

    def end_pass(self):
        pass  # the histogram spans every pass

    def clear(self):
        pass

    def range(self):
        if self.low is None:
            return 0.0, 0.0
        cdf = np.cumsum(self.hist)
        if cdf[-1] == 0:
            return self.low, self.high
        k = int(np.searchsorted(cdf, cdf[-1] * self.percentile / 100.0))
        limit = (k + 1) * self.span / self.num_bins
        return max(self.low, -limit), min(self.high, limit)

    def result(self):
        lo, hi = self.range()
        edges = np.linspace(0.0, self.span, self.num_bins + 1, dtype=np.float32)
        return TensorData(lowest=np.array(lo, np.float32), highest=np.array(hi, np.float32), hist=self.hist.copy(),
                          hist_edges=edges, bins=self.num_bins)


# ----------------------------------------------------------------------------------------------------------------------
# Calibraters: onnxruntime's classes, running the model with Onyx.

_CALIBRATED_ELEM_TYPES = (1, 10)  # TensorProto.FLOAT, FLOAT16


def _load_with_shapes(model):
    """The model (a path or a ModelProto, copied) with ONNX shape inference's value_info,
    which tells the calibrater each tensor's element type."""
    import onnx

    from .quant_utils import load_model

    loaded = load_model(model)
    try:
        return onnx.shape_inference.infer_shapes(loaded)
    except Exception:  # noqa: BLE001 - inference only helps: graph inputs and outputs still have types
        return loaded


def _value_infos(model):
    infos = {vi.name: vi for vi in model.graph.value_info}
    infos.update({vi.name: vi for vi in model.graph.output})
    infos.update({vi.name: vi for vi in model.graph.input})
    return infos


class CalibraterBase:
    """Runs the model (made to output every tensor to calibrate) with Onyx over the
    reader's feeds. augment_graph() and create_inference_session() prepare it
    (create_calibrator calls them), collect_data() may be called several times,
    compute_data() gives the TensorsData."""

    method = None  # the CalibrationMethod compute_data reports

    def __init__(self, model_path, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                 symmetric=False, use_external_data_format=False, per_channel=False):
        self.model = _load_with_shapes(model_path)
        self.op_types_to_calibrate = op_types_to_calibrate
        self.augmented_model_path = augmented_model_path
        self.symmetric = symmetric
        self.use_external_data_format = use_external_data_format
        self.per_channel = per_channel
        self.execution_providers = ["CPUExecutionProvider"]
        self.infer_session = None
        # None until augment_graph picks them with select_tensors_to_calibrate;
        # quantize_static sets the ones it needs beforehand.
        self.tensors_to_calibrate = None
        self._stats = {}
        self._batches = 0

    def _new_stat(self):
        raise NotImplementedError

    def select_tensors_to_calibrate(self, model):
        """The float / float16 tensors (not initializers) read or written by the nodes
        of `op_types_to_calibrate` (all nodes if none): (set of names, name -> ValueInfo)."""
        value_infos = _value_infos(model)
        constants = {t.name for t in model.graph.initializer}
        chosen = set()
        for node in model.graph.node:
            if self.op_types_to_calibrate and node.op_type not in self.op_types_to_calibrate:
                continue
            for name in list(node.input) + list(node.output):
                info = value_infos.get(name)
                if info is None or name in constants or not info.type.HasField("tensor_type"):
                    continue
                if info.type.tensor_type.elem_type in _CALIBRATED_ELEM_TYPES:
                    chosen.add(name)
        return chosen, value_infos

    def get_augment_model(self):
        return self.model

    def augment_graph(self):
        """Makes every tensor to calibrate a graph output, so each run returns them all
        (Onyx reduces them in numpy; onnxruntime adds ReduceMin / ReduceMax nodes), and
        saves that model to augmented_model_path when there is one."""
        import onnx
        from onnx import TensorProto, helper

        if self.tensors_to_calibrate is None:
            self.tensors_to_calibrate = self.select_tensors_to_calibrate(self.model)[0]
        value_infos = _value_infos(self.model)
        outputs = {o.name for o in self.model.graph.output}
        for name in sorted(self.tensors_to_calibrate):
            if name in outputs:
                continue
            info = value_infos.get(name)
            elem_type = info.type.tensor_type.elem_type if info is not None else TensorProto.FLOAT
            self.model.graph.output.append(helper.make_tensor_value_info(name, elem_type, None))
        if self.augmented_model_path:
            onnx.save_model(self.model, os.fspath(self.augmented_model_path),
                            save_as_external_data=self.use_external_data_format)

    def create_inference_session(self):
        from .. import InferenceSession, SessionOptions

        source = os.fspath(self.augmented_model_path) if self.augmented_model_path else self.model.SerializeToString()
        self.infer_session = InferenceSession(source, SessionOptions(), providers=list(self.execution_providers))

    def set_execution_providers(self, execution_providers=("CPUExecutionProvider",)):
        self.execution_providers = list(execution_providers)
        self.create_inference_session()

    def collect_data(self, data_reader):
        """Runs every feed of `data_reader` and adds the tensors' values to the statistics."""
        _check_reader(data_reader)
        if self.tensors_to_calibrate is None:
            self.augment_graph()
        if self.infer_session is None:
            self.create_inference_session()
        input_names = [i.name for i in self.infer_session.get_inputs()]
        wanted = sorted(self.tensors_to_calibrate)
        while True:
            feed = data_reader.get_next()
            if feed is None:
                break
            _check_feed(feed, input_names, self._batches)
            for name, value in zip(wanted, self.infer_session.run(wanted, feed)):
                if name not in self._stats:
                    self._stats[name] = self._new_stat()
                self._stats[name].add(np.asarray(value))
            self._batches += 1
        if self._batches == 0:
            raise ValueError("calibration_data_reader yielded no data: get_next() returned None at once")
        for stat in self._stats.values():
            stat.end_pass()

    def compute_data(self):
        """The statistics of every calibrated tensor so far, as a TensorsData."""
        if not self._stats:
            raise ValueError("no calibration data: call collect_data(data_reader) first")
        return TensorsData(self.method, {name: stat.result() for name, stat in self._stats.items()})

    def clear_collected_data(self):
        """Drops batches not yet merged into the statistics (collect_data merges its own at its end)."""
        for stat in self._stats.values():
            stat.clear()


def _check_reader(data_reader):
    if data_reader is None or not callable(getattr(data_reader, "get_next", None)):
        raise ValueError("calibration_data_reader must be a CalibrationDataReader (an object with get_next())")


def _check_feed(feed, input_names, index):
    if not isinstance(feed, dict):
        raise ValueError(f"calibration_data_reader.get_next() must return a dict of inputs, got {type(feed).__name__}")
    unknown = sorted(set(feed) - set(input_names))
    missing = sorted(set(input_names) - set(feed))
    if unknown or missing:
        raise ValueError(f"calibration feed #{index} does not match the model inputs {input_names}: "
                         f"unknown {unknown}, missing {missing}")


class MinMaxCalibrater(CalibraterBase):
    """Each tensor's min and max over the data (see _MinMax for moving_average).
    max_intermediate_outputs is accepted for onnxruntime's signature: Onyx keeps two
    numbers per tensor and batch, so there is nothing to bound."""

    method = CalibrationMethod.MinMax

    def __init__(self, model_path, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                 symmetric=False, use_external_data_format=False, moving_average=False, averaging_constant=0.01,
                 max_intermediate_outputs=None, per_channel=False):
        super().__init__(model_path, op_types_to_calibrate, augmented_model_path, symmetric, use_external_data_format,
                         per_channel)
        if moving_average and not 0 <= averaging_constant <= 1:
            raise ValueError(f"averaging_constant={averaging_constant} must be within [0, 1]")
        self.moving_average, self.averaging_constant = moving_average, averaging_constant
        self.max_intermediate_outputs = max_intermediate_outputs

    def _new_stat(self):
        return _MinMax(self.moving_average, self.averaging_constant, self.symmetric, self.per_channel)


class PercentileCalibrater(CalibraterBase):
    """Each tensor's range clipped at `percentile` of |x|. Onyx implements onnxruntime's
    symmetric form (a histogram of |x|, create_calibrator's default) only, so
    symmetric defaults to True here and False is refused."""

    method = CalibrationMethod.Percentile

    def __init__(self, model_path, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                 use_external_data_format=False, method="percentile", symmetric=True, num_bins=2048,
                 percentile=99.999):
        if method != "percentile":
            raise ValueError(f"PercentileCalibrater(method={method!r}): only 'percentile' is supported by onyx")
        if not symmetric:
            raise NotImplementedError("PercentileCalibrater(symmetric=False) is not supported by onyx.quantization: "
                                      "it clips at a percentile of |x| (onnxruntime's symmetric=True), not at "
                                      "both tails of a signed histogram")
        super().__init__(model_path, op_types_to_calibrate, augmented_model_path, symmetric, use_external_data_format)
        _Percentile(percentile, num_bins)  # checks the settings now rather than at the first batch
        self.num_bins, self.percentile = num_bins, percentile

    def _new_stat(self):
        return _Percentile(self.percentile, self.num_bins)


def _new_calibrater(model, op_types_to_calibrate, augmented_model_path, method, use_external_data_format, options):
    """The calibrater of `method`, configured from create_calibrator's extra_options keys."""
    method = check_calibrate_method(method)
    if method == CalibrationMethod.MinMax:
        return MinMaxCalibrater(model, op_types_to_calibrate, augmented_model_path,
                                symmetric=options.get("symmetric", False),
                                use_external_data_format=use_external_data_format,
                                moving_average=options.get("moving_average", False),
                                averaging_constant=options.get("averaging_constant", 0.01),
                                max_intermediate_outputs=options.get("max_intermediate_outputs"),
                                per_channel=options.get("per_channel", False))
    return PercentileCalibrater(model, op_types_to_calibrate, augmented_model_path,
                                use_external_data_format=use_external_data_format,
                                symmetric=options.get("symmetric", True), num_bins=options.get("num_bins", 2048),
                                percentile=options.get("percentile", 99.999))


def create_calibrator(model, op_types_to_calibrate=None, augmented_model_path="augmented_model.onnx",
                      calibrate_method=CalibrationMethod.MinMax, use_external_data_format=False, providers=None,
                      extra_options=None):
    """A calibrater for `calibrate_method` over `model` (a path or a ModelProto), ready
    for collect_data(). extra_options as onnxruntime's: MinMax takes symmetric,
    moving_average, averaging_constant, max_intermediate_outputs, per_channel;
    Percentile takes percentile, num_bins, symmetric (True only)."""
    calibrater = _new_calibrater(model, op_types_to_calibrate, augmented_model_path, calibrate_method,
                                 use_external_data_format, extra_options or {})
    _prepare(calibrater, providers)
    return calibrater


def _prepare(calibrater, providers):
    """Makes the calibrated tensors outputs and opens the session on `providers` (default: the CPU)."""
    calibrater.augment_graph()
    if providers:
        calibrater.execution_providers = list(providers)
    calibrater.create_inference_session()


# ----------------------------------------------------------------------------------------------------------------------
# quantize_static's calibration


def float_tensor_names(model):
    """Names of the float tensors in the main graph, from its value infos (a
    calibrater's model carries ONNX shape inference's)."""
    from onnx import TensorProto

    return {name for name, info in _value_infos(model).items() if info.type.tensor_type.elem_type == TensorProto.FLOAT}


def static_calibrater(model, method=CalibrationMethod.MinMax, extra_options=None):
    """The calibrater quantize_static runs, configured from its extra_options
    (Calib*). Its .model is the shape-inferred copy float_tensor_names reads, so
    shape inference runs once."""
    extra = extra_options or {}
    options = {"moving_average": bool(extra.get("CalibMovingAverage", False)),
               "averaging_constant": float(extra.get("CalibMovingAverageConstant", 0.01)),
               "percentile": float(extra.get("CalibPercentile", 99.999))}
    return _new_calibrater(model, None, None, method, False, options)


def collect_ranges(calibrater, tensor_names, data_reader, extra_options=None, providers=None):
    """Runs `calibrater` (a static_calibrater) with Onyx over every feed of
    `data_reader` and returns {tensor name: (min, max)} for `tensor_names`."""
    _check_reader(data_reader)
    calibrater.tensors_to_calibrate = set(tensor_names)
    _prepare(calibrater, providers)
    calibrater.collect_data(data_reader)
    ranges = {name: (float(np.min(data.lowest)), float(np.max(data.highest)))
              for name, data in calibrater.compute_data().items()}
    if (extra_options or {}).get("CalibTensorRangeSymmetric", False):
        ranges = {n: (-max(abs(lo), abs(hi)), max(abs(lo), abs(hi))) for n, (lo, hi) in ranges.items()}
    return ranges
