// The CUDA provider and the provider machinery around it.
//
// Tests that need a CUDA device begin with ONYX_REQUIRE_CUDA_DEVICE() and skip
// with the reason when there is none. The others run everywhere: provider
// options validation, the warning and CPU fallback without a device, the
// arena's bookkeeping over a fake backing allocator, and partitioning and
// copies with a fake device provider (host memory tagged as a device, CPU
// kernels behind a device registry), which runs the whole device path of the
// executor without a GPU.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "base/arena.h"
#include "cpu/cpu_provider.h"
#include "kernels/execution_provider.h"
#include "model_builder.h"
#include "onnx/loader.h"
#include "onyx/session.h"
#include "runtime/partitioner.h"
#include "runtime/providers.h"

#if ONYX_WITH_CUDA
#include <cublas_v2.h>

#include "cuda/conv_algo_cache.h"
#include "cuda/cublas_loader.h"
#include "cuda/cuda_provider.h"
#endif

namespace onyx {
namespace {

using test::add_node;
using test::float_tensor;
using test::make_model;
using test::serialize;
using test::tensor_info;

bool cuda_device_present(std::string* why) {
#if ONYX_WITH_CUDA
  return cuda_device_available(why);
#else
  *why = "this build has no CUDA provider";
  return false;
#endif
}

#define ONYX_REQUIRE_CUDA_DEVICE()                                         \
  do {                                                                     \
    std::string why_;                                                      \
    if (!cuda_device_present(&why_)) GTEST_SKIP() << "no CUDA device: " << why_; \
  } while (0)

std::unique_ptr<Session> make_session(const onnx::ModelProto& m, const SessionOptions& o) {
  std::string bytes = serialize(m);
  return Session::from_bytes(bytes.data(), bytes.size(), o);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

// ---- Provider options ----

TEST(CudaProviderOptions, ParsesEveryKnownKey) {
  CudaProviderOptions o = parse_cuda_provider_options({{"device_id", "1"},
                                                       {"gpu_mem_limit", "2147483648"},
                                                       {"arena_extend_strategy", "kSameAsRequested"},
                                                       {"cudnn_conv_algo_search", "HEURISTIC"},
                                                       {"cudnn_conv_use_max_workspace", "0"},
                                                       {"cudnn_conv1d_pad_to_nc1d", "1"},
                                                       {"do_copy_in_default_stream", "false"},
                                                       {"enable_cuda_graph", "true"},
                                                       {"use_tf32", "1"},
                                                       {"conv_algo_cache_file", "/tmp/algos.txt"}});
  EXPECT_EQ(o.device_id, 1);
  EXPECT_EQ(o.gpu_mem_limit, size_t{2147483648});
  EXPECT_EQ(o.arena_extend_strategy, ArenaExtendStrategy::kSameAsRequested);
  EXPECT_EQ(o.cudnn_conv_algo_search, ConvAlgoSearch::Heuristic);
  EXPECT_FALSE(o.cudnn_conv_use_max_workspace);
  EXPECT_TRUE(o.cudnn_conv1d_pad_to_nc1d);
  EXPECT_FALSE(o.do_copy_in_default_stream);
  EXPECT_TRUE(o.enable_cuda_graph);
  EXPECT_TRUE(o.use_tf32);
  EXPECT_EQ(o.conv_algo_cache_file, "/tmp/algos.txt");
  CudaProviderOptions d = parse_cuda_provider_options({});
  EXPECT_EQ(d.device_id, 0);
  EXPECT_EQ(d.gpu_mem_limit, SIZE_MAX);
  EXPECT_EQ(d.cudnn_conv_algo_search, ConvAlgoSearch::Exhaustive);
  EXPECT_FALSE(d.enable_cuda_graph);
  EXPECT_FALSE(d.use_tf32);  // float32 stays float32 unless asked
}

TEST(CudaProviderOptions, BadValuesNameProviderKeyAndValue) {
  struct Case {
    std::string key, value;
  } cases[] = {{"gpu_mem_limit", "lots"},         {"gpu_mem_limit", "0"},
               {"device_id", "-1"},                {"arena_extend_strategy", "kDouble"},
               {"cudnn_conv_algo_search", "FAST"}, {"enable_cuda_graph", "yes"},
               {"cudnn_conv_use_max_workspace", "2"}};
  for (auto& c : cases) {
    std::string msg = error_of([&] { parse_cuda_provider_options({{c.key, c.value}}); });
    EXPECT_NE(msg.find("CUDAExecutionProvider"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + c.key + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'" + c.value + "'"), std::string::npos) << msg;
  }
  std::string msg = error_of([] { parse_cuda_provider_options({{"gpu_memory", "1"}}); });
  EXPECT_NE(msg.find("unknown option 'gpu_memory'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("value '1'"), std::string::npos) << msg;
}

TEST(CudaProviderOptions, SessionRejectsBadOptionsWithOrWithoutDevice) {
  SessionOptions o;
  o.providers = {"CUDAExecutionProvider", "CPUExecutionProvider"};
  o.provider_options["cuda"] = {{"cudnn_conv_algo_search", "SLOW"}};
  try {
    make_session(test::add_relu_model(), o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("cudnn_conv_algo_search"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("SLOW"), std::string::npos) << e.what();
  }
  SessionOptions c;
  c.provider_options["CPUExecutionProvider"] = {{"arena", "1"}};
  EXPECT_NE(error_of([&] { make_session(test::add_relu_model(), c); }).find("CPUExecutionProvider"), std::string::npos);
  SessionOptions u;
  u.providers = {"tpu"};
  EXPECT_NE(error_of([&] { make_session(test::add_relu_model(), u); }).find("unknown execution provider 'tpu'"),
            std::string::npos);
}

TEST(CudaProvider, AvailableProvidersFollowTheBuild) {
  std::vector<std::string> p = available_providers();
  ASSERT_FALSE(p.empty());
  EXPECT_EQ(p.back(), "CPUExecutionProvider");
#if ONYX_WITH_CUDA
  EXPECT_EQ(p.front(), "CUDAExecutionProvider");
#else
  EXPECT_EQ(p.size(), 1u);
#endif
  EXPECT_EQ(canonical_provider_name("cuda"), "CUDA");
  EXPECT_EQ(canonical_provider_name("CUDAExecutionProvider"), "CUDA");
  EXPECT_EQ(canonical_provider_name("CPUExecutionProvider"), "CPU");
}

#if ONYX_WITH_CUDA
bool cublas_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libcublas") != std::string::npos) return true;
  return false;
}

// cuBLAS is opened when a CUDA provider first needs it, not at process start
// (it cost 0.1 s and ~215 MB of RSS per process); Onyx's entry points forward
// to the real library.
TEST(CudaProvider, OpensCublasOnFirstUse) {
  std::string why;
  const bool device = cuda_device_present(&why);
  if (!device) {
    EXPECT_FALSE(cublas_mapped()) << "cuBLAS was loaded without a CUDA provider";
  }
  std::string error;
  ASSERT_TRUE(load_cublas(&error)) << error;
  EXPECT_TRUE(cublas_mapped());
  if (!device) {  // the real cublasCreate answers: no handle without a device
    cublasHandle_t h = nullptr;
    EXPECT_NE(cublasCreate(&h), CUBLAS_STATUS_SUCCESS);
  }
}
#endif

// Without a device (or without CUDA in the build) a CUDA session warns and
// runs everything on the CPU, with the CPU's results.
TEST(CudaProvider, WarnsAndFallsBackToCpuWithoutDevice) {
  std::string why;
  if (cuda_device_present(&why)) GTEST_SKIP() << "a CUDA device is present: the fallback does not happen";
  SessionOptions o;
  o.providers = {"cuda"};
  testing::internal::CaptureStderr();
  auto s = make_session(test::add_relu_model(), o);
  std::string log = testing::internal::GetCapturedStderr();
#if ONYX_WITH_CUDA
  EXPECT_NE(log.find("CUDA provider requested but no CUDA device is available ("), std::string::npos) << log;
#else
  EXPECT_NE(log.find("CUDA provider requested but this build has no CUDA provider"), std::string::npos) << log;
#endif
  EXPECT_NE(log.find("running on the CPU"), std::string::npos) << log;
  EXPECT_EQ(s->providers(), std::vector<std::string>{"CPUExecutionProvider"});
  for (auto& [node, provider] : s->node_placement()) EXPECT_EQ(provider, "CPUExecutionProvider") << node;
  auto out = s->run({{"x", Value(Tensor::from_vector<float>({-2, 0, 1, 3, -1, 0}, {2, 3}))}});
  ASSERT_EQ(out.size(), 1u);
  const float* y = out[0].tensor().data<float>();
  std::vector<float> expect = {0, 0, 1.5f, 4, 0, 0.5f};
  for (int i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(y[i], expect[i]);
}

// ---- Arena ----

class FakeBacking final : public BackingAllocator {
 public:
  void* alloc(size_t bytes, std::string* why) override {
    if (fail_next) {
      fail_next = false;
      *why = "fake out of memory";
      return nullptr;
    }
    ++allocs;
    sizes.push_back(bytes);
    return std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  }
  void free(void* p) override {
    ++frees;
    std::free(p);
  }
  int allocs = 0, frees = 0;
  bool fail_next = false;
  std::vector<size_t> sizes;
};

TEST(Arena, RoundsReusesAndMergesChunks) {
  FakeBacking backing;
  ArenaOptions o;
  o.initial_region = 1 << 20;
  {
    Arena a(backing, o);
    void* p1 = a.allocate(1000);  // rounds to 1024
    void* p2 = a.allocate(1);     // 256
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p1) % Arena::kAlignment, 0u);
    EXPECT_EQ(static_cast<char*>(p2) - static_cast<char*>(p1), 1024);
    ArenaStats s = a.stats();
    EXPECT_EQ(s.reserved, size_t{1} << 20);
    EXPECT_EQ(s.in_use, 1024u + 256u);
    EXPECT_EQ(s.regions, 1u);
    EXPECT_EQ(backing.allocs, 1);
    a.release(p1);
    void* p3 = a.allocate(512);  // best fit: the freed 1024 chunk, split
    EXPECT_EQ(p3, p1);
    a.release(p3);
    a.release(p2);
    s = a.stats();
    EXPECT_EQ(s.in_use, 0u);
    EXPECT_EQ(s.chunks, 1u);  // everything merged back into one free chunk
    EXPECT_EQ(s.free_chunks, 1u);
    EXPECT_EQ(s.peak_in_use, 1024u + 256u);
    a.shrink();
    EXPECT_EQ(a.stats().reserved, 0u);
    EXPECT_EQ(backing.frees, 1);
  }
  EXPECT_EQ(backing.frees, 1);
}

TEST(Arena, NextPowerOfTwoGrowsRegions) {
  FakeBacking backing;
  ArenaOptions o;
  o.initial_region = 1 << 20;
  Arena a(backing, o);
  a.allocate(900 << 10);        // region 1 MiB
  a.allocate(900 << 10);        // does not fit: region 2 MiB
  a.allocate(3 << 20);          // 4 MiB (next power of two, and the doubled size)
  ASSERT_EQ(backing.sizes.size(), 3u);
  EXPECT_EQ(backing.sizes[0], size_t{1} << 20);
  EXPECT_EQ(backing.sizes[1], size_t{2} << 20);
  EXPECT_EQ(backing.sizes[2], size_t{4} << 20);
}

TEST(Arena, SameAsRequestedTakesExactRegions) {
  FakeBacking backing;
  ArenaOptions o;
  o.extend = ArenaExtendStrategy::kSameAsRequested;
  Arena a(backing, o);
  void* p = a.allocate(3000);
  a.allocate(5000);
  ASSERT_EQ(backing.sizes.size(), 2u);
  EXPECT_EQ(backing.sizes[0], Arena::round_up(3000));
  EXPECT_EQ(backing.sizes[1], Arena::round_up(5000));
  a.release(p);
  a.allocate(2000);  // fits in the freed region
  EXPECT_EQ(backing.sizes.size(), 2u);
}

TEST(Arena, LimitIsEnforcedWithAClearError) {
  FakeBacking backing;
  ArenaOptions o;
  o.name = "CUDA device 0 arena";
  o.limit = 4 << 20;
  Arena a(backing, o);
  a.allocate(3 << 20);  // next power of two (4 MiB) would fit exactly
  try {
    a.allocate(2 << 20);
    FAIL() << "expected the limit to be hit";
  } catch (const Error& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("cannot allocate 2097152 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("gpu_mem_limit"), std::string::npos) << m;
    EXPECT_NE(m.find("4194304 bytes"), std::string::npos) << m;
    EXPECT_NE(m.find("CUDA device 0 arena"), std::string::npos) << m;
  }
  // With a power-of-two region over the limit, an exact region is tried.
  FakeBacking b2;
  ArenaOptions o2;
  o2.limit = 3 << 20;
  Arena a2(b2, o2);
  a2.allocate(3 << 20);
  EXPECT_EQ(b2.sizes.at(0), size_t{3} << 20);
  // A failing backing allocator gives an out-of-memory error with its reason.
  FakeBacking b3;
  b3.fail_next = true;
  Arena a3(b3, ArenaOptions{});
  std::string m = error_of([&] { a3.allocate(100); });
  // The power-of-two region failed; the exact-size retry succeeded.
  EXPECT_EQ(m, "(no error)");
}

// ---- A fake device provider: host memory tagged as CUDA device 7 ----

class FakeDeviceProvider final : public ExecutionProvider {
 public:
  FakeDeviceProvider() {
    for (const char* op : {"Gather", "Concat", "Reshape", "Add", "Relu", "Mul"}) {
      KernelDef d;
      d.op_type = op;
      d.since_version = 1;
      d.factory = [](const KernelInitContext& ctx) {
        const KernelDef* cpu = cpu_kernel_registry().find(ctx.node(), ctx.opset());
        return cpu->factory(ctx);
      };
      if (std::string(op) == "Reshape") d.host_inputs = {1};
      registry_.add(std::move(d));
    }
  }
  const std::string& name() const override { return name_; }
  Device device() const override { return {DeviceType::CUDA, 7}; }
  const KernelRegistry& registry() const override { return registry_; }
  Tensor make_tensor(DataType dtype, const Shape& shape) override {
    ++allocations;
    Tensor host(dtype, shape);
    return Tensor::wrap(dtype, shape, host.raw(), host.holder(), device());
  }
  void copy_to_device(const Tensor& src, Tensor& dst) override {
    EXPECT_EQ(src.device().type, DeviceType::CPU);
    ++uploads;
    if (src.nbytes()) std::memcpy(dst.raw(), src.raw(), src.nbytes());
  }
  void copy_to_host(const Tensor& src, Tensor& dst) override {
    EXPECT_EQ(src.device(), device());
    ++downloads;
    if (src.nbytes()) std::memcpy(dst.raw(), src.raw(), src.nbytes());
  }
  std::atomic<int> allocations{0}, uploads{0}, downloads{0};

 private:
  std::string name_ = "FakeGPU";
  KernelRegistry registry_;
};

std::shared_ptr<FakeDeviceProvider> g_fake;

void register_fake() {
  static bool done = false;
  if (done) return;
  done = true;
  register_provider_factory("FakeGPU", [](const ProviderOptions& o, std::string* why) -> std::shared_ptr<ExecutionProvider> {
    if (o.count("absent")) {
      *why = "fake device unplugged";
      return nullptr;
    }
    g_fake = std::make_shared<FakeDeviceProvider>();
    return g_fake;
  });
}

// x [2,3,4] -> Reshape(x, Concat(Gather(Shape(x), 0), -1)) [2,12] -> Add b -> Relu = t
// -> Softmax (no FakeGPU kernel) -> Mul y = o. Outputs o and t.
onnx::ModelProto partition_model() {
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 3, 4});
  *g->add_input() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 12});
  *g->add_output() = tensor_info("o", onnx::TensorProto::FLOAT, {2, 12});
  *g->add_output() = tensor_info("t", onnx::TensorProto::FLOAT, {2, 12});
  std::vector<float> b(12);
  for (int i = 0; i < 12; ++i) b[i] = 0.25f * (i - 6);
  *g->add_initializer() = float_tensor("b", {12}, b);
  onnx::TensorProto zero, minus1;
  zero.set_name("zero");
  zero.set_data_type(onnx::TensorProto::INT64);
  zero.add_dims(1);
  zero.add_int64_data(0);
  minus1 = zero;
  minus1.set_name("minus1");
  minus1.set_int64_data(0, -1);
  *g->add_initializer() = zero;
  *g->add_initializer() = minus1;
  add_node(g, "Shape", {"x"}, {"s"}, "shape");
  add_node(g, "Gather", {"s", "zero"}, {"g"}, "gather")->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("axis");
    a.set_type(onnx::AttributeProto::INT);
    a.set_i(0);
    return a;
  }());
  auto* concat = add_node(g, "Concat", {"g", "minus1"}, {"c"}, "concat");
  auto* axis = concat->add_attribute();
  axis->set_name("axis");
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(0);
  add_node(g, "Reshape", {"x", "c"}, {"r"}, "reshape");
  add_node(g, "Add", {"r", "b"}, {"a"}, "add");
  add_node(g, "Relu", {"a"}, {"t"}, "relu");
  add_node(g, "Softmax", {"t"}, {"sm"}, "softmax");
  add_node(g, "Mul", {"sm", "y"}, {"o"}, "mul");
  return m;
}

Feeds partition_feeds() {
  std::vector<float> x(24), y(24);
  for (int i = 0; i < 24; ++i) {
    x[i] = std::sin(0.7f * i);
    y[i] = 1.0f + 0.1f * i;
  }
  return {{"x", Value(Tensor::from_vector<float>(x, {2, 3, 4}))}, {"y", Value(Tensor::from_vector<float>(y, {2, 12}))}};
}

void expect_same(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  ASSERT_EQ(a.dtype(), DataType::Float);
  ASSERT_EQ(b.device().type, DeviceType::CPU);
  for (int64_t i = 0; i < a.numel(); ++i) EXPECT_FLOAT_EQ(a.data<float>()[i], b.data<float>()[i]) << i;
}

TEST(Partitioning, DeviceNodesShapeSubgraphOnCpuAndCopies) {
  register_fake();
  SessionOptions o;
  o.providers = {"FakeGPU", "cpu"};
  o.optimization_level = OptimizationLevel::Disable;  // keep the graph as built
  o.log_severity_level = LogLevel::Verbose;
  testing::internal::CaptureStderr();
  auto s = make_session(partition_model(), o);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_EQ(s->providers(), (std::vector<std::string>{"FakeGPUExecutionProvider", "CPUExecutionProvider"}));
  std::map<std::string, std::string> where;
  for (auto& [node, provider] : s->node_placement()) where[node] = provider;
  EXPECT_EQ(where["shape"], "CPUExecutionProvider");
  EXPECT_EQ(where["gather"], "CPUExecutionProvider");   // shape computation kept on the CPU
  EXPECT_EQ(where["concat"], "CPUExecutionProvider");
  EXPECT_EQ(where["reshape"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["add"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["relu"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["softmax"], "CPUExecutionProvider");  // no kernel on the device
  EXPECT_EQ(where["mul"], "FakeGPUExecutionProvider");
  // Copies: x and y to the device, t to the host (for Softmax), sm to the device.
  EXPECT_EQ(where["MemcpyToDevice:x"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["MemcpyToDevice:y"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["MemcpyToHost:t"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["MemcpyToDevice:sm"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where.size(), 12u);
  EXPECT_EQ(where.count("MemcpyToDevice:b"), 0u);  // the constant was uploaded once instead
  EXPECT_NE(log.find("fallback to the CPU: Softmax x1: no FakeGPU kernel for this op"), std::string::npos) << log;
  EXPECT_NE(log.find("fallback to the CPU: Gather x1: shape computation kept on the CPU"), std::string::npos) << log;
  EXPECT_NE(log.find("4 copies between host and device inserted"), std::string::npos) << log;
  EXPECT_NE(log.find("node 'relu' (Relu, opset 17) -> FakeGPUExecutionProvider"), std::string::npos) << log;

  SessionOptions cpu_o;
  cpu_o.optimization_level = OptimizationLevel::Disable;
  auto cpu = make_session(partition_model(), cpu_o);
  auto want = cpu->run(partition_feeds());
  const int uploads_at_init = g_fake->uploads.load();
  EXPECT_EQ(uploads_at_init, 1);  // the constant b
  auto got = s->run(partition_feeds());
  ASSERT_EQ(got.size(), 2u);
  expect_same(want[0].tensor(), got[0].tensor());  // outputs come back to the host
  expect_same(want[1].tensor(), got[1].tensor());
  EXPECT_EQ(g_fake->uploads.load() - uploads_at_init, 3);  // x, y, sm
  EXPECT_EQ(g_fake->downloads.load(), 3);                  // t for Softmax; outputs o and t
  EXPECT_GT(g_fake->allocations.load(), 0);
}

// What keeps a placed graph out of a CUDA graph: a CPU node reading a value of
// the run (here Softmax, reading the device's t through a copy). The shape
// computation alone (Shape, Gather, Concat feeding Reshape's host-side shape)
// does not: its results are fixed while the input shapes are.
TEST(Partitioning, CaptureBlockerNamesTheCpuNodeReadingRunValues) {
  FakeDeviceProvider dev;
  auto placed = [&](const onnx::ModelProto& proto) {
    std::string bytes = serialize(proto);
    Model m = load_model_from_bytes(bytes.data(), bytes.size(), "capture");
    return partition_graph(m.graph, m, {&dev}, cpu_kernel_registry(), false);
  };
  Placement with_softmax = placed(partition_model());
  EXPECT_NE(with_softmax.capture_blocker.find("'softmax' (Softmax) runs on the CPU and reads 't@CPU'"), std::string::npos)
      << with_softmax.capture_blocker;
  onnx::ModelProto shapes_only = partition_model();
  auto* g = shapes_only.mutable_graph();
  g->mutable_node()->RemoveLast();  // mul
  g->mutable_node()->RemoveLast();  // softmax
  g->mutable_output()->DeleteSubrange(0, 1);  // o
  g->mutable_input()->DeleteSubrange(1, 1);   // y
  Placement shape_computation = placed(shapes_only);
  EXPECT_EQ(shape_computation.capture_blocker, "");
  EXPECT_EQ(shape_computation.fallbacks.count("Gather"), 1u);  // the CPU still runs the shape computation
}

TEST(Partitioning, IoBindingKeepsOutputsOnTheDevice) {
  register_fake();
  SessionOptions o;
  o.providers = {"FakeGPU"};
  o.optimization_level = OptimizationLevel::Disable;
  auto s = make_session(partition_model(), o);
  Feeds feeds = partition_feeds();
  // x bound on the device (no copy), y on the host; o on the device, t on the host.
  Tensor xd = s->allocate_on({DeviceType::CUDA, 7}, DataType::Float, {2, 3, 4});
  std::memcpy(xd.raw(), feeds[0].second.tensor().raw(), 24 * sizeof(float));
  IoBinding b;
  b.bind_input("x", Value(xd));
  b.bind_input("y", feeds[1].second);
  b.bind_output("o", Device{DeviceType::CUDA, 7});
  b.bind_output("t");
  const int uploads = g_fake->uploads.load();
  s->run_with_binding(b);
  EXPECT_EQ(g_fake->uploads.load() - uploads, 2);  // y and sm only: x was already there
  ASSERT_EQ(b.outputs().size(), 2u);
  const Tensor& od = b.outputs()[0].tensor();
  EXPECT_EQ(od.device(), (Device{DeviceType::CUDA, 7}));
  EXPECT_EQ(b.outputs()[1].tensor().device().type, DeviceType::CPU);
  SessionOptions cpu_o;
  cpu_o.optimization_level = OptimizationLevel::Disable;
  auto want = make_session(partition_model(), cpu_o)->run(partition_feeds());
  expect_same(want[0].tensor(), s->to_host(od));
  expect_same(want[1].tensor(), b.outputs()[1].tensor());
  // An output bound to a preallocated host tensor is written in place.
  Tensor host_o(DataType::Float, {2, 12});
  IoBinding b2;
  b2.bind_input("x", feeds[0].second);
  b2.bind_input("y", feeds[1].second);
  b2.bind_output("o", host_o);
  s->run_with_binding(b2);
  EXPECT_EQ(b2.outputs()[0].tensor().raw(), host_o.raw());
  expect_same(want[0].tensor(), host_o);
  // Wrong names and shapes are reported clearly.
  IoBinding bad;
  bad.bind_input("z", feeds[0].second);
  EXPECT_NE(error_of([&] { s->run_with_binding(bad); }).find("bound input 'z' is not an input"), std::string::npos);
  IoBinding bad2;
  bad2.bind_input("x", feeds[0].second);
  bad2.bind_input("y", feeds[1].second);
  bad2.bind_output("o", Tensor(DataType::Float, {3, 3}));
  EXPECT_NE(error_of([&] { s->run_with_binding(bad2); }).find("output 'o' is bound to a float tensor of shape [3,3]"),
            std::string::npos);
}

// Values read by a subgraph (outer scope) are made on the CPU: their producer
// does not go to the device even though the device has a kernel for it.
TEST(Partitioning, ProducersOfSubgraphInputsStayOnCpu) {
  register_fake();
  onnx::ModelProto m = make_model(17);
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {4});
  *g->add_input() = tensor_info("cond", onnx::TensorProto::BOOL, {});
  *g->add_output() = tensor_info("out", onnx::TensorProto::FLOAT, {4});
  add_node(g, "Relu", {"x"}, {"r"}, "relu_outer");   // read by the then-branch
  add_node(g, "Add", {"x", "x"}, {"d"}, "add_outer");  // read only by Mul below
  add_node(g, "Mul", {"d", "x"}, {"e"}, "mul_outer");  // read by the else-branch
  auto* node_if = add_node(g, "If", {"cond"}, {"out"}, "if");
  auto branch = [](const std::string& name, const std::string& value) {
    onnx::AttributeProto a;
    a.set_name(name);
    a.set_type(onnx::AttributeProto::GRAPH);
    auto* sg = a.mutable_g();
    sg->set_name(name);
    add_node(sg, "Identity", {value}, {name + "_out"}, name + "_id");
    *sg->add_output() = tensor_info(name + "_out", onnx::TensorProto::FLOAT, {4});
    return a;
  };
  *node_if->add_attribute() = branch("then_branch", "r");
  *node_if->add_attribute() = branch("else_branch", "e");
  SessionOptions o;
  o.providers = {"FakeGPU"};
  o.optimization_level = OptimizationLevel::Disable;
  auto s = make_session(m, o);
  std::map<std::string, std::string> where;
  for (auto& [node, provider] : s->node_placement()) where[node] = provider;
  EXPECT_EQ(where["relu_outer"], "CPUExecutionProvider");
  EXPECT_EQ(where["mul_outer"], "CPUExecutionProvider");
  EXPECT_EQ(where["add_outer"], "FakeGPUExecutionProvider");
  EXPECT_EQ(where["if"], "CPUExecutionProvider");
  Tensor x = Tensor::from_vector<float>({-1, 2, -3, 4}, {4});
  for (bool c : {true, false}) {
    Tensor cond(DataType::Bool, {});
    cond.data<bool>()[0] = c;
    auto out = s->run({{"x", Value(x)}, {"cond", Value(cond)}});
    const float* y = out[0].tensor().data<float>();
    for (int i = 0; i < 4; ++i) {
      float xi = x.data<float>()[i];
      EXPECT_FLOAT_EQ(y[i], c ? std::max(0.f, xi) : 2 * xi * xi) << i;
    }
  }
}

TEST(Partitioning, UnavailableDeviceProviderWarnsAndUsesCpu) {
  register_fake();
  SessionOptions o;
  o.providers = {"FakeGPU"};
  o.provider_options["FakeGPU"] = {{"absent", "1"}};
  testing::internal::CaptureStderr();
  auto s = make_session(partition_model(), o);
  std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("FakeGPU provider requested but its device is not available (fake device unplugged)"),
            std::string::npos)
      << log;
  EXPECT_EQ(s->providers(), std::vector<std::string>{"CPUExecutionProvider"});
}

TEST(Partitioning, LayoutPassIsSkippedWithADeviceProvider) {
  register_fake();
  SessionOptions o;
  o.providers = {"FakeGPU"};
  o.optimization_level = OptimizationLevel::All;
  auto s = make_session(partition_model(), o);
  bool listed = false;
  for (auto& p : s->optimization_report().passes)
    if (p.name == "nchwc_layout") {  // disabled: listed, never run
      listed = true;
      EXPECT_EQ(p.ms, 0.0);
      EXPECT_EQ(p.changed, 0);
    }
  EXPECT_TRUE(listed);
  auto got = s->run(partition_feeds());
  SessionOptions cpu_o;
  cpu_o.optimization_level = OptimizationLevel::Disable;
  auto want = make_session(partition_model(), cpu_o)->run(partition_feeds());
  expect_same(want[0].tensor(), got[0].tensor());
}

#if ONYX_WITH_CUDA
TEST(ConvAlgoCache, PersistsAndReloads) {
  std::string path = testing::TempDir() + "/onyx_conv_algo_cache_test.txt";
  std::remove(path.c_str());
  {
    ConvAlgoCache c(path);
    EXPECT_EQ(c.loaded(), 0u);
    c.put("H100|x1x3x224x224|w64x3x7x7", {6, 1 << 20, 1});
    c.put("H100|x1x64x56x56|w64x64x3x3", {1, 0, 3});
  }
  ConvAlgoCache again(path);
  EXPECT_EQ(again.loaded(), 2u);
  auto hit = again.find("H100|x1x64x56x56|w64x64x3x3");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->algo, 1);
  EXPECT_EQ(hit->workspace, 0u);
  EXPECT_EQ(hit->math_type, 3);
  EXPECT_FALSE(again.find("other").has_value());
  std::remove(path.c_str());
}
#endif

}  // namespace
}  // namespace onyx
