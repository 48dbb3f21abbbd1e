#include <gtest/gtest.h>

#include <cstring>

#include "base/thread_pool.h"
#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor iota_f(Shape s) {
  Tensor t(DataType::Float, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
Tensor i64(std::vector<int64_t> v) { return Tensor::from_vector<int64_t>(v, {static_cast<int64_t>(v.size())}); }

TEST(DataMovement, TransposeDefaultAndPerm) {
  auto out = run_op(make_node("Transpose", {"x"}, {"y"}), {iota_f({2, 3})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 2}));
  expect_near(out[0], {0, 3, 1, 4, 2, 5});
  out = run_op(make_node("Transpose", {"x"}, {"y"}, {{"perm", attr_ints({1, 2, 0})}}), {iota_f({2, 2, 3})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 2}));
  // y[i,j,k] = x[k,i,j] = k*6 + i*3 + j
  expect_near(out[0], {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11});
  EXPECT_THROW(run_op(make_node("Transpose", {"x"}, {"y"}, {{"perm", attr_ints({0, 0})}}), {iota_f({2, 3})}), Error);
}

TEST(DataMovement, TransposeStrings) {
  Tensor x = Tensor::from_vector<std::string>({"a", "b", "c", "d"}, {2, 2});
  auto out = run_op(make_node("Transpose", {"x"}, {"y"}), {x});
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"a", "c", "b", "d"}));
}

// A tensor of `dtype` whose bytes follow a pattern (0/1 for Bool), so any
// misplaced element shows up in a byte comparison.
Tensor byte_pattern(DataType dtype, const Shape& s) {
  Tensor t(dtype, s);
  auto* b = static_cast<uint8_t*>(t.raw());
  for (size_t i = 0; i < t.nbytes(); ++i)
    b[i] = dtype == DataType::Bool ? static_cast<uint8_t>((i * 7 / 3) % 2) : static_cast<uint8_t>(i * 131 + i / 251);
  return t;
}

// A naive reference for the data-movement kernels: out has `out_shape` and
// out[i] = x[source_of(i, x_strides)] element by element, i the output index.
template <class SourceOf>
Tensor naive_gather(const Tensor& x, const Shape& out_shape, SourceOf source_of) {
  const int r = static_cast<int>(out_shape.size());
  Tensor out(x.dtype(), out_shape);
  std::vector<int64_t> x_strides(x.rank(), 1), index(r);
  for (int d = x.rank() - 2; d >= 0; --d) x_strides[d] = x_strides[d + 1] * x.shape()[d + 1];
  const size_t es = dtype_size(x.dtype());
  for (int64_t o = 0; o < out.numel(); ++o) {
    for (int64_t k = r - 1, rest = o; k >= 0; --k) index[k] = rest % out_shape[k], rest /= out_shape[k];
    std::memcpy(static_cast<char*>(out.raw()) + o * es,
                static_cast<const char*>(x.raw()) + source_of(index, x_strides) * es, es);
  }
  return out;
}

// out[i] = x[i permuted back]: output dim k walks input dim perm[k].
Tensor naive_transpose(const Tensor& x, const std::vector<int64_t>& perm) {
  Shape out_shape;
  for (int64_t p : perm) out_shape.push_back(x.shape()[p]);
  return naive_gather(x, out_shape, [&](const std::vector<int64_t>& i, const std::vector<int64_t>& strides) {
    int64_t src = 0;
    for (size_t k = 0; k < perm.size(); ++k) src += i[k] * strides[perm[k]];
    return src;
  });
}

void expect_same_bytes(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  EXPECT_EQ(std::memcmp(got.raw(), want.raw(), want.nbytes()), 0) << what;
}

// Shapes and permutations that take every Transpose path: contiguous runs
// (channel shuffle), 2-D tiles with edge tiles (odd sizes), the source's inner
// dim moved to the front, size-1 dims, runs longer than one work piece.
TEST(DataMovement, TransposeFastPathsMatchNaive) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  std::vector<Case> cases = {
      {{37, 53}, {1, 0}},
      {{64, 128}, {1, 0}},
      {{1, 3, 17, 33}, {0, 2, 3, 1}},
      {{1, 3, 17, 33}, {0, 3, 1, 2}},
      {{2, 5, 17, 33}, {0, 2, 3, 1}},
      {{1, 2, 58, 7, 7}, {0, 2, 1, 3, 4}},
      {{3, 2, 5, 4, 3}, {0, 2, 1, 3, 4}},
      {{4, 5, 6}, {2, 1, 0}},
      {{5, 7, 9}, {1, 2, 0}},
      {{3, 1, 5, 7}, {2, 0, 3, 1}},
      {{2, 3, 4, 5}, {3, 2, 1, 0}},
      {{2, 3, 4, 5, 6}, {4, 0, 2, 1, 3}},
      {{1, 19, 1, 21}, {3, 2, 1, 0}},
      {{1, 96, 33, 35}, {0, 2, 3, 1}},   // large enough for the threads
      {{1, 35, 33, 96}, {0, 3, 1, 2}},
      {{1, 2, 64, 40, 40}, {0, 2, 1, 3, 4}},
      {{2, 3, 20000}, {1, 0, 2}},        // runs cut into pieces
      {{1, 3, 97, 103}, {0, 2, 3, 1}},   // RGB planes interleaved, several row strips
      {{2, 2, 5000}, {0, 2, 1}},
      {{4, 4099}, {1, 0}},
      {{1, 70, 64, 67}, {0, 2, 3, 1}},   // bytes: whole 16 x 64 vector blocks and edges
      {{1, 64, 67, 70}, {0, 3, 1, 2}},
  };
  ThreadPool pool(3);
  for (DataType dt : {DataType::Float, DataType::Int64, DataType::UInt8, DataType::Float16, DataType::Bool}) {
    for (const Case& c : cases) {
      Tensor x = byte_pattern(dt, c.shape);
      Tensor want = naive_transpose(x, c.perm);
      std::string what = dtype_name(dt) + " " + shape_to_string(c.shape) + " perm " + shape_to_string(c.perm);
      Node node = make_node("Transpose", {"x"}, {"y"}, {{"perm", attr_ints(c.perm)}});
      expect_same_bytes(run_op(node, {x})[0], want, what);
      expect_same_bytes(run_op(node, {x}, 17, &pool)[0], want, what + " (3 threads)");
    }
  }
}

TEST(DataMovement, TransposeStringsMatchNaive) {
  Shape shape{3, 4, 5};
  std::vector<std::string> v;
  for (int i = 0; i < 60; ++i) v.push_back("s" + std::to_string(i));
  Tensor x = Tensor::from_vector<std::string>(v, shape);
  for (std::vector<int64_t> perm : {std::vector<int64_t>{2, 0, 1}, {0, 2, 1}, {1, 0, 2}, {2, 1, 0}}) {
    auto out = run_op(make_node("Transpose", {"x"}, {"y"}, {{"perm", attr_ints(perm)}}), {x});
    std::vector<int64_t> st{20, 5, 1};
    std::vector<std::string> got = to_vector<std::string>(out[0]);
    int64_t o = 0;
    for (int64_t a = 0; a < shape[perm[0]]; ++a)
      for (int64_t b = 0; b < shape[perm[1]]; ++b)
        for (int64_t c = 0; c < shape[perm[2]]; ++c, ++o)
          EXPECT_EQ(got[o], v[a * st[perm[0]] + b * st[perm[1]] + c * st[perm[2]]]) << shape_to_string(perm);
  }
}

// Outputs over 2 MB copy in pieces across a pool: every element lands where
// the serial copy puts it, with several outer rows and pieces per row.
TEST(DataMovement, BigConcatOnAPool) {
  const int64_t rows = 3, wa = 300000, wb = 170001;
  std::vector<float> av(rows * wa), bv(rows * wb);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = -static_cast<float>(i);
  ThreadPool pool(2);
  auto y = run_op(make_node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(1)}}),
                  {Tensor::from_vector<float>(av, {rows, wa}), Tensor::from_vector<float>(bv, {rows, wb})}, 13, &pool);
  ASSERT_EQ(y[0].shape(), (Shape{rows, wa + wb}));
  const float* p = y[0].data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < wa; ++j) ASSERT_EQ(p[r * (wa + wb) + j], av[r * wa + j]) << r << "," << j;
    for (int64_t j = 0; j < wb; ++j) ASSERT_EQ(p[r * (wa + wb) + wa + j], bv[r * wb + j]) << r << "," << wa + j;
  }
}

// A dense block's concatenation (one large input, one small, over 256 KB): pieces of a
// quarter of a thread's share across the pool, every element in place.
TEST(DataMovement, DenseBlockConcatOnAPool) {
  const int64_t h = 16, ca = 250, cb = 32;
  std::vector<float> av(ca * h * h), bv(cb * h * h);
  for (size_t i = 0; i < av.size(); ++i) av[i] = static_cast<float>(i);
  for (size_t i = 0; i < bv.size(); ++i) bv[i] = -1.0f - static_cast<float>(i);
  ThreadPool pool(2);
  auto y = run_op(make_node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(1)}}),
                  {Tensor::from_vector<float>(av, {1, ca, h, h}), Tensor::from_vector<float>(bv, {1, cb, h, h})}, 13,
                  &pool);
  ASSERT_EQ(y[0].shape(), (Shape{1, ca + cb, h, h}));
  const float* p = y[0].data<float>();
  for (size_t i = 0; i < av.size(); ++i) ASSERT_EQ(p[i], av[i]) << i;
  for (size_t i = 0; i < bv.size(); ++i) ASSERT_EQ(p[av.size() + i], bv[i]) << i;
}

TEST(DataMovement, Concat) {
  auto out = run_op(make_node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(-1)}}), {iota_f({2, 1}), iota_f({2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_near(out[0], {0, 0, 1, 1, 2, 3});
  EXPECT_THROW(run_op(make_node("Concat", {"a", "b"}, {"y"}, {{"axis", attr_int(0)}}), {iota_f({2, 1}), iota_f({2, 2})}),
               Error);
}

TEST(DataMovement, SplitVariants) {
  // equal parts from output count
  auto out = run_op(make_node("Split", {"x"}, {"a", "b"}, {{"axis", attr_int(1)}}), {iota_f({2, 4})});
  expect_near(out[0], {0, 1, 4, 5});
  expect_near(out[1], {2, 3, 6, 7});
  // split input (opset 13)
  out = run_op(make_node("Split", {"x", "s"}, {"a", "b"}), {iota_f({5}), i64({2, 3})});
  expect_near(out[1], {2, 3, 4});
  // split attribute (opset 11)
  out = run_op(make_node("Split", {"x"}, {"a", "b"}, {{"split", attr_ints({4, 1})}}), {iota_f({5})}, 11);
  expect_near(out[1], {4});
  // num_outputs with an uneven last chunk
  out = run_op(make_node("Split", {"x"}, {"a", "b", "c"}, {{"num_outputs", attr_int(3)}}), {iota_f({5})}, 18);
  EXPECT_EQ(out[2].shape(), (Shape{1}));
  EXPECT_THROW(run_op(make_node("Split", {"x", "s"}, {"a", "b"}), {iota_f({5}), i64({2, 2})}), Error);
  // num_outputs must match the outputs (a huge one built its split list for minutes)
  EXPECT_THROW(run_op(make_node("Split", {"x"}, {"a", "b"}, {{"num_outputs", attr_int(int64_t{1} << 40)}}),
                      {iota_f({5})}, 18),
               Error);
}

TEST(DataMovement, SliceStepsAndClamping) {
  Tensor x = iota_f({2, 4});
  auto out = run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}),
                    {x, i64({1, 0}), i64({2, 3}), i64({0, 1}), i64({1, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{1, 2}));
  expect_near(out[0], {4, 6});
  // negative step, INT64_MIN end
  out = run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}),
               {x, i64({-1}), i64({std::numeric_limits<int64_t>::min()}), i64({1}), i64({-1})});
  expect_near(out[0], {3, 2, 1, 0, 7, 6, 5, 4});
  // end out of bounds clamps; start beyond the end gives an empty slice
  out = run_op(make_node("Slice", {"x", "s", "e"}, {"y"}), {x, i64({0, 1}), i64({-1, 1000})});
  expect_near(out[0], {1, 2, 3});
  out = run_op(make_node("Slice", {"x", "s", "e"}, {"y"}), {x, i64({0, 10}), i64({2, 1000})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 0}));
  // opset 1 attributes
  out = run_op(make_node("Slice", {"x"}, {"y"}, {{"starts", attr_ints({1})}, {"ends", attr_ints({3})}, {"axes", attr_ints({1})}}),
               {x}, 1);
  expect_near(out[0], {1, 2, 5, 6});
  EXPECT_THROW(run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}), {x, i64({0}), i64({1}), i64({0}), i64({0})}),
               Error);
}

// out = x[s0:e0:k0, s1:e1:k1, ...] (starts and ends already clamped, steps
// positive).
Tensor naive_slice(const Tensor& x, const std::vector<int64_t>& st, const std::vector<int64_t>& en,
                   const std::vector<int64_t>& step) {
  Shape out_shape;
  for (int d = 0; d < x.rank(); ++d) out_shape.push_back((en[d] - st[d] + step[d] - 1) / step[d]);
  return naive_gather(x, out_shape, [&](const std::vector<int64_t>& i, const std::vector<int64_t>& strides) {
    int64_t src = 0;
    for (size_t d = 0; d < i.size(); ++d) src += (st[d] + i[d] * step[d]) * strides[d];
    return src;
  });
}

// Slices that are one contiguous block, contiguous rows, short rows and
// strided picks, against the element-by-element reference.
TEST(DataMovement, SliceContiguousBlocksMatchNaive) {
  Shape shape{2, 6, 5, 7};
  struct Case {
    std::vector<int64_t> st, en, step;
  };
  std::vector<Case> cases = {
      {{1, 0, 0, 0}, {2, 6, 5, 7}, {1, 1, 1, 1}},  // one block (batch 1 of 2)
      {{0, 1, 0, 0}, {2, 4, 5, 7}, {1, 1, 1, 1}},  // channel range: one block per batch
      {{1, 2, 1, 0}, {2, 3, 4, 7}, {1, 1, 1, 1}},  // rows of one plane
      {{0, 0, 0, 2}, {2, 6, 5, 5}, {1, 1, 1, 1}},  // short rows
      {{0, 1, 0, 1}, {2, 6, 5, 7}, {1, 2, 1, 3}},  // steps
  };
  for (DataType dt : {DataType::Float, DataType::Int64, DataType::UInt8}) {
    Tensor x = byte_pattern(dt, shape);
    for (const Case& c : cases) {
      auto out = run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}),
                        {x, i64(c.st), i64(c.en), i64({0, 1, 2, 3}), i64(c.step)});
      expect_same_bytes(out[0], naive_slice(x, c.st, c.en, c.step),
                        dtype_name(dt) + " starts " + shape_to_string(c.st) + " ends " + shape_to_string(c.en));
    }
  }
  // A negative step still reverses, next to a contiguous axis.
  Tensor x = iota_f({2, 3, 4});
  auto out = run_op(make_node("Slice", {"x", "s", "e", "a", "t"}, {"y"}),
                    {x, i64({2, 0}), i64({-4, 2}), i64({1, 0}), i64({-1, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3, 4}));
  expect_near(out[0], {8, 9, 10, 11, 4, 5, 6, 7, 0, 1, 2, 3, 20, 21, 22, 23, 16, 17, 18, 19, 12, 13, 14, 15});
}

TEST(DataMovement, Tile) {
  auto out = run_op(make_node("Tile", {"x", "r"}, {"y"}), {iota_f({2}), i64({3})});
  expect_near(out[0], {0, 1, 0, 1, 0, 1});
  out = run_op(make_node("Tile", {"x", "r"}, {"y"}), {iota_f({1, 2}), i64({2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 4}));
  expect_near(out[0], {0, 1, 0, 1, 0, 1, 0, 1});
}

TEST(DataMovement, PadModes) {
  Tensor x = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
  auto out = run_op(make_node("Pad", {"x", "p", "v"}, {"y"}), {x, i64({0, 2, 0, 1}), Tensor::scalar<float>(9)});
  expect_near(out[0], {9, 9, 1, 2, 3, 9});
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}, {{"mode", attr_string("reflect")}}), {x, i64({0, 2, 0, 2})});
  expect_near(out[0], {3, 2, 1, 2, 3, 2, 1});
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}, {{"mode", attr_string("edge")}}), {x, i64({0, 1, 0, 1})});
  expect_near(out[0], {1, 1, 2, 3, 3});
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}, {{"mode", attr_string("wrap")}}), {x, i64({0, 1, 0, 2})}, 19);
  expect_near(out[0], {3, 1, 2, 3, 1, 2});
  // negative pads crop
  out = run_op(make_node("Pad", {"x", "p"}, {"y"}), {x, i64({0, -1, 0, 0})});
  expect_near(out[0], {2, 3});
  // opset 2 attributes
  out = run_op(make_node("Pad", {"x"}, {"y"}, {{"pads", attr_ints({0, 1, 0, 0})}, {"value", attr_float(5)}}), {x}, 2);
  expect_near(out[0], {5, 1, 2, 3});
  EXPECT_THROW(run_op(make_node("Pad", {"x", "p"}, {"y"}), {x, i64({1, 1})}), Error);
}

// Every mode over 3-D inputs (growing and cropping pads, on 3 threads)
// against an index-by-index reference of the spec's rules.
TEST(DataMovement, PadModesMatchIndexReference) {
  const Shape shape = {3, 120, 126};
  const std::vector<int64_t> pads = {1, 5, 2, 0, -3, 4};  // begins, then ends
  Tensor x = iota_f(shape);
  ThreadPool three(3);
  auto source = [](int64_t j, int64_t dim, const std::string& mode) -> int64_t {
    if (j >= 0 && j < dim) return j;
    if (mode == "constant") return -1;
    if (mode == "edge") return j < 0 ? 0 : dim - 1;
    if (mode == "wrap") return ((j % dim) + dim) % dim;
    const int64_t period = 2 * (dim - 1), m = ((j % period) + period) % period;  // reflect
    return m < dim ? m : period - m;
  };
  for (std::string mode : {"constant", "reflect", "edge", "wrap"}) {
    auto y = run_op(make_node("Pad", {"x", "p", "v"}, {"y"}, {{"mode", attr_string(mode)}}),
                    {x, i64(pads), Tensor::scalar<float>(-7)}, 19, &three)[0];
    const Shape want_shape = {shape[0] + 1 + 0, shape[1] + 5 - 3, shape[2] + 2 + 4};
    ASSERT_EQ(y.shape(), want_shape) << mode;
    for (int64_t a = 0; a < want_shape[0]; ++a)
      for (int64_t b = 0; b < want_shape[1]; ++b)
        for (int64_t c = 0; c < want_shape[2]; ++c) {
          const int64_t i = source(a - 1, shape[0], mode), j = source(b - 5, shape[1], mode),
                        k = source(c - 2, shape[2], mode);
          const float want = i < 0 || j < 0 || k < 0 ? -7.0f : static_cast<float>((i * shape[1] + j) * shape[2] + k);
          ASSERT_EQ(y.float_at((a * want_shape[1] + b) * want_shape[2] + c), want) << mode << " at " << a << "," << b << "," << c;
        }
  }
}

TEST(DataMovement, DepthToSpaceAndBack) {
  Tensor x = iota_f({1, 8, 2, 3});
  for (std::string mode : {"DCR", "CRD"}) {
    auto d2s = run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(2)}, {"mode", attr_string(mode)}}), {x});
    EXPECT_EQ(d2s[0].shape(), (Shape{1, 2, 4, 6}));
    if (mode == "DCR") {
      auto s2d = run_op(make_node("SpaceToDepth", {"y"}, {"z"}, {{"blocksize", attr_int(2)}}), {d2s[0]});
      EXPECT_EQ(to_vector<float>(s2d[0]), to_vector<float>(x));
    }
  }
  // DCR: y[0,0,0,1] = x[0, 1*2*... ] -> block (0,1) of channel 0 comes from channel 1*c = 2
  auto d = run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(2)}}), {iota_f({1, 4, 1, 1})});
  expect_near(d[0], {0, 1, 2, 3});
  auto c = run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(2)}, {"mode", attr_string("CRD")}}),
                  {iota_f({1, 8, 1, 1})});
  // CRD: channel c takes x[c*4 + bh*2 + bw]
  expect_near(c[0], {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_THROW(run_op(make_node("DepthToSpace", {"x"}, {"y"}, {{"blocksize", attr_int(3)}}), {x}), Error);
}

TEST(DataMovement, ReverseSequence) {
  Tensor x = iota_f({4, 2});  // time-major: [T=4, B=2]
  auto out = run_op(make_node("ReverseSequence", {"x", "l"}, {"y"}), {x, i64({3, 1})});
  // batch 0 reverses 3 steps: 4,2,0,6 ; batch 1 keeps: 1,3,5,7
  expect_near(out[0], {4, 1, 2, 3, 0, 5, 6, 7});
  EXPECT_THROW(run_op(make_node("ReverseSequence", {"x", "l"}, {"y"}), {x, i64({5, 1})}), Error);
}

// Crop (experimental): border = (left, top, right, bottom), or a (height, width) window at (top, left).
TEST(DataMovement, CropBordersAndWindow) {
  Tensor x = iota_f({1, 1, 4, 5});  // x[h][w] = 5h + w
  auto y = run_op(make_node("Crop", {"x"}, {"y"}, {{"border", attr_ints({1, 1, 2, 0})}}), {x}, 7)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 3, 2}));
  expect_near(y, {6, 7, 11, 12, 16, 17});
  y = run_op(make_node("Crop", {"x"}, {"y"}, {{"border", attr_ints({2, 1, 0, 0})}, {"scale", attr_ints({2, 3})}}), {x}, 7)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 1, 2, 3}));
  expect_near(y, {7, 8, 9, 12, 13, 14});
  EXPECT_THROW(run_op(make_node("Crop", {"x"}, {"y"}, {{"border", attr_ints({3, 0, 3, 0})}}), {x}, 7), Error);
  EXPECT_THROW(run_op(make_node("Crop", {"x"}, {"y"}, {{"border", attr_ints({0, 3, 0, 0})}, {"scale", attr_ints({2, 2})}}),
                      {x}, 7),
               Error);
}

// DynamicSlice (experimental): Slice-10 without steps.
TEST(DataMovement, DynamicSlice) {
  auto y = run_op(make_node("DynamicSlice", {"x", "s", "e", "a"}, {"y"}), {iota_f({3, 4}), i64({1, -1}), i64({100, 3}),
                                                                           i64({1, 0})}, 9)[0];
  EXPECT_EQ(y.shape(), (Shape{1, 3}));
  expect_near(y, {9, 10, 11});
}

}  // namespace
}  // namespace onyx::test
