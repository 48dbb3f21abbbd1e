#include "onyx/tensor.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "base/aligned_memory.h"
#include "base/element_copy.h"
#include "onyx/value.h"

namespace onyx {

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// A shape whose element count or byte size overflows int64 would wrap to a
// small (or zero) allocation that kernels then index past.
void check_shape_addressable(const Shape& shape, DataType dtype) {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return;
  int64_t n = 1, bytes = 0;
  bool overflow = false;
  for (int64_t d : shape) overflow |= __builtin_mul_overflow(n, d, &n);
  const int64_t elem =
      dtype == DataType::String ? int64_t{sizeof(std::string)} : static_cast<int64_t>(dtype_size(dtype));
  overflow |= __builtin_mul_overflow(n, std::max<int64_t>(elem, 1), &bytes);
  if (overflow)
    fail(ErrorCode::RuntimeException, "tensor shape " + shape_to_string(shape) + " holds more " + dtype_name(dtype) +
                                          " elements than memory can address");
}

std::string shape_to_string(const Shape& shape) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "]";
  return os.str();
}

namespace {

class CpuAllocator final : public Allocator {
 public:
  // Small tensors (shape arithmetic, masks, scalars: hundreds per run of a
  // transformer) come from malloc's per-thread cache, 16-byte aligned: glibc's
  // aligned_alloc bypasses that cache and splits chunks, and was 6% of a small
  // decoder's run. Kernels read tensors with unaligned loads; large tensors
  // keep 64-byte lines.
  static constexpr size_t kSmallBytes = 512;
  void* allocate(size_t bytes) override {
    if (bytes > kSmallBytes) return allocate_aligned(bytes);
    void* p = std::malloc(bytes ? bytes : 1);
    if (!p) fail(ErrorCode::RuntimeException, "out of memory allocating " + std::to_string(bytes) + " bytes");
    return p;
  }
  void release(void* ptr) override { std::free(ptr); }
  Device device() const override { return {}; }
};

}  // namespace

Allocator& cpu_allocator() {
  static CpuAllocator allocator;
  return allocator;
}

Tensor::Tensor(DataType dtype, Shape shape, Allocator* allocator) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_)
    if (d < 0) fail(ErrorCode::InvalidArgument, "negative dimension in tensor shape " + shape_to_string(shape_));
  check_shape_addressable(shape_, dtype);
  numel_ = shape_numel(shape_);
  int64_t n = numel_;
  if (dtype == DataType::String) {
    std::shared_ptr<std::string[]> strings(new std::string[n > 0 ? n : 1]);
    data_ = strings.get();
    holder_ = std::move(strings);
    return;
  }
  Allocator* a = allocator ? allocator : &cpu_allocator();
  device_ = a->device();
  void* p = a->allocate(static_cast<size_t>(n) * dtype_size(dtype));
  holder_ = std::shared_ptr<void>(p, [a](void* q) { a->release(q); });
  data_ = p;
}

Tensor Tensor::wrap(DataType dtype, Shape shape, void* data, std::shared_ptr<void> owner, Device device) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.data_ = data;
  t.holder_ = std::move(owner);
  t.device_ = device;
  return t;
}

Tensor Tensor::zeros(DataType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  if (dtype != DataType::String) std::memset(t.raw(), 0, t.nbytes());
  return t;
}

int64_t Tensor::int_at(int64_t i) const {
  switch (dtype_) {
    case DataType::Int64: return data<int64_t>()[i];
    case DataType::Int32: return data<int32_t>()[i];
    case DataType::Int16: return data<int16_t>()[i];
    case DataType::Int8: return data<int8_t>()[i];
    case DataType::UInt64: return static_cast<int64_t>(data<uint64_t>()[i]);
    case DataType::UInt32: return data<uint32_t>()[i];
    case DataType::UInt16: return data<uint16_t>()[i];
    case DataType::UInt8: return data<uint8_t>()[i];
    case DataType::Bool: return data<bool>()[i];
    case DataType::Int4: case DataType::Int2: return static_cast<const int8_t*>(raw())[i];
    case DataType::UInt4: case DataType::UInt2: return static_cast<const uint8_t*>(raw())[i];
    case DataType::Float: case DataType::Double: case DataType::Float16: case DataType::BFloat16:
      return static_cast<int64_t>(float_at(i));
    default:
      if (dtype_is_small_float(dtype_)) return static_cast<int64_t>(float_at(i));
      fail(ErrorCode::InvalidArgument, "expected an integer tensor, got " + dtype_name(dtype_));
  }
}

double Tensor::float_at(int64_t i) const {
  switch (dtype_) {
    case DataType::Float: return data<float>()[i];
    case DataType::Double: return data<double>()[i];
    case DataType::Float16: return static_cast<float>(data<Float16>()[i]);
    case DataType::BFloat16: return static_cast<float>(data<BFloat16>()[i]);
    case DataType::UInt64: return static_cast<double>(data<uint64_t>()[i]);
    default:
      if (dtype_is_int(dtype_) || dtype_is_small_int(dtype_) || dtype_ == DataType::Bool)
        return static_cast<double>(int_at(i));
      if (dtype_is_small_float(dtype_)) return small_float_to_float(dtype_, static_cast<const uint8_t*>(raw())[i]);
      fail(ErrorCode::InvalidArgument, "expected a numeric tensor, got " + dtype_name(dtype_));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  const int64_t n = numel();
  // Index inputs of Gather / GatherElements / Scatter go through here every run: the two
  // index types copy in one typed loop rather than a per-element type switch.
  if (dtype_ == DataType::Int64) return std::vector<int64_t>(data<int64_t>(), data<int64_t>() + n);
  if (dtype_ == DataType::Int32) return std::vector<int64_t>(data<int32_t>(), data<int32_t>() + n);
  std::vector<int64_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = int_at(i);
  return v;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (shape_numel(shape) != numel())
    fail(ErrorCode::InvalidArgument, "cannot reshape " + shape_to_string(shape_) + " to " + shape_to_string(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  return t;
}

void Tensor::element_size_mismatch(size_t element_bytes) const {
  fail(ErrorCode::RuntimeException, "a tensor of element type " + dtype_name(dtype_) + " " + shape_to_string(shape_) +
                                        " was read as " + std::to_string(element_bytes) +
                                        "-byte elements (an internal type mismatch)");
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (dtype_ == DataType::String) {
    for (int64_t i = 0; i < numel(); ++i) t.data<std::string>()[i] = data<std::string>()[i];
  } else if (nbytes()) {
    std::memcpy(t.raw(), raw(), nbytes());
  }
  return t;
}

// ---- Value ----

const Tensor& Value::tensor() const {
  if (auto* t = std::get_if<Tensor>(&v_)) return *t;
  fail(ErrorCode::InvalidArgument, "expected a tensor, got " + kind_name());
}
Tensor& Value::tensor() {
  if (auto* t = std::get_if<Tensor>(&v_)) return *t;
  fail(ErrorCode::InvalidArgument, "expected a tensor, got " + kind_name());
}
const Sequence& Value::sequence() const {
  if (auto* s = std::get_if<Sequence>(&v_)) return *s;
  fail(ErrorCode::InvalidArgument, "expected a sequence, got " + kind_name());
}
Sequence& Value::sequence() {
  if (auto* s = std::get_if<Sequence>(&v_)) return *s;
  fail(ErrorCode::InvalidArgument, "expected a sequence, got " + kind_name());
}
const Optional& Value::optional() const {
  if (auto* o = std::get_if<Optional>(&v_)) return *o;
  fail(ErrorCode::InvalidArgument, "expected an optional, got " + kind_name());
}
const Map& Value::map() const {
  if (auto* m = std::get_if<Map>(&v_)) return *m;
  fail(ErrorCode::InvalidArgument, "expected a map, got " + kind_name());
}
const MapSequence& Value::map_sequence() const {
  if (auto* s = std::get_if<MapSequence>(&v_)) return *s;
  fail(ErrorCode::InvalidArgument, "expected a sequence of maps, got " + kind_name());
}
Map make_map(Tensor keys, Tensor values) {
  if (keys.rank() != 1 || values.rank() != 1 || keys.numel() != values.numel())
    fail(ErrorCode::InvalidArgument, "a map needs 1-D keys and values of one length, got shapes " +
                                         shape_to_string(keys.shape()) + " and " + shape_to_string(values.shape()));
  bool string_keys = keys.dtype() == DataType::String;
  if (!string_keys && !dtype_is_int(keys.dtype()))
    fail(ErrorCode::InvalidArgument, "map keys must be integers or strings, got " + dtype_name(keys.dtype()));
  int64_t n = keys.numel();
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  auto less = [&](int64_t a, int64_t b) {
    return string_keys ? keys.data<std::string>()[a] < keys.data<std::string>()[b] : keys.int_at(a) < keys.int_at(b);
  };
  std::stable_sort(order.begin(), order.end(), less);
  for (int64_t i = 1; i < n; ++i)
    if (!less(order[i - 1], order[i]))
      fail(ErrorCode::InvalidArgument, "map has the key " +
                                           (string_keys ? "'" + keys.data<std::string>()[order[i]] + "'"
                                                        : std::to_string(keys.int_at(order[i]))) +
                                           " twice");
  bool sorted = true;
  for (int64_t i = 0; i < n; ++i) sorted &= order[i] == i;
  if (sorted) return Map{std::move(keys), std::move(values)};
  Map m{Tensor(keys.dtype(), {n}), Tensor(values.dtype(), {n})};
  for (int64_t i = 0; i < n; ++i) {
    copy_elems(m.keys, i, keys, order[i], 1);
    copy_elems(m.values, i, values, order[i], 1);
  }
  return m;
}

Map MapSequence::at(int64_t i) const {
  if (!shares_keys()) return items.at(static_cast<size_t>(i));
  const int64_t width = shared_keys.numel();
  if (i < 0 || i >= rows.dim(0)) fail(ErrorCode::InvalidArgument, "map " + std::to_string(i) + " of " + std::to_string(rows.dim(0)));
  auto* row = static_cast<char*>(const_cast<void*>(rows.raw())) + i * width * dtype_size(rows.dtype());
  return Map{shared_keys, Tensor::wrap(rows.dtype(), {width}, row, rows.holder())};
}

static std::string map_type_name(DataType key, DataType value) {
  return "map(" + dtype_name(key) + ",tensor(" + dtype_name(value) + "))";
}
std::string Value::kind_name() const {
  if (is_tensor()) return "tensor(" + dtype_name(tensor().dtype()) + ")";
  if (is_sequence()) return "seq(tensor(" + dtype_name(sequence().elem_type) + "))";
  if (is_optional()) return "optional";
  if (is_map()) return map_type_name(map().keys.dtype(), map().values.dtype());
  if (is_map_sequence()) return "seq(" + map_type_name(map_sequence().key_type, map_sequence().value_type) + ")";
  return "nothing";
}

std::string TypeInfo::to_string() const {
  switch (kind) {
    case Kind::Tensor: return "tensor(" + dtype_name(elem_type) + ")";
    case Kind::SparseTensor: return "sparse_tensor(" + dtype_name(elem_type) + ")";
    case Kind::Sequence: return "seq(" + (inner ? inner->to_string() : std::string("?")) + ")";
    case Kind::Optional: return "optional(" + (inner ? inner->to_string() : std::string("?")) + ")";
    case Kind::Map: return "map(" + dtype_name(elem_type) + "," + (inner ? inner->to_string() : std::string("?")) + ")";
    case Kind::Unknown: return "unknown";
  }
  return "unknown";
}

}  // namespace onyx
