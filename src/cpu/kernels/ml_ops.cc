// Traditional ML ops of the ai.onnx.ml domain: LabelEncoder, ArrayFeatureExtractor,
// Binarizer, Normalizer, Scaler, OneHotEncoder, Imputer, FeatureVectorizer,
// TreeEnsemble (ml opset 5).
#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/kernels/ml_common.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* kMl = "ai.onnx.ml";


// Reads element i of a numeric tensor as double.
double num_at(const Tensor& t, int64_t i) {
  return dtype_is_float(t.dtype()) ? t.float_at(i) : static_cast<double>(t.int_at(i));
}

void check_numeric(const Tensor& t, const char* op) {
  if (t.dtype() == DataType::String || t.dtype() == DataType::Bool)
    kernel_fail(std::string(op) + " input must be numeric, got " + dtype_name(t.dtype()));
}

// ---------------------------------------------------------------- LabelEncoder

struct LabelMap {
  enum Kind { Str, Int, Flt } kind = Str;
  std::unordered_map<std::string, int64_t> skeys;
  std::unordered_map<int64_t, int64_t> ikeys;
  std::map<double, int64_t> fkeys;
  int64_t nan_index = -1;
  Tensor values;  // 1-D, the output dtype
  Tensor fallback;  // scalar, the output dtype

  int64_t find(const Tensor& x, int64_t i) const {
    switch (kind) {
      case Str: {
        auto it = skeys.find(x.data<std::string>()[i]);
        return it == skeys.end() ? -1 : it->second;
      }
      case Int: {
        auto it = ikeys.find(x.int_at(i));
        return it == ikeys.end() ? -1 : it->second;
      }
      default: {
        double v = num_at(x, i);
        if (std::isnan(v)) return nan_index;
        auto it = fkeys.find(v);
        return it == fkeys.end() ? -1 : it->second;
      }
    }
  }
};

void set_keys(LabelMap& m, const Tensor& keys) {
  int64_t n = keys.numel();
  if (keys.dtype() == DataType::String) {
    m.kind = LabelMap::Str;
    for (int64_t i = 0; i < n; ++i) m.skeys.emplace(keys.data<std::string>()[i], i);
  } else if (dtype_is_int(keys.dtype())) {
    m.kind = LabelMap::Int;
    for (int64_t i = 0; i < n; ++i) m.ikeys.emplace(keys.int_at(i), i);
  } else if (dtype_is_float(keys.dtype())) {
    m.kind = LabelMap::Flt;
    for (int64_t i = 0; i < n; ++i) {
      double v = keys.float_at(i);
      if (std::isnan(v)) {
        if (m.nan_index < 0) m.nan_index = i;
      } else {
        m.fkeys.emplace(v, i);
      }
    }
  } else {
    kernel_fail("LabelEncoder keys must be string, integer or float, got " + dtype_name(keys.dtype()));
  }
}

KernelFactory label_encoder_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto m = std::make_shared<LabelMap>();
    bool v1 = ic.opset() < 2;
    if (v1) {
      // classes_strings: string -> index, or index -> string, chosen by the input type at run time
      std::vector<std::string> classes = ic.get_strings("classes_strings");
      m->values = Tensor::from_vector<std::string>(classes, {static_cast<int64_t>(classes.size())});
      for (size_t i = 0; i < classes.size(); ++i) m->skeys.emplace(classes[i], static_cast<int64_t>(i));
      int64_t def_i = ic.get_int("default_int64", -1);
      std::string def_s = ic.get_string("default_string", "_Unused");
      std::shared_ptr<const LabelMap> cm = m;
      return std::function<void(KernelContext&)>([cm, def_i, def_s](KernelContext& ctx) {
        const Tensor& X = ctx.input(0);
        if (X.dtype() == DataType::String) {
          Tensor& Y = ctx.allocate_output(0, DataType::Int64, X.shape());
          for (int64_t i = 0; i < X.numel(); ++i) {
            auto it = cm->skeys.find(X.data<std::string>()[i]);
            Y.data<int64_t>()[i] = it == cm->skeys.end() ? def_i : it->second;
          }
        } else if (X.dtype() == DataType::Int64) {
          Tensor& Y = ctx.allocate_output(0, DataType::String, X.shape());
          int64_t n = cm->values.numel();
          for (int64_t i = 0; i < X.numel(); ++i) {
            int64_t v = X.data<int64_t>()[i];
            Y.data<std::string>()[i] = (v >= 0 && v < n) ? cm->values.data<std::string>()[v] : def_s;
          }
        } else {
          kernel_fail("LabelEncoder-1 input must be string or int64, got " + dtype_name(X.dtype()));
        }
      });
    }
    // keys
    Tensor keys;
    int nkeys = 0;
    if (ic.has("keys_tensor")) keys = ic.get_tensor("keys_tensor"), ++nkeys;
    if (ic.has("keys_strings")) {
      auto v = ic.get_strings("keys_strings");
      keys = Tensor::from_vector<std::string>(v, {static_cast<int64_t>(v.size())});
      ++nkeys;
    }
    if (ic.has("keys_int64s")) {
      auto v = ic.get_ints("keys_int64s");
      keys = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
      ++nkeys;
    }
    if (ic.has("keys_floats")) {
      auto v = ic.get_floats("keys_floats");
      keys = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
      ++nkeys;
    }
    if (nkeys != 1) kernel_fail("LabelEncoder needs exactly one keys_* attribute");
    // values and default
    int nvals = 0;
    if (ic.has("values_tensor")) m->values = ic.get_tensor("values_tensor"), ++nvals;
    if (ic.has("values_strings")) {
      auto v = ic.get_strings("values_strings");
      m->values = Tensor::from_vector<std::string>(v, {static_cast<int64_t>(v.size())});
      ++nvals;
    }
    if (ic.has("values_int64s")) {
      auto v = ic.get_ints("values_int64s");
      m->values = Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())});
      ++nvals;
    }
    if (ic.has("values_floats")) {
      auto v = ic.get_floats("values_floats");
      m->values = Tensor::from_vector<float>(v, {static_cast<int64_t>(v.size())});
      ++nvals;
    }
    if (nvals != 1) kernel_fail("LabelEncoder needs exactly one values_* attribute");
    if (keys.numel() != m->values.numel())
      kernel_fail("LabelEncoder has " + std::to_string(keys.numel()) + " keys but " +
                  std::to_string(m->values.numel()) + " values");
    set_keys(*m, keys);
    DataType vt = m->values.dtype();
    if (ic.has("default_tensor")) {
      m->fallback = ic.get_tensor("default_tensor");
      if (m->fallback.dtype() != vt || m->fallback.numel() != 1)
        kernel_fail("default_tensor must be one value of the values' type");
    } else if (vt == DataType::String) {
      m->fallback = Tensor::scalar<std::string>(ic.get_string("default_string", "_Unused"));
    } else if (vt == DataType::Int64) {
      m->fallback = Tensor::scalar<int64_t>(ic.get_int("default_int64", -1));
    } else if (vt == DataType::Float) {
      m->fallback = Tensor::scalar<float>(ic.get_float("default_float", -0.0f));
    } else {
      m->fallback = Tensor::zeros(vt, {});
    }
    std::shared_ptr<const LabelMap> cm = m;
    return std::function<void(KernelContext&)>([cm](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      bool x_str = X.dtype() == DataType::String;
      if (x_str != (cm->kind == LabelMap::Str))
        kernel_fail("LabelEncoder input type " + dtype_name(X.dtype()) + " does not match its keys");
      Tensor& Y = ctx.allocate_output(0, cm->values.dtype(), X.shape());
      dispatch_all(cm->values.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* vals = cm->values.data<T>();
        const T& def = cm->fallback.data<T>()[0];
        T* y = Y.data<T>();
        for (int64_t i = 0; i < X.numel(); ++i) {
          int64_t k = cm->find(X, i);
          y[i] = k >= 0 ? vals[k] : def;
        }
      });
    });
  });
}

// ---------------------------------------------------------------- ArrayFeatureExtractor

KernelFactory array_feature_extractor_factory() {
  return lambda_factory([](const KernelInitContext&) {
    return [](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      const Tensor& Yi = ctx.input(1);
      if (X.rank() < 1) kernel_fail("ArrayFeatureExtractor input must have rank >= 1");
      const int64_t C = X.dim(-1), K = Yi.numel();
      const int64_t rows = C == 0 ? 0 : X.numel() / C;
      std::vector<int64_t> idx = Yi.to_int64_vector();
      for (auto v : idx)
        if (v < 0 || v >= C)
          kernel_fail("index " + std::to_string(v) + " is out of range [0, " + std::to_string(C) + ")");
      Shape ys = X.shape();
      if (X.rank() == 1)
        ys = {1, K};
      else
        ys.back() = K;
      Tensor& Y = ctx.allocate_output(0, X.dtype(), ys);
      dispatch_by_size(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t k = 0; k < K; ++k) y[r * K + k] = x[r * C + idx[k]];
      });
    };
  });
}

// ---------------------------------------------------------------- Binarizer

KernelFactory binarizer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    double th = ic.get_float("threshold", 0.f);
    return [th](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_numeric(X, "Binarizer");
      Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
      dispatch_numeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        for (int64_t i = 0; i < X.numel(); ++i) y[i] = from_d<T>(to_d(x[i]) > th ? 1.0 : 0.0);
      });
    };
  });
}

// ---------------------------------------------------------------- Normalizer

enum class Norm { Max, L1, L2 };

// One row of C values scaled by its norm (a zero norm leaves the row as is).
template <typename T>
void normalize_row(Norm norm, const T* x, float* y, int64_t C) {
  double acc = 0;
  for (int64_t c = 0; c < C; ++c) {
    double v = static_cast<double>(x[c]);
    if (norm == Norm::Max) acc = c == 0 ? v : std::max(acc, v);
    else if (norm == Norm::L1) acc += std::abs(v);
    else acc += v * v;
  }
  if (norm == Norm::L2) acc = std::sqrt(acc);
  for (int64_t c = 0; c < C; ++c) {
    double v = static_cast<double>(x[c]);
    y[c] = static_cast<float>(acc == 0 ? v : v / acc);
  }
}

KernelFactory normalizer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::string name = ic.get_string("norm", "MAX");
    if (name != "MAX" && name != "L1" && name != "L2")
      kernel_fail("Normalizer norm must be MAX, L1 or L2, got '" + name + "'");
    Norm norm = name == "MAX" ? Norm::Max : name == "L1" ? Norm::L1 : Norm::L2;
    return [norm](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_numeric(X, "Normalizer");
      if (X.rank() != 1 && X.rank() != 2) kernel_fail("Normalizer input must be [C] or [N, C], got " + shape_to_string(X.shape()));
      const int64_t C = X.dim(-1), rows = X.rank() == 2 ? X.dim(0) : 1;
      Tensor& Y = ctx.allocate_output(0, DataType::Float, X.shape());
      float* y = Y.data<float>();
      auto run = [&](auto* x) {
        for (int64_t r = 0; r < rows; ++r) normalize_row(norm, x + r * C, y + r * C, C);
      };
      switch (X.dtype()) {
        case DataType::Float: run(X.data<float>()); break;
        case DataType::Double: run(X.data<double>()); break;
        case DataType::Int64: run(X.data<int64_t>()); break;
        case DataType::Int32: run(X.data<int32_t>()); break;
        default: kernel_fail("Normalizer: X must be float, double, int64 or int32, got " + dtype_name(X.dtype()));
      }
    };
  });
}

// ---------------------------------------------------------------- Scaler

KernelFactory scaler_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::vector<float> offset = ic.get_floats("offset"), scale = ic.get_floats("scale");
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_numeric(X, "Scaler");
      const int64_t C = X.rank() == 0 ? 1 : X.dim(-1);
      auto check = [&](const std::vector<float>& v, const char* name) {
        if (v.size() > 1 && static_cast<int64_t>(v.size()) != C)
          kernel_fail(std::string(name) + " has " + std::to_string(v.size()) + " values but the input has " +
                      std::to_string(C) + " features");
      };
      check(offset, "offset");
      check(scale, "scale");
      Tensor& Y = ctx.allocate_output(0, DataType::Float, X.shape());
      if (C == 0 || X.numel() == 0) return;
      // Per-feature offset and scale, broadcast from one value or none.
      std::vector<float> o(static_cast<size_t>(C), 0.f), sc(static_cast<size_t>(C), 1.f);
      for (int64_t c = 0; c < C; ++c) {
        if (!offset.empty()) o[c] = offset.size() == 1 ? offset[0] : offset[c];
        if (!scale.empty()) sc[c] = scale.size() == 1 ? scale[0] : scale[c];
      }
      float* y = Y.data<float>();
      const int64_t rows = X.numel() / C;
      auto run = [&](auto* x) {
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < C; ++c) y[r * C + c] = (static_cast<float>(x[r * C + c]) - o[c]) * sc[c];
      };
      switch (X.dtype()) {
        case DataType::Float: run(X.data<float>()); break;
        case DataType::Double: run(X.data<double>()); break;
        case DataType::Int64: run(X.data<int64_t>()); break;
        case DataType::Int32: run(X.data<int32_t>()); break;
        default: kernel_fail("Scaler: X must be float, double, int64 or int32, got " + dtype_name(X.dtype()));
      }
    };
  });
}

// ---------------------------------------------------------------- OneHotEncoder

KernelFactory one_hot_encoder_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::vector<int64_t> cats_i = ic.get_ints("cats_int64s");
    std::vector<std::string> cats_s = ic.get_strings("cats_strings");
    if (cats_i.empty() == cats_s.empty()) kernel_fail("OneHotEncoder needs exactly one of cats_int64s and cats_strings");
    bool zeros = ic.get_int("zeros", 1) != 0;
    auto imap = std::make_shared<std::unordered_map<int64_t, int64_t>>();
    auto smap = std::make_shared<std::unordered_map<std::string, int64_t>>();
    for (size_t i = 0; i < cats_i.size(); ++i) imap->emplace(cats_i[i], static_cast<int64_t>(i));
    for (size_t i = 0; i < cats_s.size(); ++i) smap->emplace(cats_s[i], static_cast<int64_t>(i));
    int64_t K = static_cast<int64_t>(cats_i.empty() ? cats_s.size() : cats_i.size());
    bool strings = !cats_s.empty();
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      bool x_str = X.dtype() == DataType::String;
      if (x_str != strings) kernel_fail("OneHotEncoder input type " + dtype_name(X.dtype()) + " does not match its categories");
      Shape ys = X.shape();
      ys.push_back(K);
      Tensor& Y = ctx.allocate_output(0, DataType::Float, ys);
      float* y = Y.data<float>();
      std::fill(y, y + Y.numel(), 0.f);
      for (int64_t i = 0; i < X.numel(); ++i) {
        int64_t k = -1;
        if (strings) {
          auto it = smap->find(X.data<std::string>()[i]);
          if (it != smap->end()) k = it->second;
        } else {
          double v = num_at(X, i);
          int64_t iv = static_cast<int64_t>(v);
          if (static_cast<double>(iv) == v) {
            auto it = imap->find(iv);
            if (it != imap->end()) k = it->second;
          }
        }
        if (k < 0) {
          if (!zeros) kernel_fail("OneHotEncoder: input value at index " + std::to_string(i) + " is not a known category");
          continue;
        }
        y[i * K + k] = 1.f;
      }
    };
  });
}

// ---------------------------------------------------------------- Imputer

KernelFactory imputer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::vector<float> vf = ic.get_floats("imputed_value_floats");
    std::vector<int64_t> vi = ic.get_ints("imputed_value_int64s");
    float rf = ic.get_float("replaced_value_float", 0.f);
    int64_t ri = ic.get_int("replaced_value_int64", 0);
    if (vf.empty() == vi.empty()) kernel_fail("Imputer needs exactly one of imputed_value_floats and imputed_value_int64s");
    return [=](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      check_numeric(X, "Imputer");
      const int64_t C = X.rank() == 0 ? 1 : X.dim(-1);
      bool is_float = dtype_is_float(X.dtype());
      size_t nv = is_float ? vf.size() : vi.size();
      if (nv == 0) kernel_fail("Imputer: the imputed values do not match the input type " + dtype_name(X.dtype()));
      if (nv != 1 && static_cast<int64_t>(nv) != C)
        kernel_fail("Imputer has " + std::to_string(nv) + " imputed values but the input has " + std::to_string(C) +
                    " features");
      Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
      dispatch_numeric(X.dtype(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        const T* x = X.data<T>();
        T* y = Y.data<T>();
        for (int64_t i = 0; i < X.numel(); ++i) {
          size_t c = nv == 1 ? 0 : static_cast<size_t>(i % C);
          if constexpr (std::is_integral_v<T>) {
            y[i] = static_cast<int64_t>(x[i]) == ri ? static_cast<T>(vi[c]) : x[i];
          } else {
            double v = to_d(x[i]);
            bool hit = std::isnan(rf) ? std::isnan(v) : v == static_cast<double>(rf);
            y[i] = hit ? from_d<T>(vf[c]) : x[i];
          }
        }
      });
    };
  });
}

// ---------------------------------------------------------------- FeatureVectorizer

KernelFactory feature_vectorizer_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    std::vector<int64_t> dims = ic.get_ints("inputdimensions");
    return [dims](KernelContext& ctx) {
      size_t n_in = ctx.num_inputs();
      if (dims.size() != n_in)
        kernel_fail("inputdimensions has " + std::to_string(dims.size()) + " values for " + std::to_string(n_in) + " inputs");
      int64_t total = 0;
      for (auto d : dims) {
        if (d < 0) kernel_fail("inputdimensions must be non-negative");
        total += d;
      }
      int64_t N = -1;
      for (size_t k = 0; k < n_in; ++k) {
        const Tensor& t = ctx.input(k);
        check_numeric(t, "FeatureVectorizer");
        int64_t rows = t.rank() <= 1 ? 1 : t.numel() / std::max<int64_t>(t.dim(-1), 1);
        if (t.rank() >= 2) rows = t.dim(0);
        if (N < 0) N = rows;
        if (rows != N) kernel_fail("FeatureVectorizer inputs have different batch sizes");
      }
      if (N < 0) N = 1;
      Tensor& Y = ctx.allocate_output(0, DataType::Float, {N, total});
      float* y = Y.data<float>();
      std::fill(y, y + Y.numel(), 0.f);
      int64_t col = 0;
      for (size_t k = 0; k < n_in; ++k) {
        const Tensor& t = ctx.input(k);
        int64_t per = N == 0 ? 0 : t.numel() / N;
        int64_t take = std::min(per, dims[k]);
        for (int64_t r = 0; r < N; ++r)
          for (int64_t c = 0; c < take; ++c) y[r * total + col + c] = static_cast<float>(num_at(t, r * per + c));
        col += dims[k];
      }
    };
  });
}

// ---------------------------------------------------------------- TreeEnsemble (ml opset 5)

struct TreeEnsembleModel {
  std::vector<int64_t> roots, feature, true_id, false_id, target;
  std::vector<uint8_t> modes, true_leaf, false_leaf, missing_true;
  std::vector<double> splits, weights;
  std::vector<std::vector<double>> members;  // per node (BRANCH_MEMBER only)
  int64_t n_targets = 1, aggregate = 1, post = 0;
};

std::vector<double> tensor_doubles(const Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[i] = num_at(t, i);
  return v;
}

TreeEnsembleModel read_tree_ensemble(const KernelInitContext& ic) {
  TreeEnsembleModel m;
  m.roots = ic.get_ints("tree_roots");
  m.feature = ic.get_ints("nodes_featureids");
  m.true_id = ic.get_ints("nodes_truenodeids");
  m.false_id = ic.get_ints("nodes_falsenodeids");
  m.target = ic.get_ints("leaf_targetids");
  for (int64_t v : ic.get_ints("nodes_trueleafs")) m.true_leaf.push_back(v != 0);
  for (int64_t v : ic.get_ints("nodes_falseleafs")) m.false_leaf.push_back(v != 0);
  for (int64_t v : ic.get_ints("nodes_missing_value_tracks_true")) m.missing_true.push_back(v != 0);
  Tensor modes = ic.get_tensor("nodes_modes");
  for (int64_t i = 0; i < modes.numel(); ++i) m.modes.push_back(static_cast<uint8_t>(modes.int_at(i)));
  m.splits = ic.has("nodes_splits") ? tensor_doubles(ic.get_tensor("nodes_splits")) : std::vector<double>();
  m.weights = tensor_doubles(ic.get_tensor("leaf_weights"));
  m.n_targets = ic.get_int("n_targets", 1);
  m.aggregate = ic.get_int("aggregate_function", 1);
  m.post = ic.get_int("post_transform", 0);
  size_t n = m.feature.size();
  if (m.true_id.size() != n || m.false_id.size() != n || m.true_leaf.size() != n || m.false_leaf.size() != n ||
      m.modes.size() != n || (!m.missing_true.empty() && m.missing_true.size() != n))
    kernel_fail("TreeEnsemble: the nodes_* attributes must all have " + std::to_string(n) + " entries");
  if (m.missing_true.empty()) m.missing_true.assign(n, 0);
  if (m.target.size() != m.weights.size()) kernel_fail("TreeEnsemble: leaf_targetids and leaf_weights differ in length");
  if (m.n_targets <= 0) kernel_fail("TreeEnsemble: n_targets must be positive");
  if (m.aggregate < 0 || m.aggregate > 3) kernel_fail("TreeEnsemble: aggregate_function must be 0 to 3");
  if (m.post < 0 || m.post > 4) kernel_fail("TreeEnsemble: post_transform must be 0 to 4");
  // Set-membership values: one NaN-delimited set per BRANCH_MEMBER node, in node order.
  std::vector<double> mv = ic.has("membership_values") ? tensor_doubles(ic.get_tensor("membership_values")) : std::vector<double>();
  m.members.resize(n);
  size_t pos = 0;
  for (size_t i = 0; i < n; ++i) {
    if (m.modes[i] > 6) kernel_fail("TreeEnsemble: node mode " + std::to_string(m.modes[i]) + " is unknown");
    if (m.modes[i] == 6) {
      while (pos < mv.size() && !std::isnan(mv[pos])) m.members[i].push_back(mv[pos++]);
      ++pos;  // the NaN delimiter
    } else if (i >= m.splits.size()) {
      kernel_fail("TreeEnsemble: nodes_splits has too few entries");
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (m.feature[i] < 0) kernel_fail("TreeEnsemble: negative feature id");
    int64_t lim_t = m.true_leaf[i] ? static_cast<int64_t>(m.weights.size()) : static_cast<int64_t>(n);
    int64_t lim_f = m.false_leaf[i] ? static_cast<int64_t>(m.weights.size()) : static_cast<int64_t>(n);
    if (m.true_id[i] < 0 || m.true_id[i] >= lim_t || m.false_id[i] < 0 || m.false_id[i] >= lim_f)
      kernel_fail("TreeEnsemble: node " + std::to_string(i) + " branches out of range");
  }
  for (int64_t t : m.target)
    if (t < 0 || t >= m.n_targets) kernel_fail("TreeEnsemble: leaf target id out of range");
  for (int64_t r : m.roots)
    if (r < 0 || r >= static_cast<int64_t>(n)) kernel_fail("TreeEnsemble: tree root out of range");
  return m;
}

KernelFactory tree_ensemble_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto m = std::make_shared<TreeEnsembleModel>(read_tree_ensemble(ic));
    return [m](KernelContext& ctx) {
      const Tensor& X = ctx.input(0);
      if (!dtype_is_float(X.dtype())) kernel_fail("TreeEnsemble: X must be a float type, got " + dtype_name(X.dtype()));
      int64_t N = X.rank() >= 1 ? X.dim(0) : 1, F = X.rank() == 2 ? X.dim(1) : 1;
      if (X.rank() > 2) kernel_fail("TreeEnsemble: X must be [N, F]");
      const int64_t T = m->n_targets;
      std::vector<double> out(static_cast<size_t>(N * T));
      std::vector<double> acc(static_cast<size_t>(T));
      std::vector<int64_t> hits(static_cast<size_t>(T));
      size_t max_steps = m->feature.size() + 1;
      for (int64_t n = 0; n < N; ++n) {
        std::fill(acc.begin(), acc.end(), 0.0);
        std::fill(hits.begin(), hits.end(), 0);
        for (int64_t root : m->roots) {
          int64_t node = root;
          for (size_t step = 0;; ++step) {
            if (step > max_steps) kernel_fail("TreeEnsemble: a tree has a cycle");
            if (m->feature[node] >= F) kernel_fail("TreeEnsemble: feature id " + std::to_string(m->feature[node]) + " >= " + std::to_string(F));
            double x = X.float_at(n * F + m->feature[node]);
            bool go_true;
            if (std::isnan(x)) {
              go_true = m->missing_true[node];
            } else {
              double s = m->modes[node] == 6 ? 0.0 : m->splits[node];
              switch (m->modes[node]) {
                case 0: go_true = x <= s; break;
                case 1: go_true = x < s; break;
                case 2: go_true = x >= s; break;
                case 3: go_true = x > s; break;
                case 4: go_true = x == s; break;
                case 5: go_true = x != s; break;
                default: go_true = std::find(m->members[node].begin(), m->members[node].end(), x) != m->members[node].end();
              }
            }
            bool leaf = go_true ? m->true_leaf[node] : m->false_leaf[node];
            int64_t next = go_true ? m->true_id[node] : m->false_id[node];
            if (!leaf) {
              node = next;
              continue;
            }
            int64_t t = m->target[next];
            double w = m->weights[next];
            if (m->aggregate == 2) acc[t] = hits[t] ? std::min(acc[t], w) : w;
            else if (m->aggregate == 3) acc[t] = hits[t] ? std::max(acc[t], w) : w;
            else acc[t] += w;
            ++hits[t];
            break;
          }
        }
        if (m->aggregate == 0 && !m->roots.empty())
          for (auto& a : acc) a /= static_cast<double>(m->roots.size());
        double* o = out.data() + n * T;
        std::copy(acc.begin(), acc.end(), o);
        ml::post_transform_row(static_cast<ml::PostTransform>(m->post), o, T);
      }
      Tensor& Y = ctx.allocate_output(0, X.dtype(), {N, T});
      dispatch_float(X.dtype(), [&](auto tag) {
        using V = typename decltype(tag)::type;
        V* y = Y.data<V>();
        for (int64_t i = 0; i < N * T; ++i) y[i] = from_d<V>(out[i]);
      });
    };
  });
}

}  // namespace

void register_ml_ops(KernelRegistry& r) {
  r.add("TreeEnsemble", 5, kMaxOpset, tree_ensemble_factory(), kMl);
  r.add("LabelEncoder", 1, kMaxOpset, label_encoder_factory(), kMl);
  r.add("ArrayFeatureExtractor", 1, kMaxOpset, array_feature_extractor_factory(), kMl);
  r.add("Binarizer", 1, kMaxOpset, binarizer_factory(), kMl);
  r.add("Normalizer", 1, kMaxOpset, normalizer_factory(), kMl);
  r.add("Scaler", 1, kMaxOpset, scaler_factory(), kMl);
  r.add("OneHotEncoder", 1, kMaxOpset, one_hot_encoder_factory(), kMl);
  r.add("Imputer", 1, kMaxOpset, imputer_factory(), kMl);
  r.add("FeatureVectorizer", 1, kMaxOpset, feature_vectorizer_factory(), kMl);
}

}  // namespace onyx
