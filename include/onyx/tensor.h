// A tensor: element type, shape and a shared handle on its memory. Copies are
// cheap and share the data; clone() makes a deep copy.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "onyx/dtype.h"
#include "onyx/status.h"

namespace onyx {

using Shape = std::vector<int64_t>;

int64_t shape_numel(const Shape& shape);
// Throws when the shape's element count or byte size overflows int64 (checked
// before any allocation, so such a shape cannot wrap to a small buffer).
void check_shape_addressable(const Shape& shape, DataType dtype);
std::string shape_to_string(const Shape& shape);

enum class DeviceType { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int id = 0;
  bool operator==(const Device&) const = default;
};

// Allocators own device memory; a tensor keeps its allocator's block alive
// through the deleter of its shared handle.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* ptr) = 0;
  virtual Device device() const = 0;
};

Allocator& cpu_allocator();

class Tensor {
 public:
  Tensor() = default;
  // Allocates uninitialized storage (strings are empty strings).
  Tensor(DataType dtype, Shape shape, Allocator* allocator = nullptr);
  // Views memory owned elsewhere; `owner` keeps it alive.
  static Tensor wrap(DataType dtype, Shape shape, void* data, std::shared_ptr<void> owner,
                     Device device = {});
  static Tensor zeros(DataType dtype, Shape shape);
  template <class T>
  static Tensor from_vector(const std::vector<T>& values, Shape shape) {
    Tensor t(DataTypeOf<T>::value, std::move(shape));
    ONYX_CHECK(static_cast<size_t>(t.numel()) == values.size(), "from_vector: size does not match shape");
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }
  template <class T>
  static Tensor scalar(T value) { return from_vector<T>({value}, {}); }

  bool defined() const { return dtype_ != DataType::Undefined; }
  DataType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i < 0 ? i + rank() : i]; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  Device device() const { return device_; }

  void* raw() { return data_; }
  const void* raw() const { return data_; }
  // Typed access; T must have the element size of dtype() (int8 / uint8 or
  // float16 / uint16 views are allowed), so a kernel cannot read past the
  // end of a tensor of a narrower type.
  template <class T> T* data() {
    check_element_size(sizeof(T));
    return static_cast<T*>(data_);
  }
  template <class T> const T* data() const {
    check_element_size(sizeof(T));
    return static_cast<const T*>(data_);
  }
  // Reads element i as a 64-bit integer / double, whatever the integer or float type.
  int64_t int_at(int64_t i) const;
  double float_at(int64_t i) const;
  std::vector<int64_t> to_int64_vector() const;

  Tensor reshaped(Shape shape) const;  // same data, new shape (sizes must agree)
  Tensor clone() const;
  const std::shared_ptr<void>& holder() const { return holder_; }

 private:
  void check_element_size(size_t element_bytes) const {
    if (element_bytes != dtype_size(dtype_) && dtype_ != DataType::Undefined) element_size_mismatch(element_bytes);
  }
  [[noreturn]] void element_size_mismatch(size_t element_bytes) const;

  DataType dtype_ = DataType::Undefined;
  Shape shape_;
  int64_t numel_ = 1;  // shape_numel(shape_), kept with it: kernels call numel() in their loops
  std::shared_ptr<void> holder_;
  void* data_ = nullptr;
  Device device_;
};

}  // namespace onyx
