// Einsum: parse the equation into integer labels (ellipsis dims get their own
// labels), take diagonals of repeated labels, sum out labels needed nowhere
// else, then contract operands pairwise as batched matmuls
// ([batch, m, k] x [batch, k, n]) and permute to the output order.
#include <algorithm>
#include <map>
#include <set>
#include <type_traits>

#include "cpu/cpu_provider.h"
#include "cpu/gemm.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

constexpr int kEllipsisBase = 256;  // ellipsis dim labels: 256 + i (letters use their char code)

struct ParsedTerm {
  std::vector<int> letters;  // char codes, -1 marks the ellipsis position
  bool has_ellipsis = false;
};

ParsedTerm parse_term(const std::string& s) {
  ParsedTerm t;
  for (size_t i = 0; i < s.size(); ++i) {
    char ch = s[i];
    if (ch == ' ') continue;
    if (ch == '.') {
      ONYX_KERNEL_CHECK(s.compare(i, 3, "...") == 0, "Einsum: malformed ellipsis in '" + s + "'");
      ONYX_KERNEL_CHECK(!t.has_ellipsis, "Einsum: more than one ellipsis in '" + s + "'");
      t.has_ellipsis = true;
      t.letters.push_back(-1);
      i += 2;
      continue;
    }
    ONYX_KERNEL_CHECK((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'),
                      std::string("Einsum: invalid character '") + ch + "' in the equation");
    t.letters.push_back(static_cast<unsigned char>(ch));
  }
  return t;
}

// Expands a term's ellipsis to `ell` labels (right-aligned within the max).
std::vector<int> expand_labels(const ParsedTerm& t, int ell, int max_ell) {
  std::vector<int> out;
  for (int l : t.letters) {
    if (l == -1) {
      for (int i = 0; i < ell; ++i) out.push_back(kEllipsisBase + (max_ell - ell) + i);
    } else {
      out.push_back(l);
    }
  }
  return out;
}

template <class C>
struct Work {
  std::vector<int> labels;
  Shape dims;
  std::vector<C> data;
};

// Contiguous copy of a strided view of `src` (dims `nd`, element strides `st`).
template <class C>
std::vector<C> gather_view(const std::vector<C>& src, const Shape& nd, const std::vector<int64_t>& st) {
  int64_t n = shape_numel(nd);
  std::vector<C> out(static_cast<size_t>(n));
  if (n == 0) return out;
  int rank = static_cast<int>(nd.size());
  if (rank == 0) {
    out[0] = src[0];
    return out;
  }
  std::vector<int64_t> idx(rank, 0);
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    out[i] = src[off];
    for (int d = rank - 1; d >= 0; --d) {
      ++idx[d];
      off += st[d];
      if (idx[d] < nd[d]) break;
      off -= st[d] * nd[d];
      idx[d] = 0;
    }
  }
  return out;
}

template <class C>
void take_diagonals(Work<C>& w) {
  while (true) {
    int rank = static_cast<int>(w.labels.size());
    int p = -1, q = -1;
    for (int i = 0; i < rank && p < 0; ++i)
      for (int j = i + 1; j < rank; ++j)
        if (w.labels[i] == w.labels[j]) {
          p = i;
          q = j;
          break;
        }
    if (p < 0) return;
    ONYX_KERNEL_CHECK(w.dims[p] == w.dims[q], "Einsum: repeated index has different sizes " +
                                                  std::to_string(w.dims[p]) + " and " + std::to_string(w.dims[q]));
    auto st = contiguous_strides(w.dims);
    st[p] += st[q];
    st.erase(st.begin() + q);
    Shape nd = w.dims;
    nd.erase(nd.begin() + q);
    w.data = gather_view(w.data, nd, st);
    w.dims = nd;
    w.labels.erase(w.labels.begin() + q);
  }
}

template <class C>
void sum_out(Work<C>& w, int pos) {
  int64_t outer = 1, inner = 1, n = w.dims[pos];
  for (int d = 0; d < pos; ++d) outer *= w.dims[d];
  for (size_t d = pos + 1; d < w.dims.size(); ++d) inner *= w.dims[d];
  std::vector<C> out(static_cast<size_t>(outer * inner), C(0));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < n; ++k) {
      const C* s = w.data.data() + (o * n + k) * inner;
      C* d = out.data() + o * inner;
      for (int64_t i = 0; i < inner; ++i) d[i] += s[i];
    }
  w.data = std::move(out);
  w.dims.erase(w.dims.begin() + pos);
  w.labels.erase(w.labels.begin() + pos);
}

template <class C>
void permute(Work<C>& w, const std::vector<int>& order) {
  bool identity = true;
  for (size_t i = 0; i < order.size(); ++i) identity &= order[i] == static_cast<int>(i);
  if (identity) return;
  auto st = contiguous_strides(w.dims);
  Shape nd;
  std::vector<int64_t> nst;
  std::vector<int> nl;
  for (int o : order) {
    nd.push_back(w.dims[o]);
    nst.push_back(st[o]);
    nl.push_back(w.labels[o]);
  }
  w.data = gather_view(w.data, nd, nst);
  w.dims = nd;
  w.labels = nl;
}

// Broadcasts dim `pos` (of size 1) to size n.
template <class C>
void expand(Work<C>& w, int pos, int64_t n) {
  auto st = contiguous_strides(w.dims);
  st[pos] = 0;
  Shape nd = w.dims;
  nd[pos] = n;
  w.data = gather_view(w.data, nd, st);
  w.dims = nd;
}

int find_label(const std::vector<int>& labels, int l) {
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] == l) return static_cast<int>(i);
  return -1;
}

// Sums out labels of `w` not in `keep`.
template <class C>
void sum_unneeded(Work<C>& w, const std::set<int>& keep) {
  for (int i = static_cast<int>(w.labels.size()) - 1; i >= 0; --i)
    if (!keep.count(w.labels[i])) sum_out(w, i);
}

// Order of a work tensor's dims for the given label groups, concatenated.
std::vector<int> order_of(const std::vector<int>& labels, std::initializer_list<const std::vector<int>*> groups) {
  std::vector<int> o;
  for (const auto* g : groups)
    for (int l : *g) o.push_back(find_label(labels, l));
  return o;
}

bool is_identity(const std::vector<int>& order) {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int>(i)) return false;
  return true;
}

// R[b] = A[b] x B[b] for B batches of [M, K] x [K, N] (A stored [K, M] when ta,
// B stored [N, K] when tb) on the blocked GEMM.
void batched_gemm(bool ta, bool tb, int64_t B, int64_t M, int64_t N, int64_t K, const float* A, const float* Bm,
                  float* R, ThreadPool* pool) {
  auto one = [&](int64_t bi, ThreadPool* inner) {
    gemm_f32(ta, tb, M, N, K, 1.0f, A + bi * M * K, ta ? M : K, Bm + bi * K * N, tb ? K : N, 0.0f, R + bi * M * N, N,
             inner);
  };
  // batches across the threads when there are enough, else threads inside each GEMM
  const int threads = pool ? pool->num_threads() : 1;
  if (B >= threads && B * M * N * K > (1 << 16)) {
    parallel_for(pool, B, [&](int64_t b0, int64_t b1) {
      for (int64_t bi = b0; bi < b1; ++bi) one(bi, nullptr);
    });
  } else {
    for (int64_t bi = 0; bi < B; ++bi) one(bi, pool);
  }
}

// The float contraction [B, M, K] x [B, K, N] on the blocked GEMM, one call
// per batch (attention's bhqd,bhkd->bhqk ran 34x slower than onnxruntime in
// the generic loop). An operand already laid out as [B, K, M] or [B, N, K]
// is read transposed instead of permuted.
Work<float> contract_gemm(Work<float>& a, Work<float>& b, const std::vector<int>& batch, const std::vector<int>& aonly,
                          const std::vector<int>& red, const std::vector<int>& bonly, int64_t B, int64_t M, int64_t K,
                          int64_t N, ThreadPool* pool) {
  const bool ta = is_identity(order_of(a.labels, {&batch, &red, &aonly}));
  const bool tb = is_identity(order_of(b.labels, {&batch, &bonly, &red}));
  if (!ta) permute(a, order_of(a.labels, {&batch, &aonly, &red}));
  if (!tb) permute(b, order_of(b.labels, {&batch, &red, &bonly}));
  Work<float> r;
  for (const auto* g : {&batch, &aonly})
    for (int l : *g) {
      r.labels.push_back(l);
      r.dims.push_back(a.dims[find_label(a.labels, l)]);
    }
  for (int l : bonly) {
    r.labels.push_back(l);
    r.dims.push_back(b.dims[find_label(b.labels, l)]);
  }
  r.data.resize(static_cast<size_t>(B * M * N));
  batched_gemm(ta, tb, B, M, N, K, a.data.data(), b.data.data(), r.data.data(), pool);
  return r;
}

template <class C>
Work<C> contract(Work<C> a, Work<C> b, const std::set<int>& keep, ThreadPool* pool) {
  // sum out what only one side has and nobody needs
  std::set<int> ka = keep, kb = keep;
  for (int l : b.labels) ka.insert(l);
  for (int l : a.labels) kb.insert(l);
  sum_unneeded(a, ka);
  sum_unneeded(b, kb);
  // broadcast size-1 dims of shared labels
  for (size_t i = 0; i < a.labels.size(); ++i) {
    int j = find_label(b.labels, a.labels[i]);
    if (j < 0) continue;
    if (a.dims[i] == b.dims[j]) continue;
    if (a.dims[i] == 1) {
      expand(a, static_cast<int>(i), b.dims[j]);
    } else if (b.dims[j] == 1) {
      expand(b, j, a.dims[i]);
    } else {
      kernel_fail("Einsum: index has sizes " + std::to_string(a.dims[i]) + " and " + std::to_string(b.dims[j]) +
                  " in two operands");
    }
  }
  std::vector<int> batch, aonly, bonly, red;
  for (int l : a.labels) {
    bool inb = find_label(b.labels, l) >= 0;
    if (inb && keep.count(l)) batch.push_back(l);
    else if (inb) red.push_back(l);
    else aonly.push_back(l);
  }
  for (int l : b.labels)
    if (find_label(a.labels, l) < 0) bonly.push_back(l);
  std::vector<int> oa, ob;
  int64_t B = 1, M = 1, K = 1, N = 1;
  for (int l : batch) {
    oa.push_back(find_label(a.labels, l));
    ob.push_back(find_label(b.labels, l));
    B *= a.dims[oa.back()];
  }
  for (int l : aonly) {
    oa.push_back(find_label(a.labels, l));
    M *= a.dims[oa.back()];
  }
  for (int l : red) {
    oa.push_back(find_label(a.labels, l));
    ob.push_back(find_label(b.labels, l));
    K *= a.dims[oa.back()];
  }
  for (int l : bonly) {
    ob.push_back(find_label(b.labels, l));
    N *= b.dims[ob.back()];
  }
  if constexpr (std::is_same_v<C, float>) return contract_gemm(a, b, batch, aonly, red, bonly, B, M, K, N, pool);
  permute(a, oa);
  permute(b, ob);
  Work<C> r;
  for (size_t i = 0; i < batch.size() + aonly.size(); ++i) {
    r.labels.push_back(a.labels[i]);
    r.dims.push_back(a.dims[i]);
  }
  for (size_t i = batch.size() + red.size(); i < b.labels.size(); ++i) {
    r.labels.push_back(b.labels[i]);
    r.dims.push_back(b.dims[i]);
  }
  r.data.assign(static_cast<size_t>(B * M * N), C(0));
  const C* A = a.data.data();
  const C* Bm = b.data.data();
  C* R = r.data.data();

  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t bi = t / M, i = t % M;
      const C* ar = A + (bi * M + i) * K;
      C* rr = R + (bi * M + i) * N;
      for (int64_t k = 0; k < K; ++k) {
        C av = ar[k];
        if (av == C(0)) continue;
        const C* br = Bm + (bi * K + k) * N;
        for (int64_t j = 0; j < N; ++j) rr[j] += av * br[j];
      }
    }
  };
  if (B * M * N * K > (1 << 16)) {
    parallel_for(pool, B * M, body);
  } else {
    body(0, B * M);
  }
  return r;
}

bool has_repeats(const std::vector<int>& labels) {
  return std::set<int>(labels.begin(), labels.end()).size() != labels.size();
}

bool contains(const std::vector<int>& labels, int l) { return find_label(labels, l) >= 0; }

// Whether labels[from, from + part.size()) is `part`.
bool part_at(const std::vector<int>& labels, size_t from, const std::vector<int>& part) {
  return from + part.size() <= labels.size() && std::equal(part.begin(), part.end(), labels.begin() + from);
}

// Two float operands whose contraction is one batched GEMM read straight from
// the inputs and written straight into the output: each term is
// [batch, free, reduced] or [batch, reduced, free], the output [batch, free of
// one, free of the other], every label once per term and shared labels of
// equal sizes. Attention's bhqd,bhkd->bhqk spent 85% of its time copying
// through the general path. Returns false, having done nothing, otherwise.
bool einsum_as_gemm(const std::vector<int>& la, const std::vector<int>& lb, const std::vector<int>& out,
                    const Tensor& a, const Tensor& b, KernelContext& ctx) {
  if (has_repeats(la) || has_repeats(lb)) return false;
  std::vector<int> batch, red, a_free, b_free;
  for (int l : out) {
    const bool in_a = contains(la, l), in_b = contains(lb, l);
    if (in_a && in_b) batch.push_back(l);
    else (in_a ? a_free : b_free).push_back(l);
  }
  for (int l : la) {
    if (!contains(out, l) && !contains(lb, l)) return false;  // summed out first: the general path
    if (!contains(out, l)) red.push_back(l);
  }
  for (int l : lb)
    if (!contains(out, l) && !contains(la, l)) return false;
  for (int l : la)  // a shared label of two sizes broadcasts: the general path
    if (contains(lb, l) && a.dim(find_label(la, l)) != b.dim(find_label(lb, l))) return false;
  // The output is [batch, first's free, second's free]; the operands may be either way round.
  if (!part_at(out, 0, batch)) return false;
  const bool swapped = !part_at(out, batch.size(), a_free);
  const std::vector<int>& l1 = swapped ? lb : la;
  const std::vector<int>& l2 = swapped ? la : lb;
  const std::vector<int>& f1 = swapped ? b_free : a_free;
  const std::vector<int>& f2 = swapped ? a_free : b_free;
  if (!part_at(out, batch.size() + f1.size(), f2)) return false;
  if (!part_at(l1, 0, batch) || !part_at(l2, 0, batch)) return false;
  const size_t nb = batch.size();
  bool t1 = false, t2 = false;
  if (part_at(l1, nb, f1) && part_at(l1, nb + f1.size(), red)) t1 = false;
  else if (part_at(l1, nb, red) && part_at(l1, nb + red.size(), f1)) t1 = true;
  else return false;
  if (part_at(l2, nb, red) && part_at(l2, nb + red.size(), f2)) t2 = false;
  else if (part_at(l2, nb, f2) && part_at(l2, nb + f2.size(), red)) t2 = true;
  else return false;
  const Tensor& x1 = swapped ? b : a;
  const Tensor& x2 = swapped ? a : b;
  Shape shape;
  int64_t B = 1, M = 1, N = 1, K = 1;
  for (int l : batch) B *= x1.dim(find_label(l1, l));
  for (int l : f1) M *= x1.dim(find_label(l1, l));
  for (int l : f2) N *= x2.dim(find_label(l2, l));
  for (int l : red) K *= x1.dim(find_label(l1, l));
  for (int l : out) shape.push_back(contains(l1, l) ? x1.dim(find_label(l1, l)) : x2.dim(find_label(l2, l)));
  Tensor& y = ctx.allocate_output(0, DataType::Float, shape);
  if (y.numel() > 0) batched_gemm(t1, t2, B, M, N, K, x1.data<float>(), x2.data<float>(), y.data<float>(), ctx.thread_pool());
  return true;
}

template <class T>
using Compute = std::conditional_t<std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>, float, T>;

struct Plan {
  std::vector<ParsedTerm> terms;
  bool explicit_out = false;
  ParsedTerm out;
};

Plan parse_equation(std::string eq) {
  Plan p;
  std::string lhs = eq, rhs;
  size_t arrow = eq.find("->");
  if (arrow != std::string::npos) {
    lhs = eq.substr(0, arrow);
    rhs = eq.substr(arrow + 2);
    p.explicit_out = true;
    p.out = parse_term(rhs);
  }
  size_t start = 0;
  while (true) {
    size_t comma = lhs.find(',', start);
    p.terms.push_back(parse_term(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return p;
}

template <class T>
void einsum_typed(const Plan& plan, KernelContext& ctx, const std::vector<const Tensor*>& xs) {
  using C = Compute<T>;
  const size_t n = xs.size();
  // ellipsis ranks
  std::vector<int> ell(n, 0);
  int max_ell = 0;
  for (size_t i = 0; i < n; ++i) {
    int named = 0;
    for (int l : plan.terms[i].letters) named += l != -1;
    int r = xs[i]->rank();
    if (plan.terms[i].has_ellipsis) {
      ONYX_KERNEL_CHECK(r >= named, "Einsum: operand " + std::to_string(i) + " of shape " +
                                        shape_to_string(xs[i]->shape()) + " has fewer dims than its term");
      ell[i] = r - named;
    } else {
      ONYX_KERNEL_CHECK(r == named, "Einsum: operand " + std::to_string(i) + " of shape " +
                                        shape_to_string(xs[i]->shape()) + " does not match its term (" +
                                        std::to_string(named) + " indices)");
    }
    max_ell = std::max(max_ell, ell[i]);
  }
  std::vector<Work<C>> ops(n);
  std::map<int, int> count;
  std::map<int, int64_t> size_of;
  for (size_t i = 0; i < n; ++i) {
    ops[i].labels = expand_labels(plan.terms[i], ell[i], max_ell);
    ops[i].dims = xs[i]->shape();
    for (size_t d = 0; d < ops[i].labels.size(); ++d) {
      int l = ops[i].labels[d];
      ++count[l];
      int64_t s = ops[i].dims[d];
      auto it = size_of.find(l);
      if (it == size_of.end() || it->second == 1) {
        size_of[l] = s;
      } else {
        ONYX_KERNEL_CHECK(s == it->second || s == 1, "Einsum: index '" +
                                                         (l < kEllipsisBase ? std::string(1, char(l)) : "...") +
                                                         "' has sizes " + std::to_string(s) + " and " +
                                                         std::to_string(it->second));
      }
    }
  }
  std::vector<int> out_labels;
  if (plan.explicit_out) {
    std::set<int> seen;
    for (int l : plan.out.letters) {
      if (l == -1) {
        for (int i = 0; i < max_ell; ++i) out_labels.push_back(kEllipsisBase + i);
        continue;
      }
      ONYX_KERNEL_CHECK(count.count(l), std::string("Einsum: output index '") + char(l) + "' is not in any input");
      ONYX_KERNEL_CHECK(!seen.count(l), std::string("Einsum: output index '") + char(l) + "' is repeated");
      seen.insert(l);
      out_labels.push_back(l);
    }
  } else {
    for (int i = 0; i < max_ell; ++i) out_labels.push_back(kEllipsisBase + i);
    for (auto& [l, c] : count)
      if (l < kEllipsisBase && c == 1) out_labels.push_back(l);  // map order = ASCII order
  }
  if constexpr (std::is_same_v<T, float>) {
    if (n == 2 && einsum_as_gemm(ops[0].labels, ops[1].labels, out_labels, *xs[0], *xs[1], ctx)) return;
  }
  for (size_t i = 0; i < n; ++i) {
    const T* src = xs[i]->template data<T>();
    ops[i].data.resize(static_cast<size_t>(xs[i]->numel()));
    for (size_t k = 0; k < ops[i].data.size(); ++k) ops[i].data[k] = static_cast<C>(src[k]);
  }
  for (auto& w : ops) take_diagonals(w);
  std::set<int> out_set(out_labels.begin(), out_labels.end());
  // contract left to right; keep = output labels plus labels of later operands
  Work<C> cur = std::move(ops[0]);
  {
    std::set<int> keep = out_set;
    for (size_t j = 1; j < n; ++j)
      for (int l : ops[j].labels) keep.insert(l);
    sum_unneeded(cur, keep);
  }
  for (size_t i = 1; i < n; ++i) {
    std::set<int> keep = out_set;
    for (size_t j = i + 1; j < n; ++j)
      for (int l : ops[j].labels) keep.insert(l);
    cur = contract(std::move(cur), std::move(ops[i]), keep, ctx.thread_pool());
  }
  sum_unneeded(cur, out_set);
  std::vector<int> order;
  for (int l : out_labels) {
    int pos = find_label(cur.labels, l);
    ONYX_KERNEL_CHECK(pos >= 0, "Einsum: internal error: output index lost");
    order.push_back(pos);
  }
  permute(cur, order);
  Tensor& y = ctx.allocate_output(0, xs[0]->dtype(), cur.dims);
  T* dst = y.data<T>();
  for (size_t k = 0; k < cur.data.size(); ++k) dst[k] = static_cast<T>(cur.data[k]);
}

}  // namespace

void register_einsum(KernelRegistry& r) {
  r.add("Einsum", 12, kMaxOpset,
        lambda_factory([](const KernelInitContext& init) {
          Plan plan = parse_equation(init.get_string("equation", ""));
          return [plan](KernelContext& ctx) {
            ONYX_KERNEL_CHECK(ctx.num_inputs() == plan.terms.size(),
                              "Einsum: the equation has " + std::to_string(plan.terms.size()) + " terms but " +
                                  std::to_string(ctx.num_inputs()) + " inputs were given");
            std::vector<const Tensor*> xs;
            for (size_t i = 0; i < ctx.num_inputs(); ++i) {
              xs.push_back(&ctx.input(i));
              ONYX_KERNEL_CHECK(xs.back()->dtype() == xs[0]->dtype(), "Einsum: inputs have different types");
            }
            dispatch_numeric(xs[0]->dtype(), [&](auto tag) {
              using T = typename decltype(tag)::type;
              einsum_typed<T>(plan, ctx, xs);
            });
          };
        }));
}

}  // namespace onyx
