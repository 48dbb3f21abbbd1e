#include <cmath>
#include <limits>

#include "kernels/broadcast.h"
#include "op_test_util.h"

namespace onyx::test {
namespace {

Tensor F(std::vector<float> v, Shape s) { return Tensor::from_vector<float>(v, s); }

TEST(Elementwise, AddBroadcastRowAndScalar) {
  auto out = run_op(make_node("Add", {"a", "b"}, {"y"}), {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({10, 20, 30}, {3})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 3}));
  expect_near(out[0], {11, 22, 33, 14, 25, 36});
  out = run_op(make_node("Mul", {"a", "b"}, {"y"}), {F({2}, {}), F({1, 2, 3}, {3, 1})});
  EXPECT_EQ(out[0].shape(), (Shape{3, 1}));
  expect_near(out[0], {2, 4, 6});
  // column broadcast against a row: [2,1] - [1,3]
  out = run_op(make_node("Sub", {"a", "b"}, {"y"}), {F({1, 2}, {2, 1}), F({1, 2, 3}, {1, 3})});
  expect_near(out[0], {0, -1, -2, 1, 0, -1});
}

// Large broadcasts split over threads, against an index-by-index reference:
// a blocked [1, CB, H, W, 16] activation times a per-channel [1, CB, 1, 1, 16]
// scale (the fixed 16-wide rows), a [N, 7] row broadcast (odd rows, chunks
// starting mid-tensor), operands broadcast on alternating axes (runs of rows
// that end mid-tensor and carry into several outer axes) and same-shape /
// scalar operands (one flat range).
TEST(Elementwise, LargeBroadcastsAcrossThreadsMatchReference) {
  struct Case {
    Shape a, b;
  };
  const Case cases[] = {{{1, 5, 23, 29, 16}, {1, 5, 1, 1, 16}},
                        {{1, 3, 41, 37, 8}, {1, 3, 1, 1, 8}},
                        {{5003, 7}, {7}},
                        {{4, 3, 1, 50, 7}, {4, 1, 9, 1, 7}},
                        {{40000}, {40000}},
                        {{40001}, {}}};
  ThreadPool three(3);
  for (const Case& c : cases) {
    Shape out = broadcast_shapes({c.a, c.b});
    std::vector<float> a(shape_numel(c.a)), b(shape_numel(c.b));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 1013) * 0.01f - 5.0f;
    for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 17) * 0.25f - 2.0f;
    std::vector<int64_t> oa = broadcast_offsets(c.a, out), ob = broadcast_offsets(c.b, out);
    for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &three}) {
      auto y = run_op(make_node("Mul", {"a", "b"}, {"y"}), {F(a, c.a), F(b, c.b)}, 17, pool);
      ASSERT_EQ(y[0].shape(), out);
      for (int64_t i = 0; i < shape_numel(out); ++i)
        ASSERT_EQ(y[0].float_at(i), a[oa[i]] * b[ob[i]]) << shape_to_string(c.a) << " at " << i;
    }
  }
}

// Where over broadcast operands (an attention mask against scores and a
// scalar fill, a column condition against rows) and same-shape operands,
// against a per-index reference.
TEST(Elementwise, WhereBroadcastsMatchReference) {
  struct Case {
    Shape c, x, y;
  };
  const Case cases[] = {{{1, 1, 5, 7}, {1, 3, 5, 7}, {}}, {{4, 1}, {1, 9}, {4, 9}}, {{2, 6}, {2, 6}, {2, 6}}};
  for (const Case& k : cases) {
    Shape out = broadcast_shapes({k.c, k.x, k.y});
    std::vector<uint8_t> cv(shape_numel(k.c));
    std::vector<float> xv(shape_numel(k.x)), yv(shape_numel(k.y));
    for (size_t i = 0; i < cv.size(); ++i) cv[i] = (i * 7) % 3 == 0;
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i);
    for (size_t i = 0; i < yv.size(); ++i) yv[i] = -1.0f - static_cast<float>(i);
    Tensor c(DataType::Bool, k.c);
    for (size_t i = 0; i < cv.size(); ++i) c.data<bool>()[i] = cv[i] != 0;
    auto y = run_op(make_node("Where", {"c", "x", "y"}, {"o"}), {c, F(xv, k.x), F(yv, k.y)})[0];
    ASSERT_EQ(y.shape(), out);
    auto oc = broadcast_offsets(k.c, out), ox = broadcast_offsets(k.x, out), oy = broadcast_offsets(k.y, out);
    for (int64_t i = 0; i < shape_numel(out); ++i)
      ASSERT_EQ(y.float_at(i), cv[oc[i]] ? xv[ox[i]] : yv[oy[i]]) << shape_to_string(k.c) << " at " << i;
  }
}

TEST(Elementwise, LegacyBroadcastAxis) {
  Node n = make_node("Add", {"a", "b"}, {"y"}, {{"broadcast", attr_int(1)}, {"axis", attr_int(0)}});
  auto out = run_op(n, {F({1, 2, 3, 4, 5, 6}, {2, 3}), F({100, 200}, {2})}, 6);
  expect_near(out[0], {101, 102, 103, 204, 205, 206});
}

// Erf on integers (allowed since opset 9): the float erf converted back, as the reference does.
TEST(Elementwise, ErfOnIntegers) {
  auto y = run_op(make_node("Erf", {"x"}, {"y"}), {Tensor::from_vector<int32_t>({-7, -4, -1, 0, 3, 4, 9}, {7})}, 13)[0];
  EXPECT_EQ(y.dtype(), DataType::Int32);
  EXPECT_EQ(to_vector<int32_t>(y), (std::vector<int32_t>{-1, -1, 0, 0, 0, 1, 1}));
  auto u = run_op(make_node("Erf", {"x"}, {"y"}), {Tensor::from_vector<uint8_t>({0, 2, 200}, {3})}, 13)[0];
  EXPECT_EQ(to_vector<uint8_t>(u), (std::vector<uint8_t>{0, 0, 1}));
}

TEST(Elementwise, IntegerDivAndMod) {
  auto a = Tensor::from_vector<int32_t>({7, -7, 7, -7, std::numeric_limits<int32_t>::min()}, {5});
  auto b = Tensor::from_vector<int32_t>({2, 2, -2, -2, -1}, {5});
  auto out = run_op(make_node("Div", {"a", "b"}, {"y"}), {a, b});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{3, -3, -3, 3, std::numeric_limits<int32_t>::min()}));
  out = run_op(make_node("Mod", {"a", "b"}, {"y"}), {a, b});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{1, 1, -1, -1, 0}));
  out = run_op(make_node("Mod", {"a", "b"}, {"y"}, {{"fmod", attr_int(1)}}), {a, b});
  EXPECT_EQ(to_vector<int32_t>(out[0]), (std::vector<int32_t>{1, -1, 1, -1, 0}));
  auto z = Tensor::from_vector<int32_t>({1, 0, 1, 1, 1}, {5});
  EXPECT_THROW(run_op(make_node("Div", {"a", "b"}, {"y"}), {a, z}), onyx::Error);
}

TEST(Elementwise, FloatModFollowsDivisor) {
  auto out = run_op(make_node("Mod", {"a", "b"}, {"y"}, {{"fmod", attr_int(1)}}), {F({-4.5f, 5.5f}, {2}), F({2, -2}, {2})});
  expect_near(out[0], {-0.5f, 1.5f});
}

TEST(Elementwise, PowMixedTypes) {
  auto out = run_op(make_node("Pow", {"a", "b"}, {"y"}),
                    {Tensor::from_vector<int64_t>({2, 3, -2}, {3}), Tensor::from_vector<float>({3, 2, 3}, {3})});
  EXPECT_EQ(out[0].dtype(), DataType::Int64);
  EXPECT_EQ(to_vector<int64_t>(out[0]), (std::vector<int64_t>{8, 9, -8}));
  out = run_op(make_node("Pow", {"a", "b"}, {"y"}),
               {F({2, 4}, {2}), Tensor::from_vector<int32_t>({-1, 2}, {2})});
  expect_near(out[0], {0.5f, 16});
}

TEST(Elementwise, ComparisonsAndLogic) {
  auto out = run_op(make_node("Less", {"a", "b"}, {"y"}), {F({1, 5, 3}, {3}), F({3}, {})});
  EXPECT_EQ(out[0].dtype(), DataType::Bool);
  EXPECT_EQ(to_vector<bool>(out[0]), (std::vector<bool>{true, false, false}));
  out = run_op(make_node("GreaterOrEqual", {"a", "b"}, {"y"}), {F({1, 5, 3}, {3}), F({3}, {})});
  EXPECT_EQ(to_vector<bool>(out[0]), (std::vector<bool>{false, true, true}));
  auto s1 = Tensor::from_vector<std::string>({"a", "b"}, {2});
  auto s2 = Tensor::from_vector<std::string>({"a", "c"}, {2});
  out = run_op(make_node("Equal", {"a", "b"}, {"y"}), {s1, s2});
  EXPECT_EQ(to_vector<bool>(out[0]), (std::vector<bool>{true, false}));
  auto t = Tensor::from_vector<bool>({true, true, false, false}, {4});
  auto u = Tensor::from_vector<bool>({true, false, true, false}, {4});
  out = run_op(make_node("Xor", {"a", "b"}, {"y"}), {t, u});
  EXPECT_EQ(to_vector<bool>(out[0]), (std::vector<bool>{false, true, true, false}));
  EXPECT_THROW(run_op(make_node("And", {"a", "b"}, {"y"}), {F({1}, {1}), F({1}, {1})}), onyx::Error);
}

TEST(Elementwise, BitShiftAndBitwise) {
  auto a = Tensor::from_vector<uint8_t>({1, 0x80, 16}, {3});
  auto b = Tensor::from_vector<uint8_t>({3, 1, 9}, {3});
  auto out = run_op(make_node("BitShift", {"a", "b"}, {"y"}, {{"direction", attr_string("LEFT")}}), {a, b});
  EXPECT_EQ(to_vector<uint8_t>(out[0]), (std::vector<uint8_t>{8, 0, 0}));
  out = run_op(make_node("BitShift", {"a", "b"}, {"y"}, {{"direction", attr_string("RIGHT")}}), {a, b});
  EXPECT_EQ(to_vector<uint8_t>(out[0]), (std::vector<uint8_t>{0, 0x40, 0}));
  out = run_op(make_node("BitwiseXor", {"a", "b"}, {"y"}), {a, b}, 18);
  EXPECT_EQ(to_vector<uint8_t>(out[0]), (std::vector<uint8_t>{2, 0x81, 25}));
}

TEST(Elementwise, UnaryMath) {
  auto out = run_op(make_node("Round", {"x"}, {"y"}), {F({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.6f}, {6})});
  expect_near(out[0], {0, 2, 2, -0, -2, 3});
  out = run_op(make_node("Sign", {"x"}, {"y"}), {Tensor::from_vector<int16_t>({-5, 0, 7}, {3})});
  EXPECT_EQ(to_vector<int16_t>(out[0]), (std::vector<int16_t>{-1, 0, 1}));
  out = run_op(make_node("Abs", {"x"}, {"y"}), {Tensor::from_vector<int8_t>({-5, 0, 7}, {3})});
  EXPECT_EQ(to_vector<int8_t>(out[0]), (std::vector<int8_t>{5, 0, 7}));
  out = run_op(make_node("Erf", {"x"}, {"y"}), {F({0, 0.5f, -1, 3}, {4})});
  expect_near(out[0], {0, 0.5204998778f, -0.8427007929f, 0.9999779095f});
  float inf = std::numeric_limits<float>::infinity();
  out = run_op(make_node("IsInf", {"x"}, {"y"}, {{"detect_negative", attr_int(0)}}),
               {F({inf, -inf, 1, std::nanf("")}, {4})});
  EXPECT_EQ(to_vector<bool>(out[0]), (std::vector<bool>{true, false, false, false}));
  out = run_op(make_node("Sqrt", {"x"}, {"y"}), {Tensor::from_vector<Float16>({Float16(4.0f), Float16(2.25f)}, {2})});
  EXPECT_EQ(out[0].dtype(), DataType::Float16);
  expect_near(out[0], {2, 1.5f});
}

TEST(Elementwise, VariadicAndWhere) {
  auto out = run_op(make_node("Max", {"a", "b", "c"}, {"y"}),
                    {Tensor::from_vector<uint16_t>({1, 9}, {2}), Tensor::from_vector<uint16_t>({5}, {1}),
                     Tensor::from_vector<uint16_t>({3, 4, 10, 0}, {2, 2})});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(to_vector<uint16_t>(out[0]), (std::vector<uint16_t>{5, 9, 10, 9}));
  out = run_op(make_node("Mean", {"a", "b"}, {"y"}), {F({1, 2}, {2}), F({3}, {1})});
  expect_near(out[0], {2, 2.5f});
  out = run_op(make_node("Sum", {"a"}, {"y"}), {F({1, 2}, {2})});
  expect_near(out[0], {1, 2});
  auto c = Tensor::from_vector<bool>({true, false}, {2, 1});
  auto x = Tensor::from_vector<std::string>({"x1", "x2"}, {2});
  auto y = Tensor::from_vector<std::string>({"y"}, {});
  out = run_op(make_node("Where", {"c", "x", "y"}, {"o"}), {c, x, y});
  EXPECT_EQ(out[0].shape(), (Shape{2, 2}));
  EXPECT_EQ(to_vector<std::string>(out[0]), (std::vector<std::string>{"x1", "x2", "y", "y"}));
}

TEST(Elementwise, IncompatibleShapesFail) {
  EXPECT_THROW(run_op(make_node("Add", {"a", "b"}, {"y"}), {F({1, 2, 3}, {3}), F({1, 2}, {2})}), onyx::Error);
  EXPECT_THROW(run_op(make_node("Add", {"a", "b"}, {"y"}), {F({1}, {1}), Tensor::from_vector<int32_t>({1}, {1})}),
               onyx::Error);
}

TEST(Elementwise, BitShiftSignedOpset28) {
  auto x = Tensor::from_vector<int8_t>({-8, -8, 8, 64}, {4});
  auto s = Tensor::from_vector<int8_t>({1, 10, -1, 1}, {4});
  auto out = run_op(make_node("BitShift", {"x", "s"}, {"y"}, {{"direction", attr_string("RIGHT")}}), {x, s}, 28);
  EXPECT_EQ(to_vector<int8_t>(out[0]), (std::vector<int8_t>{-4, -1, 0, 32}));  // arithmetic; sign fill when out of range
  out = run_op(make_node("BitShift", {"x", "s"}, {"y"}, {{"direction", attr_string("LEFT")}}), {x, s}, 28);
  EXPECT_EQ(to_vector<int8_t>(out[0]), (std::vector<int8_t>{-16, 0, 0, -128}));  // bits past the sign are dropped
}

TEST(Elementwise, ModFloatZeroTakesDivisorSign) {
  auto a = Tensor::from_vector<float>({4.f, -4.f, 0.f, 3.f}, {4});
  auto b = Tensor::from_vector<float>({-2.f, 2.f, -5.f, -std::numeric_limits<float>::infinity()}, {4});
  auto out = run_op(make_node("Mod", {"a", "b"}, {"y"}), {a, b}, 28);
  auto v = to_vector<float>(out[0]);
  EXPECT_TRUE(v[0] == 0 && std::signbit(v[0]));
  EXPECT_TRUE(v[1] == 0 && !std::signbit(v[1]));
  EXPECT_TRUE(v[2] == 0 && std::signbit(v[2]));
  EXPECT_EQ(v[3], -std::numeric_limits<float>::infinity());  // x finite, y -inf, signs differ: y
}

}  // namespace
}  // namespace onyx::test
