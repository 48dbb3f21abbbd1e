"""Calibration: run the float model with Onyx on the user's data and record
the range of every activation the quantizer needs."""
import abc
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

    def set_range(self, start_index: int, end_index: int):
        raise NotImplementedError


class _MinMax:
    def __init__(self, moving_average=False, constant=0.01):
        self.lo = self.hi = None
        self.moving_average, self.constant = moving_average, constant

    def add(self, x):
        lo, hi = float(x.min()), float(x.max())
        if self.lo is None:
            self.lo, self.hi = lo, hi
        elif self.moving_average:
            self.lo += self.constant * (lo - self.lo)
            self.hi += self.constant * (hi - self.hi)
        else:
            self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)

    def range(self):
        return self.lo, self.hi


class _Percentile:
    """Clips each side of the range at a percentile of |x|, from a histogram that
    doubles its span (merging bin pairs) when larger values arrive, so memory stays
    constant however many batches are fed."""

    BINS = 2048

    def __init__(self, percentile):
        self.percentile = percentile
        self.minmax = _MinMax()
        self.hist = np.zeros(self.BINS, np.int64)
        self.span = 0.0

    def add(self, x):
        self.minmax.add(x)
        a = np.abs(x.astype(np.float32, copy=False)).ravel()
        top = float(a.max()) if a.size else 0.0
        if self.span == 0.0:
            self.span = top if top > 0 else 1.0
        while top > self.span:
            merged = self.hist.reshape(-1, 2).sum(axis=1)
            self.hist = np.concatenate([merged, np.zeros(self.BINS // 2, np.int64)])
            self.span *= 2
        self.hist += np.histogram(a, bins=self.BINS, range=(0.0, self.span))[0]

    def range(self):
        lo, hi = self.minmax.range()
        cdf = np.cumsum(self.hist)
        if cdf[-1] == 0:
            return lo, hi
        k = int(np.searchsorted(cdf, cdf[-1] * self.percentile / 100.0))
        limit = (k + 1) * self.span / self.BINS
        return max(lo, -limit), min(hi, limit)


def float_tensor_names(model):
    """Names of the float tensors in the main graph, found by ONNX shape inference."""
    import onnx
    from onnx import TensorProto

    try:
        inferred = onnx.shape_inference.infer_shapes(model)
    except Exception:  # noqa: BLE001 - inference is a help, the graph inputs still count
        inferred = model
    names = set()
    for v in list(inferred.graph.input) + list(inferred.graph.value_info) + list(inferred.graph.output):
        if v.type.tensor_type.elem_type == TensorProto.FLOAT:
            names.add(v.name)
    return names


def collect_ranges(model, tensor_names, data_reader, method=CalibrationMethod.MinMax, extra_options=None,
                   providers=None):
    """Runs `model` with Onyx over every feed of `data_reader` and returns
    {tensor name: (min, max)} for `tensor_names`."""
    import onnx

    from .. import InferenceSession, SessionOptions

    extra = extra_options or {}
    if isinstance(method, str):
        method = CalibrationMethod[method]
    if method == CalibrationMethod.MinMax:
        make = lambda: _MinMax(bool(extra.get("CalibMovingAverage", False)),  # noqa: E731
                               float(extra.get("CalibMovingAverageConstant", 0.01)))
    elif method == CalibrationMethod.Percentile:
        make = lambda: _Percentile(float(extra.get("CalibPercentile", 99.999)))  # noqa: E731
    else:
        raise ValueError(f"calibrate_method={method} is not supported by onyx.quantization: "
                         "use CalibrationMethod.MinMax or CalibrationMethod.Percentile")
    if data_reader is None or not callable(getattr(data_reader, "get_next", None)):
        raise ValueError("calibration_data_reader must be a CalibrationDataReader (an object with get_next())")

    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    existing = {o.name for o in probe.graph.output}
    wanted = [n for n in tensor_names if n not in existing]
    for name in wanted:
        probe.graph.output.append(onnx.helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    sess = InferenceSession(probe.SerializeToString(), SessionOptions(), providers=providers or ["CPUExecutionProvider"])
    input_names = [i.name for i in sess.get_inputs()]
    out_names = [o.name for o in sess.get_outputs()]
    stats = {name: make() for name in tensor_names}
    batches = 0
    while True:
        feed = data_reader.get_next()
        if feed is None:
            break
        if not isinstance(feed, dict):
            raise ValueError(f"calibration_data_reader.get_next() must return a dict of inputs, got {type(feed).__name__}")
        unknown = sorted(set(feed) - set(input_names))
        missing = sorted(set(input_names) - set(feed))
        if unknown or missing:
            raise ValueError(f"calibration feed #{batches} does not match the model inputs {input_names}: "
                             f"unknown {unknown}, missing {missing}")
        for name, value in zip(out_names, sess.run(out_names, feed)):
            if name in stats:
                stats[name].add(np.asarray(value))
        batches += 1
    if batches == 0:
        raise ValueError("calibration_data_reader yielded no data: get_next() returned None at once")
    ranges = {name: s.range() for name, s in stats.items()}
    if extra.get("CalibTensorRangeSymmetric", False):
        ranges = {n: (-max(abs(lo), abs(hi)), max(abs(lo), abs(hi))) for n, (lo, hi) in ranges.items()}
    return ranges
