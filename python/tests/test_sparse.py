"""SparseTensor (COO and CSR on the CPU) and OrtValues holding one, compared with onnxruntime."""

import numpy as np
import onnxruntime
import pytest
from conftest import make_model
from onnx import TensorProto, helper

import onyx as ort
from onyx.capi import onnxruntime_pybind11_state as C

VALUES = np.array([1.0, 2.0, 3.0], dtype=np.float32)
LINEAR = np.array([1, 5, 7], dtype=np.int64)


def _coo(mod, *args):
    return mod.SparseTensor.sparse_coo_from_numpy(*args, mod.OrtDevice.make("cpu", 0))


def _csr(mod, *args):
    return mod.SparseTensor.sparse_csr_from_numpy(*args, mod.OrtDevice.make("cpu", 0))


def test_coo_matches_onnxruntime_and_shares_memory():
    for mod in (ort, onnxruntime):
        st = _coo(mod, [3, 3], VALUES, LINEAR)
        assert str(st.format()) == "OrtSparseFormat.ORT_SPARSE_COO"
        assert st.format() == mod.OrtSparseFormat.ORT_SPARSE_COO
        assert st.dense_shape() == [3, 3]
        assert st.data_type() == "sparse_tensor(float)"
        assert st.device_name() == "cpu"
        assert st.values().tolist() == [1, 2, 3] and st.values().dtype == np.float32
        assert np.shares_memory(st.values(), VALUES)  # numeric values are used in place
        assert st.as_coo_view().indices().tolist() == [1, 5, 7]
        assert np.shares_memory(st.as_coo_view().indices(), LINEAR)
        with pytest.raises(RuntimeError, match="does not contain CSR"):
            st.as_csrc_view()
        with pytest.raises(RuntimeError, match="does not contain BlockSparse"):
            st.as_blocksparse_view()
        with pytest.raises(RuntimeError):
            st.to_cuda(mod.OrtDevice.make("cuda", 0))


def test_coo_coordinates_and_int32_indices():
    coords = np.array([[0, 1], [1, 2], [2, 1]])
    for mod in (ort, onnxruntime):
        assert _coo(mod, np.array([3, 3]), VALUES, coords).as_coo_view().indices().tolist() == coords.tolist()
        assert _coo(mod, [3, 3], VALUES, LINEAR.astype(np.int32)).as_coo_view().indices().tolist() == [1, 5, 7]
    # Coordinates of any rank ([nnz, rank]), which onnxruntime's Python API limits to 2-D.
    st = _coo(ort, [2, 2, 2], VALUES, np.array([[0, 0, 1], [1, 0, 0], [1, 1, 1]]))
    assert st.as_coo_view().indices().shape == (3, 3)


def test_csr_matches_onnxruntime():
    inner, outer = np.array([1, 2, 1], dtype=np.int64), np.array([0, 1, 2, 3], dtype=np.int64)
    for mod in (ort, onnxruntime):
        st = _csr(mod, np.array([3, 3], dtype=np.int64), VALUES, inner, outer)
        assert str(st.format()) == "OrtSparseFormat.ORT_SPARSE_CSRC"
        assert st.dense_shape() == [3, 3]
        assert st.as_csrc_view().inner().tolist() == [1, 2, 1]
        assert st.as_csrc_view().outer().tolist() == [0, 1, 2, 3]
        assert st.values().tolist() == [1, 2, 3]
        with pytest.raises(RuntimeError, match="does not contain COO"):
            st.as_coo_view()


def test_string_values_are_copied():
    words = np.array(["a", "bc"])
    for mod in (ort, onnxruntime):
        st = _coo(mod, [2, 2], words, np.array([0, 3]))
        assert st.values().tolist() == ["a", "bc"] and st.data_type() == "sparse_tensor(string)"


@pytest.mark.parametrize(
    "args",
    [
        ([3, 3], VALUES, np.array([1, 5])),  # too few indices
        ([3, 3], VALUES.reshape(3, 1), LINEAR),  # values not 1-D
        ([3, 3], VALUES, np.array([[0, 1], [1, 2]])),  # too few coordinates
    ],
)
def test_coo_errors_like_onnxruntime(args):
    with pytest.raises(RuntimeError):
        _coo(onnxruntime, *args)
    with pytest.raises(RuntimeError, match="sparse_coo_from_numpy: "):
        _coo(ort, *args)


def test_coo_indices_outside_the_shape_are_refused():
    with pytest.raises(RuntimeError, match="linear index 9 .* outside the dense shape"):
        _coo(ort, [3, 3], VALUES, np.array([1, 5, 9]))
    with pytest.raises(RuntimeError, match="coordinate 3 of value 2 is outside dimension 1"):
        _coo(ort, [3, 3], VALUES, np.array([[0, 1], [1, 2], [2, 3]]))
    with pytest.raises(RuntimeError, match="must hold integers"):
        _coo(ort, [3, 3], VALUES, np.array([1.0, 5.0, 7.0]))


@pytest.mark.parametrize(
    "args",
    [
        ([3, 3], VALUES, np.array([1, 2, 1]), np.array([0, 1, 2])),  # outer too short
        ([3, 3], VALUES, np.array([1, 2]), np.array([0, 1, 2, 3])),  # inner too short
        ([3, 3, 1], VALUES, np.array([1, 2, 1]), np.array([0, 1, 2, 3])),  # not 2-D
    ],
)
def test_csr_errors_like_onnxruntime(args):
    with pytest.raises(RuntimeError):
        _csr(onnxruntime, *args)
    with pytest.raises(RuntimeError, match="sparse_csr_from_numpy: "):
        _csr(ort, *args)


def test_csr_inconsistent_indices_are_refused():
    with pytest.raises(RuntimeError, match="inner index 3 .* outside the 3 columns"):
        _csr(ort, [3, 3], VALUES, np.array([1, 3, 1]), np.array([0, 1, 2, 3]))
    with pytest.raises(RuntimeError, match="must not decrease"):
        _csr(ort, [3, 3], VALUES, np.array([1, 2, 1]), np.array([0, 2, 1, 3]))
    with pytest.raises(RuntimeError, match="end at the number of values"):
        _csr(ort, [3, 3], VALUES, np.array([1, 2, 1]), np.array([0, 1, 2, 2]))


def test_sparse_tensor_on_a_device_is_refused():
    with pytest.raises(RuntimeError):
        onnxruntime.SparseTensor.sparse_coo_from_numpy([3, 3], VALUES, LINEAR, onnxruntime.OrtDevice.make("cuda", 0))
    with pytest.raises(RuntimeError, match="Onyx keeps sparse tensors on the CPU, not on device 'cuda'"):
        ort.SparseTensor.sparse_coo_from_numpy([3, 3], VALUES, LINEAR, ort.OrtDevice.make("cuda", 0))


def test_ortvalue_holding_a_sparse_tensor_matches_onnxruntime():
    for mod in (ort, onnxruntime):
        ov = mod.OrtValue.ort_value_from_sparse_tensor(_coo(mod, [3, 3], VALUES, LINEAR))
        assert ov.is_sparse_tensor() and not ov.is_tensor() and ov.has_value()
        assert ov.data_type() == "sparse_tensor(float)"
        assert ov.shape() == [3, 3] and ov.element_type() == 1
        with pytest.raises(RuntimeError):
            ov.numpy()
        back = ov.as_sparse_tensor()
        assert back.values().tolist() == [1, 2, 3] and back.dense_shape() == [3, 3]
        dense = mod.OrtValue.ortvalue_from_numpy(np.ones(2, np.float32))
        assert not dense.is_sparse_tensor()
        with pytest.raises(RuntimeError, match="does not contain"):
            dense.as_sparse_tensor()


def test_sparse_feed_to_a_dense_input_is_invalid_argument():
    model = make_model(
        [helper.make_node("Relu", ["x"], ["y"])],
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 3])],
    ).SerializeToString()
    for mod in (ort, onnxruntime):
        sess = mod.InferenceSession(model)
        ov = mod.OrtValue.ort_value_from_sparse_tensor(_coo(mod, [3, 3], VALUES, LINEAR))
        invalid = mod.capi.onnxruntime_pybind11_state.InvalidArgument
        with pytest.raises(invalid, match="sparse tensor"):
            sess.run(None, {"x": ov})
        with pytest.raises(invalid, match="sparse tensor"):
            sess.run_with_ort_values(None, {"x": ov})
    # A SparseTensor itself as a feed: onnxruntime says it cannot handle the object; Onyx says why.
    with pytest.raises(C.InvalidArgument, match="input 'x' expects tensor\\(float\\) but received a sparse tensor"):
        ort.InferenceSession(model).run(None, {"x": _coo(ort, [3, 3], VALUES, LINEAR)})
