// Threading: the parallel executor (ExecutionMode::Parallel), the thread
// pool's dynamic block base and thread callbacks, and Environments whose
// pools several sessions share.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "base/openmp_team.h"
#include "base/thread_placement.h"
#include "base/thread_pool.h"
#include "model_builder.h"
#include "session_test_util.h"
#include "onyx/environment.h"
#include "onyx/session.h"
#include "profile/json.h"
#include "runtime/session_threads.h"

namespace onyx {
namespace {

using test::load;
using test::floats;
using test::error_of;

using test::add_graph_attr;
using test::add_node;
using test::tensor_info;

std::vector<float> pattern(size_t n, float scale, int seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = scale * static_cast<float>(static_cast<int>((i * 7 + seed * 13) % 17) - 8) / 8.0f;
  return v;
}

constexpr int kBranches = 6;

// x: float[4, 16] -> six branches MatMul -> Add -> Relu|Tanh -> MatMul ->
// Concat -> a diamond (Sigmoid, Mul, Add) -> y: float[4, 48]. The first
// branch's result is also a graph output (read by Concat too). A seventh
// branch reshapes x by the input `shape`, so a bad shape fails in the middle
// of the run: z = Reshape(x, shape) + 1.
onnx::ModelProto branchy_model() {
  onnx::ModelProto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {4, 16});
  *g->add_input() = tensor_info("shape", onnx::TensorProto::INT64, {2});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {4, 48});
  *g->add_output() = tensor_info("m0", onnx::TensorProto::FLOAT, {4, 8});
  *g->add_output() = tensor_info("z", onnx::TensorProto::FLOAT, {-1, -1}, {"R", "C"});
  std::vector<std::string> parts;
  for (int k = 0; k < kBranches; ++k) {
    std::string s = std::to_string(k);
    *g->add_initializer() = test::float_tensor("W" + s, {16, 16}, pattern(256, 0.5f, k));
    *g->add_initializer() = test::float_tensor("b" + s, {16}, pattern(16, 0.1f, k + 1));
    *g->add_initializer() = test::float_tensor("V" + s, {16, 8}, pattern(128, 0.25f, k + 2));
    add_node(g, "MatMul", {"x", "W" + s}, {"h" + s}, "mm_a" + s);
    add_node(g, "Add", {"h" + s, "b" + s}, {"a" + s}, "add" + s);
    add_node(g, k % 2 ? "Tanh" : "Relu", {"a" + s}, {"r" + s}, "act" + s);
    add_node(g, "MatMul", {"r" + s, "V" + s}, {"m" + s}, "mm_b" + s);
    parts.push_back("m" + s);
  }
  add_node(g, "Concat", parts, {"cat"}, "concat")->add_attribute()->set_name("axis");
  auto* axis = g->mutable_node(g->node_size() - 1)->mutable_attribute(0);
  axis->set_type(onnx::AttributeProto::INT);
  axis->set_i(1);
  add_node(g, "Sigmoid", {"cat"}, {"sg"}, "sigmoid");
  add_node(g, "Mul", {"cat", "sg"}, {"t"}, "mul");
  add_node(g, "Add", {"t", "cat"}, {"y"}, "add_out");
  *g->add_initializer() = test::float_tensor("one", {1}, {1.0f});
  add_node(g, "Reshape", {"x", "shape"}, {"rs"}, "bad_reshape");
  add_node(g, "Add", {"rs", "one"}, {"z"}, "add_z");
  return m;
}

Feeds branchy_feeds(int seed, std::vector<int64_t> shape = {8, 8}) {
  return {{"x", Value(Tensor::from_vector<float>(pattern(64, 1.0f, seed), {4, 16}))},
          {"shape", Value(Tensor::from_vector<int64_t>(shape, {2}))}};
}

SessionOptions parallel_options(int inter, int intra) {
  SessionOptions o;
  o.optimization_level = OptimizationLevel::Disable;  // keep every branch as built
  o.execution_mode = ExecutionMode::Parallel;
  o.inter_op_num_threads = inter;
  o.intra_op_num_threads = intra;
  return o;
}

void expect_same(const std::vector<Value>& a, const std::vector<Value>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].tensor().shape(), b[i].tensor().shape()) << "output " << i;
    EXPECT_EQ(floats(a[i]), floats(b[i])) << "output " << i;
  }
}

TEST(ParallelExecution, BranchyGraphMatchesSequential) {
  SessionOptions seq;
  seq.optimization_level = OptimizationLevel::Disable;
  seq.intra_op_num_threads = 1;
  auto reference = load(branchy_model(), seq);
  for (int inter : {2, 3, 8})
    for (int intra : {1, 2}) {
      auto s = load(branchy_model(), parallel_options(inter, intra));
      for (int seed = 0; seed < 5; ++seed) {
        auto want = reference->run(branchy_feeds(seed));
        auto got = s->run(branchy_feeds(seed));
        expect_same(want, got);
        // a value check independent of both executors: z = x + 1
        std::vector<float> x = pattern(64, 1.0f, seed);
        for (float& v : x) v += 1.0f;
        EXPECT_EQ(floats(got[2]), x);
        EXPECT_EQ(got[2].tensor().shape(), (Shape{8, 8}));
      }
    }
}

TEST(ParallelExecution, OptimizedGraphMatchesSequential) {
  SessionOptions seq;
  auto reference = load(branchy_model(), seq);
  SessionOptions par = parallel_options(3, 2);
  par.optimization_level = OptimizationLevel::All;
  auto s = load(branchy_model(), par);
  for (int seed = 0; seed < 3; ++seed) expect_same(reference->run(branchy_feeds(seed)), s->run(branchy_feeds(seed)));
}

TEST(ParallelExecution, ErrorNamesTheNodeAndTheSessionRecovers) {
  auto s = load(branchy_model(), parallel_options(3, 1));
  for (int i = 0; i < 5; ++i) {
    Error e = error_of([&] { s->run(branchy_feeds(i, {5, 5})); });  // 64 elements cannot be 5 x 5
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("model '<memory>', node 'bad_reshape' (Reshape): ", 0), 0u) << msg;
    // the same message as the sequential executor
    SessionOptions seq;
    seq.optimization_level = OptimizationLevel::Disable;
    Error se = error_of([&] { load(branchy_model(), seq)->run(branchy_feeds(i, {5, 5})); });
    EXPECT_EQ(msg, std::string(se.what()));
    EXPECT_EQ(e.code(), se.code());
  }
  auto ok = s->run(branchy_feeds(1, {16, 4}));
  EXPECT_EQ(ok[2].tensor().shape(), (Shape{16, 4}));
}

TEST(ParallelExecution, ConcurrentCallersOnOneSession) {
  SessionOptions seq;
  seq.optimization_level = OptimizationLevel::Disable;
  auto reference = load(branchy_model(), seq);
  std::vector<std::vector<Value>> want;
  for (int seed = 0; seed < 8; ++seed) want.push_back(reference->run(branchy_feeds(seed)));
  auto s = load(branchy_model(), parallel_options(2, 2));
  std::atomic<int> mismatches{0}, errors{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 4; ++t)
    callers.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        int seed = (t + i) % 8;
        try {
          if (i % 5 == 4) {  // some runs fail: the others are unaffected
            s->run(branchy_feeds(seed, {3, 3}));
            ++mismatches;
            continue;
          }
          auto got = s->run(branchy_feeds(seed));
          for (size_t k = 0; k < got.size(); ++k)
            if (floats(got[k]) != floats(want[seed][k])) ++mismatches;
        } catch (const Error& e) {
          if (i % 5 != 4 || std::string(e.what()).find("'bad_reshape'") == std::string::npos) ++errors;
        }
      }
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(errors.load(), 0);
}

TEST(ParallelExecution, SubgraphsRunInParallelMode) {
  auto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("c", onnx::TensorProto::BOOL, {});
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2});
  *g->add_output() = tensor_info("w", onnx::TensorProto::FLOAT, {2});
  add_node(g, "Relu", {"x"}, {"rx"}, "relu");  // a branch beside the If
  add_node(g, "Neg", {"rx"}, {"w"}, "neg");
  auto* n = add_node(g, "If", {"c"}, {"y"}, "if");
  for (const char* branch : {"then_branch", "else_branch"}) {
    auto* sg = add_graph_attr(n, branch);
    *sg->add_output() = tensor_info("r", onnx::TensorProto::FLOAT, {2});
    add_node(sg, std::string(branch) == "then_branch" ? "Neg" : "Abs", {"x"}, {"r"});
  }
  auto s = load(m, parallel_options(2, 1));
  Tensor x = Tensor::from_vector<float>({-1, 2}, {2});
  for (int i = 0; i < 3; ++i) {
    auto t = s->run({{"c", Value(Tensor::scalar<bool>(true))}, {"x", Value(x)}});
    EXPECT_EQ(floats(t[0]), (std::vector<float>{1, -2}));
    EXPECT_EQ(floats(t[1]), (std::vector<float>{0, -2}));
    auto f = s->run({{"c", Value(Tensor::scalar<bool>(false))}, {"x", Value(x)}});
    EXPECT_EQ(floats(f[0]), (std::vector<float>{1, 2}));
  }
}

TEST(ParallelExecution, ProfilerRecordsEveryNodeOfEveryRun) {
  SessionOptions o = parallel_options(3, 1);
  o.enable_profiling = true;
  auto dir = std::filesystem::temp_directory_path() / ("onyx_parallel_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  o.profile_file_prefix = (dir / "parallel").string();
  auto s = load(branchy_model(), o);
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t)
    callers.emplace_back([&] {
      for (int i = 0; i < 3; ++i) s->run(branchy_feeds(i));
    });
  for (auto& c : callers) c.join();
  std::string path = s->end_profiling();
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  Json doc = parse_json(ss.str());
  std::map<int, std::multiset<std::string>> per_run;
  int runs = 0;
  for (auto& e : doc.array) {
    if (e.str("cat") == "Node") per_run[static_cast<int>(e.get("args")->num("run"))].insert(e.str("name"));
    if (e.str("cat") == "Session" && e.str("name") == "model_run") ++runs;
  }
  const size_t nodes = kBranches * 4 + 4 + 2;
  EXPECT_EQ(runs, 6);
  ASSERT_EQ(per_run.size(), 6u);
  for (auto& [run, names] : per_run) {
    EXPECT_GE(run, 0);
    EXPECT_EQ(names.size(), nodes) << "run " << run;
    EXPECT_EQ(std::set<std::string>(names.begin(), names.end()).size(), nodes) << "run " << run;
  }
  std::filesystem::remove_all(dir);
}

TEST(ParallelExecution, OneInterOpThreadRunsSequentially) {
  SessionOptions seq;
  seq.optimization_level = OptimizationLevel::Disable;
  auto reference = load(branchy_model(), seq);
  auto s = load(branchy_model(), parallel_options(1, 1));
  expect_same(reference->run(branchy_feeds(2)), s->run(branchy_feeds(2)));
}

// --- thread pool -----------------------------------------------------------

TEST(ThreadPoolChunks, DynamicBlockBaseCoversRangeOnceLargeChunksFirst) {
  for (int base : {1, 2, 4, 16}) {
    ThreadPoolOptions o;
    o.num_threads = 3;
    o.dynamic_block_base = base;
    ThreadPool pool(o);
    EXPECT_EQ(pool.dynamic_block_base(), base);
    for (int64_t n : {1, 2, 5, 24, 1000, 100000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> chunks;
      parallel_for(&pool, n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        std::lock_guard<std::mutex> lock(mu);
        chunks.push_back({b, e});
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "base " << base << " n " << n;
      std::sort(chunks.begin(), chunks.end());
      // each chunk is max(1, remaining / (base x threads)) long, and at
      // least n / 4096 (at most 4096 chunks)
      const int64_t min_chunk = (n + 4095) / 4096;
      int64_t pos = 0;
      for (auto& [b, e] : chunks) {
        ASSERT_EQ(b, pos);
        int64_t rem = n - b;
        EXPECT_EQ(e - b, std::min(rem, std::max<int64_t>(min_chunk, rem / (base * 3)))) << "base " << base << " n " << n;
        pos = e;
      }
      EXPECT_EQ(pos, n);
      EXPECT_LE(chunks.size(), 4096u);
      if (n >= 1000) {
        EXPECT_EQ(chunks.front().second - chunks.front().first, n / (base * 3));
        EXPECT_LE(chunks.back().second - chunks.back().first, min_chunk);
      }
    }
  }
}

TEST(ThreadPoolChunks, StaticChunksByDefault) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.dynamic_block_base(), 0);
  std::mutex mu;
  std::vector<int64_t> sizes;
  parallel_for(&pool, 80, [&](int64_t b, int64_t e) {
    std::lock_guard<std::mutex> lock(mu);
    sizes.push_back(e - b);
  });
  EXPECT_EQ(sizes.size(), 8u);  // 4 x threads equal chunks
  for (int64_t s : sizes) EXPECT_EQ(s, 10);
}

// An exception thrown on a worker (not only on the caller) reaches the caller
// once every chunk has ended, on spinning, sleeping and OpenMP pools; the
// pool stays usable afterwards. Before, a worker's exception ended the process.
TEST(ThreadPoolChunks, WorkerExceptionIsRethrownOnTheCaller) {
  for (int kind = 0; kind < 3; ++kind) {
    ThreadPoolOptions o;
    o.num_threads = 3;
    o.allow_spinning = kind != 1;
    o.use_openmp_team = kind == 2;
    ThreadPool pool(o);
    const std::thread::id caller = std::this_thread::get_id();
    std::atomic<int> chunks{0};
    try {
      parallel_for(&pool, 64, [&](int64_t, int64_t) {
        ++chunks;
        std::this_thread::sleep_for(std::chrono::milliseconds(2));  // every thread takes chunks
        if (std::this_thread::get_id() != caller) throw std::runtime_error("bad chunk");
      });
      if (pool.num_threads() > 1) ADD_FAILURE() << "no exception, pool kind " << kind;
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "bad chunk");
    }
    EXPECT_EQ(chunks.load(), 12) << "every chunk ran, pool kind " << kind;  // 4 x threads
    std::atomic<int64_t> sum{0};
    parallel_for(&pool, 100, [&](int64_t b, int64_t e) { sum += e - b; });
    EXPECT_EQ(sum.load(), 100);
  }
}

// A pool on the OpenMP team (where Onyx has OpenMP): no workers of its own,
// yet every chunk runs once, several threads take part, nested calls run
// inline, and the application's thread functions turn the team off.
TEST(ThreadPoolOpenMp, RunsEveryChunkOnTheTeam) {
  ThreadPoolOptions o;
  o.num_threads = 3;
  o.use_openmp_team = true;
  for (int base : {0, 4}) {
    o.dynamic_block_base = base;
    ThreadPool pool(o);
    EXPECT_EQ(pool.uses_openmp_team(), openmp_available());
    EXPECT_EQ(pool.num_threads(), 3);
    for (int64_t n : {1, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::mutex mu;
      std::set<std::thread::id> threads;
      parallel_for(&pool, n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          hits[size_t(i)]++;
          parallel_for(&pool, 2, [&](int64_t, int64_t) {});  // nested: inline
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));  // lets the other threads claim chunks
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "base " << base << " n " << n;
      if (n == 1000) {
        EXPECT_GT(threads.size(), 1u);
      }
    }
  }
  // callers on other threads while the team is busy: each runs its own loop, all of it once
  {
    o.dynamic_block_base = 0;
    ThreadPool pool(o);
    std::vector<std::vector<std::atomic<int>>> hits(3);
    for (auto& h : hits) h = std::vector<std::atomic<int>>(500);
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c)
      callers.emplace_back([&, c] {
        for (int round = 0; round < 20; ++round)
          parallel_for(&pool, 500, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[c][size_t(i)]++;
          });
      });
    for (auto& t : callers) t.join();
    for (auto& h : hits)
      for (auto& x : h) ASSERT_EQ(x.load(), 20);
  }
  // an exception in a chunk reaches the caller (it must not leave the OpenMP
  // region), and the pool keeps working
  {
    ThreadPool pool(o);
    EXPECT_THROW(parallel_for(&pool, 100,
                              [](int64_t b, int64_t e) {
                                if (b <= 50 && 50 < e) fail(ErrorCode::RuntimeException, "chunk 50 failed");
                              }),
                 Error);
    std::vector<std::atomic<int>> hits(100);
    std::set<std::thread::id> threads;
    std::mutex mu;
    parallel_for(&pool, 100, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      std::lock_guard<std::mutex> lock(mu);
      threads.insert(std::this_thread::get_id());
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    if (pool.uses_openmp_team()) {
      EXPECT_GT(threads.size(), 1u);  // the caller isn't stuck "inside" the pool
    }
  }
  o.create_thread = [](std::function<void()> fn) -> void* { return new std::thread(std::move(fn)); };
  o.join_thread = [](void* h) {
    auto* t = static_cast<std::thread*>(h);
    t->join();
    delete t;
  };
  ThreadPool own(o);
  EXPECT_FALSE(own.uses_openmp_team());  // the application's threads run it
}

TEST(ThreadPoolChunks, NegativeBlockBaseIsAnError) {
  ThreadPoolOptions o;
  o.num_threads = 2;
  o.dynamic_block_base = -1;
  Error e = error_of([&] { ThreadPool pool(o); });
  EXPECT_NE(std::string(e.what()).find("dynamic_block_base"), std::string::npos) << e.what();
}

// Thread functions that count, and remember which threads they started.
struct CountingThreads {
  std::atomic<int> created{0}, joined{0};
  std::mutex mu;
  std::set<std::thread::id> ids;
  CreateThreadFn create() {
    return [this](std::function<void()> body) -> void* {
      ++created;
      auto* t = new std::thread(std::move(body));
      std::lock_guard<std::mutex> lock(mu);
      ids.insert(t->get_id());
      return t;
    };
  }
  JoinThreadFn join() {
    return [this](void* h) {
      auto* t = static_cast<std::thread*>(h);
      t->join();
      delete t;
      ++joined;
    };
  }
};

TEST(ThreadCallbacks, PoolCreatesAndJoinsEveryWorkerThroughThem) {
  CountingThreads ct;
  {
    ThreadPoolOptions o;
    o.num_threads = 4;
    o.create_thread = ct.create();
    o.join_thread = ct.join();
    ThreadPool pool(o);
    EXPECT_EQ(pool.num_threads(), 4);
    EXPECT_EQ(ct.created.load(), 3);
    std::mutex mu;
    std::set<std::thread::id> ran_on;
    std::vector<std::atomic<int>> hits(1000);
    for (int rep = 0; rep < 20; ++rep)
      parallel_for(&pool, 1000, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
        std::lock_guard<std::mutex> lock(mu);
        ran_on.insert(std::this_thread::get_id());
      });
    for (auto& h : hits) EXPECT_EQ(h.load(), 20);
    ran_on.erase(std::this_thread::get_id());
    for (auto& id : ran_on) EXPECT_TRUE(ct.ids.count(id)) << "a chunk ran on a thread the callbacks did not create";
    EXPECT_EQ(ct.joined.load(), 0);
  }
  EXPECT_EQ(ct.joined.load(), 3);
}

TEST(ThreadCallbacks, OnlyOneOfThemIsAnError) {
  CountingThreads ct;
  ThreadPoolOptions o;
  o.num_threads = 2;
  o.create_thread = ct.create();
  Error e = error_of([&] { ThreadPool pool(o); });
  EXPECT_NE(std::string(e.what()).find("create_thread and join_thread must be given together"), std::string::npos)
      << e.what();
  EXPECT_EQ(ct.created.load(), 0);

  SessionOptions so;
  so.join_thread = ct.join();
  Error se = error_of([&] { load(test::add_relu_model(), so); });
  EXPECT_NE(std::string(se.what()).find("create_thread and join_thread must be set together (only join_thread is set)"),
            std::string::npos)
      << se.what();
}

TEST(ThreadCallbacks, FailingCreateJoinsTheThreadsAlreadyStarted) {
  CountingThreads ct;
  auto inner = ct.create();
  ThreadPoolOptions o;
  o.num_threads = 4;
  o.create_thread = [&](std::function<void()> body) -> void* {
    if (ct.created.load() == 2) throw std::runtime_error("no more threads");
    return inner(std::move(body));
  };
  o.join_thread = ct.join();
  EXPECT_THROW(ThreadPool pool(o), std::runtime_error);
  EXPECT_EQ(ct.created.load(), 2);
  EXPECT_EQ(ct.joined.load(), 2);
}

TEST(ThreadCallbacks, SessionPoolsUseThem) {
  CountingThreads ct;
  SessionOptions seq;
  seq.optimization_level = OptimizationLevel::Disable;
  auto reference = load(branchy_model(), seq);
  {
    SessionOptions o = parallel_options(2, 3);
    o.create_thread = ct.create();
    o.join_thread = ct.join();
    auto s = load(branchy_model(), o);
    EXPECT_EQ(ct.created.load(), 2 + 1);  // intra-op workers + inter-op workers
    for (int seed = 0; seed < 3; ++seed) expect_same(reference->run(branchy_feeds(seed)), s->run(branchy_feeds(seed)));
    EXPECT_EQ(ct.joined.load(), 0);
  }
  EXPECT_EQ(ct.joined.load(), 3);
  // Sequential mode starts no inter-op pool.
  SessionOptions o;
  o.intra_op_num_threads = 2;
  o.create_thread = ct.create();
  o.join_thread = ct.join();
  load(test::add_relu_model(), o)->run({{"x", Value(Tensor::from_vector<float>({1, 2, 3}, {1, 3}))}});
  EXPECT_EQ(ct.created.load(), 4);
  EXPECT_EQ(ct.joined.load(), 4);
}

TEST(ThreadPoolBusy, TryParallelForReturnsFalseWhileAnotherCallHoldsThePool) {
  ThreadPool pool(2, false);
  std::atomic<int> started{0};
  std::atomic<bool> release{false};
  std::thread holder([&] {
    pool.parallel_for(2, [&](int64_t, int64_t) {
      ++started;
      while (!release.load()) std::this_thread::yield();
    });
  });
  while (started.load() == 0) std::this_thread::yield();
  int ran = 0;
  EXPECT_FALSE(pool.try_parallel_for(4, [&](int64_t b, int64_t e) { ran += static_cast<int>(e - b); }));
  EXPECT_EQ(ran, 0);
  release = true;
  holder.join();
  EXPECT_TRUE(pool.try_parallel_for(4, [&](int64_t b, int64_t e) { ran += static_cast<int>(e - b); }));
}

#if defined(__linux__)
// The CPUs the calling thread may run on.
std::vector<int> allowed_cpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

TEST(ThreadPlacement, MovesOffTheBusyCpuAndKeepsEveryCpuAllowed) {
  const std::vector<int> before = allowed_cpus();
  if (before.size() < 2) GTEST_SKIP() << "one allowed CPU: there is nowhere to move to";
  for (int i = 0; i < 20; ++i) {
    const int cpu = current_cpu();
    ASSERT_GE(cpu, 0);
    move_off_cpu(cpu);
    EXPECT_NE(current_cpu(), cpu);
    EXPECT_EQ(allowed_cpus(), before);  // a starting place, not a pin
  }
}

TEST(ThreadPlacement, StaysWhenNotOnTheBusyCpu) {
  const std::vector<int> before = allowed_cpus();
  if (before.size() < 2) GTEST_SKIP() << "one allowed CPU";
  // Pinned to one CPU, asked to leave another: nothing to do.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(before[0], &one);
  std::thread t([&] {
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    move_off_cpu(before[1]);
    EXPECT_EQ(current_cpu(), before[0]);
    EXPECT_EQ(allowed_cpus(), std::vector<int>{before[0]});
    move_off_cpu(-1);  // unknown: no-op
    EXPECT_EQ(allowed_cpus(), std::vector<int>{before[0]});
  });
  t.join();
}
#endif

// --- environment -----------------------------------------------------------

TEST(Environment, SessionsShareItsPoolsAndStartNoThreads) {
  CountingThreads env_threads, session_threads;
  SessionOptions seq;
  seq.optimization_level = OptimizationLevel::Disable;
  auto reference = load(branchy_model(), seq);
  {
    ThreadingOptions t;
    t.intra_op_num_threads = 3;
    t.inter_op_num_threads = 2;
    t.create_thread = env_threads.create();
    t.join_thread = env_threads.join();
    auto env = Environment::create(t);
    EXPECT_EQ(env->intra_op_num_threads(), 3);
    EXPECT_EQ(env->inter_op_num_threads(), 2);
    EXPECT_EQ(env_threads.created.load(), 2 + 1);

    SessionOptions o = parallel_options(4, 4);  // counts ignored: the environment's pools are used
    o.use_per_session_threads = false;
    o.environment = env;
    o.create_thread = session_threads.create();
    o.join_thread = session_threads.join();
    auto a = load(branchy_model(), o);
    SessionOptions so = o;
    so.execution_mode = ExecutionMode::Sequential;
    auto b = load(branchy_model(), so);
    auto c = load(test::add_relu_model(), so);
    env.reset();  // the sessions keep it alive
    EXPECT_EQ(session_threads.created.load(), 0);
    EXPECT_EQ(env_threads.created.load(), 3);
    std::vector<std::thread> callers;
    std::atomic<int> mismatches{0};
    for (int k = 0; k < 3; ++k)
      callers.emplace_back([&, k] {
        for (int i = 0; i < 10; ++i) {
          if (k == 2) {
            auto y = c->run({{"x", Value(Tensor::from_vector<float>({1, 2, 3}, {1, 3}))}});
            if (floats(y[0]) != std::vector<float>{2, 1, 3.5f}) ++mismatches;
            continue;
          }
          Session& s = k == 0 ? *a : *b;
          auto got = s.run(branchy_feeds(i));
          auto want = reference->run(branchy_feeds(i));
          for (size_t j = 0; j < got.size(); ++j)
            if (floats(got[j]) != floats(want[j])) ++mismatches;
        }
      });
    for (auto& th : callers) th.join();
    EXPECT_EQ(mismatches.load(), 0);
    EXPECT_EQ(env_threads.joined.load(), 0);
  }
  EXPECT_EQ(env_threads.joined.load(), 3);
  EXPECT_EQ(session_threads.joined.load(), 0);
}

TEST(Environment, PerSessionThreadsOffNeedsAnEnvironment) {
  SessionOptions o;
  o.use_per_session_threads = false;
  Error e = error_of([&] { load(test::add_relu_model(), o); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(std::string(e.what()).find("use_per_session_threads = false needs an environment"), std::string::npos)
      << e.what();
}

TEST(Environment, InvalidOptionsAreErrors) {
  ThreadingOptions t;
  t.intra_op_num_threads = -2;
  EXPECT_NE(std::string(error_of([&] { Environment::create(t); }).what()).find("intra_op_num_threads must be 0"),
            std::string::npos);
  t = {};
  t.dynamic_block_base = -1;
  EXPECT_NE(std::string(error_of([&] { Environment::create(t); }).what()).find("dynamic_block_base must be 0 or more"),
            std::string::npos);
  t = {};
  CountingThreads ct;
  t.create_thread = ct.create();
  EXPECT_NE(std::string(error_of([&] { Environment::create(t); }).what()).find("create_thread and join_thread"),
            std::string::npos);
  // one thread each: no pools, no threads
  t = {};
  t.intra_op_num_threads = 1;
  t.inter_op_num_threads = 1;
  t.create_thread = ct.create();
  t.join_thread = ct.join();
  auto env = Environment::create(t);
  EXPECT_EQ(ct.created.load(), 0);
  SessionOptions o;
  o.environment = env;
  o.use_per_session_threads = false;
  auto y = load(test::add_relu_model(), o)->run({{"x", Value(Tensor::from_vector<float>({1, 2, 3}, {1, 3}))}});
  EXPECT_EQ(floats(y[0]), (std::vector<float>{2, 1, 3.5f}));
}

// --- session.dynamic_block_base --------------------------------------------

TEST(DynamicBlockBase, ValidatedAndResultsUnchanged) {
  for (const char* bad : {"abc", "-1", "1.5", "", " 2", "99999999999"}) {
    SessionOptions o;
    o.config["session.dynamic_block_base"] = bad;
    Error e = error_of([&] { load(test::add_relu_model(), o); });
    EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("'session.dynamic_block_base' must be an integer of 0 or more"),
              std::string::npos)
        << e.what();
  }
  SessionOptions seq;
  seq.optimization_level = OptimizationLevel::Disable;
  seq.intra_op_num_threads = 1;
  auto reference = load(branchy_model(), seq);
  for (const char* base : {"0", "1", "4"})
    for (ExecutionMode mode : {ExecutionMode::Sequential, ExecutionMode::Parallel}) {
      SessionOptions o = parallel_options(2, 2);
      o.execution_mode = mode;
      o.config["session.dynamic_block_base"] = base;
      auto s = load(branchy_model(), o);
      expect_same(reference->run(branchy_feeds(3)), s->run(branchy_feeds(3)));
    }
}

// "session.intra_op.openmp_team": "0" / "1" only, and results the same either way.
TEST(OpenMpTeamConfig, ValidatedAndResultsUnchanged) {
  SessionOptions bad;
  bad.intra_op_num_threads = 2;
  bad.config["session.intra_op.openmp_team"] = "yes";
  Error e = error_of([&] { load(test::add_relu_model(), bad); });
  EXPECT_EQ(e.code(), ErrorCode::InvalidArgument);
  EXPECT_NE(std::string(e.what()).find("session.intra_op.openmp_team must be \"0\" or \"1\""), std::string::npos)
      << e.what();
  SessionOptions seq;
  seq.intra_op_num_threads = 1;
  auto reference = load(branchy_model(), seq);
  for (const char* team : {"0", "1"}) {
    SessionOptions o;
    o.intra_op_num_threads = 2;
    o.config["session.intra_op.openmp_team"] = team;
    expect_same(reference->run(branchy_feeds(3)), load(branchy_model(), o)->run(branchy_feeds(3)));
  }
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace {

// x [2, 512] -> Relu -> Sigmoid -> Neg: two 4 KiB intermediates the arena keeps.
onnx::ModelProto wide_model() {
  onnx::ModelProto m = test::make_model();
  auto* g = m.mutable_graph();
  *g->add_input() = tensor_info("x", onnx::TensorProto::FLOAT, {2, 512});
  *g->add_output() = tensor_info("y", onnx::TensorProto::FLOAT, {2, 512});
  add_node(g, "Relu", {"x"}, {"r"}, "relu");
  add_node(g, "Sigmoid", {"r"}, {"s"}, "sigmoid");
  add_node(g, "Neg", {"s"}, {"y"}, "neg");
  return m;
}

Feeds wide_feeds() { return {{"x", Value(Tensor::from_vector<float>(pattern(1024, 1.0f, 3), {2, 512}))}}; }

// "session.use_env_allocators" = "1": the sessions' intermediates live in the
// environment's one arena; RunOptions' arena shrinkage gives them back.
TEST(EnvironmentArena, SessionsShareItAndRunOptionsShrinkIt) {
  auto env = Environment::create({});
  const BufferPool& arena = *env->impl().arena;
  SessionOptions own;
  own.optimization_level = OptimizationLevel::Disable;
  own.environment = env;
  auto separate = load(wide_model(), own);
  auto want = separate->run(wide_feeds());
  EXPECT_EQ(arena.cached_bytes(), 0u);  // not asked for: the session keeps its own arena

  SessionOptions shared = own;
  shared.config["session.use_env_allocators"] = "1";
  auto a = load(wide_model(), shared), b = load(wide_model(), shared);
  expect_same(a->run(wide_feeds()), want);
  EXPECT_EQ(arena.cached_bytes(), 2u * 2 * 512 * sizeof(float));  // r and s, released after their last reader
  expect_same(b->run(wide_feeds()), want);
  EXPECT_EQ(arena.cached_bytes(), 2u * 2 * 512 * sizeof(float));  // b reused a's buffers

  RunOptions shrink;
  shrink.config["memory.enable_memory_arena_shrinkage"] = "cpu:0";
  {
    auto out = b->run(wide_feeds(), {}, shrink);
    EXPECT_EQ(arena.cached_bytes(), 0u);
    expect_same(out, want);
  }  // the output's buffer came from the arena: it goes back there now
  EXPECT_EQ(arena.cached_bytes(), 2u * 512 * sizeof(float));
  expect_same(a->run(wide_feeds()), want);  // allocates again after shrinking
  EXPECT_EQ(arena.cached_bytes(), 2u * 2 * 512 * sizeof(float));
}

TEST(EnvironmentArena, BadSettingsAreErrors) {
  SessionOptions o;
  o.config["session.use_env_allocators"] = "1";
  std::string msg = error_of([&] { load(test::add_relu_model(), o); }).what();
  EXPECT_NE(msg.find("session.use_env_allocators: \"1\" needs SessionOptions::environment"), std::string::npos) << msg;
  o.environment = Environment::create({});
  o.config["session.use_env_allocators"] = "yes";
  msg = error_of([&] { load(test::add_relu_model(), o); }).what();
  EXPECT_NE(msg.find("expected \"0\" or \"1\", got \"yes\""), std::string::npos) << msg;
}

}  // namespace
}  // namespace onyx
