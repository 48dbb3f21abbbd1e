#include "cpu/kernels/ml_common.h"

namespace onyx::ml {

PostTransform parse_post_transform(const std::string& name) {
  if (name == "NONE") return PostTransform::None;
  if (name == "SOFTMAX") return PostTransform::Softmax;
  if (name == "LOGISTIC") return PostTransform::Logistic;
  if (name == "SOFTMAX_ZERO") return PostTransform::SoftmaxZero;
  if (name == "PROBIT") return PostTransform::Probit;
  kernel_fail("post_transform '" + name + "' is not one of NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT");
}

double probit(double p) {
  // erfinv by Newton steps on erf, from 0: erf is increasing and convex on
  // the side of the root, so the steps converge monotonically.
  if (!(p >= 0 && p <= 1)) return NAN;  // not a probability
  double y = 2 * p - 1;
  if (y <= -1) return -INFINITY;
  if (y >= 1) return INFINITY;
  double z = 0;
  for (int it = 0; it < 60; ++it) {
    double step = (std::erf(z) - y) / (2 / std::sqrt(M_PI) * std::exp(-z * z));
    z -= step;
    if (std::abs(step) < 1e-15 * std::max(1.0, std::abs(z))) break;
  }
  return std::sqrt(2.0) * z;
}

ClassLabels read_class_labels(const AttributeReader& attrs, const char* op) {
  ClassLabels labels;
  labels.ints = attrs.get_ints("classlabels_int64s");
  labels.strings = attrs.get_strings("classlabels_strings");
  if (labels.ints.empty() == labels.strings.empty())
    kernel_fail(std::string(op) + ": exactly one of classlabels_int64s and classlabels_strings must be given");
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

}  // namespace onyx::ml
