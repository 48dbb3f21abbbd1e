#include "cpu/kernels/ml_common.h"

#include "cpu/gemm_vmath.h"

namespace onyx::ml {

PostTransform parse_post_transform(const std::string& name) {
  if (name == "NONE") return PostTransform::None;
  if (name == "SOFTMAX") return PostTransform::Softmax;
  if (name == "LOGISTIC") return PostTransform::Logistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::SoftmaxZero;
  if (name == "PROBIT") return PostTransform::Probit;
  kernel_fail("post_transform '" + name + "' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
}

float probit(float p) {
  // erfinv(y) ~ sign(y) sqrt(sqrt(t^2 - ln(1 - y^2) / a) - t), t = 2 / (pi a) + ln(1 - y^2) / 2.
  // p = 0 or 1 give -inf or +inf, p outside [0, 1] NaN, through the log.
  const float a = 0.147f;
  float y = 2 * p - 1;
  float sign = y < 0 ? -1.0f : 1.0f;
  float ln = std::log((1 - y) * (1 + y));
  float t = 2 / (static_cast<float>(M_PI) * a) + 0.5f * ln;
  float u = ln / a;
  float erfinv = sign * std::sqrt(-t + std::sqrt(t * t - u));
  return static_cast<float>(M_SQRT2) * erfinv;
}

void post_transform_rows(PostTransform pt, float* s, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  if (pt == PostTransform::Logistic) {
    vm::sigmoid(s, s, n);
  } else if (pt == PostTransform::Softmax) {
    for (int64_t r = 0; r < rows; ++r) {
      float* row = s + r * cols;
      float mx = -INFINITY;
      for (int64_t c = 0; c < cols; ++c) mx = std::max(mx, row[c]);
      for (int64_t c = 0; c < cols; ++c) row[c] -= mx;
    }
    vm::exp(s, s, n);
    for (int64_t r = 0; r < rows; ++r) {
      float* row = s + r * cols;
      float sum = 0;
      for (int64_t c = 0; c < cols; ++c) sum += row[c];
      for (int64_t c = 0; c < cols; ++c) row[c] = sum > 0 ? row[c] / sum : 0.f;
    }
  } else {
    for (int64_t r = 0; r < rows; ++r) post_transform_row(pt, s + r * cols, cols);
  }
}

ClassLabels read_class_labels(const AttributeReader& attrs, const char* op, const char* ints_name) {
  ClassLabels labels;
  labels.ints = attrs.get_ints(ints_name);
  labels.strings = attrs.get_strings("classlabels_strings");
  if (labels.ints.empty() == labels.strings.empty())
    kernel_fail(std::string(op) + ": exactly one of " + ints_name + " and classlabels_strings must be given");
  return labels;
}

void write_labels(KernelContext& ctx, size_t output, const ClassLabels& labels, const std::vector<int64_t>& label_index) {
  if (!ctx.wants_output(output)) return;
  int64_t n = static_cast<int64_t>(label_index.size());
  if (labels.is_string()) {
    Tensor& y = ctx.allocate_output(output, DataType::String, {n});
    auto* out = y.data<std::string>();
    for (int64_t i = 0; i < n; ++i) out[i] = labels.strings[label_index[i]];
  } else {
    Tensor& y = ctx.allocate_output(output, DataType::Int64, {n});
    auto* out = y.data<int64_t>();
    for (int64_t i = 0; i < n; ++i) out[i] = labels.ints[label_index[i]];
  }
}

void write_scores(KernelContext& ctx, size_t output, const std::vector<float>& scores, int64_t rows, int64_t cols) {
  if (!ctx.wants_output(output)) return;
  Tensor& z = ctx.allocate_output(output, DataType::Float, {rows, cols});
  std::copy(scores.begin(), scores.end(), z.data<float>());
}

FeatureRows read_feature_rows(const Tensor& X, const char* op) {
  if (X.rank() != 1 && X.rank() != 2)
    kernel_fail(std::string(op) + ": X must be [N, F] or [F], got shape " + shape_to_string(X.shape()));
  FeatureRows f;
  f.rows = X.rank() == 2 ? X.dim(0) : 1;
  f.cols = X.dim(-1);
  auto convert = [&](auto* x) {
    f.converted.assign(x, x + X.numel());  // element-wise static_cast to float
    f.data = f.converted.data();
  };
  switch (X.dtype()) {
    case DataType::Float: f.data = X.data<float>(); break;
    case DataType::Double: convert(X.data<double>()); break;
    case DataType::Int64: convert(X.data<int64_t>()); break;
    case DataType::Int32: convert(X.data<int32_t>()); break;
    default: kernel_fail(std::string(op) + ": X must be float, double, int64 or int32, got " + dtype_name(X.dtype()));
  }
  return f;
}

}  // namespace onyx::ml
