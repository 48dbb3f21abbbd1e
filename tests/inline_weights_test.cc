#include "onnx/inline_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include "model_builder.h"
#include "onyx/session.h"
#include "session_test_util.h"

namespace onyx {
namespace {

using test::add_node;
using test::floats;
using test::serialize;
using test::tensor_info;

constexpr int64_t kBig = 2048;  // floats: 8 KiB of raw_data, over the 4 KiB threshold

onnx::TensorProto raw_float_tensor(const std::string& name, const std::vector<float>& values) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  t.add_dims(static_cast<int64_t>(values.size()));
  t.set_raw_data(values.data(), values.size() * sizeof(float));
  return t;
}

std::vector<float> ramp(int64_t n, float scale) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(i % 97) - 3.0f;
  return v;
}

// y = x + big_a + big_b + small; `pad` lengthens a name to move the weights'
// offsets in the file, so some land 4-byte aligned and some do not.
onnx::ModelProto add_weights_model(size_t pad) {
  onnx::ModelProto m = test::make_model();
  auto* g = m.mutable_graph();
  g->set_name("g" + std::string(pad, 'p'));
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {kBig});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {kBig});
  *g->add_initializer() = raw_float_tensor("big_a", ramp(kBig, 0.5f));
  *g->add_initializer() = raw_float_tensor("big_b" + std::string(pad, 'q'), ramp(kBig, -0.25f));
  *g->add_initializer() = raw_float_tensor("small", {1.0f});
  add_node(g, "Add", {"x", "big_a"}, {"s1"});
  add_node(g, "Add", {"s1", "big_b" + std::string(pad, 'q')}, {"s2"});
  add_node(g, "Add", {"s2", "small"}, {"y"});
  return m;
}

std::string entry(const onnx::TensorProto& t, const std::string& key) {
  for (const auto& kv : t.external_data())
    if (kv.key() == key) return kv.value();
  return "";
}

TEST(InlineWeights, LargeRawDataBecomesAReferenceIntoTheFile) {
  std::string bytes = serialize(add_weights_model(0));
  std::string rewritten = point_initializers_into_file(bytes.data(), bytes.size(), "m.onnx");
  ASSERT_FALSE(rewritten.empty());
  EXPECT_LT(rewritten.size(), bytes.size() / 4);
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(rewritten));
  const auto& g = m.graph();
  ASSERT_EQ(g.initializer_size(), 3);
  for (int i = 0; i < 2; ++i) {
    const auto& t = g.initializer(i);
    EXPECT_EQ(t.data_location(), onnx::TensorProto::EXTERNAL) << t.name();
    EXPECT_FALSE(t.has_raw_data()) << t.name();
    EXPECT_EQ(entry(t, "location"), "m.onnx");
    size_t offset = std::stoull(entry(t, "offset")), length = std::stoull(entry(t, "length"));
    ASSERT_EQ(length, kBig * sizeof(float));
    ASSERT_LE(offset + length, bytes.size());
    std::vector<float> expect = ramp(kBig, i == 0 ? 0.5f : -0.25f);
    EXPECT_EQ(std::memcmp(bytes.data() + offset, expect.data(), length), 0) << t.name();
  }
  // Everything else is kept as it was.
  EXPECT_TRUE(g.initializer(2).has_raw_data());
  EXPECT_EQ(g.node_size(), 3);
  EXPECT_EQ(g.node(1).input(1), "big_b");
  EXPECT_EQ(m.opset_import(0).version(), 17);
}

TEST(InlineWeights, NothingToRewriteOrMalformedGivesEmpty) {
  std::string small = serialize(test::add_relu_model());
  EXPECT_EQ(point_initializers_into_file(small.data(), small.size(), "m.onnx"), "");
  std::string bytes = serialize(add_weights_model(0));
  std::string truncated = bytes.substr(0, bytes.size() - 100);
  EXPECT_EQ(point_initializers_into_file(truncated.data(), truncated.size(), "m.onnx"), "");
  std::string junk(64, '\xff');
  EXPECT_EQ(point_initializers_into_file(junk.data(), junk.size(), "m.onnx"), "");
}

class InlineWeightsFile : public test::TempDirTest {
 protected:
  std::string write(const std::string& bytes) {
    std::string path = (dir_ / "model.onnx").string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
};

TEST_F(InlineWeightsFile, SessionReadsWeightsAtEveryAlignment) {
  std::vector<float> x = ramp(kBig, 2.0f), a = ramp(kBig, 0.5f), b = ramp(kBig, -0.25f);
  std::vector<float> expect(kBig);
  for (int64_t i = 0; i < kBig; ++i) expect[i] = x[i] + a[i] + b[i] + 1.0f;
  for (size_t pad = 0; pad < 4; ++pad) {
    auto s = Session::from_file(write(serialize(add_weights_model(pad))));
    auto out = s->run({{"x", Value(Tensor::from_vector<float>(x, {kBig}))}});
    EXPECT_EQ(floats(out[0]), expect) << "pad " << pad;
  }
}

TEST_F(InlineWeightsFile, TruncatedFileIsAClearError) {
  std::string bytes = serialize(add_weights_model(0));
  std::string path = write(bytes.substr(0, bytes.size() / 2));
  Error e = test::error_of([&] { Session::from_file(path); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidProtobuf) << e.what();
}

}  // namespace
}  // namespace onyx
