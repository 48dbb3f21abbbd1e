#include "cli_common.h"

#include <cmath>
#include <random>
#include <sstream>

#include "onnx/npy.h"
#include "onnx/tensor_proto.h"

namespace onyx::cli {

std::string Args::get(const std::string& key, const std::string& def) const {
  auto it = options.find(key);
  return it == options.end() ? def : it->second;
}

std::vector<std::string> Args::all(const std::string& key) const {
  std::vector<std::string> v;
  auto [b, e] = options.equal_range(key);
  for (auto it = b; it != e; ++it) v.push_back(it->second);
  return v;
}

int Args::get_int(const std::string& key, int def) const {
  if (!has(key)) return def;
  try {
    return std::stoi(get(key));
  } catch (const std::exception&) {
    fail(ErrorCode::InvalidArgument, "option " + key + " needs an integer, got '" + get(key) + "'");
  }
}

Args parse_args(int argc, char** argv, int start, const std::vector<std::string>& flags) {
  Args a;
  for (int i = start; i < argc; ++i) {
    std::string s = argv[i];
    if (s.size() > 1 && s[0] == '-' && !(s.size() > 1 && std::isdigit(static_cast<unsigned char>(s[1])))) {
      std::string key = s, value;
      size_t eq = s.find('=');
      if (s.rfind("--", 0) == 0 && eq != std::string::npos) {
        key = s.substr(0, eq);
        value = s.substr(eq + 1);
      } else if (std::find(flags.begin(), flags.end(), s) != flags.end()) {
        value = "1";
      } else {
        if (i + 1 >= argc) fail(ErrorCode::InvalidArgument, "option " + s + " needs a value");
        value = argv[++i];
      }
      a.options.emplace(key, value);
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

OptimizationLevel parse_opt_level(const std::string& level) {
  if (level == "disable" || level == "0") return OptimizationLevel::Disable;
  if (level == "basic" || level == "1") return OptimizationLevel::Basic;
  if (level == "extended" || level == "2") return OptimizationLevel::Extended;
  if (level == "all" || level == "99") return OptimizationLevel::All;
  fail(ErrorCode::InvalidArgument, "the optimization level must be disable, basic, extended or all (0, 1, 2, 99), got '" +
                                       level + "'");
}

LogLevel parse_log_level(const std::string& level) {
  static const char* names[] = {"verbose", "info", "warning", "error", "fatal"};
  for (int i = 0; i < 5; ++i)
    if (level == names[i] || level == std::to_string(i)) return static_cast<LogLevel>(i);
  fail(ErrorCode::InvalidArgument, "--log-level must be verbose, info, warning, error or fatal (0-4), got '" + level + "'");
}

SessionOptions session_options_from(const Args& args) {
  SessionOptions o;
  o.intra_op_num_threads = args.get_int("--threads", 0);
  o.optimization_level = parse_opt_level(args.get("--opt-level", "all"));
  if (args.has("--log-level")) o.log_severity_level = parse_log_level(args.get("--log-level"));
  std::string provider = args.get("--provider", "cpu");
  if (provider != "cpu" && provider != "cuda")
    fail(ErrorCode::InvalidArgument, "--provider must be cpu or cuda, got '" + provider + "'");
  o.providers = {provider};
  // --provider-option KEY=VALUE (repeatable): options of that provider, e.g.
  // cudnn_conv_algo_search=HEURISTIC or device_id=1.
  for (auto& kv : args.all("--provider-option")) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) fail(ErrorCode::InvalidArgument, "--provider-option must be KEY=VALUE, got '" + kv + "'");
    o.provider_options[provider][kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return o;
}

static bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Feeds read_inputs(const Session& session, const std::vector<std::string>& specs) {
  Feeds feeds;
  const auto& inputs = session.inputs();
  for (size_t k = 0; k < specs.size(); ++k) {
    std::string spec = specs[k], name, path = spec;
    size_t eq = spec.find('=');
    const ValueMeta* meta = nullptr;
    if (eq != std::string::npos) {
      name = spec.substr(0, eq);
      path = spec.substr(eq + 1);
      for (auto& m : inputs)
        if (m.name == name) meta = &m;
      for (auto& m : session.overridable_initializers())
        if (m.name == name) meta = &m;
      if (!meta) fail(ErrorCode::InvalidArgument, "model '" + session.model_name() + "': '" + name + "' is not an input");
    } else {
      if (k >= inputs.size())
        fail(ErrorCode::InvalidArgument, "model '" + session.model_name() + "' has " + std::to_string(inputs.size()) +
                                             " inputs but input file " + std::to_string(k + 1) + " ('" + path + "') was given");
      meta = &inputs[k];
      name = meta->name;
    }
    Value v = ends_with(path, ".npy") ? Value(read_npy(path)) : read_value_pb(path, meta->type);
    feeds.push_back({name, std::move(v)});
  }
  return feeds;
}

static Tensor random_tensor(DataType dt, const Shape& shape, std::mt19937& rng) {
  Tensor t(dt, shape);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) {
    switch (dt) {
      case DataType::Float: t.data<float>()[i] = u(rng); break;
      case DataType::Double: t.data<double>()[i] = u(rng); break;
      case DataType::Float16: t.data<Float16>()[i] = Float16(u(rng)); break;
      case DataType::BFloat16: t.data<BFloat16>()[i] = BFloat16(u(rng)); break;
      case DataType::Int64: t.data<int64_t>()[i] = rng() % 2; break;  // ids and masks: small and valid
      case DataType::Int32: t.data<int32_t>()[i] = rng() % 2; break;
      case DataType::Bool: t.data<bool>()[i] = rng() % 2; break;
      case DataType::String: t.data<std::string>()[i] = "a"; break;
      default: std::memset(static_cast<char*>(t.raw()) + i * dtype_size(dt), 0, dtype_size(dt));
    }
  }
  return t;
}

Feeds random_inputs(const Session& session, const std::map<std::string, int64_t>& dims) {
  std::mt19937 rng(42);
  Feeds feeds;
  for (auto& m : session.inputs()) {
    if (m.type.kind != TypeInfo::Kind::Tensor)
      fail(ErrorCode::InvalidArgument, "cannot generate input '" + m.name + "' of type " + m.type.to_string());
    Shape shape;
    for (auto& d : m.type.shape) {
      if (d.value >= 0) shape.push_back(d.value);
      else {
        auto it = dims.find(d.symbol);
        shape.push_back(it != dims.end() ? it->second : 1);
      }
    }
    feeds.push_back({m.name, Value(random_tensor(m.type.elem_type, shape, rng))});
  }
  return feeds;
}

static std::string compare_tensors(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.dtype() != b.dtype()) return "element type " + dtype_name(a.dtype()) + " != expected " + dtype_name(b.dtype());
  if (a.shape() != b.shape()) return "shape " + shape_to_string(a.shape()) + " != expected " + shape_to_string(b.shape());
  // As ONNX's backend test runner does: bfloat16 outputs are compared within two ULPs.
  if (b.dtype() == DataType::BFloat16) rtol = std::max(rtol, 1.0 / 64);
  for (int64_t i = 0; i < a.numel(); ++i) {
    std::ostringstream os;
    if (a.dtype() == DataType::String) {
      if (a.data<std::string>()[i] != b.data<std::string>()[i]) {
        os << "at " << i << ": '" << a.data<std::string>()[i] << "' != expected '" << b.data<std::string>()[i] << "'";
        return os.str();
      }
    } else if (dtype_is_float(a.dtype()) || dtype_is_small_float(a.dtype())) {
      double x = a.float_at(i), y = b.float_at(i);
      if (std::isnan(x) && std::isnan(y)) continue;
      if (x == y) continue;
      if (std::isnan(x) || std::isnan(y) || std::isinf(x) || std::isinf(y) || std::abs(x - y) > atol + rtol * std::abs(y)) {
        os << "at " << i << ": " << x << " != expected " << y;
        return os.str();
      }
    } else if (a.dtype() == DataType::UInt64) {
      if (a.data<uint64_t>()[i] != b.data<uint64_t>()[i]) return "at " + std::to_string(i) + ": values differ";
    } else if (a.int_at(i) != b.int_at(i)) {
      os << "at " << i << ": " << a.int_at(i) << " != expected " << b.int_at(i);
      return os.str();
    }
  }
  return "";
}

std::string compare_values(const Value& a, const Value& b, double rtol, double atol) {
  if (b.is_tensor()) {
    if (!a.is_tensor()) return "got " + a.kind_name() + ", expected a tensor";
    return compare_tensors(a.tensor(), b.tensor(), rtol, atol);
  }
  if (b.is_sequence()) {
    if (!a.is_sequence()) return "got " + a.kind_name() + ", expected a sequence";
    auto& x = a.sequence().items;
    auto& y = b.sequence().items;
    if (x.size() != y.size()) return "sequence length " + std::to_string(x.size()) + " != expected " + std::to_string(y.size());
    for (size_t i = 0; i < x.size(); ++i) {
      std::string d = compare_tensors(x[i], y[i], rtol, atol);
      if (!d.empty()) return "sequence item " + std::to_string(i) + ": " + d;
    }
    return "";
  }
  if (b.is_map()) {
    if (!a.is_map()) return "got " + a.kind_name() + ", expected a map";
    std::string d = compare_tensors(a.map().keys, b.map().keys, 0, 0);
    if (!d.empty()) return "map keys: " + d;
    d = compare_tensors(a.map().values, b.map().values, rtol, atol);
    return d.empty() ? d : "map values: " + d;
  }
  if (b.is_map_sequence()) {
    if (!a.is_map_sequence()) return "got " + a.kind_name() + ", expected a sequence of maps";
    auto& x = a.map_sequence();
    auto& y = b.map_sequence();
    if (x.size() != y.size()) return "sequence length " + std::to_string(x.size()) + " != expected " + std::to_string(y.size());
    for (int64_t i = 0; i < x.size(); ++i) {
      std::string d = compare_values(Value(x.at(i)), Value(y.at(i)), rtol, atol);
      if (!d.empty()) return "sequence item " + std::to_string(i) + ": " + d;
    }
    return "";
  }
  if (b.is_optional()) {
    const Optional* ao = a.is_optional() ? &a.optional() : nullptr;
    bool a_has = ao ? ao->content != nullptr : !a.is_none();
    bool b_has = b.optional().content != nullptr;
    if (a_has != b_has) return a_has ? "optional has a value, expected none" : "optional is empty, expected a value";
    if (!b_has) return "";
    return compare_values(ao ? *ao->content : a, *b.optional().content, rtol, atol);
  }
  return "expected value has no content";
}

std::string describe_value(const Value& v) {
  std::ostringstream os;
  if (v.is_tensor()) {
    const Tensor& t = v.tensor();
    os << dtype_name(t.dtype()) << shape_to_string(t.shape());
    if (t.numel() > 0) {
      os << " [";
      int64_t n = std::min<int64_t>(t.numel(), 6);
      for (int64_t i = 0; i < n; ++i) {
        if (i) os << ", ";
        if (t.dtype() == DataType::String) os << '"' << t.data<std::string>()[i] << '"';
        else if (dtype_is_float(t.dtype())) os << t.float_at(i);
        else if (t.dtype() == DataType::UInt64) os << t.data<uint64_t>()[i];
        else os << t.int_at(i);
      }
      if (t.numel() > n) os << ", ...";
      os << "]";
    }
  } else if (v.is_sequence()) {
    os << "sequence of " << v.sequence().items.size() << " tensors";
  } else if (v.is_map()) {
    os << v.kind_name() << " with " << v.map().size() << " keys";
  } else if (v.is_map_sequence()) {
    os << "sequence of " << v.map_sequence().size() << " maps";
  } else if (v.is_optional()) {
    os << (v.optional().content ? "optional: " + describe_value(*v.optional().content) : "optional: none");
  }
  return os.str();
}

}  // namespace onyx::cli
