"""set_default_logger_callback: Onyx's log messages delivered to a Python callable, as onnxruntime's."""

import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from conftest import make_model
from onnx import TensorProto, helper, numpy_helper

import onyx as ort
from onyx import _core


@pytest.fixture(autouse=True)
def default_logging():
    yield
    ort.set_default_logger_callback(None)
    ort.set_default_logger_severity(2)


@pytest.fixture
def warning_model():
    """A model whose initializer 'w' is also a graph input: loading it logs a warning."""
    return make_model(
        [helper.make_node("Add", ["x", "w"], ["y"])],
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("w", TensorProto.FLOAT, [3]),
        ],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.ones(3, np.float32), "w")],
    ).SerializeToString()


def test_session_messages_reach_the_callback(warning_model):
    got = []
    ort.set_default_logger_callback(lambda *args: got.append(args))
    so = ort.SessionOptions()
    so.logid = "mysession"
    ort.InferenceSession(warning_model, so)
    assert len(got) == 1
    severity, category, logid, code_location, message = got[0]
    assert (severity, category, logid) == (2, "onyx", "mysession")
    assert code_location.startswith("session.cc:") and code_location.endswith(" initialize")
    assert "initializers also listed as graph inputs" in message and "w" in message


def test_severity_of_the_callback_and_of_the_session(warning_model):
    got = []
    ort.set_default_logger_callback(lambda *args: got.append(args), 3)  # errors and worse
    ort.InferenceSession(warning_model)
    assert got == []
    so = ort.SessionOptions()
    so.log_severity_level = 1  # the session's own level wins
    ort.InferenceSession(warning_model, so)
    assert [g[0] for g in got] == [2]


def test_none_restores_stderr_and_keeps_the_severity(warning_model, capfd):
    got = []
    ort.set_default_logger_callback(lambda *args: got.append(args), 1)
    ort.set_default_logger_callback(None)
    ort.InferenceSession(warning_model)
    assert got == []
    assert "onyx [warning] " in capfd.readouterr().err
    ort.set_default_logger_callback(None, 4)  # the severity is checked but not set
    with pytest.raises(ValueError):
        ort.set_default_logger_callback(None, 5)


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        ort.set_default_logger_callback(5)
    with pytest.raises(ValueError, match="severity"):
        ort.set_default_logger_callback(print, 7)


def test_messages_from_threads_python_does_not_know_reach_the_main_thread():
    got = []
    ort.set_default_logger_callback(lambda *args: got.append((threading.current_thread().name, args)))
    _core._emit_log_for_test(3, "from a worker", from_native_thread=True)
    deadline = time.monotonic() + 10
    while not got and time.monotonic() < deadline:
        time.sleep(0.001)  # the main thread runs pending calls between bytecodes
    assert got == [("MainThread", (3, "onyx", "test", "_core.cpp _emit_log_for_test", "from a worker"))]


def test_messages_from_python_threads_arrive_on_that_thread():
    got = []
    ort.set_default_logger_callback(lambda *args: got.append((threading.current_thread().name, args[4])))
    t = threading.Thread(target=_core._emit_log_for_test, args=(2, "from a python thread"), name="runner")
    t.start()
    t.join()
    assert got == [("runner", "from a python thread")]


def test_sessions_on_several_threads_log_to_the_callback(warning_model):
    got = []
    lock = threading.Lock()

    def record(*args):
        with lock:
            got.append(args[2])

    ort.set_default_logger_callback(record)

    def load(i):
        so = ort.SessionOptions()
        so.logid = f"s{i}"
        ort.InferenceSession(warning_model, so)  # loads without the GIL; logs take it back

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == ["s0", "s1", "s2", "s3"]


def test_callback_exceptions_go_to_the_unraisable_hook(monkeypatch):
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda info: seen.append(info.exc_value))

    def broken(*args):
        raise ValueError("boom")

    ort.set_default_logger_callback(broken)
    _core._emit_log_for_test(2, "hello")
    assert len(seen) == 1 and str(seen[0]) == "boom"


def test_a_message_the_callback_causes_goes_to_stderr(capfd):
    got = []

    def noisy(*args):
        got.append(args[4])
        _core._emit_log_for_test(2, "nested")

    ort.set_default_logger_callback(noisy)
    _core._emit_log_for_test(2, "outer")
    assert got == ["outer"]
    assert "onyx [warning] nested" in capfd.readouterr().err


def test_callback_arguments_have_onnxruntimes_types():
    # In a fresh process: both loggers are process-wide.
    code = textwrap.dedent(
        """
        import numpy as np, onnxruntime, onyx
        from onnx import helper, numpy_helper, TensorProto
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])
        w = helper.make_tensor_value_info("w", TensorProto.FLOAT, [3])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])
        g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x, w], [y],
                              [numpy_helper.from_array(np.ones(3, np.float32), "w")])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        for mod in (onnxruntime, onyx):
            got = []
            mod.set_default_logger_callback(lambda *a: got.append(a), 2)
            so = mod.SessionOptions()
            so.logid = "sid"
            mod.InferenceSession(m.SerializeToString(), so)
            mod.set_default_logger_callback(None)
            print([type(v).__name__ for v in got[0]], got[0][0], got[0][2])
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == out[1] == "['int', 'str', 'str', 'str', 'str'] 2 sid"
