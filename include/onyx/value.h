// A value flowing through a graph: a tensor, a sequence of tensors, an
// optional (which may hold nothing), a map or a sequence of maps (the
// ai.onnx.ml ops' dictionaries). Mirrors ONNX's TypeProto kinds.
#pragma once
#include <memory>
#include <variant>
#include <vector>

#include "onyx/tensor.h"

namespace onyx {

// Static type of a value, as declared in a model (ValueInfoProto / TypeProto).
struct Dim {
  int64_t value = -1;      // -1: unknown or symbolic
  std::string symbol;      // the dim_param, when symbolic
  std::string denotation;  // e.g. "DATA_BATCH", when the model gives one
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

// A map (ONNX map<K, V>): keys and values as two 1-D tensors of one length,
// keys unique and in ascending order (how the maps are read from Python
// dicts and protobuf, so lookups can bisect).
struct Map {
  Tensor keys;
  Tensor values;
  int64_t size() const { return keys.numel(); }
};

// A map from parallel keys and values (1-D, one length; integer or string
// keys): sorts them by key and rejects a repeated key.
Map make_map(Tensor keys, Tensor values);

// A sequence of maps (ZipMap's output). Kept apart from Sequence, whose
// elements are tensors, so that the sequence ops never take a map for a tensor.
// Maps that all have the same keys (ZipMap's rows) are stored as those keys
// once and a [count, keys] matrix of values; others one by one in `items`.
struct MapSequence {
  DataType key_type = DataType::Undefined;
  DataType value_type = DataType::Undefined;
  std::vector<Map> items;  // the maps, when they do not share keys
  Tensor shared_keys;      // else the keys of every map (1-D, sorted)
  Tensor rows;             // and their values, row i for map i

  bool shares_keys() const { return shared_keys.defined(); }
  int64_t size() const { return shares_keys() ? rows.dim(0) : static_cast<int64_t>(items.size()); }
  Map at(int64_t i) const;  // map i (a view of its row when keys are shared)
};

class Value {
 public:
  Value() = default;
  Value(Tensor t) : v_(std::move(t)) {}
  Value(Sequence s) : v_(std::move(s)) {}
  Value(Optional o) : v_(std::move(o)) {}
  Value(Map m) : v_(std::move(m)) {}
  Value(MapSequence s) : v_(std::move(s)) {}

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  bool is_tensor() const { return std::holds_alternative<Tensor>(v_); }
  bool is_sequence() const { return std::holds_alternative<Sequence>(v_); }
  bool is_optional() const { return std::holds_alternative<Optional>(v_); }
  bool is_map() const { return std::holds_alternative<Map>(v_); }
  bool is_map_sequence() const { return std::holds_alternative<MapSequence>(v_); }

  const Tensor& tensor() const;
  Tensor& tensor();
  const Sequence& sequence() const;
  Sequence& sequence();
  const Optional& optional() const;
  const Map& map() const;
  const MapSequence& map_sequence() const;
  std::string kind_name() const;

 private:
  std::variant<std::monostate, Tensor, Sequence, Optional, Map, MapSequence> v_;
};

}  // namespace onyx
