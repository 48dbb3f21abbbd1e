// The compiled half of the `onyx` Python package: sessions, values and the
// numpy bridge. The onnxruntime-shaped API on top lives in onyx/__init__.py
// and its helpers.
//
// Speed notes: contiguous numpy inputs are wrapped in place (the Tensor holds
// a reference on the array), outputs become numpy arrays over the output
// tensor's own memory (a capsule owns the Tensor), and run() releases the GIL.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "onyx/logging.h"
#include "onyx/session.h"

namespace py = pybind11;

namespace {

using onyx::DataType;
using onyx::ErrorCode;
using onyx::Shape;
using onyx::Tensor;
using onyx::TypeInfo;
using onyx::Value;

// ---------------------------------------------------------------- errors

// Exception classes named as onnxruntime names them; their module is
// onyx.capi.onnxruntime_pybind11_state (re-exported there from Python).
struct ErrorClass {
  ErrorCode code;
  const char* py_name;
  int ort_code;  // onnxruntime's StatusCode number, kept so messages read the same
  const char* ort_name;
};
constexpr ErrorClass kErrorClasses[] = {
    {ErrorCode::Fail, "Fail", 1, "FAIL"},
    {ErrorCode::InvalidArgument, "InvalidArgument", 2, "INVALID_ARGUMENT"},
    {ErrorCode::NoSuchFile, "NoSuchFile", 3, "NO_SUCHFILE"},
    {ErrorCode::NoModel, "NoModel", 4, "NO_MODEL"},
    {ErrorCode::RuntimeException, "RuntimeException", 6, "RUNTIME_EXCEPTION"},
    {ErrorCode::InvalidProtobuf, "InvalidProtobuf", 7, "INVALID_PROTOBUF"},
    {ErrorCode::NotImplemented, "NotImplemented", 9, "NOT_IMPLEMENTED"},
    {ErrorCode::InvalidGraph, "InvalidGraph", 10, "INVALID_GRAPH"},
};
constexpr size_t kNumErrorClasses = sizeof(kErrorClasses) / sizeof(kErrorClasses[0]);
PyObject* g_error_types[kNumErrorClasses] = {};
// Classes onnxruntime also defines; Onyx never raises them but code may catch them.
const char* const kExtraErrorNames[] = {"EngineError", "ModelLoaded", "EPFail", "NotFound",
                                        "ModelLoadCanceled", "ModelRequiresCompilation", "DeviceReset"};

void set_onyx_error(ErrorCode code, const std::string& msg) {
  for (size_t i = 0; i < kNumErrorClasses; ++i) {
    if (kErrorClasses[i].code == code) {
      std::string text = "[ONNXRuntimeError] : " + std::to_string(kErrorClasses[i].ort_code) + " : " +
                         kErrorClasses[i].ort_name + " : " + msg;
      PyErr_SetString(g_error_types[i], text.c_str());
      return;
    }
  }
  PyErr_SetString(g_error_types[0], msg.c_str());
}

[[noreturn]] void raise_onyx(ErrorCode code, const std::string& msg) {
  set_onyx_error(code, msg);
  throw py::error_already_set();
}

// ---------------------------------------------------------------- dtypes

DataType dtype_from_numpy(const py::dtype& dt) {
  const char kind = dt.kind();
  const size_t size = static_cast<size_t>(dt.itemsize());
  switch (kind) {
    case 'b': return DataType::Bool;
    case 'f':
      if (size == 2) return DataType::Float16;
      if (size == 4) return DataType::Float;
      if (size == 8) return DataType::Double;
      break;
    case 'i':
      if (size == 1) return DataType::Int8;
      if (size == 2) return DataType::Int16;
      if (size == 4) return DataType::Int32;
      if (size == 8) return DataType::Int64;
      break;
    case 'u':
      if (size == 1) return DataType::UInt8;
      if (size == 2) return DataType::UInt16;
      if (size == 4) return DataType::UInt32;
      if (size == 8) return DataType::UInt64;
      break;
    case 'c':
      if (size == 8) return DataType::Complex64;
      if (size == 16) return DataType::Complex128;
      break;
    case 'U': case 'S': case 'O': return DataType::String;
    case 'V': {
      // ml_dtypes' types are void-kind dtypes with their own names.
      std::string name = py::str(dt.attr("name"));
      if (name == "bfloat16") return DataType::BFloat16;
      if (name == "float8_e4m3fn") return DataType::Float8E4M3FN;
      if (name == "float8_e4m3fnuz") return DataType::Float8E4M3FNUZ;
      if (name == "float8_e5m2") return DataType::Float8E5M2;
      if (name == "float8_e5m2fnuz") return DataType::Float8E5M2FNUZ;
      break;
    }
    default: break;
  }
  raise_onyx(ErrorCode::InvalidArgument,
             "numpy dtype '" + std::string(py::str(dt)) + "' has no ONNX element type");
}

// numpy dtypes per DataType, made once (py::dtype("float32") parses a string).
std::vector<py::object>* g_np_dtypes = nullptr;

py::dtype numpy_dtype(DataType t) {
  auto idx = static_cast<size_t>(t);
  if (g_np_dtypes && idx < g_np_dtypes->size() && (*g_np_dtypes)[idx])
    return py::reinterpret_borrow<py::dtype>((*g_np_dtypes)[idx]);
  py::dtype dt;
  switch (t) {
    case DataType::Float: dt = py::dtype("float32"); break;
    case DataType::Double: dt = py::dtype("float64"); break;
    case DataType::Float16: dt = py::dtype("float16"); break;
    case DataType::Int8: dt = py::dtype("int8"); break;
    case DataType::Int16: dt = py::dtype("int16"); break;
    case DataType::Int32: dt = py::dtype("int32"); break;
    case DataType::Int64: dt = py::dtype("int64"); break;
    case DataType::UInt8: dt = py::dtype("uint8"); break;
    case DataType::UInt16: dt = py::dtype("uint16"); break;
    case DataType::UInt32: dt = py::dtype("uint32"); break;
    case DataType::UInt64: dt = py::dtype("uint64"); break;
    case DataType::Bool: dt = py::dtype("bool"); break;
    case DataType::Complex64: dt = py::dtype("complex64"); break;
    case DataType::Complex128: dt = py::dtype("complex128"); break;
    case DataType::String: dt = py::dtype("object"); break;
    case DataType::BFloat16:
    case DataType::Float8E4M3FN:
    case DataType::Float8E4M3FNUZ:
    case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ:
      // With ml_dtypes installed these get their own numpy types; without
      // it the raw bits come back as unsigned integers.
      try {
        py::module_ ml = py::module_::import("ml_dtypes");
        dt = py::dtype::from_args(ml.attr(onyx::dtype_name(t).c_str()));
      } catch (py::error_already_set&) {
        dt = py::dtype(onyx::dtype_size(t) == 2 ? "uint16" : "uint8");
      }
      break;
    default:
      raise_onyx(ErrorCode::NotImplemented,
                 "element type " + onyx::dtype_name(t) + " cannot be converted to numpy");
  }
  if (g_np_dtypes && idx < g_np_dtypes->size()) (*g_np_dtypes)[idx] = dt;
  return dt;
}

DataType dtype_from_py(py::handle element_type) {
  // An ONNX element type number, or anything np.dtype() accepts (np.float32, 'float32', ...).
  if (PyLong_Check(element_type.ptr()) && !PyBool_Check(element_type.ptr())) {
    long v = PyLong_AsLong(element_type.ptr());
    if (v <= 0 || v > static_cast<long>(DataType::Int4))
      raise_onyx(ErrorCode::InvalidArgument, "unknown ONNX element type " + std::to_string(v));
    return static_cast<DataType>(v);
  }
  return dtype_from_numpy(py::dtype::from_args(py::reinterpret_borrow<py::object>(element_type)));
}

// ---------------------------------------------------------------- numpy <-> Tensor

// A Tensor holder for memory owned by a Python object: holds a reference and
// gives it back under the GIL, whichever thread drops the last copy.
std::shared_ptr<void> py_owner(py::handle obj) {
  obj.inc_ref();
  return std::shared_ptr<void>(obj.ptr(), [](void* p) {
    py::gil_scoped_acquire gil;
    Py_DECREF(static_cast<PyObject*>(p));
  });
}

Shape shape_of(const py::array& arr) {
  Shape s(static_cast<size_t>(arr.ndim()));
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<int64_t>(arr.shape(static_cast<py::ssize_t>(i)));
  return s;
}

std::vector<py::ssize_t> np_shape(const Shape& s) { return std::vector<py::ssize_t>(s.begin(), s.end()); }

Tensor strings_from_array(const py::array& arr) {
  Tensor t(DataType::String, shape_of(arr));
  py::list items = arr.attr("ravel")().attr("tolist")();
  std::string* out = t.data<std::string>();
  const size_t n = static_cast<size_t>(t.numel());
  for (size_t i = 0; i < n; ++i) {
    PyObject* item = PyList_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i));
    if (PyUnicode_Check(item)) {
      Py_ssize_t len = 0;
      const char* s = PyUnicode_AsUTF8AndSize(item, &len);
      if (!s) throw py::error_already_set();
      out[i].assign(s, static_cast<size_t>(len));
    } else if (PyBytes_Check(item)) {
      out[i].assign(PyBytes_AS_STRING(item), static_cast<size_t>(PyBytes_GET_SIZE(item)));
    } else {
      out[i] = std::string(py::str(item));
    }
  }
  return t;
}

// A numpy array (or anything np.asarray takes) as a Tensor: contiguous
// numeric arrays are wrapped in place, everything else is copied once.
// `copy` forces a private copy (OrtValue.ortvalue_from_numpy does not).
Tensor tensor_from_py(py::handle obj, bool copy = false) {
  py::array arr = py::array::ensure(obj, py::array::c_style);
  if (!arr) {
    // ensure() refuses some inputs (e.g. ragged lists); let numpy explain.
    throw py::error_already_set();
  }
  py::dtype dt = arr.dtype();
  DataType type = dtype_from_numpy(dt);
  if (type == DataType::String) return strings_from_array(arr);
  const char order = dt.byteorder();
  if (order == '>') {  // big-endian data: convert to native order
    arr = py::array::ensure(arr.attr("astype")(dt.attr("newbyteorder")("=")), py::array::c_style);
  }
  if (copy) {
    Tensor t(type, shape_of(arr));
    if (t.nbytes()) std::memcpy(t.raw(), arr.data(), t.nbytes());
    return t;
  }
  return Tensor::wrap(type, shape_of(arr), const_cast<void*>(arr.data()), py_owner(arr));
}

py::object strings_to_numpy(const Tensor& t) {
  py::array out(py::dtype("object"), np_shape(t.shape()));
  const std::string* s = t.data<std::string>();
  const size_t n = static_cast<size_t>(t.numel());
  auto** slots = reinterpret_cast<PyObject**>(out.mutable_data());
  for (size_t i = 0; i < n; ++i) {
    PyObject* u = PyUnicode_DecodeUTF8(s[i].data(), static_cast<Py_ssize_t>(s[i].size()), "surrogateescape");
    if (!u) throw py::error_already_set();
    Py_XDECREF(slots[i]);
    slots[i] = u;
  }
  return out;
}

// A Tensor as a numpy array over the same memory; the capsule keeps a Tensor
// (and so its storage) alive as long as the array. `copy` makes a private copy
// instead, for tensors whose memory is shared with something else.
py::object tensor_to_numpy(const Tensor& t, bool copy) {
  if (t.dtype() == DataType::String) return strings_to_numpy(t);
  py::dtype dt = numpy_dtype(t.dtype());
  if (copy || t.numel() == 0 || !t.raw()) {
    py::array out(dt, np_shape(t.shape()));
    if (t.nbytes()) std::memcpy(out.mutable_data(), t.raw(), t.nbytes());
    return out;
  }
  auto* keep = new Tensor(t);
  py::capsule base(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array(dt, np_shape(t.shape()), {}, const_cast<void*>(t.raw()), base);
}

// Whether an output tensor's memory is shared with something that outlives
// the call (an initializer, a feed, another output): those are copied, so
// every returned array is the caller's own, as in onnxruntime.
bool shared_storage(const Tensor& t) { return t.holder().use_count() > 1; }

// Element i of a tensor as a Python scalar (int, float, str or bool).
py::object scalar_to_py(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::String: {
      const std::string& s = t.data<std::string>()[i];
      PyObject* u = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "surrogateescape");
      if (!u) throw py::error_already_set();
      return py::reinterpret_steal<py::object>(u);
    }
    case DataType::Float: return py::float_(t.data<float>()[i]);
    case DataType::Double: return py::float_(t.data<double>()[i]);
    case DataType::Bool: return py::bool_(t.data<bool>()[i]);
    default:
      if (onyx::dtype_is_float(t.dtype())) return py::float_(t.float_at(i));
      return py::int_(t.int_at(i));
  }
}

// A map as a dict of Python scalars, keys in ascending order (as onnxruntime's).
py::dict map_to_py(const onyx::Map& m) {
  py::dict out;
  for (int64_t i = 0; i < m.size(); ++i) out[scalar_to_py(m.keys, i)] = scalar_to_py(m.values, i);
  return out;
}

// A dict as the map an input of type `type` (a TypeInfo of kind Map) wants.
onyx::Map map_from_py(py::handle obj, const TypeInfo& type, const std::string& input) {
  const std::string where = "input '" + input + "': ";
  if (!PyDict_Check(obj.ptr()))
    raise_onyx(ErrorCode::InvalidArgument, where + "expected a dict for " + type.to_string() + ", got " +
                                               std::string(py::str(obj.get_type().attr("__name__"))));
  py::dict d = py::reinterpret_borrow<py::dict>(obj);
  py::module_ np = py::module_::import("numpy");
  auto as_array = [&](py::list items, DataType dtype, const char* what) {
    py::object np_type = dtype == DataType::String ? py::object(py::str("object")) : py::object(numpy_dtype(dtype));
    try {
      return tensor_from_py(np.attr("asarray")(items, np_type), true);
    } catch (py::error_already_set& e) {
      raise_onyx(ErrorCode::InvalidArgument, where + "the dict's " + what + " are not all " + dtype_name(dtype) +
                                                 " as " + type.to_string() + " needs: " + e.what());
    }
  };
  DataType value_type = type.inner ? type.inner->elem_type : DataType::Float;
  if (type.elem_type == DataType::String)
    for (auto key : d)
      if (!PyUnicode_Check(key.first.ptr()))
        raise_onyx(ErrorCode::InvalidArgument, where + "the dict's keys must be str for " + type.to_string() + ", got " +
                                                   std::string(py::str(key.first.get_type().attr("__name__"))));
  Tensor keys = as_array(py::list(d.attr("keys")()), type.elem_type, "keys");
  Tensor values = as_array(py::list(d.attr("values")()), value_type, "values");
  keys = keys.reshaped({keys.numel()});
  values = values.reshaped({values.numel()});
  return onyx::make_map(std::move(keys), std::move(values));
}

// A list of dicts; maps sharing their keys (ZipMap's) make each key object once.
py::list map_sequence_to_py(const onyx::MapSequence& maps) {
  py::list out;
  if (!maps.shares_keys()) {
    for (auto& m : maps.items) out.append(map_to_py(m));
    return out;
  }
  const int64_t width = maps.shared_keys.numel();
  std::vector<py::object> keys;
  for (int64_t k = 0; k < width; ++k) keys.push_back(scalar_to_py(maps.shared_keys, k));
  for (int64_t i = 0; i < maps.size(); ++i) {
    py::dict d;
    for (int64_t k = 0; k < width; ++k) d[keys[k]] = scalar_to_py(maps.rows, i * width + k);
    out.append(std::move(d));
  }
  return out;
}

py::object value_to_py(const Value& v, bool private_copy) {
  if (v.is_tensor()) return tensor_to_numpy(v.tensor(), private_copy && shared_storage(v.tensor()));
  if (v.is_sequence()) {
    py::list out;
    for (auto& item : v.sequence().items) out.append(tensor_to_numpy(item, private_copy && shared_storage(item)));
    return out;
  }
  if (v.is_optional()) {
    auto& c = v.optional().content;
    if (!c) return py::none();
    return value_to_py(*c, private_copy);
  }
  if (v.is_map()) return map_to_py(v.map());
  if (v.is_map_sequence()) return map_sequence_to_py(v.map_sequence());
  return py::none();
}

// ---------------------------------------------------------------- OrtValue

struct PySparseTensor;

struct PyValue {
  Value value;
  // Set when the OrtValue holds a sparse tensor (OrtValue.ort_value_from_sparse_tensor); `value` is then empty.
  std::shared_ptr<PySparseTensor> sparse;

  const Tensor& tensor() const {
    if (sparse) raise_onyx(ErrorCode::InvalidArgument, "the OrtValue holds a sparse tensor, not a dense tensor");
    if (!value.is_tensor()) raise_onyx(ErrorCode::InvalidArgument, "the OrtValue holds a " + value.kind_name() + ", not a tensor");
    return value.tensor();
  }
};

// ---------------------------------------------------------------- SparseTensor

// onnxruntime's SparseTensor, on the CPU: COO (values + linear indices or
// coordinates) or CSR (values + inner / outer indices) over a dense shape.
// Numeric values and the int64 indices stay in the caller's numpy arrays (no
// copy), as in onnxruntime; strings are copied.
struct PySparseTensor {
  enum Format { kUndefined = 0, kCoo = 1, kCsrc = 2, kBlockSparse = 4 };
  Format format = kUndefined;
  std::vector<int64_t> dense_shape;
  Tensor values;        // 1-D, nnz
  Tensor coo_indices;   // COO: [nnz] linear or [nnz, rank] coordinates
  Tensor inner, outer;  // CSR: column of each value; where each row starts ([rows + 1])

  std::string data_type() const { return "sparse_tensor(" + onyx::dtype_name(values.dtype()) + ")"; }
};

// Sparse tensor errors are RuntimeError, as onnxruntime raises them.
[[noreturn]] void sparse_error(const std::string& msg) {
  throw std::runtime_error(msg);
}

std::vector<int64_t> dense_shape_from_py(py::handle obj, const char* what) {
  py::array_t<int64_t, py::array::c_style | py::array::forcecast> arr(py::reinterpret_borrow<py::object>(obj));
  if (arr.ndim() != 1) sparse_error(std::string(what) + ": dense_shape must be 1-D");
  std::vector<int64_t> shape(arr.data(), arr.data() + arr.size());
  for (int64_t d : shape)
    if (d < 0)
      sparse_error(std::string(what) + ": dense_shape " + onyx::shape_to_string(shape) +
                   " has a negative dimension");
  return shape;
}

// Integer indices as an int64 tensor over the array (copied only when the array is another type or not contiguous).
Tensor index_tensor_from_py(py::handle obj, const char* what, const char* name) {
  py::module_ np = py::module_::import("numpy");
  py::object arr = np.attr("asarray")(obj);
  std::string kind = py::str(arr.attr("dtype").attr("kind"));
  if (kind != "i" && kind != "u" && !(kind == "f" && py::len(arr) == 0))
    sparse_error(std::string(what) + ": " + name + " must hold integers, got " +
                 std::string(py::str(arr.attr("dtype"))));
  return tensor_from_py(np.attr("ascontiguousarray")(arr, "int64"));
}

Tensor sparse_values_from_py(py::handle obj, const char* what) {
  Tensor values = tensor_from_py(obj);
  if (values.shape().size() != 1)
    sparse_error(std::string(what) + ": values must be 1-D, got shape " + onyx::shape_to_string(values.shape()));
  return values;
}

std::shared_ptr<PySparseTensor> sparse_coo(py::handle dense_shape, py::handle values, py::handle indices) {
  const char* what = "sparse_coo_from_numpy";
  auto st = std::make_shared<PySparseTensor>();
  st->format = PySparseTensor::kCoo;
  st->dense_shape = dense_shape_from_py(dense_shape, what);
  st->values = sparse_values_from_py(values, what);
  st->coo_indices = index_tensor_from_py(indices, what, "coo_indices");
  const int64_t nnz = st->values.numel();
  const int64_t rank = static_cast<int64_t>(st->dense_shape.size());
  const Shape& ishape = st->coo_indices.shape();
  const int64_t* idx = st->coo_indices.data<int64_t>();
  const std::string dense = onyx::shape_to_string(st->dense_shape);
  if (ishape.size() == 1 && ishape[0] == nnz) {
    const int64_t total = onyx::shape_numel(st->dense_shape);
    for (int64_t i = 0; i < nnz; ++i)
      if (idx[i] < 0 || idx[i] >= total)
        sparse_error(std::string(what) + ": linear index " + std::to_string(idx[i]) + " (value " + std::to_string(i) +
                     ") is outside the dense shape " + dense + " (" + std::to_string(total) + " elements)");
  } else if (ishape.size() == 2 && ishape[0] == nnz && ishape[1] == rank) {
    for (int64_t i = 0; i < nnz; ++i)
      for (int64_t d = 0; d < rank; ++d)
        if (idx[i * rank + d] < 0 || idx[i * rank + d] >= st->dense_shape[d])
          sparse_error(std::string(what) + ": coordinate " + std::to_string(idx[i * rank + d]) + " of value " +
                       std::to_string(i) + " is outside dimension " + std::to_string(d) + " of the dense shape " +
                       dense);
  } else {
    sparse_error(
        std::string(what) + ": coo_indices must be [nnz] (linear indices) or [nnz, rank] (coordinates), i.e. [" +
        std::to_string(nnz) + "] or [" + std::to_string(nnz) + ", " + std::to_string(rank) + "] for " +
        std::to_string(nnz) + " values and the dense shape " + dense + "; got " + onyx::shape_to_string(ishape));
  }
  return st;
}

std::shared_ptr<PySparseTensor> sparse_csr(py::handle dense_shape, py::handle values, py::handle inner_indices,
                                           py::handle outer_indices) {
  const char* what = "sparse_csr_from_numpy";
  auto st = std::make_shared<PySparseTensor>();
  st->format = PySparseTensor::kCsrc;
  st->dense_shape = dense_shape_from_py(dense_shape, what);
  const std::string dense = onyx::shape_to_string(st->dense_shape);
  if (st->dense_shape.size() != 2) sparse_error(std::string(what) + ": CSR needs a 2-D dense shape, got " + dense);
  st->values = sparse_values_from_py(values, what);
  st->inner = index_tensor_from_py(inner_indices, what, "inner_indices");
  st->outer = index_tensor_from_py(outer_indices, what, "outer_indices");
  const int64_t nnz = st->values.numel(), rows = st->dense_shape[0], cols = st->dense_shape[1];
  if (st->inner.shape() != Shape{nnz})
    sparse_error(std::string(what) + ": inner_indices must be 1-D with one column index per value ([" +
                 std::to_string(nnz) + "]), got " + onyx::shape_to_string(st->inner.shape()));
  // onnxruntime also takes no outer indices at all for a tensor without values.
  const bool empty_outer = nnz == 0 && st->outer.numel() == 0;
  if (!empty_outer && st->outer.shape() != Shape{rows + 1})
    sparse_error(std::string(what) + ": outer_indices must be 1-D with rows + 1 = " + std::to_string(rows + 1) +
                 " entries, got " + onyx::shape_to_string(st->outer.shape()));
  const int64_t* in = st->inner.data<int64_t>();
  for (int64_t i = 0; i < nnz; ++i)
    if (in[i] < 0 || in[i] >= cols)
      sparse_error(std::string(what) + ": inner index " + std::to_string(in[i]) + " (value " + std::to_string(i) +
                   ") is outside the " + std::to_string(cols) + " columns of the dense shape " + dense);
  if (!empty_outer) {
    const int64_t* out = st->outer.data<int64_t>();
    if (out[0] != 0 || out[rows] != nnz)
      sparse_error(std::string(what) + ": outer_indices must start at 0 and end at the number of values (" +
                   std::to_string(nnz) + "), got " + std::to_string(out[0]) + " ... " + std::to_string(out[rows]));
    for (int64_t r = 0; r < rows; ++r)
      if (out[r + 1] < out[r])
        sparse_error(std::string(what) + ": outer_indices must not decrease, got " + std::to_string(out[r]) + " then " +
                     std::to_string(out[r + 1]) + " at row " + std::to_string(r));
  }
  return st;
}

// The views onnxruntime returns from as_coo_view() / as_csrc_view(): numpy arrays over the index buffers.
struct PySparseCooView {
  std::shared_ptr<PySparseTensor> tensor;
};
struct PySparseCsrView {
  std::shared_ptr<PySparseTensor> tensor;
};

void check_cpu(const std::string& device_type) {
  std::string d;
  for (char c : device_type) d += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  // 'cuda' is accepted in a build with the CUDA provider: the value is kept in
  // host memory and copied to the device by the session that reads it.
  if (d == "cuda" && onyx::available_providers().front() == "CUDAExecutionProvider") return;
  if (d != "cpu")
    raise_onyx(ErrorCode::InvalidArgument,
               "device '" + device_type + "' is not available in this build of Onyx (only 'cpu')");
}

std::string type_string(const Value& v) {
  if (v.is_tensor()) return "tensor(" + onyx::dtype_name(v.tensor().dtype()) + ")";
  if (v.is_sequence()) return "seq(tensor(" + onyx::dtype_name(v.sequence().elem_type) + "))";
  if (v.is_optional()) return "optional(" + v.optional().type.to_string() + ")";
  if (v.is_map() || v.is_map_sequence()) return v.kind_name();
  return "";
}

// Element types numpy holds as themselves (not bit patterns in unsigned ints).
bool has_native_numpy_dtype(DataType t) {
  switch (t) {
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::Int8:
    case DataType::Int16: case DataType::Int32: case DataType::Int64: case DataType::UInt8:
    case DataType::UInt16: case DataType::UInt32: case DataType::UInt64: case DataType::Bool:
    case DataType::Complex64: case DataType::Complex128: case DataType::String:
      return true;
    default:
      return false;
  }
}

// A Python object as the Value an input of type `type` wants (type may be null).
Value value_from_py(py::handle obj, const TypeInfo* type, const std::string& input = "") {
  if (py::isinstance<PyValue>(obj) || py::isinstance<PySparseTensor>(obj)) {
    // Onyx's kernels take dense tensors only; onnxruntime refuses the feed the same way.
    if (py::isinstance<PySparseTensor>(obj) || obj.cast<const PyValue&>().sparse)
      raise_onyx(ErrorCode::InvalidArgument, "input '" + input + "' expects " +
                                                 (type ? type->to_string() : "a dense value") +
                                                 " but received a sparse tensor; Onyx runs dense tensors only "
                                                 "(densify it with numpy first)");
    return obj.cast<const PyValue&>().value;
  }
  if (type && type->kind == TypeInfo::Kind::Optional) {
    onyx::Optional o;
    if (type->inner) o.type = *type->inner;
    if (!obj.is_none()) o.content = std::make_shared<Value>(value_from_py(obj, type->inner.get()));
    return Value(std::move(o));
  }
  if (type && type->kind == TypeInfo::Kind::Map) return Value(map_from_py(obj, *type, input));
  bool seq_of_maps = type && type->kind == TypeInfo::Kind::Sequence && type->inner && type->inner->kind == TypeInfo::Kind::Map;
  if (seq_of_maps && (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()))) {
    onyx::MapSequence s;
    s.key_type = type->inner->elem_type;
    s.value_type = type->inner->inner ? type->inner->inner->elem_type : DataType::Undefined;
    for (auto item : obj) s.items.push_back(map_from_py(item, *type->inner, input));
    return Value(std::move(s));
  }
  if (type && type->kind == TypeInfo::Kind::Sequence && (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()))) {
    onyx::Sequence s;
    if (type->inner) s.elem_type = type->inner->elem_type;
    for (auto item : obj) s.items.push_back(tensor_from_py(item));
    if (s.elem_type == DataType::Undefined && !s.items.empty()) s.elem_type = s.items[0].dtype();
    return Value(std::move(s));
  }
  if (type && type->kind == TypeInfo::Kind::Tensor && has_native_numpy_dtype(type->elem_type) &&
      (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr()) || PyFloat_Check(obj.ptr()) || PyLong_Check(obj.ptr()))) {
    // Lists and numbers as arrays of the input's element type, as onnxruntime
    // takes them (np.asarray alone would make float64 or int64). What does not
    // convert is passed on as it is and checked like any feed.
    try {
      py::object arr = py::module_::import("numpy").attr("asarray")(obj, numpy_dtype(type->elem_type));
      return Value(tensor_from_py(arr, true));
    } catch (py::error_already_set&) {
    }
  }
  return Value(tensor_from_py(obj));
}

// ---------------------------------------------------------------- Session

// As onnxruntime: a list of ints, symbolic names (str) and None (unknown);
// an empty list when the shape is not known at all.
py::list dims_to_py(const TypeInfo& t) {
  py::list shape;
  if (!t.has_shape) return shape;
  for (auto& d : t.shape) {
    if (d.value >= 0) shape.append(d.value);
    else if (!d.symbol.empty()) shape.append(d.symbol);
    else shape.append(py::none());
  }
  return shape;
}

py::list metas_to_py(const std::vector<onyx::ValueMeta>& metas) {
  py::list out;
  for (auto& m : metas) out.append(py::make_tuple(m.name, m.type.to_string(), dims_to_py(m.type)));
  return out;
}

// The environment whose thread pools sessions with use_per_session_threads =
// False share (default thread counts: one per physical core), made on first
// use and kept for the life of the process.
// set_global_thread_pool_sizes sets its thread counts, before it is made.
std::mutex g_environment_mutex;
std::shared_ptr<onyx::Environment>* g_environment = nullptr;  // leaked on purpose: lives as long as the process

std::shared_ptr<onyx::Environment> process_environment() {
  std::lock_guard<std::mutex> lock(g_environment_mutex);
  if (!g_environment) g_environment = new std::shared_ptr<onyx::Environment>(onyx::Environment::create());
  return *g_environment;
}

void set_global_thread_pool_sizes(int intra_op_num_threads, int inter_op_num_threads) {
  std::lock_guard<std::mutex> lock(g_environment_mutex);
  // As onnxruntime: the shared pools are made once; sessions already use them.
  if (g_environment)
    raise_onyx(ErrorCode::Fail,
               "Global thread pools have already been created, cannot replace them "
               "(set_global_thread_pool_sizes must come before the first session with "
               "use_per_session_threads = False)");
  onyx::ThreadingOptions t;
  t.intra_op_num_threads = intra_op_num_threads;
  t.inter_op_num_threads = inter_op_num_threads;
  g_environment = new std::shared_ptr<onyx::Environment>(onyx::Environment::create(t));
}

class PySession {
 public:
  const onyx::Session& session() const { return *session_; }
  PySession(py::object model, int opt_level, int intra, int inter, int exec_mode, int log_level,
            std::vector<std::string> providers, std::map<std::string, std::string> config,
            bool initializers_as_constants, bool enable_profiling, std::string profile_file_prefix,
            std::string optimized_model_filepath, std::map<std::string, int64_t> free_dims_by_name,
            std::map<std::string, int64_t> free_dims_by_denotation, py::dict initializers, std::string logid,
            std::map<std::string, py::bytes> external_files) {
    onyx::SessionOptions o;
    o.logid = std::move(logid);
    o.optimization_level = static_cast<onyx::OptimizationLevel>(opt_level);
    o.intra_op_num_threads = intra;
    o.inter_op_num_threads = inter;
    o.execution_mode = exec_mode == 1 ? onyx::ExecutionMode::Parallel : onyx::ExecutionMode::Sequential;
    o.log_severity_level = static_cast<onyx::LogLevel>(log_level < 0 ? 2 : (log_level > 4 ? 4 : log_level));
    o.providers = std::move(providers);
    o.config = std::move(config);
    // Session options carried as config entries ("0" or "false" turns them off).
    auto flag = [&](const char* key, bool& field) {
      auto it = o.config.find(key);
      if (it != o.config.end()) field = !(it->second == "0" || it->second == "false" || it->second == "False");
    };
    flag("session.intra_op.allow_spinning", o.allow_spinning);  // onnxruntime's key
    flag("session.allow_spinning", o.allow_spinning);
    flag("session.enable_cpu_mem_arena", o.enable_cpu_mem_arena);
    flag("session.enable_mem_pattern", o.enable_mem_pattern);
    // use_per_session_threads = False: the pools of one process-wide environment
    flag("session.use_per_session_threads", o.use_per_session_threads);
    // The environment also holds the arena that sessions with "session.use_env_allocators" = "1" share
    // (create_and_register_allocator's), whichever threads they use.
    auto env_alloc = o.config.find("session.use_env_allocators");
    if (!o.use_per_session_threads || (env_alloc != o.config.end() && env_alloc->second == "1"))
      o.environment = process_environment();
    // Provider options travel as config entries "onyx.provider_option.PROVIDER.KEY".
    const std::string popt = "onyx.provider_option.";
    for (auto it = o.config.begin(); it != o.config.end();) {
      if (it->first.rfind(popt, 0) == 0) {
        std::string rest = it->first.substr(popt.size());
        size_t dot = rest.find('.');
        if (dot != std::string::npos) o.provider_options[rest.substr(0, dot)][rest.substr(dot + 1)] = it->second;
        it = o.config.erase(it);
      } else {
        ++it;
      }
    }
    o.initializers_as_constants = initializers_as_constants;
    o.enable_profiling = enable_profiling;
    o.profile_file_prefix = std::move(profile_file_prefix);
    o.optimized_model_filepath = std::move(optimized_model_filepath);
    o.free_dimension_overrides_by_name = std::move(free_dims_by_name);
    o.free_dimension_overrides_by_denotation = std::move(free_dims_by_denotation);
    for (auto [name, value] : initializers) {
      // OrtValues keep their tensor (shared, as onnxruntime shares the buffer); arrays are copied.
      o.initializer_overrides[py::str(name)] =
          py::isinstance<PyValue>(value) ? value.cast<const PyValue&>().tensor() : tensor_from_py(value, true);
    }
    for (auto& [name, bytes] : external_files)
      o.external_data_files[name] = std::make_shared<const std::string>(std::string(bytes));
    if (PyBytes_Check(model.ptr())) {
      char* data = nullptr;
      Py_ssize_t size = 0;
      PyBytes_AsStringAndSize(model.ptr(), &data, &size);
      py::gil_scoped_release nogil;
      session_ = onyx::Session::from_bytes(data, static_cast<size_t>(size), o);
    } else {
      std::string path = py::str(model);
      py::gil_scoped_release nogil;
      session_ = onyx::Session::from_file(path, o);
    }
    const auto& ins = session_->inputs();
    for (size_t i = 0; i < ins.size(); ++i) feed_info_[ins[i].name] = {&ins[i].type, true};
    for (auto& m : session_->overridable_initializers()) feed_info_[m.name] = {&m.type, false};
  }

  // run(output_names, input_feed) -> list of numpy arrays (or lists / None
  // for sequence and optional outputs).
  // run_config: RunOptions config entries (e.g. arena shrinkage).
  py::list run(py::object output_names, py::object feeds, const std::map<std::string, std::string>& run_config) {
    onyx::Feeds values;  // kept until the outputs are converted (see shared_storage)
    std::vector<Value> outs = run_values(output_names, feeds, values, run_config);
    py::list result(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) result[i] = value_to_py(outs[i], true);
    return result;
  }

  // The same with OrtValues out (run_with_ort_values, IOBinding).
  py::list run_ort(py::object output_names, py::object feeds, const std::map<std::string, std::string>& run_config) {
    onyx::Feeds values;
    std::vector<Value> outs = run_values(output_names, feeds, values, run_config);
    py::list result(outs.size());
    for (size_t i = 0; i < outs.size(); ++i) {
      Value& v = outs[i];
      if (v.is_tensor() && shared_storage(v.tensor())) v = Value(v.tensor().clone());
      result[i] = py::cast(PyValue{std::move(v)});
    }
    return result;
  }

  py::list inputs() const { return metas_to_py(session_->inputs()); }
  py::list outputs() const { return metas_to_py(session_->outputs()); }
  py::list overridable_initializers() const { return metas_to_py(session_->overridable_initializers()); }
  std::string model_name() const { return session_->model_name(); }
  std::string end_profiling() { return session_->end_profiling(); }
  std::map<std::string, int> fusion_counts() const { return session_->optimization_report().fusions; }

 private:
  struct FeedInfo {
    const TypeInfo* type;
    bool required;
  };

  // Converts the feeds into `values` (which the caller keeps until it has
  // looked at the outputs: an output that is a feed then shows as shared).
  std::vector<Value> run_values(py::object output_names, py::object feed_obj, onyx::Feeds& values,
                                const std::map<std::string, std::string>& run_config = {}) {
    // input_feed: a dict (the fast path) or any other mapping.
    py::dict feeds;
    if (PyDict_Check(feed_obj.ptr())) {
      feeds = py::reinterpret_borrow<py::dict>(feed_obj);
    } else if (py::hasattr(feed_obj, "keys")) {
      feeds = py::dict(feed_obj);
    } else {
      throw py::type_error("input_feed must be a dict of input name -> value, got " +
                           std::string(py::str(py::type::of(feed_obj).attr("__name__"))));
    }
    values.reserve(feeds.size());
    size_t required_seen = 0;
    for (auto item : feeds) {
      std::string name = py::cast<std::string>(item.first);
      auto it = feed_info_.find(name);
      const TypeInfo* type = nullptr;
      if (it != feed_info_.end()) {
        type = it->second.type;
        if (it->second.required) ++required_seen;
      }
      Value v = value_from_py(item.second, type, name);
      values.emplace_back(std::move(name), std::move(v));
    }
    if (required_seen < session_->inputs().size()) missing_inputs(feeds);
    std::vector<std::string> names;
    if (!output_names.is_none()) {
      names.reserve(py::len(output_names));
      for (auto n : output_names) names.push_back(py::cast<std::string>(n));
    }
    std::vector<Value> outs;
    {
      py::gil_scoped_release nogil;
      onyx::RunOptions run_options;
      run_options.config = run_config;
      outs = session_->run(values, names, run_options);
    }
    return outs;
  }

  [[noreturn]] void missing_inputs(const py::dict& feeds) const {
    // As onnxruntime: a ValueError naming the missing required inputs.
    py::list missing, given;
    for (auto& m : session_->inputs())
      if (!feeds.contains(py::str(m.name))) missing.append(m.name);
    for (auto item : feeds) given.append(item.first);
    std::string msg = "Required inputs (" + std::string(py::repr(missing)) + ") are missing from input feed (" +
                      std::string(py::repr(given)) + ").";
    throw py::value_error(msg);
  }

  std::unique_ptr<onyx::Session> session_;
  std::unordered_map<std::string, FeedInfo> feed_info_;
};

// ---------------------------------------------------------------- logging

// set_default_logger_callback: Onyx's log messages go to a Python callable,
// fn(severity, category, logid, code_location, message).
//
// A thread Python knows (one that called InferenceSession() or run(), which
// release the GIL) calls it at once, taking the GIL. A thread Python does not
// know (a worker of Onyx's pools) never waits for the GIL: the Python thread
// holding it may be waiting for that worker. Its messages are queued and
// delivered on the main thread at its next chance (Py_AddPendingCall).

bool python_finalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

// A strong reference to the callable, dropped under the GIL by whichever
// thread releases the last copy (a logging thread may still hold one when the
// callback is replaced).
std::shared_ptr<PyObject> hold_callable(py::handle fn) {
  fn.inc_ref();
  return std::shared_ptr<PyObject>(fn.ptr(), [](PyObject* p) {
    if (!Py_IsInitialized() || python_finalizing()) return;  // the interpreter is going away: leave it
    PyGILState_STATE state = PyGILState_Ensure();
    Py_DECREF(p);
    PyGILState_Release(state);
  });
}

PyObject* decode_lenient(const std::string& s) {
  return PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace");
}

// Calls fn with the record; the GIL is held. A message the callback itself
// causes goes to stderr (no recursion); an exception it raises goes to
// sys.unraisablehook, as onnxruntime reports them.
void deliver_log_record(PyObject* fn, const onyx::LogRecord& r) {
  thread_local bool in_callback = false;
  if (in_callback) {
    onyx::print_log_record(r);
    return;
  }
  in_callback = true;
  PyObject* args = Py_BuildValue("(iNNNN)", static_cast<int>(r.severity), decode_lenient(r.category),
                                 decode_lenient(r.logid), decode_lenient(r.code_location), decode_lenient(r.message));
  PyObject* result = args ? PyObject_CallObject(fn, args) : nullptr;
  Py_XDECREF(args);
  if (result) {
    Py_DECREF(result);
  } else {
    PyErr_WriteUnraisable(fn);
  }
  in_callback = false;
}

struct QueuedLogRecord {
  std::shared_ptr<PyObject> fn;
  onyx::LogRecord record;
};
std::mutex g_log_queue_mutex;
std::deque<QueuedLogRecord>* g_log_queue = new std::deque<QueuedLogRecord>();  // leaked: workers may log at exit
bool g_log_drain_scheduled = false;

int drain_log_queue(void*) {
  std::deque<QueuedLogRecord> ready;
  {
    std::lock_guard<std::mutex> lock(g_log_queue_mutex);
    ready.swap(*g_log_queue);
    g_log_drain_scheduled = false;
  }
  for (auto& q : ready) deliver_log_record(q.fn.get(), q.record);
  return 0;
}

void set_log_callback(py::object fn) {
  if (fn.is_none()) {
    onyx::set_log_sink(nullptr);
    return;
  }
  std::shared_ptr<PyObject> held = hold_callable(fn);
  onyx::set_log_sink([held](const onyx::LogRecord& r) {
    if (!Py_IsInitialized() || python_finalizing()) {
      onyx::print_log_record(r);
      return;
    }
    if (PyGILState_GetThisThreadState() != nullptr) {
      PyGILState_STATE state = PyGILState_Ensure();
      deliver_log_record(held.get(), r);
      PyGILState_Release(state);
      return;
    }
    std::lock_guard<std::mutex> lock(g_log_queue_mutex);
    g_log_queue->push_back({held, r});
    if (!g_log_drain_scheduled) {
      // Py_AddPendingCall may be called without the GIL; it fails only when its queue is full.
      if (Py_AddPendingCall(drain_log_queue, nullptr) == 0) {
        g_log_drain_scheduled = true;
      } else {
        g_log_queue->pop_back();
        onyx::print_log_record(r);
      }
    }
  });
}

// copy_tensors: each source's data into the destination of the same index (CPU memory, real copies).
void copy_tensors(const std::vector<PyValue*>& sources, const std::vector<PyValue*>& destinations, py::object stream) {
  if (!stream.is_none())
    raise_onyx(ErrorCode::InvalidArgument, "copy_tensors: Onyx copies on the CPU and takes no stream; pass None");
  if (sources.size() != destinations.size())
    raise_onyx(ErrorCode::InvalidArgument, "copy_tensors: " + std::to_string(sources.size()) + " sources for " +
                                               std::to_string(destinations.size()) + " destinations");
  for (size_t i = 0; i < sources.size(); ++i) {
    if (!sources[i] || !destinations[i])
      raise_onyx(ErrorCode::InvalidArgument, "copy_tensors: None is not an OrtValue");
    const Tensor& src = sources[i]->tensor();
    Tensor& dst = const_cast<Tensor&>(destinations[i]->tensor());
    if (src.dtype() != dst.dtype() || src.shape() != dst.shape())
      raise_onyx(ErrorCode::InvalidArgument,
                 "copy_tensors: source " + std::to_string(i) + " is " + onyx::dtype_name(src.dtype()) + " " +
                     onyx::shape_to_string(src.shape()) + " but destination " + std::to_string(i) + " is " +
                     onyx::dtype_name(dst.dtype()) + " " + onyx::shape_to_string(dst.shape()));
  }
  for (size_t i = 0; i < sources.size(); ++i) {
    const Tensor& src = sources[i]->tensor();
    Tensor& dst = const_cast<Tensor&>(destinations[i]->tensor());
    if (src.dtype() == DataType::String) {
      for (int64_t k = 0; k < src.numel(); ++k) dst.data<std::string>()[k] = src.data<std::string>()[k];
    } else if (src.nbytes() && src.raw() != dst.raw()) {
      std::memmove(dst.raw(), src.raw(), src.nbytes());
    }
  }
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "Onyx native module (sessions, values, numpy bridge)";
  // At import, as onnxruntime builds its schemas with its environment: a
  // session's load then does not pay it. Not on a thread: a fork while it ran
  // would leave the child's registry half-built.
  onyx::prepare_operator_schemas();

  // Exceptions: created here so the translator can raise them; Python
  // re-exports them from onyx.capi.onnxruntime_pybind11_state.
  const std::string exc_module = "onyx.capi.onnxruntime_pybind11_state.";
  for (size_t i = 0; i < kNumErrorClasses; ++i) {
    std::string qual = exc_module + kErrorClasses[i].py_name;
    g_error_types[i] = PyErr_NewException(qual.c_str(), PyExc_Exception, nullptr);
    m.attr(kErrorClasses[i].py_name) = py::handle(g_error_types[i]);
  }
  for (const char* name : kExtraErrorNames) {
    std::string qual = exc_module + name;
    m.attr(name) = py::reinterpret_steal<py::object>(PyErr_NewException(qual.c_str(), PyExc_Exception, nullptr));
  }
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const onyx::Error& e) {
      set_onyx_error(e.code(), e.what());
    }
  });

  g_np_dtypes = new std::vector<py::object>(32);  // leaked on purpose: lives as long as the process

  py::class_<PyValue>(m, "OrtValue", "A tensor (or sequence / optional) held by Onyx, on the CPU.")
      .def_static(
          "ortvalue_from_numpy",
          [](py::object arr, const std::string& device_type, int device_id, int vendor_id) {
            check_cpu(device_type);
            return PyValue{Value(tensor_from_py(arr))};
          },
          py::arg("numpy_obj"), py::arg("device_type") = "cpu", py::arg("device_id") = 0, py::arg("vendor_id") = -1,
          "Wraps a numpy array (in place when it is C-contiguous; the OrtValue keeps it alive).")
      .def_static(
          "ortvalue_from_numpy_with_onnx_type",
          [](py::object arr, py::object onnx_element_type) {
            // For ONNX types numpy lacks (bfloat16, float8, ...): the array's bytes read as that type.
            Tensor t = tensor_from_py(arr);
            DataType target = dtype_from_py(onnx_element_type);
            if (t.dtype() == DataType::String || target == DataType::String)
              raise_onyx(ErrorCode::InvalidArgument, "ortvalue_from_numpy_with_onnx_type: strings cannot be reinterpreted");
            if (onyx::dtype_size(target) != onyx::dtype_size(t.dtype()))
              raise_onyx(ErrorCode::InvalidArgument,
                         "ortvalue_from_numpy_with_onnx_type: element type " + onyx::dtype_name(target) + " takes " +
                             std::to_string(onyx::dtype_size(target)) + " bytes, the array's " +
                             onyx::dtype_name(t.dtype()) + " " + std::to_string(onyx::dtype_size(t.dtype())));
            return PyValue{Value(Tensor::wrap(target, t.shape(), t.raw(), t.holder()))};
          },
          py::arg("data"), py::arg("onnx_element_type"),
          "Wraps a numpy array as a tensor of another ONNX element type of the same size (no copy).")
      .def_static(
          "ortvalue_from_shape_and_type",
          [](std::vector<int64_t> shape, py::object element_type, const std::string& device_type, int device_id,
             int vendor_id) {
            check_cpu(device_type);
            for (auto d : shape)
              if (d < 0) raise_onyx(ErrorCode::InvalidArgument, "shape dimensions must be >= 0");
            return PyValue{Value(Tensor::zeros(dtype_from_py(element_type), Shape(shape.begin(), shape.end())))};
          },
          py::arg("shape"), py::arg("element_type"), py::arg("device_type") = "cpu", py::arg("device_id") = 0,
          py::arg("vendor_id") = -1)
      .def_static(
          "_from_pointer",
          [](std::uintptr_t ptr, std::vector<int64_t> shape, py::object element_type) {
            // Memory owned by the caller (IOBinding.bind_input / bind_output with buffer_ptr).
            return PyValue{Value(Tensor::wrap(dtype_from_py(element_type), Shape(shape.begin(), shape.end()),
                                              reinterpret_cast<void*>(ptr), nullptr))};
          },
          py::arg("ptr"), py::arg("shape"), py::arg("element_type"))
      .def_static("_from_list",
                  [](py::list items) {
                    // A sequence value from a list of arrays (tensor sequences).
                    onyx::Sequence s;
                    for (auto item : items) s.items.push_back(tensor_from_py(item, true));
                    if (!s.items.empty()) s.elem_type = s.items[0].dtype();
                    return PyValue{Value(std::move(s))};
                  })
      .def(
          "numpy",
          [](const PyValue& v) {
            if (v.sparse)
              throw std::runtime_error(
                  "the OrtValue holds a sparse tensor: read it with as_sparse_tensor(), "
                  "only dense values convert to numpy");
            return value_to_py(v.value, false);
          },
          "The value as a numpy array over the same memory (a list for a sequence, None for an empty optional).")
      .def("shape",
           [](const PyValue& v) {
             if (v.sparse) return v.sparse->dense_shape;
             const Shape& s = v.tensor().shape();
             return std::vector<int64_t>(s.begin(), s.end());
           })
      .def("data_type", [](const PyValue& v) { return v.sparse ? v.sparse->data_type() : type_string(v.value); })
      .def("element_type",
           [](const PyValue& v) { return static_cast<int>(v.sparse ? v.sparse->values.dtype() : v.tensor().dtype()); })
      .def("device_name", [](const PyValue&) { return std::string("cpu"); })
      .def("data_ptr", [](const PyValue& v) { return reinterpret_cast<std::uintptr_t>(v.tensor().raw()); })
      .def("tensor_size_in_bytes", [](const PyValue& v) { return v.tensor().nbytes(); })
      .def("has_value",
           [](const PyValue& v) {
             if (v.sparse) return true;
             if (v.value.is_optional()) return static_cast<bool>(v.value.optional().content);
             return !v.value.is_none();
           })
      .def("is_tensor", [](const PyValue& v) { return v.value.is_tensor(); })
      .def("is_tensor_sequence", [](const PyValue& v) { return v.value.is_sequence(); })
      .def("is_sparse_tensor", [](const PyValue& v) { return static_cast<bool>(v.sparse); })
      .def_static(
          "ort_value_from_sparse_tensor",
          [](std::shared_ptr<PySparseTensor> st) {
            if (!st) throw py::type_error("ort_value_from_sparse_tensor: expected a SparseTensor, got None");
            PyValue v;
            v.sparse = std::move(st);
            return v;
          },
          py::arg("sparse_tensor"), "An OrtValue holding the sparse tensor (shared, not copied).")
      .def("as_sparse_tensor",
           [](const PyValue& v) {
             if (!v.sparse)
               throw std::runtime_error("This OrtValue does not contain a SparseTensor: it holds " +
                                        (v.value.is_none() ? std::string("nothing") : type_string(v.value)));
             return v.sparse;
           })
      .def(
          "update_inplace",
          [](PyValue& v, py::object arr) {
            Tensor& t = const_cast<Tensor&>(v.tensor());
            Tensor src = tensor_from_py(arr);
            if (src.dtype() != t.dtype() || src.numel() != t.numel())
              raise_onyx(ErrorCode::InvalidArgument, "update_inplace: the array (" + onyx::dtype_name(src.dtype()) +
                                                         " " + onyx::shape_to_string(src.shape()) +
                                                         ") does not match the OrtValue (" +
                                                         onyx::dtype_name(t.dtype()) + " " +
                                                         onyx::shape_to_string(t.shape()) + ")");
            if (t.dtype() == DataType::String) {
              for (int64_t i = 0; i < t.numel(); ++i) t.data<std::string>()[i] = src.data<std::string>()[i];
            } else if (t.nbytes() && t.raw() != src.raw()) {
              std::memcpy(t.raw(), src.raw(), t.nbytes());
            }
          },
          py::arg("np_arr"), "Copies a numpy array of the same type and size into this value's memory.")
      .def("_copy_from",
           [](PyValue& dst, const PyValue& src) {
             // Writes src into dst's memory (outputs bound to preallocated buffers).
             Tensor& t = const_cast<Tensor&>(dst.tensor());
             const Tensor& s = src.tensor();
             if (s.dtype() != t.dtype() || s.shape() != t.shape())
               raise_onyx(ErrorCode::InvalidArgument,
                          "bound output buffer is " + onyx::dtype_name(t.dtype()) + " " + onyx::shape_to_string(t.shape()) +
                              " but the output is " + onyx::dtype_name(s.dtype()) + " " + onyx::shape_to_string(s.shape()));
             if (t.dtype() == DataType::String) {
               for (int64_t i = 0; i < t.numel(); ++i) t.data<std::string>()[i] = s.data<std::string>()[i];
             } else if (t.nbytes() && t.raw() != s.raw()) {
               std::memcpy(t.raw(), s.raw(), t.nbytes());
             }
           })
      .def_property_readonly("_ortvalue", [](py::object self) { return self; })
      .def("__repr__", [](const PyValue& v) {
        if (v.sparse)
          return "<onyx.OrtValue " + v.sparse->data_type() + " " +
                 onyx::shape_to_string(v.sparse->dense_shape) + ">";
        if (v.value.is_tensor())
          return "<onyx.OrtValue " + type_string(v.value) + " " + onyx::shape_to_string(v.value.tensor().shape()) + ">";
        return "<onyx.OrtValue " + type_string(v.value) + ">";
      });

  py::class_<PySparseCooView>(m, "SparseCooView", "The COO indices of a sparse tensor.")
      .def("indices", [](const PySparseCooView& v) { return tensor_to_numpy(v.tensor->coo_indices, false); });
  py::class_<PySparseCsrView>(m, "SparseCsrView", "The CSR indices of a sparse tensor.")
      .def("inner", [](const PySparseCsrView& v) { return tensor_to_numpy(v.tensor->inner, false); })
      .def("outer", [](const PySparseCsrView& v) { return tensor_to_numpy(v.tensor->outer, false); });

  py::class_<PySparseTensor, std::shared_ptr<PySparseTensor>>(
      m, "SparseTensor", "A sparse tensor (COO or CSR) on the CPU, as onnxruntime's SparseTensor.")
      .def_static("_coo", &sparse_coo, py::arg("dense_shape"), py::arg("values"), py::arg("coo_indices"))
      .def_static("_csr", &sparse_csr, py::arg("dense_shape"), py::arg("values"), py::arg("inner_indices"),
                  py::arg("outer_indices"))
      .def(
          "values", [](const PySparseTensor& t) { return tensor_to_numpy(t.values, false); },
          "The non-zero values (over the same memory for numeric types, a copy for strings).")
      .def("as_coo_view",
           [](std::shared_ptr<PySparseTensor> t) {
             if (t->format != PySparseTensor::kCoo)
               throw std::runtime_error("This sparse tensor does not contain COO format");
             return PySparseCooView{std::move(t)};
           })
      .def("as_csrc_view",
           [](std::shared_ptr<PySparseTensor> t) {
             if (t->format != PySparseTensor::kCsrc)
               throw std::runtime_error("This sparse tensor does not contain CSR(C) format");
             return PySparseCsrView{std::move(t)};
           })
      .def("as_blocksparse_view",
           [](const PySparseTensor&) {
             // Onyx makes COO and CSR sparse tensors only.
             throw std::runtime_error("This sparse tensor does not contain BlockSparse format");
           })
      .def(
          "to_cuda",
          [](const PySparseTensor&, py::object) {
            throw std::runtime_error(
                "SparseTensor.to_cuda: Onyx keeps sparse tensors on the CPU (its kernels take "
                "dense tensors only); there is no CUDA copy of a sparse tensor");
          },
          py::arg("ort_device"))
      .def("_format_value", [](const PySparseTensor& t) { return static_cast<int>(t.format); })
      .def("dense_shape", [](const PySparseTensor& t) { return t.dense_shape; })
      .def("data_type", &PySparseTensor::data_type)
      .def("device_name", [](const PySparseTensor&) { return std::string("cpu"); })
      .def("__repr__", [](const PySparseTensor& t) {
        return "<onyx.SparseTensor " + std::string(t.format == PySparseTensor::kCoo ? "COO " : "CSR ") + t.data_type() +
               " " + onyx::shape_to_string(t.dense_shape) + ", " +
               std::to_string(t.values.numel()) + " values>";
      });

  py::class_<PySession>(m, "Session")
      .def(py::init<py::object, int, int, int, int, int, std::vector<std::string>, std::map<std::string, std::string>,
                    bool, bool, std::string, std::string, std::map<std::string, int64_t>,
                    std::map<std::string, int64_t>, py::dict, std::string, std::map<std::string, py::bytes>>(),
           py::arg("model"), py::arg("opt_level"), py::arg("intra_op_num_threads"), py::arg("inter_op_num_threads"),
           py::arg("execution_mode"), py::arg("log_severity_level"), py::arg("providers"), py::arg("config"),
           py::arg("initializers_as_constants") = false, py::arg("enable_profiling") = false,
           py::arg("profile_file_prefix") = "onnxruntime_profile_", py::arg("optimized_model_filepath") = "",
           py::arg("free_dimension_overrides_by_name") = std::map<std::string, int64_t>(),
           py::arg("free_dimension_overrides_by_denotation") = std::map<std::string, int64_t>(),
           py::arg("initializers") = py::dict(), py::arg("logid") = "",
           py::arg("external_files") = std::map<std::string, py::bytes>())
      .def("run", &PySession::run, py::arg("output_names"), py::arg("feeds"),
           py::arg("run_config") = std::map<std::string, std::string>())
      .def("run_ort", &PySession::run_ort, py::arg("output_names"), py::arg("feeds"),
           py::arg("run_config") = std::map<std::string, std::string>())
      .def("inputs", &PySession::inputs)
      .def("outputs", &PySession::outputs)
      .def("overridable_initializers", &PySession::overridable_initializers)
      .def("model_name", &PySession::model_name)
      .def("fusion_counts", &PySession::fusion_counts)
      .def("providers", [](const PySession& s) { return s.session().providers(); })
      .def("node_assignment",
           [](const PySession& s) {
             // (name, domain, op_type, provider) per node of the optimized graph, in execution order.
             py::list out;
             for (auto& a : s.session().node_assignment())
               out.append(py::make_tuple(a.name, a.domain, a.op_type, a.provider));
             return out;
           })
      .def("end_profiling", &PySession::end_profiling, py::call_guard<py::gil_scoped_release>());

  m.def("available_providers", []() { return onyx::available_providers(); });
  m.def("set_log_callback", &set_log_callback, py::arg("callback"),
        "Sends Onyx's log messages to callback(severity, category, logid, code_location, message); None: to stderr.");
  // The callback must not outlive the interpreter: the sink is dropped at exit.
  py::module_::import("atexit").attr("register")(py::cpp_function([]() { onyx::set_log_sink(nullptr); }));
  m.def(
      "_emit_log_for_test",
      [](int severity, const std::string& message, bool from_native_thread) {
        // A message through Onyx's logger, from this thread or from a thread Python does not know
        // (as a worker of Onyx's pools), to test the callback's delivery.
        onyx::LogRecord r{static_cast<onyx::LogLevel>(severity), "onyx", "test", "_core.cpp _emit_log_for_test",
                          message};
        if (!from_native_thread) return onyx::emit_log_record(r);
        py::gil_scoped_release nogil;  // the worker must not need the GIL this thread holds
        std::thread([r] { onyx::emit_log_record(r); }).join();
      },
      py::arg("severity"), py::arg("message"), py::arg("from_native_thread") = false);
  m.def("copy_tensors", &copy_tensors, py::arg("src"), py::arg("dst"), py::arg("stream") = py::none());
  m.def("set_global_thread_pool_sizes", &set_global_thread_pool_sizes, py::arg("intra_op_num_threads") = 0,
        py::arg("inter_op_num_threads") = 0);
}
