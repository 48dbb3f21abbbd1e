// Pieces the ai.onnx.ml classifiers and regressors share: the score post
// transforms (NONE, SOFTMAX, LOGISTIC, SOFTMAX_ZERO, PROBIT) and the
// class-label attributes (classlabels_int64s or classlabels_strings).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.h"

namespace onyx::ml {

// Numbered as TreeEnsemble (ml opset 5) numbers its post_transform attribute.
enum class PostTransform { None = 0, Softmax = 1, Logistic = 2, SoftmaxZero = 3, Probit = 4 };

PostTransform parse_post_transform(const std::string& name);  // the string attribute of the older ml ops

// sqrt(2) * erfinv(2p - 1), with erfinv by Winitzki's closed-form
// approximation (a = 0.147) evaluated in float: ONNX Runtime and the ONNX
// reference implementation both compute PROBIT so, and users compare against
// them. It is off the exact quantile by up to 2e-3 relative (7e-3 absolute
// for p in [1e-4, 1 - 1e-4]), and float rounding near p = 0.5 is part of
// its result; both are kept on purpose.
float probit(float p);
inline double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// SOFTMAX_ZERO as ONNX Runtime computes it, in T: the maximum is taken over
// all scores, zeros included; a score within 1e-7 of zero is scaled by
// exp(-max) instead of exponentiated, so an exact zero stays zero (and a
// tiny one stays tiny, keeping its sign). A row whose terms all vanish
// divides 0 by 0 (NaN), as there.
template <typename T>
void softmax_zero_row(T* s, int64_t n) {
  if (n <= 0) return;
  T mx = s[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, s[i]);
  const T tiny = static_cast<T>(1e-7), exp_neg_max = std::exp(-mx);
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    s[i] = (s[i] > tiny || s[i] < -tiny) ? std::exp(s[i] - mx) : s[i] * exp_neg_max;
    sum += s[i];
  }
  for (int64_t i = 0; i < n; ++i) s[i] /= sum;
}

// Applies the transform to one row of n scores in place.
template <typename T>
void post_transform_row(PostTransform pt, T* s, int64_t n) {
  switch (pt) {
    case PostTransform::Softmax: {
      double mx = -INFINITY;
      for (int64_t i = 0; i < n; ++i) mx = std::max<double>(mx, s[i]);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        double e = std::exp(static_cast<double>(s[i]) - mx);
        s[i] = static_cast<T>(e);
        sum += e;
      }
      for (int64_t i = 0; i < n; ++i) s[i] = sum > 0 ? static_cast<T>(s[i] / sum) : T(0);
      break;
    }
    case PostTransform::SoftmaxZero:
      softmax_zero_row(s, n);
      break;
    case PostTransform::Logistic:
      for (int64_t i = 0; i < n; ++i) s[i] = static_cast<T>(logistic(s[i]));
      break;
    case PostTransform::Probit:
      for (int64_t i = 0; i < n; ++i) s[i] = static_cast<T>(probit(static_cast<float>(s[i])));
      break;
    case PostTransform::None:
      break;
  }
}

// Applies the transform to `rows` rows of `cols` float scores in place, with
// the vectorized exp / sigmoid for SOFTMAX and LOGISTIC (a batch's worth of
// std::exp calls cost more than the linear model's GEMM).
void post_transform_rows(PostTransform pt, float* s, int64_t rows, int64_t cols);

// The class labels of a classifier: exactly one of classlabels_int64s and
// classlabels_strings. The label output is int64 or string to match.
struct ClassLabels {
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  bool is_string() const { return !strings.empty(); }
  int64_t size() const { return static_cast<int64_t>(is_string() ? strings.size() : ints.size()); }
};

// `ints_name`: the integer attribute's name, which differs between ops
// (classlabels_int64s for the tree ensembles, classlabels_ints for
// LinearClassifier and SVMClassifier).
ClassLabels read_class_labels(const AttributeReader& attrs, const char* op,
                              const char* ints_name = "classlabels_int64s");

// Output 0 of a classifier: `label_index[i]` picks the label of row i.
void write_labels(KernelContext& ctx, size_t output, const ClassLabels& labels, const std::vector<int64_t>& label_index);

// Output `output` of a classifier, the scores [rows, cols], when wanted.
void write_scores(KernelContext& ctx, size_t output, const std::vector<float>& scores, int64_t rows, int64_t cols);

// The input X of a classifier or regressor as float rows: X is [N, F], or
// [F] for one row; float, double, int64 and int32 are read as float (the
// models' weights are float). Float input is used in place, others copied.
struct FeatureRows {
  FeatureRows() = default;
  FeatureRows(FeatureRows&&) = default;  // a moved vector keeps its buffer, so `data` stays valid
  FeatureRows(const FeatureRows&) = delete;
  const float* data = nullptr;
  int64_t rows = 0, cols = 0;
  std::vector<float> converted;  // owns `data` when X was not float
};
FeatureRows read_feature_rows(const Tensor& X, const char* op);

// The index of the first largest of n scores, comparing with `>` from index
// 0 on (so a NaN in front wins, as in ONNX Runtime's arg max); 0 when n is 0.
inline int64_t first_argmax(const float* s, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 1; i < n; ++i)
    if (s[i] > s[best]) best = i;
  return best;
}

}  // namespace onyx::ml
