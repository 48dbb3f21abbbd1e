// A value flowing through a graph: a tensor, a sequence of tensors, or an
// optional (which may hold nothing). Mirrors ONNX's TypeProto kinds.
#pragma once
#include <memory>
#include <variant>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

// Static type of a value, as declared in a model (ValueInfoProto / TypeProto).
struct Dim {
  int64_t value = -1;  // -1: unknown or symbolic
  std::string symbol;  // the dim_param, when symbolic
};

struct TypeInfo {
  enum class Kind { Unknown, Tensor, Sequence, Optional, Map, SparseTensor };
  Kind kind = Kind::Unknown;
  DataType elem_type = DataType::Undefined;  // for tensors (and map keys)
  bool has_shape = false;
  std::vector<Dim> shape;
  std::shared_ptr<TypeInfo> inner;  // element of a sequence, content of an optional, map value
  std::string to_string() const;    // "tensor(float)", "seq(tensor(int64))", ...
};

class Value;

struct Sequence {
  DataType elem_type = DataType::Undefined;
  std::vector<Tensor> items;
};

// An optional value: `content` is null when the optional is empty.
struct Optional {
  std::shared_ptr<Value> content;
  TypeInfo type;  // declared content type, kept so an empty optional still knows it
};

class Value {
 public:
  Value() = default;
  Value(Tensor t) : v_(std::move(t)) {}
  Value(Sequence s) : v_(std::move(s)) {}
  Value(Optional o) : v_(std::move(o)) {}

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_sequence() const { return std::holds_alternative<Sequence>(v_); }
  bool is_optional() const { return std::holds_alternative<Optional>(v_); }

  const Tensor& tensor() const;
  Tensor& tensor();
  const Sequence& sequence() const;
  Sequence& sequence();
  const Optional& optional() const;
  std::string kind_name() const;

 private:
  std::variant<std::monostate, Tensor, Sequence, Optional> v_;
};

}  // namespace onyx
