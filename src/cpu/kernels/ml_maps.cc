// The ai.onnx.ml ops that make or read maps (dictionaries): ZipMap (class
// scores to one map per row), CastMap and DictVectorizer (a map to a dense
// row), and CategoryMapper (strings <-> integers), which scikit-learn
// converters emit around classifiers and feature encoders.
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/element_copy.h"
#include "cpu/cpu_provider.h"
#include "cpu/kernels/ml_common.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* kMl = "ai.onnx.ml";

// ---------------------------------------------------------------- ZipMap

KernelFactory zip_map_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto labels = std::make_shared<ml::ClassLabels>(ml::read_class_labels(ic, "ZipMap"));
    // Every row's map has the same keys: sorted once, each paired with the
    // column of X it takes its value from (make_map also rejects a repeated label).
    const int64_t C = labels->size();
    std::vector<int64_t> columns(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) columns[c] = c;
    Map key_columns = make_map(labels->is_string() ? Tensor::from_vector<std::string>(labels->strings, {C})
                                                   : Tensor::from_vector<int64_t>(labels->ints, {C}),
                               Tensor::from_vector<int64_t>(columns, {C}));
    Tensor keys = key_columns.keys;
    std::vector<int64_t> column(key_columns.values.data<int64_t>(), key_columns.values.data<int64_t>() + C);
    return [keys, column](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      if (X.dtype() != DataType::Float) kernel_fail("ZipMap: X must be float, got " + dtype_name(X.dtype()));
      if (X.rank() != 1 && X.rank() != 2) kernel_fail("ZipMap: X must be [N, C] or [C], got " + shape_to_string(X.shape()));
      const int64_t C = static_cast<int64_t>(column.size());
      const int64_t N = X.rank() == 2 ? X.dim(0) : 1;
      if (X.dim(-1) != C)
        kernel_fail("ZipMap: X has " + std::to_string(X.dim(-1)) + " columns for " + std::to_string(C) + " class labels");
      MapSequence out;
      out.key_type = keys.dtype();
      out.value_type = DataType::Float;
      // One [N, C] block with the keys stored once: no allocation per row.
      out.shared_keys = keys;
      out.rows = Tensor(DataType::Float, {N, C});
      const float* x = X.data<float>();
      float* v = out.rows.data<float>();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) v[n * C + c] = x[n * C + column[c]];
      ctx.set_output(0, Value(std::move(out)));
    };
  });
}

// ---------------------------------------------------------------- CastMap

// Writes the map value `i` into element `j` of `y`, converted to y's dtype.
void cast_map_value(const Tensor& values, int64_t i, Tensor& y, int64_t j) {
  bool from_string = values.dtype() == DataType::String;
  const std::string* s = from_string ? &values.data<std::string>()[i] : nullptr;
  double v = from_string ? 0.0 : values.float_at(i);
  switch (y.dtype()) {
    case DataType::String:
      y.data<std::string>()[j] = from_string ? *s : std::to_string(static_cast<float>(v));
      break;
    case DataType::Float:
      y.data<float>()[j] = from_string ? std::stof(*s) : static_cast<float>(v);
      break;
    default:
      y.data<int64_t>()[j] = from_string ? std::stoll(*s) : static_cast<int64_t>(v);
  }
}

KernelFactory cast_map_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string cast_to = ic.get_string("cast_to", "TO_FLOAT");
    std::string form = ic.get_string("map_form", "DENSE");
    int64_t max_map = ic.get_int("max_map", 1);
    DataType out_type = cast_to == "TO_FLOAT" ? DataType::Float
                        : cast_to == "TO_STRING" ? DataType::String
                        : cast_to == "TO_INT64" ? DataType::Int64
                                                : DataType::Undefined;
    if (out_type == DataType::Undefined) kernel_fail("CastMap: cast_to '" + cast_to + "' is not TO_FLOAT, TO_STRING or TO_INT64");
    if (form != "DENSE" && form != "SPARSE") kernel_fail("CastMap: map_form '" + form + "' is not DENSE or SPARSE");
    bool sparse = form == "SPARSE";
    if (sparse && max_map <= 0) kernel_fail("CastMap: max_map must be positive for SPARSE, got " + std::to_string(max_map));
    return [=](KernelContext& ctx) {
      const Map& m = ctx.input_value(0).map();
      if (m.keys.dtype() != DataType::Int64) kernel_fail("CastMap: map keys must be int64, got " + dtype_name(m.keys.dtype()));
      const int64_t n = m.size();
      Tensor& y = ctx.allocate_output(0, out_type, {1, sparse ? max_map : n});
      try {
        if (!sparse) {
          for (int64_t i = 0; i < n; ++i) cast_map_value(m.values, i, y, i);  // keys are ascending
          return;
        }
        for (int64_t j = 0; j < max_map; ++j) {
          // Positions no key names hold zero ("0.f" as ONNX Runtime writes it for strings).
          if (out_type == DataType::String) y.data<std::string>()[j] = "0.f";
          else if (out_type == DataType::Float) y.data<float>()[j] = 0.f;
          else y.data<int64_t>()[j] = 0;
        }
        for (int64_t i = 0; i < n; ++i) {
          int64_t key = m.keys.data<int64_t>()[i];
          if (key < 0 || key >= max_map)
            kernel_fail("CastMap: key " + std::to_string(key) + " is outside [0, max_map = " + std::to_string(max_map) + ")");
          cast_map_value(m.values, i, y, key);
        }
      } catch (const std::logic_error&) {  // std::stof / std::stoll on a string that is not a number
        kernel_fail("CastMap: a map value is not a number that " + cast_to + " can convert");
      }
    };
  });
}

// ---------------------------------------------------------------- DictVectorizer

KernelFactory dict_vectorizer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto strings = ic.get_strings("string_vocabulary");
    auto ints = ic.get_ints("int64_vocabulary");
    if (strings.empty() == ints.empty())
      kernel_fail("DictVectorizer: exactly one of string_vocabulary and int64_vocabulary must be given");
    auto string_index = std::make_shared<std::unordered_map<std::string, int64_t>>();
    auto int_index = std::make_shared<std::unordered_map<int64_t, int64_t>>();
    for (size_t i = 0; i < strings.size(); ++i) string_index->emplace(strings[i], static_cast<int64_t>(i));
    for (size_t i = 0; i < ints.size(); ++i) int_index->emplace(ints[i], static_cast<int64_t>(i));
    const int64_t width = static_cast<int64_t>(strings.empty() ? ints.size() : strings.size());
    const bool string_keys = !strings.empty();
    return [=](KernelContext& ctx) {
      const Map& m = ctx.input_value(0).map();
      if ((m.keys.dtype() == DataType::String) != string_keys)
        kernel_fail("DictVectorizer: map keys are " + dtype_name(m.keys.dtype()) + " but the vocabulary is " +
                    (string_keys ? "string" : "int64"));
      // An empty map has no value dtype of its own; float is the common one.
      DataType out_type = m.size() == 0 ? DataType::Float : m.values.dtype();
      Tensor& y = ctx.allocate_output(0, out_type, {1, width});
      if (out_type == DataType::String) {
        for (int64_t j = 0; j < width; ++j) y.data<std::string>()[j].clear();
      } else {
        std::memset(y.raw(), 0, y.nbytes());
      }
      for (int64_t i = 0; i < m.size(); ++i) {
        int64_t col = -1;
        if (string_keys) {
          auto it = string_index->find(m.keys.data<std::string>()[i]);
          if (it != string_index->end()) col = it->second;
        } else {
          auto it = int_index->find(m.keys.int_at(i));
          if (it != int_index->end()) col = it->second;
        }
        if (col < 0) continue;  // a key outside the vocabulary is a feature the model never saw: dropped
        copy_elems(y, col, m.values, i, 1);
      }
    };
  });
}

// ---------------------------------------------------------------- CategoryMapper

KernelFactory category_mapper_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto strings = ic.get_strings("cats_strings");
    auto ints = ic.get_ints("cats_int64s");
    if (strings.size() != ints.size())
      kernel_fail("CategoryMapper: cats_strings has " + std::to_string(strings.size()) + " entries, cats_int64s " +
                  std::to_string(ints.size()));
    auto to_int = std::make_shared<std::unordered_map<std::string, int64_t>>();
    auto to_string = std::make_shared<std::unordered_map<int64_t, std::string>>();
    for (size_t i = 0; i < strings.size(); ++i) {
      to_int->emplace(strings[i], ints[i]);
      to_string->emplace(ints[i], strings[i]);
    }
    int64_t default_int = ic.get_int("default_int64", -1);
    std::string default_string = ic.get_string("default_string", "_Unused");
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const int64_t n = x.numel();
      if (x.dtype() == DataType::String) {
        Tensor& y = ctx.allocate_output(0, DataType::Int64, x.shape());
        for (int64_t i = 0; i < n; ++i) {
          auto it = to_int->find(x.data<std::string>()[i]);
          y.data<int64_t>()[i] = it == to_int->end() ? default_int : it->second;
        }
      } else if (x.dtype() == DataType::Int64) {
        Tensor& y = ctx.allocate_output(0, DataType::String, x.shape());
        for (int64_t i = 0; i < n; ++i) {
          auto it = to_string->find(x.data<int64_t>()[i]);
          y.data<std::string>()[i] = it == to_string->end() ? default_string : it->second;
        }
      } else {
        kernel_fail("CategoryMapper: X must be string or int64, got " + dtype_name(x.dtype()));
      }
    };
  });
}

}  // namespace

void register_ml_map_ops(KernelRegistry& r) {
  r.add("ZipMap", 1, kMaxOpset, zip_map_factory(), kMl);
  r.add("CastMap", 1, kMaxOpset, cast_map_factory(), kMl);
  r.add("DictVectorizer", 1, kMaxOpset, dict_vectorizer_factory(), kMl);
  r.add("CategoryMapper", 1, kMaxOpset, category_mapper_factory(), kMl);
}

}  // namespace onyx
