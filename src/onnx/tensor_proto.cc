#include "onnx/tensor_proto.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "base/element_copy.h"

namespace onyx {

namespace {

DataType checked_dtype(int32_t t) {
  if (t <= 0 || t > static_cast<int32_t>(kLastDataType))
    fail(ErrorCode::InvalidProtobuf, "unknown tensor element type " + std::to_string(t));
  return static_cast<DataType>(t);
}

Shape dims_of(const onnx::TensorProto& p) {
  Shape s(p.dims().begin(), p.dims().end());
  for (int64_t d : s)
    if (d < 0) fail(ErrorCode::InvalidProtobuf, "tensor '" + p.name() + "' has a negative dimension");
  return s;
}

template <class Src, class Dst>
void copy_field(const google::protobuf::RepeatedField<Src>& field, Tensor& t, const std::string& name) {
  if (field.size() != t.numel())
    fail(ErrorCode::InvalidProtobuf, "tensor '" + name + "' holds " + std::to_string(field.size()) +
                                         " values but its shape " + shape_to_string(t.shape()) + " needs " +
                                         std::to_string(t.numel()));
  Dst* out = t.data<Dst>();
  for (int i = 0; i < field.size(); ++i) out[i] = static_cast<Dst>(field.Get(i));
}

bool is_packed(DataType dt) { return dtype_bits(dt) < 8; }

size_t packed_bytes(DataType dt, int64_t n) { return (static_cast<size_t>(n) * dtype_bits(dt) + 7) / 8; }

// Unpacks the sub-byte elements (int4/uint4/float4e2m1: two per byte, int2/uint2:
// four, float6: four per three bytes), stored as a little-endian bit stream with
// element 0 in the lowest bits, into one byte each; int4/int2 are sign-extended.
void unpack_into(const uint8_t* src, Tensor& t) {
  DataType dt = t.dtype();
  int bits = dtype_bits(dt);
  uint32_t mask = (1u << bits) - 1;
  bool is_signed = dt == DataType::Int4 || dt == DataType::Int2;
  uint8_t* out = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    size_t bit = static_cast<size_t>(i) * bits;
    uint32_t word = src[bit / 8];
    if (bit % 8 + bits > 8) word |= static_cast<uint32_t>(src[bit / 8 + 1]) << 8;
    uint32_t v = (word >> (bit % 8)) & mask;
    if (is_signed && (v >> (bits - 1))) v |= ~mask;  // sign-extend
    out[i] = static_cast<uint8_t>(v);
  }
}

std::string pack_elements(const Tensor& t) {
  int bits = dtype_bits(t.dtype());
  uint32_t mask = (1u << bits) - 1;
  std::string bytes(packed_bytes(t.dtype(), t.numel()), '\0');
  const uint8_t* in = static_cast<const uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) {
    size_t bit = static_cast<size_t>(i) * bits;
    uint32_t v = (in[i] & mask) << (bit % 8);
    bytes[bit / 8] = static_cast<char>(static_cast<uint8_t>(bytes[bit / 8]) | (v & 0xff));
    if (v >> 8) bytes[bit / 8 + 1] = static_cast<char>(static_cast<uint8_t>(bytes[bit / 8 + 1]) | (v >> 8));
  }
  return bytes;
}

void check_raw_size(const std::string& name, size_t have, size_t need) {
  if (have != need)
    fail(ErrorCode::InvalidProtobuf, "tensor '" + name + "' has " + std::to_string(have) + " bytes of data, expected " +
                                         std::to_string(need));
}

// Drops the mapped pages lying wholly inside a range that was copied out, so
// they stop counting as resident; the mapping is read-only and private, so a
// later read would just fault them in from the file again.
void forget_pages(const char* src, size_t bytes) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  uintptr_t begin = (reinterpret_cast<uintptr_t>(src) + page - 1) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(src) + bytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Tensor external_tensor(const onnx::TensorProto& p, DataType dt, Shape shape, ExternalDataFiles* external) {
  if (!external) fail(ErrorCode::InvalidGraph, "tensor '" + p.name() + "' uses external data, which is not available here");
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : p.external_data()) {
    if (kv.key() == "location") location = kv.value();
    else if (kv.key() == "offset") offset = std::stoll(kv.value());
    else if (kv.key() == "length") length = std::stoll(kv.value());
  }
  if (location.empty()) fail(ErrorCode::InvalidGraph, "tensor '" + p.name() + "' has external data without a location");
  auto file = external->open(location);
  size_t need = is_packed(dt) ? packed_bytes(dt, shape_numel(shape)) : static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  if (length >= 0 && static_cast<size_t>(length) != need)
    fail(ErrorCode::InvalidGraph, "tensor '" + p.name() + "': " + std::to_string(length) + " bytes of data in '" +
                                      location + "' do not match its shape (" + std::to_string(need) + " bytes)");
  if (offset < 0 || static_cast<size_t>(offset) + need > file->size)
    fail(ErrorCode::InvalidGraph, "tensor '" + p.name() + "': external data file '" + file->path + "' is too short (" +
                                      std::to_string(file->size) + " bytes, need " + std::to_string(offset + need) + ")");
  const char* src = file->data + offset;
  if (is_packed(dt)) {
    Tensor t(dt, std::move(shape));
    unpack_into(reinterpret_cast<const uint8_t*>(src), t);
    forget_pages(src, packed_bytes(dt, t.numel()));
    return t;
  }
  if (reinterpret_cast<uintptr_t>(src) % dtype_size(dt) == 0) {
    // Zero copy: the tensor points into the mapping, which it keeps alive.
    return Tensor::wrap(dt, std::move(shape), const_cast<char*>(src), file);
  }
  Tensor t(dt, std::move(shape));
  std::memcpy(t.raw(), src, need);
  forget_pages(src, need);
  return t;
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& p, ExternalDataFiles* external) {
  DataType dt = checked_dtype(p.data_type());
  Shape shape = dims_of(p);
  if (dt == DataType::Complex64 || dt == DataType::Complex128)
    fail(ErrorCode::NotImplemented, "tensor '" + p.name() + "' has complex elements, which Onyx does not support");
  if (p.data_location() == onnx::TensorProto::EXTERNAL) return external_tensor(p, dt, std::move(shape), external);
  Tensor t(dt, shape);
  if (dt == DataType::String) {
    if (p.string_data_size() != t.numel())
      fail(ErrorCode::InvalidProtobuf, "string tensor '" + p.name() + "' has " + std::to_string(p.string_data_size()) +
                                           " values, expected " + std::to_string(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i) t.data<std::string>()[i] = p.string_data(static_cast<int>(i));
    return t;
  }
  if (is_packed(dt)) {
    std::string bytes;
    if (p.has_raw_data()) {
      bytes = p.raw_data();
    } else if (dtype_bits(dt) == 6) {  // float6 in int32_data: one element per entry
      copy_field<int32_t, uint8_t>(p.int32_data(), t, p.name());
      for (int64_t i = 0; i < t.numel(); ++i) t.data<uint8_t>()[i] &= 0x3f;
      return t;
    } else {  // 4- and 2-bit types in int32_data: one packed byte per entry
      for (int32_t v : p.int32_data()) bytes.push_back(static_cast<char>(v & 0xff));
    }
    check_raw_size(p.name(), bytes.size(), packed_bytes(dt, t.numel()));
    unpack_into(reinterpret_cast<const uint8_t*>(bytes.data()), t);
    return t;
  }
  if (p.has_raw_data()) {
    check_raw_size(p.name(), p.raw_data().size(), t.nbytes());
    if (t.nbytes()) std::memcpy(t.raw(), p.raw_data().data(), t.nbytes());
    return t;
  }
  switch (dt) {
    case DataType::Float: copy_field<float, float>(p.float_data(), t, p.name()); break;
    case DataType::Double: copy_field<double, double>(p.double_data(), t, p.name()); break;
    case DataType::Int64: copy_field<int64_t, int64_t>(p.int64_data(), t, p.name()); break;
    case DataType::UInt64: copy_field<uint64_t, uint64_t>(p.uint64_data(), t, p.name()); break;
    case DataType::UInt32: copy_field<uint64_t, uint32_t>(p.uint64_data(), t, p.name()); break;
    case DataType::Int32: copy_field<int32_t, int32_t>(p.int32_data(), t, p.name()); break;
    case DataType::Int16: copy_field<int32_t, int16_t>(p.int32_data(), t, p.name()); break;
    case DataType::Int8: copy_field<int32_t, int8_t>(p.int32_data(), t, p.name()); break;
    case DataType::UInt16: case DataType::Float16: case DataType::BFloat16:
      copy_field<int32_t, uint16_t>(p.int32_data(), t, p.name());
      break;
    case DataType::UInt8: case DataType::Float8E4M3FN: case DataType::Float8E4M3FNUZ: case DataType::Float8E5M2:
    case DataType::Float8E5M2FNUZ: case DataType::Float8E8M0:
      copy_field<int32_t, uint8_t>(p.int32_data(), t, p.name());
      break;
    case DataType::Bool: copy_field<int32_t, bool>(p.int32_data(), t, p.name()); break;
    default: fail(ErrorCode::NotImplemented, "tensor '" + p.name() + "' has unsupported type " + dtype_name(dt));
  }
  return t;
}

Tensor take_tensor_from_proto(onnx::TensorProto& p, ExternalDataFiles* external) {
  DataType dt = checked_dtype(p.data_type());
  bool movable = p.data_location() != onnx::TensorProto::EXTERNAL && p.has_raw_data() && dt != DataType::String &&
                 !is_packed(dt) &&
                 dt != DataType::Complex64 && dt != DataType::Complex128;
  if (!movable) return tensor_from_proto(p, external);
  Shape shape = dims_of(p);
  size_t need = static_cast<size_t>(shape_numel(shape)) * dtype_size(dt);
  check_raw_size(p.name(), p.raw_data().size(), need);
  auto buffer = std::make_shared<std::string>(std::move(*p.mutable_raw_data()));
  p.clear_raw_data();
  if (reinterpret_cast<uintptr_t>(buffer->data()) % 16 != 0) {
    Tensor t(dt, shape);
    if (need) std::memcpy(t.raw(), buffer->data(), need);
    return t;
  }
  return Tensor::wrap(dt, std::move(shape), buffer->data(), buffer);
}

Tensor sparse_tensor_from_proto(const onnx::SparseTensorProto& sp, ExternalDataFiles* external) {
  Tensor values = tensor_from_proto(sp.values(), external);
  Tensor indices = tensor_from_proto(sp.indices(), external);
  Shape shape(sp.dims().begin(), sp.dims().end());
  const std::string& name = sp.values().name();
  Tensor dense = Tensor::zeros(values.dtype(), shape);
  int64_t nnz = values.numel(), total = dense.numel();
  std::vector<int64_t> strides(shape.size(), 1);
  for (int i = static_cast<int>(shape.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  bool coords = indices.rank() == 2;
  if (!(indices.rank() == 1 && indices.numel() == nnz) &&
      !(coords && indices.dim(0) == nnz && indices.dim(1) == static_cast<int64_t>(shape.size())))
    fail(ErrorCode::InvalidGraph, "sparse tensor '" + name + "' has indices of shape " + shape_to_string(indices.shape()) +
                                      " for " + std::to_string(nnz) + " values");
  size_t esize = dtype_size(values.dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t lin = 0;
    if (coords) {
      for (size_t d = 0; d < shape.size(); ++d) lin += indices.int_at(k * shape.size() + d) * strides[d];
    } else {
      lin = indices.int_at(k);
    }
    if (lin < 0 || lin >= total) fail(ErrorCode::InvalidGraph, "sparse tensor '" + name + "' has an index out of range");
    if (values.dtype() == DataType::String) {
      dense.data<std::string>()[lin] = values.data<std::string>()[k];
    } else {
      std::memcpy(static_cast<char*>(dense.raw()) + lin * esize, static_cast<const char*>(values.raw()) + k * esize, esize);
    }
  }
  return dense;
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* p) {
  p->set_data_type(static_cast<int32_t>(t.dtype()));
  for (int64_t d : t.shape()) p->add_dims(d);
  if (t.dtype() == DataType::String) {
    for (int64_t i = 0; i < t.numel(); ++i) p->add_string_data(t.data<std::string>()[i]);
  } else if (is_packed(t.dtype())) {
    p->set_raw_data(pack_elements(t));
  } else {
    p->set_raw_data(t.raw(), t.nbytes());
  }
}

TypeInfo type_from_proto(const onnx::TypeProto& tp) {
  TypeInfo t;
  auto shape_from = [&](const onnx::TensorShapeProto& sp) {
    t.has_shape = true;
    for (const auto& d : sp.dim()) {
      Dim dim;
      if (d.has_dim_value()) dim.value = d.dim_value();
      else if (d.has_dim_param()) dim.symbol = d.dim_param();
      dim.denotation = d.denotation();
      t.shape.push_back(dim);
    }
  };
  if (tp.has_tensor_type()) {
    t.kind = TypeInfo::Kind::Tensor;
    t.elem_type = static_cast<DataType>(tp.tensor_type().elem_type());
    if (tp.tensor_type().has_shape()) shape_from(tp.tensor_type().shape());
  } else if (tp.has_sparse_tensor_type()) {
    t.kind = TypeInfo::Kind::SparseTensor;
    t.elem_type = static_cast<DataType>(tp.sparse_tensor_type().elem_type());
    if (tp.sparse_tensor_type().has_shape()) shape_from(tp.sparse_tensor_type().shape());
  } else if (tp.has_sequence_type()) {
    t.kind = TypeInfo::Kind::Sequence;
    t.inner = std::make_shared<TypeInfo>(type_from_proto(tp.sequence_type().elem_type()));
  } else if (tp.has_optional_type()) {
    t.kind = TypeInfo::Kind::Optional;
    t.inner = std::make_shared<TypeInfo>(type_from_proto(tp.optional_type().elem_type()));
  } else if (tp.has_map_type()) {
    t.kind = TypeInfo::Kind::Map;
    t.elem_type = static_cast<DataType>(tp.map_type().key_type());
    t.inner = std::make_shared<TypeInfo>(type_from_proto(tp.map_type().value_type()));
  }
  return t;
}

void type_to_proto(const TypeInfo& t, onnx::TypeProto* tp) {
  auto write_shape = [&](onnx::TensorShapeProto* sp) {
    for (const Dim& d : t.shape) {
      auto* dp = sp->add_dim();
      if (d.value >= 0) dp->set_dim_value(d.value);
      else if (!d.symbol.empty()) dp->set_dim_param(d.symbol);
      if (!d.denotation.empty()) dp->set_denotation(d.denotation);
    }
  };
  switch (t.kind) {
    case TypeInfo::Kind::Tensor:
      tp->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(t.elem_type));
      if (t.has_shape) write_shape(tp->mutable_tensor_type()->mutable_shape());
      break;
    case TypeInfo::Kind::SparseTensor:
      tp->mutable_sparse_tensor_type()->set_elem_type(static_cast<int32_t>(t.elem_type));
      if (t.has_shape) write_shape(tp->mutable_sparse_tensor_type()->mutable_shape());
      break;
    case TypeInfo::Kind::Sequence:
      if (t.inner) type_to_proto(*t.inner, tp->mutable_sequence_type()->mutable_elem_type());
      break;
    case TypeInfo::Kind::Optional:
      if (t.inner) type_to_proto(*t.inner, tp->mutable_optional_type()->mutable_elem_type());
      break;
    case TypeInfo::Kind::Map:
      tp->mutable_map_type()->set_key_type(static_cast<int32_t>(t.elem_type));
      if (t.inner) type_to_proto(*t.inner, tp->mutable_map_type()->mutable_value_type());
      break;
    case TypeInfo::Kind::Unknown: break;
  }
}

// Map values are stored as a sequence of one-element tensors, one per key.
static Tensor map_values_from_proto(const onnx::SequenceProto& sp, int64_t n, const std::string& name) {
  if (sp.tensor_values_size() != n)
    fail(ErrorCode::InvalidArgument, "map '" + name + "' has " + std::to_string(n) + " keys but " +
                                         std::to_string(sp.tensor_values_size()) + " values");
  if (n == 0) return Tensor(DataType::Float, {0});
  DataType dtype = static_cast<DataType>(sp.tensor_values(0).data_type());
  Tensor values(dtype, {n});
  for (int64_t i = 0; i < n; ++i) {
    Tensor v = tensor_from_proto(sp.tensor_values(static_cast<int>(i)), nullptr);
    if (v.dtype() != dtype || v.numel() != 1)
      fail(ErrorCode::InvalidArgument, "map '" + name + "': each value must be one " + dtype_name(dtype) + " element");
    copy_elems(values, i, v, 0, 1);
  }
  return values;
}

Map map_from_proto(const onnx::MapProto& mp) {
  DataType key_type = static_cast<DataType>(mp.key_type());
  Tensor keys;
  if (key_type == DataType::String) {
    keys = Tensor(DataType::String, {mp.string_keys_size()});
    for (int i = 0; i < mp.string_keys_size(); ++i) keys.data<std::string>()[i] = mp.string_keys(i);
  } else if (key_type == DataType::Int64) {
    keys = Tensor(DataType::Int64, {mp.keys_size()});
    for (int i = 0; i < mp.keys_size(); ++i) keys.data<int64_t>()[i] = mp.keys(i);
  } else {
    fail(ErrorCode::NotImplemented, "map '" + mp.name() + "': keys must be int64 or string, got " + dtype_name(key_type));
  }
  Tensor values = map_values_from_proto(mp.values(), keys.numel(), mp.name());
  return make_map(std::move(keys), std::move(values));
}

void map_to_proto(const Map& m, onnx::MapProto* mp) {
  mp->set_key_type(static_cast<int32_t>(m.keys.dtype()));
  auto* values = mp->mutable_values();
  values->set_elem_type(onnx::SequenceProto::TENSOR);
  for (int64_t i = 0; i < m.size(); ++i) {
    if (m.keys.dtype() == DataType::String) mp->add_string_keys(m.keys.data<std::string>()[i]);
    else mp->add_keys(m.keys.int_at(i));
    Tensor v(m.values.dtype(), {});
    copy_elems(v, 0, m.values, i, 1);
    tensor_to_proto(v, values->add_tensor_values());
  }
}

Value value_from_sequence_proto(const onnx::SequenceProto& sp) {
  if (sp.elem_type() == onnx::SequenceProto::MAP) {
    MapSequence maps;
    for (const auto& mp : sp.map_values()) maps.items.push_back(map_from_proto(mp));
    if (!maps.items.empty()) {
      maps.key_type = maps.items[0].keys.dtype();
      maps.value_type = maps.items[0].values.dtype();
    }
    return Value(std::move(maps));
  }
  Sequence seq;
  if (sp.elem_type() != onnx::SequenceProto::TENSOR && sp.elem_type() != onnx::SequenceProto::UNDEFINED)
    fail(ErrorCode::NotImplemented, "sequence '" + sp.name() + "': only sequences of tensors or maps are supported");
  for (const auto& tp : sp.tensor_values()) seq.items.push_back(tensor_from_proto(tp, nullptr));
  if (!seq.items.empty()) seq.elem_type = seq.items[0].dtype();
  return Value(std::move(seq));
}

Value value_from_optional_proto(const onnx::OptionalProto& op) {
  Optional opt;
  if (op.has_tensor_value()) {
    opt.content = std::make_shared<Value>(tensor_from_proto(op.tensor_value(), nullptr));
    opt.type.kind = TypeInfo::Kind::Tensor;
  } else if (op.has_sequence_value()) {
    opt.content = std::make_shared<Value>(value_from_sequence_proto(op.sequence_value()));
    opt.type.kind = TypeInfo::Kind::Sequence;
  } else if (op.elem_type() == onnx::OptionalProto::SEQUENCE) {
    opt.type.kind = TypeInfo::Kind::Sequence;
  } else {
    opt.type.kind = TypeInfo::Kind::Tensor;
  }
  return Value(std::move(opt));
}

void sequence_to_proto(const Sequence& seq, onnx::SequenceProto* sp) {
  sp->set_elem_type(onnx::SequenceProto::TENSOR);
  for (const Tensor& t : seq.items) tensor_to_proto(t, sp->add_tensor_values());
}

static void map_sequence_to_proto(const MapSequence& maps, onnx::SequenceProto* sp) {
  sp->set_elem_type(onnx::SequenceProto::MAP);
  for (int64_t i = 0; i < maps.size(); ++i) map_to_proto(maps.at(i), sp->add_map_values());
}

void optional_to_proto(const Optional& opt, onnx::OptionalProto* op) {
  bool is_seq = opt.content ? opt.content->is_sequence() : opt.type.kind == TypeInfo::Kind::Sequence;
  op->set_elem_type(is_seq ? onnx::OptionalProto::SEQUENCE : onnx::OptionalProto::TENSOR);
  if (!opt.content) return;
  if (opt.content->is_tensor()) tensor_to_proto(opt.content->tensor(), op->mutable_tensor_value());
  else if (opt.content->is_sequence()) sequence_to_proto(opt.content->sequence(), op->mutable_sequence_value());
}

static std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorCode::NoSuchFile, "cannot open '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Value read_value_pb(const std::string& path, const TypeInfo& type) {
  std::string bytes = read_file_bytes(path);
  auto parse = [&](google::protobuf::MessageLite& m) {
    if (!m.ParseFromString(bytes)) fail(ErrorCode::InvalidProtobuf, "'" + path + "' is not a valid protobuf message");
  };
  if (type.kind == TypeInfo::Kind::Sequence) {
    onnx::SequenceProto sp;
    parse(sp);
    return value_from_sequence_proto(sp);
  }
  if (type.kind == TypeInfo::Kind::Map) {
    onnx::MapProto mp;
    parse(mp);
    return Value(map_from_proto(mp));
  }
  if (type.kind == TypeInfo::Kind::Optional) {
    onnx::OptionalProto op;
    parse(op);
    Value v = value_from_optional_proto(op);
    if (type.inner) const_cast<Optional&>(v.optional()).type = *type.inner;
    return v;
  }
  onnx::TensorProto tp;
  parse(tp);
  Tensor t = tensor_from_proto(tp, nullptr);
  // ONNX 1.12's test data stores bfloat16 tensors with the uint16 type: same bits.
  if (type.kind == TypeInfo::Kind::Tensor && type.elem_type == DataType::BFloat16 && t.dtype() == DataType::UInt16)
    t = Tensor::wrap(DataType::BFloat16, t.shape(), t.raw(), t.holder());
  return Value(t);
}

void write_value_pb(const std::string& path, const Value& value, const std::string& name) {
  std::string bytes;
  if (value.is_tensor()) {
    onnx::TensorProto tp;
    tensor_to_proto(value.tensor(), &tp);
    tp.set_name(name);
    tp.SerializeToString(&bytes);
  } else if (value.is_sequence()) {
    onnx::SequenceProto sp;
    sequence_to_proto(value.sequence(), &sp);
    sp.set_name(name);
    sp.SerializeToString(&bytes);
  } else if (value.is_map_sequence()) {
    onnx::SequenceProto sp;
    map_sequence_to_proto(value.map_sequence(), &sp);
    sp.set_name(name);
    sp.SerializeToString(&bytes);
  } else if (value.is_map()) {
    onnx::MapProto mp;
    map_to_proto(value.map(), &mp);
    mp.set_name(name);
    mp.SerializeToString(&bytes);
  } else if (value.is_optional()) {
    onnx::OptionalProto op;
    optional_to_proto(value.optional(), &op);
    op.set_name(name);
    op.SerializeToString(&bytes);
  } else {
    fail(ErrorCode::Fail, "output '" + name + "' has no value to write");
  }
  std::ofstream out(path, std::ios::binary);
  if (!out) fail(ErrorCode::NoSuchFile, "cannot write '" + path + "'");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace onyx
