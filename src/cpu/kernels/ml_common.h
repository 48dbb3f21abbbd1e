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

double probit(double p);  // sqrt(2) * erfinv(2p - 1)
inline double logistic(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// Applies the transform to one row of n scores in place.
template <typename T>
void post_transform_row(PostTransform pt, T* s, int64_t n) {
  switch (pt) {
    case PostTransform::Softmax:
    case PostTransform::SoftmaxZero: {
      // SOFTMAX_ZERO leaves zero scores at zero and leaves them out of the sum.
      bool zero = pt == PostTransform::SoftmaxZero;
      double mx = -INFINITY;
      for (int64_t i = 0; i < n; ++i)
        if (!zero || s[i] != 0) mx = std::max<double>(mx, s[i]);
      double sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        double e = (zero && s[i] == 0) ? 0.0 : std::exp(static_cast<double>(s[i]) - mx);
        s[i] = static_cast<T>(e);
        sum += e;
      }
      for (int64_t i = 0; i < n; ++i) s[i] = sum > 0 ? static_cast<T>(s[i] / sum) : T(0);
      break;
    }
    case PostTransform::Logistic:
      for (int64_t i = 0; i < n; ++i) s[i] = static_cast<T>(logistic(s[i]));
      break;
    case PostTransform::Probit:
      for (int64_t i = 0; i < n; ++i) s[i] = static_cast<T>(probit(s[i]));
      break;
    case PostTransform::None:
      break;
  }
}

// The class labels of a classifier: exactly one of classlabels_int64s and
// classlabels_strings. The label output is int64 or string to match.
struct ClassLabels {
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  bool is_string() const { return !strings.empty(); }
  int64_t size() const { return static_cast<int64_t>(is_string() ? strings.size() : ints.size()); }
};

ClassLabels read_class_labels(const AttributeReader& attrs, const char* op);

// Output 0 of a classifier: `label_index[i]` picks the label of row i.
void write_labels(KernelContext& ctx, size_t output, const ClassLabels& labels, const std::vector<int64_t>& label_index);

}  // namespace onyx::ml
