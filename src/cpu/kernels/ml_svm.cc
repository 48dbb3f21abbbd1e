// SVMClassifier and SVMRegressor (ai.onnx.ml opset 1), as libsvm-style
// models (scikit-learn's SVC, NuSVC, SVR, NuSVR, OneClassSVM) export them.
//
// Both have two forms. With support vectors, a score is
// sum_k coef_k K(x, sv_k) + rho, with K one of
//   LINEAR  x.sv            POLY     (gamma x.sv + coef0)^degree
//   RBF     exp(-gamma |x - sv|^2)   SIGMOID  tanh(gamma x.sv + coef0)
// (kernel_params = [gamma, coef0, degree]); the classifier scores every pair
// of classes (one-vs-one) and lets the pairs vote. Without support vectors,
// the coefficients are one linear row per class (or the one regression row)
// and rho[0] the intercept.
//
// Kernel values come from the shared SGEMM (LINEAR, POLY, SIGMOID) or a
// distance loop over the transposed support vectors (RBF), a block of rows
// at a time. The regressor's weighted sum over them is an SGEMM too, the
// classifier's pair sums are in double: each is how ONNX Runtime's results
// come out (bit for bit on a OneClassSVM whose terms cancel; to 1e-7 on
// the pair scores), which keeps the two together where a score is near 0.
//
// Where the spec leaves the behaviour open, these follow ONNX Runtime, the
// runtime users compare against (found by running it):
//  * a pair score s > 0 votes for the first class of the pair; the label is
//    the first class with the most votes, also when probabilities are given;
//  * Z is the pair scores; for two classes the one score s is expanded to
//    [-s, s] (NONE), [logistic(-s), logistic(s)] (LOGISTIC) or [1 - s, s]
//    (SOFTMAX, SOFTMAX_ZERO); with prob_a/prob_b, Z is the class
//    probabilities, and post_transform then applies to those;
//  * the linear form with two classes and no probabilities picks the second
//    label when the best score is > 0 (>= 0.5 if all coefficients are >= 0),
//    else the first largest score's label;
//  * SVMRegressor does not apply post_transform; one_class gives 1 for a
//    score > 0, else -1;
//  * POLY's degree is a real power (not rounded to an integer).
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
#include "cpu/kernels/ml_common.h"

namespace onyx {
namespace {

const char* kMl = "ai.onnx.ml";
// Work items (kernel values, scores) per call below which loops run on the
// calling thread: waking the pool costs more.
constexpr int64_t kInline = 1 << 14;

std::string str(int64_t v) { return std::to_string(v); }

// ---------------------------------------------------------------- kernels

enum class SvmKernelType { Linear, Poly, Rbf, Sigmoid };

struct SvmKernel {
  SvmKernelType type = SvmKernelType::Linear;
  float gamma = 0, coef0 = 0, degree = 0;
};

SvmKernel read_svm_kernel(const KernelInitContext& ic, const std::string& op) {
  SvmKernel k;
  std::string type = ic.get_string("kernel_type", "LINEAR");
  if (type == "LINEAR") k.type = SvmKernelType::Linear;
  else if (type == "POLY") k.type = SvmKernelType::Poly;
  else if (type == "RBF") k.type = SvmKernelType::Rbf;
  else if (type == "SIGMOID") k.type = SvmKernelType::Sigmoid;
  else kernel_fail(op + ": kernel_type '" + type + "' is not one of LINEAR, POLY, RBF, SIGMOID");
  std::vector<float> params = ic.get_floats("kernel_params");
  if (!params.empty() && params.size() != 3)
    kernel_fail(op + ": kernel_params must be [gamma, coef0, degree], got " + str(params.size()) + " values");
  if (params.size() == 3) k.gamma = params[0], k.coef0 = params[1], k.degree = params[2];
  return k;
}

// The support vectors, [count, features] as given and, for RBF,
// transposed to [features, count] so that the distance loop runs along
// contiguous memory.
struct SupportVectors {
  int64_t count = 0, features = 0;
  std::vector<float> rows, columns;
};

SupportVectors read_support_vectors(const KernelInitContext& ic, const std::string& op, int64_t count,
                                    const SvmKernel& kernel) {
  SupportVectors sv;
  sv.count = count;
  sv.rows = ic.get_floats("support_vectors");
  const int64_t n = static_cast<int64_t>(sv.rows.size());
  if (n == 0 || n % count != 0)
    kernel_fail(op + ": support_vectors has " + str(n) + " values, not " + str(count) + " vectors of equal length");
  sv.features = n / count;
  if (kernel.type == SvmKernelType::Rbf) {
    sv.columns.resize(sv.rows.size());
    for (int64_t s = 0; s < count; ++s)
      for (int64_t f = 0; f < sv.features; ++f) sv.columns[f * count + s] = sv.rows[s * sv.features + f];
  }
  return sv;
}

// K[r, s] = K(x_r, sv_s) for `rows` rows of x, in float as ONNX Runtime.
void kernel_values(const SvmKernel& k, const SupportVectors& sv, const float* x, int64_t rows, float* K,
                   ThreadPool* pool) {
  const int64_t S = sv.count, F = sv.features;
  if (k.type == SvmKernelType::Rbf) {
    parallel_for(rows * S * F > kInline ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        float* kr = K + r * S;
        std::fill(kr, kr + S, 0.0f);
        for (int64_t f = 0; f < F; ++f) {
          const float xf = x[r * F + f], *col = sv.columns.data() + f * S;
          for (int64_t s = 0; s < S; ++s) kr[s] += (xf - col[s]) * (xf - col[s]);
        }
        for (int64_t s = 0; s < S; ++s) kr[s] *= -k.gamma;
        vm::exp(kr, kr, S);  // vectorized: per-element std::exp was half the time
      }
    });
    return;
  }
  gemm_f32(false, true, rows, S, F, 1.0f, x, F, sv.rows.data(), F, 0.0f, K, S, pool);
  if (k.type == SvmKernelType::Linear) return;
  // pow and tanh cost more than the product: spread them over the pool.
  parallel_for(rows * S > kInline ? pool : nullptr, rows, [&](int64_t r0, int64_t r1) {
    float *b = K + r0 * S, *e = K + r1 * S;
    if (k.type == SvmKernelType::Poly)
      for (float* v = b; v < e; ++v) *v = std::pow(k.gamma * *v + k.coef0, k.degree);
    else {
      for (float* v = b; v < e; ++v) *v = k.gamma * *v + k.coef0;
      vm::tanh(b, b, e - b);
    }
  });
}

// Calls fn(r0, r1, K) over blocks of the rows of x, K being the block's
// kernel values [r1 - r0, S]: blocks bound the memory for many rows.
template <class Fn>
void for_kernel_blocks(const SvmKernel& k, const SupportVectors& sv, const ml::FeatureRows& x, ThreadPool* pool,
                       Fn&& fn) {
  const int64_t block = std::max<int64_t>(1, (int64_t{1} << 18) / sv.count);
  std::vector<float> K(static_cast<size_t>(std::min(block, x.rows) * sv.count));
  for (int64_t r0 = 0; r0 < x.rows; r0 += block) {
    const int64_t r1 = std::min(x.rows, r0 + block);
    kernel_values(k, sv, x.data + r0 * sv.features, r1 - r0, K.data(), pool);
    fn(r0, r1, K.data());
  }
}

void check_width(const ml::FeatureRows& x, int64_t features, const std::string& op) {
  if (x.cols != features)
    kernel_fail(op + ": X has " + str(x.cols) + " features, the model " + str(features));
}

// scores[N, n] = X W^T + bias for W [n, F].
std::vector<float> linear_rows(const ml::FeatureRows& x, const std::vector<float>& W, int64_t n,
                               const std::vector<float>& bias, ThreadPool* pool) {
  std::vector<float> scores(static_cast<size_t>(x.rows * n));
  if (x.rows == 0) return scores;
  GemmEpilogue ep;
  ep.bias = bias.data();
  gemm_f32(false, true, x.rows, n, x.cols, 1.0f, x.data, x.cols, W.data(), x.cols, 0.0f, scores.data(), n, pool, ep);
  return scores;
}

// ---------------------------------------------------------------- probabilities

// libsvm's Platt scaling of a pair score: P(first class of the pair), kept
// inside [1e-7, 1 - 1e-7] so that the coupling below never divides by zero.
float pair_probability(float score, float a, float b) {
  float p = 1.0f / (1.0f + std::exp(score * a + b));
  return std::min(std::max(p, 1e-7f), 1 - 1e-7f);
}

// Class probabilities p[k] from the pairwise r[i * k + j] = P(i | i or j)
// (Wu, Lin & Weng 2004, method 2, as libsvm solves it): minimise p'Qp over
// the simplex, Q[t][t] = sum_{j != t} r[j][t]^2, Q[t][j] = -r[j][t] r[t][j],
// by coordinate steps from the uniform p until each (Qp)_t is within
// 0.005 / k of p'Qp, or max(100, k) sweeps. In float, as ONNX Runtime: the
// stopping test then falls as there.
void couple_probabilities(const std::vector<float>& r, int64_t k, float* p) {
  std::vector<float> Q(static_cast<size_t>(k * k)), Qp(static_cast<size_t>(k));
  for (int64_t t = 0; t < k; ++t) {
    p[t] = 1.0f / static_cast<float>(k);
    float& diag = Q[t * k + t];
    diag = 0;
    for (int64_t j = 0; j < k; ++j) {
      if (j == t) continue;
      diag += r[j * k + t] * r[j * k + t];
      Q[t * k + j] = -r[j * k + t] * r[t * k + j];
    }
  }
  const int64_t max_iter = std::max<int64_t>(100, k);
  const float eps = 0.005f / static_cast<float>(k);
  for (int64_t it = 0; it < max_iter; ++it) {
    float pQp = 0;
    for (int64_t t = 0; t < k; ++t) {
      Qp[t] = 0;
      for (int64_t j = 0; j < k; ++j) Qp[t] += Q[t * k + j] * p[j];
      pQp += p[t] * Qp[t];
    }
    float max_error = 0;
    for (int64_t t = 0; t < k; ++t) max_error = std::max(max_error, std::abs(Qp[t] - pQp));
    if (max_error < eps) break;
    for (int64_t t = 0; t < k; ++t) {
      const float diff = (-Qp[t] + pQp) / Q[t * k + t];
      p[t] += diff;
      pQp = (pQp + diff * (diff * Q[t * k + t] + 2 * Qp[t])) / (1 + diff) / (1 + diff);
      for (int64_t j = 0; j < k; ++j) {
        Qp[j] = (Qp[j] + diff * Q[t * k + j]) / (1 + diff);
        p[j] /= 1 + diff;
      }
    }
  }
}

// ---------------------------------------------------------------- SVMClassifier

struct SvmClassifierModel {
  SvmKernel kernel;
  ml::ClassLabels labels;
  ml::PostTransform post = ml::PostTransform::None;
  int64_t classes = 0, features = 0;
  bool linear_form = false;  // no support vectors: one row of coefficients per class
  bool all_weights_nonnegative = false;
  SupportVectors sv;
  std::vector<int64_t> class_start, class_size;  // each class's support vectors, in order
  std::vector<float> coefficients, rho, prob_a, prob_b;

  int64_t pairs() const { return classes * (classes - 1) / 2; }
  bool has_probabilities() const { return !prob_a.empty(); }
  int64_t score_columns() const {
    if (linear_form || has_probabilities() || classes == 2) return classes;
    return pairs();
  }
};

void require_size(const std::vector<float>& v, int64_t n, const std::string& what) {
  if (static_cast<int64_t>(v.size()) != n)
    kernel_fail("SVMClassifier: " + what + " has " + str(v.size()) + " values, expected " + str(n));
}

void read_classifier_vectors(const KernelInitContext& ic, SvmClassifierModel& m) {
  std::vector<int64_t> per_class = ic.get_ints("vectors_per_class");
  int64_t total = 0;
  for (int64_t v : per_class) {
    if (v < 0) kernel_fail("SVMClassifier: vectors_per_class has a negative count");
    m.class_start.push_back(total);
    m.class_size.push_back(v);
    total += v;
  }
  m.linear_form = total == 0;
  if (m.linear_form) {
    if (!ic.get_floats("support_vectors").empty())
      kernel_fail("SVMClassifier: support_vectors are given but vectors_per_class counts none");
    if (m.coefficients.empty() || m.coefficients.size() % m.classes != 0)
      kernel_fail("SVMClassifier: without support vectors, the " + str(m.coefficients.size()) +
                  " coefficients must be one non-empty row per class (" + str(m.classes) + " classes)");
    m.features = static_cast<int64_t>(m.coefficients.size()) / m.classes;
    require_size(m.rho, 1, "rho (without support vectors)");
    return;
  }
  if (static_cast<int64_t>(per_class.size()) != m.classes)
    kernel_fail("SVMClassifier: vectors_per_class has " + str(per_class.size()) + " entries for " + str(m.classes) +
                " class labels");
  m.sv = read_support_vectors(ic, "SVMClassifier", total, m.kernel);
  m.features = m.sv.features;
  require_size(m.coefficients, (m.classes - 1) * total, "coefficients ((classes - 1) x support vectors)");
  require_size(m.rho, m.pairs(), "rho (one per pair of classes)");
  if (m.has_probabilities()) require_size(m.prob_a, m.pairs(), "prob_a (one per pair of classes)");
}

SvmClassifierModel read_svm_classifier(const KernelInitContext& ic) {
  SvmClassifierModel m;
  m.kernel = read_svm_kernel(ic, "SVMClassifier");
  m.labels = ml::read_class_labels(ic, "SVMClassifier", "classlabels_ints");
  m.post = ml::parse_post_transform(ic.get_string("post_transform", "NONE"));
  m.classes = m.labels.size();
  if (m.classes < 2) kernel_fail("SVMClassifier: needs at least 2 class labels, got " + str(m.classes));
  m.coefficients = ic.get_floats("coefficients");
  m.rho = ic.get_floats("rho");
  m.prob_a = ic.get_floats("prob_a");
  m.prob_b = ic.get_floats("prob_b");
  if (m.prob_a.size() != m.prob_b.size())
    kernel_fail("SVMClassifier: prob_a has " + str(m.prob_a.size()) + " values but prob_b " + str(m.prob_b.size()));
  m.all_weights_nonnegative =
      std::all_of(m.coefficients.begin(), m.coefficients.end(), [](float c) { return c >= 0; });
  read_classifier_vectors(ic, m);
  return m;
}

// sum over class c's support vectors s of coef_row[s] * k[s], in double
// (ONNX Runtime's pair scores agree with a double sum, not with a float
// one, to 1e-7); four partial sums let the loop run in parallel lanes, and
// in double their order does not show in the float result.
double class_sum(const SvmClassifierModel& m, const float* coef_row, const float* k, int64_t c) {
  const int64_t b = m.class_start[c], e = b + m.class_size[c];
  double acc[4] = {0, 0, 0, 0};
  int64_t s = b;
  for (; s + 4 <= e; s += 4)
    for (int l = 0; l < 4; ++l) acc[l] += static_cast<double>(coef_row[s + l]) * k[s + l];
  for (; s < e; ++s) acc[0] += static_cast<double>(coef_row[s]) * k[s];
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}

// The score of every pair i < j (in that order) from one row of kernel
// values; > 0 favours i. Pair (i, j) weighs i's vectors with coefficient
// row j - 1 and j's with row i (libsvm's layout).
void pair_scores(const SvmClassifierModel& m, const float* k, float* d) {
  const int64_t C = m.classes, S = m.sv.count;
  const float* coef = m.coefficients.data();
  for (int64_t i = 0, p = 0; i < C; ++i)
    for (int64_t j = i + 1; j < C; ++j, ++p)
      d[p] = static_cast<float>(class_sum(m, coef + (j - 1) * S, k, i) + class_sum(m, coef + i * S, k, j) + m.rho[p]);
}

int64_t vote(const SvmClassifierModel& m, const float* d) {
  std::vector<float> votes(static_cast<size_t>(m.classes), 0.0f);
  for (int64_t i = 0, p = 0; i < m.classes; ++i)
    for (int64_t j = i + 1; j < m.classes; ++j, ++p) votes[d[p] > 0 ? i : j] += 1;
  return ml::first_argmax(votes.data(), m.classes);
}

void class_probabilities(const SvmClassifierModel& m, const float* d, float* probs) {
  const int64_t C = m.classes;
  std::vector<float> r(static_cast<size_t>(C * C), 0.0f);
  for (int64_t i = 0, p = 0; i < C; ++i)
    for (int64_t j = i + 1; j < C; ++j, ++p) {
      r[i * C + j] = pair_probability(d[p], m.prob_a[p], m.prob_b[p]);
      r[j * C + i] = 1 - r[i * C + j];
    }
  couple_probabilities(r, C, probs);
}

// Z of a two-class model without probabilities from its one score s (see
// the top of the file). ONNX Runtime writes only the first column under
// PROBIT (the second is left unset); here the second is then 0.
void binary_svm_row(ml::PostTransform pt, float s, float* z) {
  switch (pt) {
    case ml::PostTransform::None: z[0] = -s, z[1] = s; break;
    case ml::PostTransform::Logistic:
      z[0] = static_cast<float>(ml::logistic(-s));
      z[1] = static_cast<float>(ml::logistic(s));
      break;
    case ml::PostTransform::Probit: z[0] = ml::probit(s), z[1] = 0; break;
    default: z[0] = 1 - s, z[1] = s;  // SOFTMAX, SOFTMAX_ZERO
  }
}

// One row of the support-vector form from its kernel values: its label and
// Z row.
int64_t classify_one_vs_one(const SvmClassifierModel& m, const float* k, float* z) {
  std::vector<float> d(static_cast<size_t>(m.pairs()));
  pair_scores(m, k, d.data());
  int64_t label = vote(m, d.data());
  if (m.has_probabilities()) {
    class_probabilities(m, d.data(), z);
    ml::post_transform_row(m.post, z, m.classes);
  } else if (m.classes == 2) {
    binary_svm_row(m.post, d[0], z);
  } else {
    std::copy(d.begin(), d.end(), z);
    ml::post_transform_row(m.post, z, m.pairs());
  }
  return label;
}

// The label of the linear form from the raw class scores.
int64_t linear_form_label(const SvmClassifierModel& m, const float* s) {
  int64_t best = ml::first_argmax(s, m.classes);
  if (m.classes != 2 || m.has_probabilities()) return best;
  bool second = m.all_weights_nonnegative ? s[best] >= 0.5f : s[best] > 0;
  return second ? 1 : best;
}

void run_svm_classifier(const SvmClassifierModel& m, KernelContext& ctx) {
  ml::FeatureRows x = ml::read_feature_rows(ctx.input(0), "SVMClassifier");
  check_width(x, m.features, "SVMClassifier");
  const int64_t N = x.rows, zc = m.score_columns();
  std::vector<int64_t> label_index(static_cast<size_t>(N));
  std::vector<float> z(static_cast<size_t>(N * zc));
  if (m.linear_form) {
    z = linear_rows(x, m.coefficients, m.classes, std::vector<float>(m.classes, m.rho[0]), ctx.thread_pool());
    parallel_for(N * zc > kInline ? ctx.thread_pool() : nullptr, N, [&](int64_t n0, int64_t n1) {
      for (int64_t n = n0; n < n1; ++n) {
        label_index[n] = linear_form_label(m, z.data() + n * zc);
        ml::post_transform_row(m.post, z.data() + n * zc, zc);
      }
    });
  } else {
    ThreadPool* pool = ctx.thread_pool();
    const int64_t per_row = (m.classes - 1) * m.sv.count;  // multiply-adds of a row's pair scores
    for_kernel_blocks(m.kernel, m.sv, x, pool, [&](int64_t r0, int64_t r1, const float* K) {
      parallel_for((r1 - r0) * per_row > kInline ? pool : nullptr, r1 - r0, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r)
          label_index[r0 + r] = classify_one_vs_one(m, K + r * m.sv.count, z.data() + (r0 + r) * zc);
      });
    });
  }
  ml::write_labels(ctx, 0, m.labels, label_index);
  ml::write_scores(ctx, 1, z, N, zc);
}

KernelFactory svm_classifier_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto m = std::make_shared<const SvmClassifierModel>(read_svm_classifier(ic));
    return [m](KernelContext& ctx) { run_svm_classifier(*m, ctx); };
  });
}

// ---------------------------------------------------------------- SVMRegressor

struct SvmRegressorModel {
  SvmKernel kernel;
  SupportVectors sv;  // count 0: the linear form
  std::vector<float> coefficients;
  float rho = 0;
  int64_t features = 0;
  bool one_class = false;
};

SvmRegressorModel read_svm_regressor(const KernelInitContext& ic) {
  SvmRegressorModel m;
  m.kernel = read_svm_kernel(ic, "SVMRegressor");
  // Validated, but not applied: ONNX Runtime leaves the score as it is.
  ml::parse_post_transform(ic.get_string("post_transform", "NONE"));
  m.coefficients = ic.get_floats("coefficients");
  const int64_t n_sv = ic.get_int("n_supports", 0), n_coef = static_cast<int64_t>(m.coefficients.size());
  const int64_t one_class = ic.get_int("one_class", 0);
  if (one_class != 0 && one_class != 1) kernel_fail("SVMRegressor: one_class must be 0 or 1, got " + str(one_class));
  m.one_class = one_class == 1;
  std::vector<float> rho = ic.get_floats("rho");
  if (rho.size() != 1) kernel_fail("SVMRegressor: rho must have 1 value, got " + str(rho.size()));
  m.rho = rho[0];
  if (n_sv < 0) kernel_fail("SVMRegressor: n_supports is negative");
  if (n_sv == 0) {
    if (!ic.get_floats("support_vectors").empty())
      kernel_fail("SVMRegressor: support_vectors are given but n_supports is 0");
    if (n_coef == 0) kernel_fail("SVMRegressor: coefficients must be given");
    m.features = n_coef;
    return m;
  }
  m.sv = read_support_vectors(ic, "SVMRegressor", n_sv, m.kernel);
  m.features = m.sv.features;
  if (n_coef != n_sv)
    kernel_fail("SVMRegressor: " + str(n_coef) + " coefficients for " + str(n_sv) + " support vectors");
  return m;
}

void run_svm_regressor(const SvmRegressorModel& m, KernelContext& ctx) {
  ml::FeatureRows x = ml::read_feature_rows(ctx.input(0), "SVMRegressor");
  check_width(x, m.features, "SVMRegressor");
  std::vector<float> y;
  if (m.sv.count == 0) {
    y = linear_rows(x, m.coefficients, 1, {m.rho}, ctx.thread_pool());
  } else {
    y.resize(static_cast<size_t>(x.rows));
    GemmEpilogue plus_rho;
    plus_rho.bias = &m.rho;
    ThreadPool* pool = ctx.thread_pool();
    for_kernel_blocks(m.kernel, m.sv, x, pool, [&](int64_t r0, int64_t r1, const float* K) {
      gemm_f32(false, true, r1 - r0, 1, m.sv.count, 1.0f, K, m.sv.count, m.coefficients.data(), m.sv.count, 0.0f,
               y.data() + r0, 1, pool, plus_rho);
    });
  }
  if (m.one_class)
    for (float& v : y) v = v > 0 ? 1.0f : -1.0f;
  Tensor& Y = ctx.allocate_output(0, DataType::Float, {x.rows, 1});
  std::copy(y.begin(), y.end(), Y.data<float>());
}

KernelFactory svm_regressor_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    auto m = std::make_shared<const SvmRegressorModel>(read_svm_regressor(ic));
    return [m](KernelContext& ctx) { run_svm_regressor(*m, ctx); };
  });
}

}  // namespace

void register_ml_svm_ops(KernelRegistry& r) {
  r.add("SVMClassifier", 1, kMaxOpset, svm_classifier_factory(), kMl);
  r.add("SVMRegressor", 1, kMaxOpset, svm_regressor_factory(), kMl);
}

}  // namespace onyx
