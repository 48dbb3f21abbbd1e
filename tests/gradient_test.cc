// ai.onnx.preview.training Gradient, expanded by the loader into reverse-mode
// differentiation: checked against derivatives worked out by hand.
#include <gtest/gtest.h>

#include "model_builder.h"
#include "session_test_util.h"
#include "onyx/session.h"

namespace onyx {
namespace {

using test::floats;

using test::add_node;
using test::serialize;
using test::tensor_info;

// d = (a + b) * a, e = d * w (w broadcast [1] over [2]); Gradient of e w.r.t. a, b, w.
onnx::ModelProto gradient_model(const std::string& y) {
  onnx::ModelProto m = test::make_model(12);
  auto* op = m.add_opset_import();
  op->set_domain("ai.onnx.preview.training");
  op->set_version(1);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("a", onnx::TensorProto::FLOAT, {2});
  *g->add_input() = tensor_info("b", onnx::TensorProto::FLOAT, {2});
  *g->add_input() = tensor_info("w", onnx::TensorProto::FLOAT, {1});
  add_node(g, "Add", {"a", "b"}, {"c"});
  add_node(g, "Mul", {"c", "a"}, {"d"});
  add_node(g, "Mul", {"d", "w"}, {"e"});
  auto* n = add_node(g, "Gradient", {"a", "b", "w"}, {"da", "db", "dw"});
  n->set_domain("ai.onnx.preview.training");
  auto* xs = n->add_attribute();
  xs->set_name("xs");
  xs->set_type(onnx::AttributeProto::STRINGS);
  for (const char* s : {"a", "b", "w"}) xs->add_strings(s);
  auto* ya = n->add_attribute();
  ya->set_name("y");
  ya->set_type(onnx::AttributeProto::STRING);
  ya->set_s(y);
  for (const char* o : {"da", "db", "dw"}) *g->add_output() = tensor_info(o, onnx::TensorProto::FLOAT, {-1});
  return m;
}

TEST(Gradient, ChainRuleThroughAddMulAndBroadcast) {
  std::string bytes = serialize(gradient_model("e"));
  auto s = Session::from_bytes(bytes.data(), bytes.size());
  auto out = s->run({{"a", Value(Tensor::from_vector<float>({1, 2}, {2}))},
                     {"b", Value(Tensor::from_vector<float>({3, 4}, {2}))},
                     {"w", Value(Tensor::from_vector<float>({10}, {1}))}});
  // e = (a + b) a w: de/da = (2a + b) w, de/db = a w, de/dw = sum((a + b) a) (w was broadcast).
  EXPECT_EQ(floats(out[0]), (std::vector<float>{50, 80}));
  EXPECT_EQ(floats(out[1]), (std::vector<float>{10, 20}));
  EXPECT_EQ(floats(out[2]), (std::vector<float>{16}));
}

TEST(Gradient, UnsupportedOpIsNamed) {
  onnx::ModelProto m = gradient_model("e");
  m.mutable_graph()->mutable_node(1)->set_op_type("Max");
  std::string bytes = serialize(m);
  try {
    Session::from_bytes(bytes.data(), bytes.size());
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("Max"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace onyx
