// LinearClassifier and LinearRegressor (ai.onnx.ml opset 1): scores = X W^T + b,
// one row of W per class or regression target, computed with the shared SGEMM.
//
// Where the spec leaves the behaviour open, these follow ONNX Runtime, the
// runtime users compare against (found by running it):
//  * a binary classifier with a single row of coefficients expands its score
//    s (for the second class) to two columns, [1 - s, s], after LOGISTIC
//    when that is the transform; SOFTMAX and SOFTMAX_ZERO leave [1 - s, s];
//  * labels come from the raw scores (first largest; a lone score picks the
//    second class when s > 0), never from the transformed ones;
//  * `multi_class` does not change anything;
//  * a regressor with one target applies only PROBIT to its lone score.
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/kernels/ml_common.h"

namespace onyx {
namespace {

const char* kMl = "ai.onnx.ml";
// Scores per call below which the per-row work (transforms, labels) runs
// on the calling thread: waking the pool costs more.
constexpr int64_t kRowsInline = 1 << 14;

// W [rows, F] and b [rows], stored as the attributes give them.
struct LinearWeights {
  std::vector<float> coefficients;
  std::vector<float> intercepts;  // empty: no intercepts
};

// scores[N, rows] = X W^T + b.
std::vector<float> linear_scores(const ml::FeatureRows& x, const LinearWeights& w, int64_t rows, ThreadPool* pool) {
  std::vector<float> scores(static_cast<size_t>(x.rows * rows));
  if (x.rows == 0 || rows == 0) return scores;
  GemmEpilogue bias;
  bias.bias = w.intercepts.empty() ? nullptr : w.intercepts.data();
  gemm_f32(false, true, x.rows, rows, x.cols, 1.0f, x.data, x.cols, w.coefficients.data(), x.cols, 0.0f, scores.data(),
           rows, pool, bias);
  return scores;
}

// ---------------------------------------------------------------- LinearClassifier

struct LinearClassifierModel {
  LinearWeights w;
  ml::ClassLabels labels;
  ml::PostTransform post = ml::PostTransform::None;
};

// The number of coefficient rows (classes) for X of width `features`: the
// coefficients are [classes, features], with one intercept per class when
// intercepts are given (they fix the count; without them X's width does).
// One row with two labels is the binary single-score form.
int64_t classifier_rows(const LinearClassifierModel& m, int64_t features) {
  const int64_t n_coef = static_cast<int64_t>(m.w.coefficients.size());
  const int64_t n_icpt = static_cast<int64_t>(m.w.intercepts.size());
  if (n_icpt > 0 && n_coef / n_icpt != features)
    kernel_fail("LinearClassifier: X has " + std::to_string(features) + " features, the model " +
                std::to_string(n_coef / n_icpt) + " (" + std::to_string(n_coef) + " coefficients for " +
                std::to_string(n_icpt) + " intercepts)");
  if (features <= 0) kernel_fail("LinearClassifier: X has no features");
  if (n_coef % features != 0)
    kernel_fail("LinearClassifier: " + std::to_string(n_coef) + " coefficients are not a whole number of rows of " +
                std::to_string(features) + " (the width of X)");
  const int64_t rows = n_coef / features;
  const int64_t n_labels = m.labels.size();
  if (rows == 1 ? n_labels != 2 : n_labels != rows)
    kernel_fail("LinearClassifier: " + std::to_string(n_labels) + " class labels for " + std::to_string(rows) +
                " rows of coefficients (one row needs 2 labels, else one label per row)");
  return rows;
}

// Z row for the binary single-score form: [1 - s, s] with s the score of
// the second class (logistic first when LOGISTIC). ONNX Runtime has no
// defined second column under PROBIT (it leaves memory unset); here the
// first column is then 0.
void binary_linear_row(ml::PostTransform pt, float s, float* z) {
  switch (pt) {
    case ml::PostTransform::Logistic: {
      float p = static_cast<float>(ml::logistic(s));
      z[0] = 1 - p;
      z[1] = p;
      break;
    }
    case ml::PostTransform::Probit:
      z[0] = 0;
      z[1] = ml::probit(s);
      break;
    default:  // NONE, SOFTMAX, SOFTMAX_ZERO
      z[0] = 1 - s;
      z[1] = s;
  }
}

LinearClassifierModel read_linear_classifier(const KernelInitContext& ic) {
  LinearClassifierModel m;
  m.w.coefficients = ic.get_floats("coefficients");
  m.w.intercepts = ic.get_floats("intercepts");
  m.labels = ml::read_class_labels(ic, "LinearClassifier", "classlabels_ints");
  m.post = ml::parse_post_transform(ic.get_string("post_transform", "NONE"));
  if (m.w.coefficients.empty()) kernel_fail("LinearClassifier: coefficients must be given");
  if (!m.w.intercepts.empty() && m.w.coefficients.size() % m.w.intercepts.size() != 0)
    kernel_fail("LinearClassifier: " + std::to_string(m.w.coefficients.size()) + " coefficients do not split into " +
                std::to_string(m.w.intercepts.size()) + " rows, one per intercept");
  return m;
}

void run_linear_classifier(const LinearClassifierModel& m, KernelContext& ctx) {
  ml::FeatureRows x = ml::read_feature_rows(ctx.input(0), "LinearClassifier");
  const int64_t rows = classifier_rows(m, x.cols), N = x.rows;
  std::vector<float> scores = linear_scores(x, m.w, rows, ctx.thread_pool());
  std::vector<int64_t> label_index(static_cast<size_t>(N));
  const int64_t zc = rows == 1 ? 2 : rows;
  std::vector<float> z(static_cast<size_t>(N * zc));
  parallel_for(N * zc > kRowsInline ? ctx.thread_pool() : nullptr, N, [&](int64_t n0, int64_t n1) {
    for (int64_t n = n0; n < n1; ++n) {
      const float* s = scores.data() + n * rows;
      float* zr = z.data() + n * zc;
      if (rows == 1) {
        label_index[n] = s[0] > 0 ? 1 : 0;
        binary_linear_row(m.post, s[0], zr);
      } else {
        label_index[n] = ml::first_argmax(s, rows);
        std::copy(s, s + rows, zr);
      }
    }
    if (rows > 1) ml::post_transform_rows(m.post, z.data() + n0 * zc, n1 - n0, zc);
  });
  ml::write_labels(ctx, 0, m.labels, label_index);
  ml::write_scores(ctx, 1, z, N, zc);
}

KernelFactory linear_classifier_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto m = std::make_shared<const LinearClassifierModel>(read_linear_classifier(ic));
    return [m](KernelContext& ctx) { run_linear_classifier(*m, ctx); };
  });
}

// ---------------------------------------------------------------- LinearRegressor

struct LinearRegressorModel {
  LinearWeights w;
  int64_t targets = 1, features = 0;
  ml::PostTransform post = ml::PostTransform::None;
};

LinearRegressorModel read_linear_regressor(const KernelInitContext& ic) {
  LinearRegressorModel m;
  m.w.coefficients = ic.get_floats("coefficients");
  m.w.intercepts = ic.get_floats("intercepts");
  m.targets = ic.get_int("targets", 1);
  m.post = ml::parse_post_transform(ic.get_string("post_transform", "NONE"));
  const int64_t n_coef = static_cast<int64_t>(m.w.coefficients.size());
  if (m.targets <= 0) kernel_fail("LinearRegressor: targets must be positive, got " + std::to_string(m.targets));
  if (n_coef == 0 || n_coef % m.targets != 0)
    kernel_fail("LinearRegressor: " + std::to_string(n_coef) + " coefficients are not " + std::to_string(m.targets) +
                " (targets) non-empty rows");
  if (!m.w.intercepts.empty() && static_cast<int64_t>(m.w.intercepts.size()) != m.targets)
    kernel_fail("LinearRegressor: " + std::to_string(m.w.intercepts.size()) + " intercepts for " +
                std::to_string(m.targets) + " targets");
  m.features = n_coef / m.targets;
  return m;
}

void run_linear_regressor(const LinearRegressorModel& m, KernelContext& ctx) {
  ml::FeatureRows x = ml::read_feature_rows(ctx.input(0), "LinearRegressor");
  if (x.cols != m.features)
    kernel_fail("LinearRegressor: X has " + std::to_string(x.cols) + " features, the coefficients " +
                std::to_string(m.features) + " per target");
  const int64_t T = m.targets;
  std::vector<float> scores = linear_scores(x, m.w, T, ctx.thread_pool());
  Tensor& Y = ctx.allocate_output(0, DataType::Float, {x.rows, T});
  std::copy(scores.begin(), scores.end(), Y.data<float>());
  // ONNX Runtime transforms a lone target's score only with PROBIT.
  if (m.post == ml::PostTransform::None || (T == 1 && m.post != ml::PostTransform::Probit)) return;
  float* y = Y.data<float>();
  parallel_for(x.rows * T > kRowsInline ? ctx.thread_pool() : nullptr, x.rows, [&](int64_t n0, int64_t n1) {
    ml::post_transform_rows(m.post, y + n0 * T, n1 - n0, T);
  });
}

KernelFactory linear_regressor_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto m = std::make_shared<const LinearRegressorModel>(read_linear_regressor(ic));
    return [m](KernelContext& ctx) { run_linear_regressor(*m, ctx); };
  });
}

}  // namespace

void register_ml_linear_ops(KernelRegistry& r) {
  r.add("LinearClassifier", 1, kMaxOpset, linear_classifier_factory(), kMl);
  r.add("LinearRegressor", 1, kMaxOpset, linear_regressor_factory(), kMl);
}

}  // namespace onyx
