#include <functional>
#include <map>

#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor f(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }
Tensor einsum(const std::string& eq, std::vector<Tensor> xs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < xs.size(); ++i) names.push_back("x" + std::to_string(i));
  return run_op(make_node("Einsum", names, {"y"}, {{"equation", attr_string(eq)}}), xs, 12)[0];
}

TEST(Einsum, MatMulAndImplicit) {
  auto a = f({1, 2, 3, 4, 5, 6}, {2, 3});
  auto b = f({1, 0, 0, 1, 1, 1}, {3, 2});
  auto y = einsum("ij,jk->ik", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  expect_near(y, {4, 5, 10, 11});
  expect_near(einsum("ij,jk", {a, b}), {4, 5, 10, 11});
  // implicit output is alphabetical: "ba" transposes
  auto t = einsum("ba", {a});
  EXPECT_EQ(t.shape(), (Shape{3, 2}));
  expect_near(t, {1, 4, 2, 5, 3, 6});
}

TEST(Einsum, DiagonalTraceSum) {
  auto m = f({1, 2, 3, 4, 5, 6, 7, 8, 9}, {3, 3});
  expect_near(einsum("ii->i", {m}), {1, 5, 9});
  expect_near(einsum("ii", {m}), {15});
  expect_near(einsum("ij->", {m}), {45});
  expect_near(einsum("ij->j", {m}), {12, 15, 18});
}

TEST(Einsum, EllipsisBroadcastAndOuter) {
  auto a = f({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  auto b = f({1, 0, 0, 2}, {2, 2});
  auto y = einsum("...ij,...jk->...ik", {a, b});
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2}));
  expect_near(y, {1, 4, 3, 8, 5, 12, 7, 16});
  auto o = einsum("i,j->ij", {f({1, 2}, {2}), f({3, 4, 5}, {3})});
  expect_near(o, {3, 4, 5, 6, 8, 10});
  auto three = einsum("i,i,i->", {f({1, 2}, {2}), f({3, 4}, {2}), f({5, 6}, {2})});
  expect_near(three, {1 * 3 * 5 + 2 * 4 * 6});
}

// Batched contractions whose operands arrive transposed ([B, K, M] or
// [B, N, K], read in place by the GEMM) or in other orders, against the
// float einsum computed in double: every case has B = 2, M = 3, K = 5, N = 4.
TEST(Einsum, BatchedContractionsAnyOperandLayout) {
  const int64_t B = 2, M = 3, K = 5, N = 4;
  auto value = [](int64_t b, int64_t m, int64_t k, int salt) {
    return static_cast<float>(((b * 31 + m * 7 + k * 3 + salt) % 13) - 6) * 0.5f;
  };
  // [label order of x0, label order of x1, equation]; labels b m k / b k n
  struct Case {
    const char* eq;
    std::string a_order, b_order, out_order;
  };
  const Case cases[] = {{"bmk,bkn->bmn", "bmk", "bkn", "bmn"}, {"bkm,bkn->bmn", "bkm", "bkn", "bmn"},
                        {"bmk,bnk->bmn", "bmk", "bnk", "bmn"}, {"kbm,nbk->bnm", "kbm", "nbk", "bnm"}};
  auto dim = [&](char c) { return c == 'b' ? B : c == 'm' ? M : c == 'k' ? K : N; };
  for (const Case& c : cases) {
    auto make = [&](const std::string& order, int salt, char other) {
      Shape s;
      for (char ch : order) s.push_back(dim(ch));
      std::vector<float> v(static_cast<size_t>(shape_numel(s)));
      for (size_t i = 0; i < v.size(); ++i) {
        int64_t rest = static_cast<int64_t>(i), idx[3];
        for (int d = 2; d >= 0; --d) idx[d] = rest % s[d], rest /= s[d];
        int64_t bb = 0, mo = 0, kk = 0;
        for (int d = 0; d < 3; ++d) {
          if (order[d] == 'b') bb = idx[d];
          else if (order[d] == 'k') kk = idx[d];
          else mo = idx[d];
        }
        v[i] = value(bb, mo, kk, salt + other);
      }
      return f(v, s);
    };
    Tensor y = einsum(c.eq, {make(c.a_order, 1, 'm'), make(c.b_order, 2, 'n')});
    Shape want_shape;
    for (char ch : c.out_order) want_shape.push_back(dim(ch));
    ASSERT_EQ(y.shape(), want_shape) << c.eq;
    for (int64_t i = 0; i < y.numel(); ++i) {
      int64_t rest = i, idx[3];
      for (int d = 2; d >= 0; --d) idx[d] = rest % want_shape[d], rest /= want_shape[d];
      int64_t bb = 0, mm = 0, nn = 0;
      for (int d = 0; d < 3; ++d) {
        if (c.out_order[d] == 'b') bb = idx[d];
        else if (c.out_order[d] == 'm') mm = idx[d];
        else nn = idx[d];
      }
      double want = 0;
      for (int64_t k = 0; k < K; ++k) want += double(value(bb, mm, k, 1 + 'm')) * value(bb, nn, k, 2 + 'n');
      ASSERT_NEAR(y.float_at(i), want, 1e-4) << c.eq << " at " << i;
    }
  }
}

// Two-operand equations against a plain loop over every label's values: the
// ones a single batched GEMM reads straight from the inputs (groups of
// several labels, operands either way round or transposed, the output's free
// parts swapped) and near misses that take the general path (a summed-out
// label, a size-1 batch dim broadcast, batch labels out of place).
TEST(Einsum, TwoOperandEquationsMatchAPlainLoop) {
  const std::map<char, int64_t> size = {{'b', 2}, {'h', 3}, {'i', 4}, {'j', 5}, {'k', 3}, {'l', 2}, {'m', 6}, {'x', 1}};
  const char* equations[] = {"bhij,bhjk->bhik", "bhij,bhkj->bhik", "bhji,bhjk->bhik", "bhij,bhkj->bhki",
                             "bhjk,bhij->bhik", "ij,jk->ik",       "ij,kj->ki",       "bij,jk->bik",
                             "bilj,jkm->bilkm", "bjil,jkm->bkmil", "ij,jk->ki",       "bhij,bhjk->bhi",
                             "xhij,bhjk->bhik", "hbij,bhjk->bhik", "ik,jk->ijk",      "i,j->ij",
                             "ij,ij->i",        "ij,ij->",         "bhij,bhjk->hbik"};
  for (const char* eq : equations) {
    const std::string e = eq;
    const size_t comma = e.find(','), arrow = e.find("->");
    const std::string ta = e.substr(0, comma), tb = e.substr(comma + 1, arrow - comma - 1), to = e.substr(arrow + 2);
    auto make = [&](const std::string& term, int salt) {
      Shape s;
      for (char c : term) s.push_back(size.at(c));
      std::vector<float> v(static_cast<size_t>(shape_numel(s)));
      for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(static_cast<int>((i * 7 + salt) % 11) - 5) * 0.25f;
      return f(v, s);
    };
    Tensor a = make(ta, 1), b = make(tb, 4);
    Tensor y = einsum(eq, {a, b});
    std::string labels;
    for (char c : ta + tb)
      if (labels.find(c) == std::string::npos) labels += c;
    Shape want_shape;
    for (char c : to) want_shape.push_back(size.at(c));
    ASSERT_EQ(y.shape(), want_shape) << eq;
    std::vector<double> want(static_cast<size_t>(shape_numel(want_shape)), 0.0);
    std::map<char, int64_t> at;
    auto offset = [&](const std::string& term) {
      int64_t o = 0;
      for (char c : term) o = o * size.at(c) + at[c];
      return o;
    };
    std::function<void(size_t)> visit = [&](size_t d) {
      if (d == labels.size()) {
        want[static_cast<size_t>(offset(to))] += double(a.float_at(offset(ta))) * b.float_at(offset(tb));
        return;
      }
      for (at[labels[d]] = 0; at[labels[d]] < size.at(labels[d]); ++at[labels[d]]) visit(d + 1);
    };
    visit(0);
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_NEAR(y.float_at(i), want[static_cast<size_t>(i)], 1e-4) << eq << " at " << i;
  }
}

TEST(Einsum, Errors) {
  EXPECT_THROW(einsum("ij,jk->ik", {f({1, 2, 3, 4, 5, 6}, {2, 3}), f({1, 2, 3, 4}, {2, 2})}), onyx::Error);
  EXPECT_THROW(einsum("ij->k", {f({1, 2}, {1, 2})}), onyx::Error);
}

}  // namespace
}  // namespace onyx::test
