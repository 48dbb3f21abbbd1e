// CUDA kernels against the CPU provider: small single-node (and a few
// multi-node) models run on both, outputs compared. Every test needs a CUDA
// device and skips with the reason without one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <random>

#include "model_builder.h"
#include "onyx/session.h"

#if ONYX_WITH_CUDA
#include "cuda/cuda_provider.h"
#endif

namespace onyx {
namespace {

using test::add_node;
using test::make_model;
using test::serialize;
using test::tensor_info;

bool have_device(std::string* why) {
#if ONYX_WITH_CUDA
  return cuda_device_available(why);
#else
  *why = "this build has no CUDA provider";
  return false;
#endif
}

#define REQUIRE_DEVICE()                                                   \
  do {                                                                     \
    std::string why_;                                                      \
    if (!have_device(&why_)) GTEST_SKIP() << "no CUDA device: " << why_;   \
  } while (0)

onnx::AttributeProto int_attr(const std::string& n, int64_t v) {
  onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(v);
  return a;
}
onnx::AttributeProto float_attr(const std::string& n, float v) {
  onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(onnx::AttributeProto::FLOAT);
  a.set_f(v);
  return a;
}
onnx::AttributeProto ints_attr(const std::string& n, std::vector<int64_t> v) {
  onnx::AttributeProto a;
  a.set_name(n);
  a.set_type(onnx::AttributeProto::INTS);
  for (auto x : v) a.add_ints(x);
  return a;
}

struct In {
  std::string name;
  Shape shape;
  bool initializer = false;  // constant (uploaded once) or graph input (copied per run)
  int elem = onnx::TensorProto::FLOAT;
  std::vector<int64_t> ints = {};  // values for int64 inputs
  bool positive = false;      // random values in (0.1, 2.1) instead of (-2, 2)
};

Tensor random_tensor(const Shape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Tensor t(DataType::Float, s);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = u(rng);
  return t;
}

onnx::TensorProto to_proto(const std::string& name, const Tensor& t) {
  onnx::TensorProto p;
  p.set_name(name);
  p.set_data_type(t.dtype() == DataType::Int64 ? onnx::TensorProto::INT64 : onnx::TensorProto::FLOAT);
  for (auto d : t.shape()) p.add_dims(d);
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (t.dtype() == DataType::Int64) p.add_int64_data(t.data<int64_t>()[i]);
    else p.add_float_data(t.data<float>()[i]);
  }
  return p;
}

// An output with no declared type (the session reports what the model makes).
void add_untyped_output(onnx::GraphProto* g, const std::string& name) {
  onnx::ValueInfoProto vi;
  vi.set_name(name);
  *g->add_output() = vi;
}

// A session over `bytes` at level disable (every node as built), on the CPU or
// with the CUDA provider first.
std::unique_ptr<Session> unoptimized_session(const std::string& bytes, bool cuda) {
  SessionOptions o;
  o.optimization_level = OptimizationLevel::Disable;
  if (cuda) o.providers = {"cuda"};
  return Session::from_bytes(bytes.data(), bytes.size(), o);
}

// One node `op` over `ins` with `n_out` outputs; runs on CPU and CUDA and compares.
void check_op(const std::string& op, const std::vector<In>& ins, std::vector<onnx::AttributeProto> attrs = {},
              int n_out = 1, int opset = 17, float tol = 1e-4f, const std::string& domain = "",
              bool expect_on_cuda = true) {
  onnx::ModelProto m = make_model(opset);
  if (!domain.empty()) {
    auto* imp = m.add_opset_import();
    imp->set_domain(domain);
    imp->set_version(1);
  }
  auto* g = m.mutable_graph();
  Feeds feeds;
  std::vector<std::string> in_names;
  uint32_t seed = 1;
  for (auto& in : ins) {
    in_names.push_back(in.name);
    if (in.name.empty()) continue;
    Tensor t;
    if (in.elem == onnx::TensorProto::INT64) t = Tensor::from_vector<int64_t>(in.ints, in.shape);
    else t = random_tensor(in.shape, seed++);
    if (in.positive)
      for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::fabs(t.data<float>()[i]) + 0.1f;
    if (in.initializer) {
      *g->add_initializer() = to_proto(in.name, t);
    } else {
      *g->add_input() = tensor_info(in.name, in.elem, in.shape);
      feeds.push_back({in.name, Value(t)});
    }
  }
  std::vector<std::string> outs;
  for (int i = 0; i < n_out; ++i) {
    outs.push_back("out" + std::to_string(i));
    add_untyped_output(g, outs.back());
  }
  auto* node = add_node(g, op, in_names, outs, "node");
  if (!domain.empty()) node->set_domain(domain);
  for (auto& a : attrs) *node->add_attribute() = a;
  std::string bytes = serialize(m);
  auto cpu = unoptimized_session(bytes, false);
  auto gpu = unoptimized_session(bytes, true);
  if (expect_on_cuda) {
    bool on_cuda = false;
    for (auto& [name, p] : gpu->node_placement())
      if (name == "node") on_cuda = p == "CUDAExecutionProvider";
    EXPECT_TRUE(on_cuda) << op << " did not run on CUDA";
  }
  auto want = cpu->run(feeds);
  auto got = gpu->run(feeds);
  ASSERT_EQ(want.size(), got.size());
  for (size_t k = 0; k < want.size(); ++k) {
    const Tensor& a = want[k].tensor();
    const Tensor& b = got[k].tensor();
    ASSERT_EQ(a.shape(), b.shape()) << op << " output " << k;
    ASSERT_EQ(a.dtype(), b.dtype()) << op;
    ASSERT_EQ(b.device().type, DeviceType::CPU);
    for (int64_t i = 0; i < a.numel(); ++i) {
      double x = a.float_at(i), y = b.float_at(i);
      ASSERT_NEAR(x, y, tol * (1 + std::fabs(x))) << op << " output " << k << " element " << i;
    }
  }
}

TEST(CudaOps, Elementwise) {
  REQUIRE_DEVICE();
  for (const char* op : {"Add", "Sub", "Mul", "Div", "Max", "Min"}) {
    check_op(op, {{"a", {2, 3, 4}}, {"b", {2, 3, 4}}});
    check_op(op, {{"a", {2, 3, 4}}, {"b", {4}, true}});
    check_op(op, {{"a", {2, 1, 4}}, {"b", {3, 1}}});
    check_op(op, {{"a", {2, 3, 4}}, {"b", {}, true}});
  }
  // A positive base: a negative one to a fractional power is NaN on both sides.
  check_op("Pow", {{"a", {8}, false, onnx::TensorProto::FLOAT, {}, true}, {"b", {}, true}}, {}, 1, 17, 1e-3f);
}

// Comparisons feeding Where: a comparison whose bool result were only read on
// the host would rightly stay on the CPU, so the Where keeps it on the device.
TEST(CudaOps, ComparisonsFeedingWhere) {
  REQUIRE_DEVICE();
  for (const char* op : {"Less", "GreaterOrEqual", "Equal"}) {
    onnx::ModelProto m = make_model(17);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("a", onnx::TensorProto::FLOAT, {2, 3});
    *g->add_input() = tensor_info("b", onnx::TensorProto::FLOAT, {3});
    add_untyped_output(g, "out");
    add_node(g, op, {"a", "b"}, {"c"}, "compare");
    add_node(g, "Where", {"c", "a", "b"}, {"out"}, "where");
    std::string bytes = serialize(m);
    auto cpu = unoptimized_session(bytes, false);
    auto gpu = unoptimized_session(bytes, true);
    for (auto& [node, p] : gpu->node_placement())
      if (node == "compare" || node == "where") {
        EXPECT_EQ(p, "CUDAExecutionProvider") << op << " " << node;
      }
    Tensor a = Tensor::from_vector<float>({-1, 0, 2, 3, 0.5f, -4}, {2, 3});
    Tensor b = Tensor::from_vector<float>({0, 0, 3}, {3});  // ties included: Equal and GreaterOrEqual see them
    Feeds feeds = {{"a", Value(a)}, {"b", Value(b)}};
    Tensor want = cpu->run(feeds)[0].tensor(), got = gpu->run(feeds)[0].tensor();
    ASSERT_EQ(want.shape(), got.shape());
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_EQ(want.data<float>()[i], got.data<float>()[i]) << op << " " << i;
  }
}

TEST(CudaOps, Unary) {
  REQUIRE_DEVICE();
  for (const char* op : {"Relu", "Sigmoid", "Tanh", "Erf", "Neg", "Abs", "Exp", "Softplus", "HardSwish"})
    check_op(op, {{"x", {3, 5, 7}}}, {}, 1, 17, 1e-4f);
  check_op("LeakyRelu", {{"x", {100}}}, {float_attr("alpha", 0.3f)});
  check_op("Elu", {{"x", {100}}}, {float_attr("alpha", 0.7f)});
  check_op("HardSigmoid", {{"x", {100}}}, {float_attr("alpha", 0.3f), float_attr("beta", 0.4f)});
  check_op("Gelu", {{"x", {64}}}, {}, 1, 20);
  check_op("Gelu", {{"x", {64}}}, {}, 1, 17, 1e-4f, "com.onyx");
}

TEST(CudaOps, MatMulAndGemm) {
  REQUIRE_DEVICE();
  check_op("MatMul", {{"a", {4, 8}}, {"b", {8, 5}, true}}, {}, 1, 17, 1e-4f);
  check_op("MatMul", {{"a", {2, 3, 4, 8}}, {"b", {8, 5}}}, {}, 1, 17, 1e-4f);
  check_op("MatMul", {{"a", {2, 3, 4, 8}}, {"b", {2, 3, 8, 5}}}, {}, 1, 17, 1e-4f);
  check_op("MatMul", {{"a", {4, 8}}, {"b", {3, 8, 5}}}, {}, 1, 17, 1e-4f);
  check_op("MatMul", {{"a", {2, 1, 4, 8}}, {"b", {1, 3, 8, 5}}}, {}, 1, 17, 1e-4f);
  check_op("MatMul", {{"a", {8}}, {"b", {8, 5}}}, {}, 1, 17, 1e-4f);
  check_op("Gemm", {{"a", {4, 8}}, {"b", {5, 8}, true}, {"c", {5}, true}},
           {int_attr("transB", 1), float_attr("alpha", 0.5f), float_attr("beta", 2.f)}, 1, 17, 1e-4f);
  check_op("Gemm", {{"a", {8, 4}}, {"b", {8, 5}}, {"c", {4, 1}}}, {int_attr("transA", 1)}, 1, 17, 1e-4f);
}

TEST(CudaOps, ConvAndPool) {
  REQUIRE_DEVICE();
  check_op("Conv", {{"x", {1, 3, 9, 9}}, {"w", {4, 3, 3, 3}, true}, {"b", {4}, true}},
           {ints_attr("pads", {1, 1, 1, 1}), ints_attr("strides", {2, 2})}, 1, 17, 1e-4f);
  check_op("Conv", {{"x", {2, 4, 8, 8}}, {"w", {4, 2, 3, 3}, true}}, {int_attr("group", 2), ints_attr("dilations", {2, 2})},
           1, 17, 1e-4f);
  check_op("Conv", {{"x", {2, 3, 20}}, {"w", {5, 3, 4}, true}}, {ints_attr("pads", {1, 1})}, 1, 17, 1e-4f);  // 1-D
  check_op("MaxPool", {{"x", {1, 2, 9, 9}}}, {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}),
                                             ints_attr("pads", {1, 1, 1, 1})});
  check_op("MaxPool", {{"x", {1, 2, 8, 8}}}, {ints_attr("kernel_shape", {3, 3}), ints_attr("strides", {2, 2}),
                                             int_attr("ceil_mode", 1)});
  check_op("AveragePool", {{"x", {1, 2, 9, 9}}}, {ints_attr("kernel_shape", {3, 3}), ints_attr("pads", {1, 1, 1, 1}),
                                                 int_attr("count_include_pad", 1)});
  check_op("AveragePool", {{"x", {1, 2, 9, 9}}}, {ints_attr("kernel_shape", {2, 2}), ints_attr("pads", {0, 0, 1, 1})});
  check_op("GlobalAveragePool", {{"x", {2, 3, 7, 7}}});
  check_op("GlobalMaxPool", {{"x", {2, 3, 7, 7}}});
}

TEST(CudaOps, Normalization) {
  REQUIRE_DEVICE();
  check_op("BatchNormalization",
           {{"x", {2, 3, 4, 4}}, {"s", {3}, true}, {"b", {3}, true}, {"m", {3}, true}, {"v", {3}, true, onnx::TensorProto::FLOAT, {}, true}},
           {}, 1, 17, 1e-4f);
  check_op("LayerNormalization", {{"x", {2, 5, 16}}, {"g", {16}, true}, {"b", {16}, true}}, {}, 1, 17, 1e-4f);
  check_op("LayerNormalization", {{"x", {2, 5, 16}}, {"g", {5, 16}, true}}, {int_attr("axis", 1)}, 1, 17, 1e-4f);
  check_op("Softmax", {{"x", {3, 4, 50}}});
  check_op("Softmax", {{"x", {3, 4, 5}}}, {int_attr("axis", 1)});
  check_op("LogSoftmax", {{"x", {3, 70}}});
  check_op("Softmax", {{"x", {3, 4, 5}}}, {int_attr("axis", 1)}, 1, 11);  // flattened form
  check_op("ReduceMean", {{"x", {2, 3, 4, 5}}}, {ints_attr("axes", {2, 3})}, 1, 17);
  check_op("ReduceMean", {{"x", {2, 3, 4, 5}}}, {ints_attr("axes", {1}), int_attr("keepdims", 0)}, 1, 17);
  check_op("ReduceSum", {{"x", {2, 3, 4, 5}}, {"axes", {2}, true, onnx::TensorProto::INT64, {0, 2}}}, {}, 1, 17, 1e-4f);
}

TEST(CudaOps, DataMovement) {
  REQUIRE_DEVICE();
  check_op("Transpose", {{"x", {2, 3, 4, 5}}}, {ints_attr("perm", {0, 2, 3, 1})});
  check_op("Concat", {{"a", {2, 3, 4}}, {"b", {2, 1, 4}}, {"c", {2, 2, 4}, true}}, {int_attr("axis", 1)});
  check_op("Slice", {{"x", {6, 8}}, {"s", {2}, true, onnx::TensorProto::INT64, {1, -1}},
                     {"e", {2}, true, onnx::TensorProto::INT64, {5, -8}}, {"a", {2}, true, onnx::TensorProto::INT64, {0, 1}},
                     {"st", {2}, true, onnx::TensorProto::INT64, {2, -2}}});
  check_op("Gather", {{"x", {5, 4}}, {"i", {2, 3}, false, onnx::TensorProto::INT64, {0, 4, -1, 2, 2, 1}}},
           {int_attr("axis", 0)});
  check_op("Gather", {{"x", {5, 4}}, {"i", {3}, true, onnx::TensorProto::INT64, {3, 0, 1}}}, {int_attr("axis", 1)});
  check_op("Reshape", {{"x", {2, 3, 4}}, {"s", {2}, true, onnx::TensorProto::INT64, {0, -1}}});
  check_op("Unsqueeze", {{"x", {2, 3}}, {"a", {2}, true, onnx::TensorProto::INT64, {0, 3}}});
  check_op("Flatten", {{"x", {2, 3, 4}}}, {int_attr("axis", 2)});
  check_op("Expand", {{"x", {3, 1}}, {"s", {3}, true, onnx::TensorProto::INT64, {2, 3, 4}}});
  check_op("Split", {{"x", {6, 4}}, {"s", {2}, true, onnx::TensorProto::INT64, {2, 4}}}, {int_attr("axis", 0)}, 2);
}

// A transformer-style block at level all: the fusions (FusedMatMul with Gelu,
// SkipLayerNormalization) run on CUDA and match the CPU.
TEST(CudaOps, FusedOpsMatchCpu) {
  REQUIRE_DEVICE();
  check_op("FusedMatMul", {{"a", {2, 5, 16}}, {"w", {16, 8}, true}, {"b", {8}, true}},
           {[] {
             onnx::AttributeProto a;
             a.set_name("activation");
             a.set_type(onnx::AttributeProto::STRING);
             a.set_s("Gelu");
             return a;
           }()},
           1, 17, 1e-4f, "com.onyx");
  check_op("SkipLayerNormalization", {{"x", {2, 5, 16}}, {"s", {2, 5, 16}}, {"g", {16}, true}, {"b", {16}, true}}, {}, 1, 17,
           1e-4f, "com.onyx");
  // A skip repeated over the batch: [1, S, H] position embeddings, as the fusion orders them.
  check_op("SkipLayerNormalization", {{"x", {2, 5, 16}}, {"s", {1, 5, 16}}, {"g", {16}, true}, {"b", {16}, true}}, {}, 1, 17,
           1e-4f, "com.onyx");
  check_op("Attention", {{"x", {2, 7, 16}}, {"w", {16, 48}, true}, {"b", {48}, true}}, {int_attr("num_heads", 4)}, 1, 17,
           1e-4f, "com.onyx");
  check_op("FusedConv", {{"x", {1, 3, 9, 9}}, {"w", {4, 3, 3, 3}, true}, {"b", {4}, true}, {"z", {1, 4, 9, 9}}},
           {ints_attr("pads", {1, 1, 1, 1}), [] {
              onnx::AttributeProto a;
              a.set_name("activation");
              a.set_type(onnx::AttributeProto::STRING);
              a.set_s("Relu");
              return a;
            }()},
           1, 17, 1e-4f, "com.onyx");
}

// float16 on CUDA (casts inside the model) against the same model in float32 on the CPU.
TEST(CudaOps, Float16PathMatchesFloat32) {
  REQUIRE_DEVICE();
  auto build = [](bool f16) {
    onnx::ModelProto m = make_model(17);
    auto* g = m.mutable_graph();
    *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {4, 16});
    add_untyped_output(g, "out");
    *g->add_initializer() = to_proto("w", random_tensor({16, 8}, 5));
    *g->add_initializer() = to_proto("gamma", random_tensor({8}, 6));
    std::string x = "x", w = "w", gamma = "gamma";
    if (f16) {
      for (auto* name : {&x, &w, &gamma}) {
        std::string h = *name + "_h";
        *add_node(g, "Cast", {*name}, {h}, "cast_" + *name)->add_attribute() = int_attr("to", onnx::TensorProto::FLOAT16);
        *name = h;
      }
    }
    add_node(g, "MatMul", {x, w}, {"y"}, "matmul");
    add_node(g, "Relu", {"y"}, {"z"}, "relu");
    add_node(g, "LayerNormalization", {"z", gamma}, {"n"}, "layernorm");
    add_node(g, "Softmax", {"n"}, {f16 ? "s" : "out"}, "softmax");
    if (f16) *add_node(g, "Cast", {"s"}, {"out"}, "cast_out")->add_attribute() = int_attr("to", onnx::TensorProto::FLOAT);
    return serialize(m);
  };
  auto cpu = unoptimized_session(build(false), false);
  auto gpu = unoptimized_session(build(true), true);
  for (auto& [node, p] : gpu->node_placement()) {
    if (node == "matmul" || node == "layernorm" || node == "softmax") {
      EXPECT_EQ(p, "CUDAExecutionProvider") << node;
    }
  }
  Feeds feeds = {{"x", Value(random_tensor({4, 16}, 7))}};
  Tensor a = cpu->run(feeds)[0].tensor();
  Tensor b = gpu->run(feeds)[0].tensor();
  ASSERT_EQ(a.shape(), b.shape());
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.data<float>()[i], b.data<float>()[i], 1e-2) << i;
}

TEST(CudaProviderDevice, IoBindingAndCudaGraph) {
  REQUIRE_DEVICE();
  onnx::ModelProto m = test::add_relu_model();
  std::string bytes = serialize(m);
  SessionOptions o;
  o.providers = {"cuda"};
  o.provider_options["cuda"] = {{"enable_cuda_graph", "1"}};
  auto s = Session::from_bytes(bytes.data(), bytes.size(), o);
  Tensor x = Tensor::from_vector<float>({-2, 0, 1, 3, -1, 0}, {2, 3});
  // run() is refused with CUDA graphs, naming the way to run.
  try {
    s->run({{"x", Value(x)}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("run_with_binding"), std::string::npos) << e.what();
  }
  Device cuda{DeviceType::CUDA, 0};
  Tensor xd = s->allocate_on(cuda, DataType::Float, {2, 3});
  IoBinding host_bound;
  host_bound.bind_input("x", Value(x));
  host_bound.bind_output("y", cuda);
  try {
    s->run_with_binding(host_bound);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' must be bound to a tensor on the CUDA device"), std::string::npos)
        << e.what();
  }
  IoBinding b;
  b.bind_input("x", Value(xd));
  b.bind_output("y", cuda);
  std::vector<float> expect = {0, 0, 1.5f, 4, 0, 0.5f};
  for (int run = 0; run < 4; ++run) {  // warm-up, capture, replay, replay
    for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(run) * 0.5f + (i % 2 ? 1.f : -1.f);
    std::vector<float> host(x.data<float>(), x.data<float>() + 6);
    s->copy_tensor(x, xd);  // new values into the bound buffer: same address every run
    s->run_with_binding(b);
    Tensor y = s->to_host(b.outputs()[0].tensor());
    for (int i = 0; i < 6; ++i) {
      float bias[3] = {1.f, -1.f, 0.5f};
      EXPECT_FLOAT_EQ(y.data<float>()[i], std::max(0.f, host[i] + bias[i % 3])) << "run " << run << " element " << i;
    }
  }
  // Another address after capture is refused.
  IoBinding moved;
  moved.bind_input("x", Value(s->allocate_on(cuda, DataType::Float, {2, 3})));
  moved.bind_output("y", cuda);
  try {
    s->run_with_binding(moved);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bound addresses must stay fixed"), std::string::npos) << e.what();
  }
}

// A transformer's mask of ones and position ids: Shape and the Gather of a
// dimension stay on the CPU, ConstantOfShape and Range run on CUDA from their
// host-side arguments, and the whole run fits in a CUDA graph.
onnx::ModelProto shape_driven_model() {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {-1, -1});
  add_untyped_output(g, "y");
  *g->add_initializer() = test::int64_tensor("one_index", {}, {1});
  *g->add_initializer() = test::int64_tensor("zero", {}, {0});
  *g->add_initializer() = test::int64_tensor("step", {}, {1});
  add_node(g, "Shape", {"x"}, {"shape"}, "shape");
  auto* ones = add_node(g, "ConstantOfShape", {"shape"}, {"ones"}, "ones");
  onnx::AttributeProto value;
  value.set_name("value");
  value.set_type(onnx::AttributeProto::TENSOR);
  *value.mutable_t() = test::float_tensor("value", {1}, {1.5f});
  *ones->add_attribute() = value;
  add_node(g, "Gather", {"shape", "one_index"}, {"cols"}, "cols");
  add_node(g, "Range", {"zero", "cols", "step"}, {"positions"}, "positions");
  *add_node(g, "Cast", {"positions"}, {"positions_f"}, "cast")->add_attribute() = int_attr("to", onnx::TensorProto::FLOAT);
  add_node(g, "Mul", {"x", "ones"}, {"scaled"}, "mul");
  add_node(g, "Add", {"scaled", "positions_f"}, {"y"}, "add");
  return m;
}

TEST(CudaProviderDevice, ShapeComputationsStayInTheCudaGraph) {
  REQUIRE_DEVICE();
  std::string bytes = serialize(shape_driven_model());
  SessionOptions o;
  o.optimization_level = OptimizationLevel::Disable;  // keep every node as built
  o.providers = {"cuda"};
  o.provider_options["cuda"] = {{"enable_cuda_graph", "1"}};
  auto s = Session::from_bytes(bytes.data(), bytes.size(), o);
  for (auto& [node, p] : s->node_placement()) {
    if (node == "shape" || node == "cols") {
      EXPECT_EQ(p, "CPUExecutionProvider") << node;
    }
    if (node == "ones" || node == "positions" || node == "add") {
      EXPECT_EQ(p, "CUDAExecutionProvider") << node;
    }
  }
  Device cuda{DeviceType::CUDA, 0};
  Tensor x(DataType::Float, {2, 5});
  Tensor xd = s->allocate_on(cuda, DataType::Float, {2, 5});
  IoBinding b;
  b.bind_input("x", Value(xd));
  b.bind_output("y", cuda);
  for (int run = 0; run < 4; ++run) {  // warm-up, capture, replay, replay: new values each time
    for (int i = 0; i < 10; ++i) x.data<float>()[i] = static_cast<float>(run * 10 + i) * 0.25f;
    s->copy_tensor(x, xd);
    s->run_with_binding(b);
    Tensor y = s->to_host(b.outputs()[0].tensor());
    ASSERT_EQ(y.shape(), (Shape{2, 5}));
    for (int i = 0; i < 10; ++i)
      EXPECT_FLOAT_EQ(y.data<float>()[i], x.data<float>()[i] * 1.5f + static_cast<float>(i % 5)) << "run " << run << " " << i;
  }
}

// A CPU node that reads a value of the run cannot be replayed: the error says so.
TEST(CudaProviderDevice, CudaGraphRefusesCpuNodesReadingRunValues) {
  REQUIRE_DEVICE();
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3});
  add_untyped_output(g, "y");
  add_node(g, "Round", {"x"}, {"r"}, "round");  // no CUDA kernel
  add_node(g, "Relu", {"r"}, {"y"}, "relu");
  std::string bytes = serialize(m);
  SessionOptions o;
  o.providers = {"cuda"};
  o.provider_options["cuda"] = {{"enable_cuda_graph", "1"}};
  auto s = Session::from_bytes(bytes.data(), bytes.size(), o);
  Device cuda{DeviceType::CUDA, 0};
  IoBinding b;
  b.bind_input("x", Value(s->allocate_on(cuda, DataType::Float, {2, 3})));
  b.bind_output("y", cuda);
  try {
    s->run_with_binding(b);
    FAIL() << "a CPU node reading the input was captured";
  } catch (const Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("replays only device work"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reads 'x'"), std::string::npos) << msg;
  }
}

// use_tf32=1 lets cuBLAS round float32 inputs to TF32's 10-bit mantissa: 1.0001
// becomes 1, so a K = 1024 dot product of 1.0001 with ones gives 1024 instead
// of 1024.1. Without the option the float32 result stands.
TEST(CudaProviderDevice, UseTf32RoundsMatMulInputs) {
  REQUIRE_DEVICE();
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("a", onnx::TensorProto::FLOAT, {128, 1024});
  add_untyped_output(g, "y");
  *g->add_initializer() = test::float_tensor("b", {1024, 128}, std::vector<float>(1024 * 128, 1.f));
  add_node(g, "MatMul", {"a", "b"}, {"y"}, "matmul");
  std::string bytes = serialize(m);
  Feeds feeds = {{"a", Value(Tensor::from_vector<float>(std::vector<float>(128 * 1024, 1.0001f), {128, 1024}))}};
  for (bool tf32 : {false, true}) {
    SessionOptions o;
    o.providers = {"cuda"};
    o.provider_options["cuda"] = {{"use_tf32", tf32 ? "1" : "0"}};
    Tensor y = Session::from_bytes(bytes.data(), bytes.size(), o)->run(feeds)[0].tensor();
    const float want = tf32 ? 1024.f : 1024.f * 1.0001f;
    for (int64_t i = 0; i < y.numel(); i += 1000) EXPECT_NEAR(y.data<float>()[i], want, 0.01f) << "use_tf32=" << tf32;
  }
}

TEST(CudaProviderDevice, MemoryLimitIsReported) {
  REQUIRE_DEVICE();
  onnx::ModelProto m = test::add_relu_model();
  std::string bytes = serialize(m);
  SessionOptions o;
  o.providers = {"cuda"};
  o.provider_options["cuda"] = {{"gpu_mem_limit", "1048576"}, {"arena_extend_strategy", "kSameAsRequested"}};
  // 32 MiB of cuBLAS workspace already exceed 1 MiB: creating the session fails clearly.
  try {
    Session::from_bytes(bytes.data(), bytes.size(), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gpu_mem_limit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("1048576 bytes"), std::string::npos) << e.what();
  }
}

TEST(CudaProviderDevice, ConvAlgoCacheFileIsWrittenAndReused) {
  REQUIRE_DEVICE();
  std::string cache = testing::TempDir() + "/onyx_conv_algos_gpu_test.txt";
  std::remove(cache.c_str());
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {1, 3, 16, 16});
  add_untyped_output(g, "y");
  *g->add_initializer() = to_proto("w", random_tensor({8, 3, 3, 3}, 3));
  add_node(g, "Conv", {"x", "w"}, {"y"}, "conv");
  std::string bytes = serialize(m);
  SessionOptions o;
  o.providers = {"cuda"};
  o.provider_options["cuda"] = {{"conv_algo_cache_file", cache}};
  Feeds feeds = {{"x", Value(random_tensor({1, 3, 16, 16}, 9))}};
  Session::from_bytes(bytes.data(), bytes.size(), o)->run(feeds);
  std::ifstream in(cache);
  ASSERT_TRUE(in.good()) << "no cache file at " << cache;
  std::string line;
  int entries = 0;
  while (std::getline(in, line))
    if (!line.empty() && line[0] != '#') ++entries;
  EXPECT_EQ(entries, 1);
  Session::from_bytes(bytes.data(), bytes.size(), o)->run(feeds);  // loads the entry: no new search
  std::remove(cache.c_str());
}

TEST(CudaProviderDevice, ProfilingRecordsKernelEvents) {
  REQUIRE_DEVICE();
  onnx::ModelProto m = test::add_relu_model();
  std::string bytes = serialize(m);
  SessionOptions o;
  o.providers = {"cuda"};
  o.enable_profiling = true;
  o.profile_file_prefix = testing::TempDir() + "/onyx_cuda_profile";
  auto s = Session::from_bytes(bytes.data(), bytes.size(), o);
  s->run({{"x", Value(Tensor::from_vector<float>({1, 2, 3}, {1, 3}))}});
  std::string path = s->end_profiling();
  std::ifstream in(path);
  std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"cat\":\"Kernel\""), std::string::npos);
  EXPECT_NE(json.find("relu_kernel"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace onyx
