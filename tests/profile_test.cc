// The profiler (Chrome trace), its JSON reader, the trace summary and HTML
// page, and placement logging at verbose.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "model_builder.h"
#include "session_test_util.h"
#include "onyx/session.h"
#include "profile/json.h"
#include "profile/profiler.h"
#include "profile/summary.h"
#include "profile/trace_writer.h"

namespace onyx {
namespace {

using test::load;

namespace fs = std::filesystem;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// This process's scratch folder, removed with whatever a failed test left in it.
struct ScratchDir {
  fs::path path = fs::temp_directory_path() / ("onyx_profile_test_" + std::to_string(::getpid()));
  ScratchDir() { fs::create_directories(path); }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

std::string temp_prefix(const std::string& name) {
  static const ScratchDir dir;
  return (dir.path / name).string();
}

Feeds add_relu_feeds(int64_t n) {
  Tensor x(DataType::Float, {n, 3});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = static_cast<float>(i) - 2;
  return {{"x", Value(x)}};
}

std::vector<const Json*> events_of(const Json& doc, const std::string& cat, const std::string& name = "") {
  std::vector<const Json*> v;
  for (auto& e : doc.array)
    if (e.str("cat") == cat && (name.empty() || e.str("name") == name)) v.push_back(&e);
  return v;
}

TEST(Profiler, OneNodeEventPerExecutedNodePerRun) {
  SessionOptions o;
  o.enable_profiling = true;
  o.profile_file_prefix = temp_prefix("addrelu");
  o.optimization_level = OptimizationLevel::Disable;  // keep Add and Relu apart
  auto s = load(test::add_relu_model(), o);
  for (int i = 0; i < 3; ++i) s->run(add_relu_feeds(2 + i));
  std::string path = s->end_profiling();
  ASSERT_FALSE(path.empty());
  EXPECT_EQ(path.rfind(o.profile_file_prefix + "_", 0), 0u) << path;
  EXPECT_EQ(path.substr(path.size() - 5), ".json");
  Json doc = parse_json(read_file(path));
  ASSERT_EQ(doc.type, Json::Type::Array);

  EXPECT_EQ(events_of(doc, "Session", "model_loading").size(), 1u);
  EXPECT_EQ(events_of(doc, "Session", "session_initialization").size(), 1u);
  auto runs = events_of(doc, "Session", "model_run");
  ASSERT_EQ(runs.size(), 3u);
  auto nodes = events_of(doc, "Node");
  ASSERT_EQ(nodes.size(), 6u);
  std::map<int, std::vector<const Json*>> per_run;
  for (auto* n : nodes) {
    EXPECT_EQ(n->str("ph"), "X");
    EXPECT_TRUE(n->get("ts") && n->get("dur") && n->get("tid") && n->get("pid"));
    const Json* args = n->get("args");
    ASSERT_TRUE(args);
    EXPECT_TRUE(args->str("op_name") == "Add" || args->str("op_name") == "Relu");
    EXPECT_EQ(args->str("provider"), "CPUExecutionProvider");
    ASSERT_TRUE(args->get("input_type_shape"));
    ASSERT_TRUE(args->get("output_type_shape"));
    EXPECT_TRUE(args->get("output_size"));
    EXPECT_TRUE(args->get("activation_share"));
    per_run[static_cast<int>(args->num("run"))].push_back(n);
  }
  ASSERT_EQ(per_run.size(), 3u);
  for (auto* r : runs) {
    int run = static_cast<int>(r->get("args")->num("run"));
    auto& ns = per_run[run];
    ASSERT_EQ(ns.size(), 2u);
    double sum = 0, share = 0;
    for (auto* n : ns) {
      sum += n->num("dur");
      share += n->get("args")->num("activation_share");
      EXPECT_GE(n->num("ts"), r->num("ts"));
      EXPECT_LE(n->num("ts") + n->num("dur"), r->num("ts") + r->num("dur") + 1e-3);
      // float[N,3]: 12 bytes per row; the run's batch is 2 + run.
      EXPECT_EQ(n->get("args")->num("output_size"), 12.0 * (2 + run));
      const Json& out = n->get("args")->get("output_type_shape")->array.at(0);
      ASSERT_TRUE(out.get("float"));
      EXPECT_EQ(out.get("float")->array.at(0).number, 2 + run);
      EXPECT_EQ(n->get("args")->get("input_type_shape")->array.size(),
                n->get("args")->str("op_name") == "Add" ? 2u : 1u);
    }
    EXPECT_LE(sum, r->num("dur"));
    EXPECT_NEAR(share, 1.0, 1e-4);
  }
  // After end_profiling nothing more is recorded.
  s->run(add_relu_feeds(2));
  std::remove(path.c_str());
}

// Traces are named like onnxruntime's, PREFIX_YYYY-MM-DD_HH-MM-SS_mmm.json, from
// the session's start; a second trace with that name (here: ending twice; in
// use: sessions started in the same millisecond) gets _1 instead of
// overwriting the first.
TEST(Profiler, TraceNamesCarryMillisecondsAndNeverOverwrite) {
  SessionOptions o;
  o.enable_profiling = true;
  o.profile_file_prefix = temp_prefix("twice");
  auto s = load(test::add_relu_model(), o);
  s->run(add_relu_feeds(2));
  const std::string first = s->end_profiling(), second = s->end_profiling();
  const std::string stamp = first.substr(o.profile_file_prefix.size());
  // _YYYY-MM-DD_HH-MM-SS_mmm.json
  ASSERT_EQ(stamp.size(), 29u) << first;
  for (size_t i : {5u, 8u, 11u, 14u, 17u}) EXPECT_TRUE(stamp[i] == '-' || stamp[i] == '_') << stamp;
  EXPECT_EQ(stamp[20], '_') << stamp;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(stamp[21])) && std::isdigit(static_cast<unsigned char>(stamp[23])))
      << stamp;
  EXPECT_EQ(second, first.substr(0, first.size() - 5) + "_1.json");
  EXPECT_FALSE(read_file(first).empty());
  EXPECT_FALSE(read_file(second).empty());
  std::remove(first.c_str());
  std::remove(second.c_str());
}

TEST(Profiler, OffByDefault) {
  auto s = load(test::add_relu_model());
  s->run(add_relu_feeds(2));
  EXPECT_EQ(s->end_profiling(), "");
}

TEST(Profiler, OptimizerPassEvents) {
  SessionOptions o;
  o.enable_profiling = true;
  o.profile_file_prefix = temp_prefix("passes");
  auto s = load(test::add_relu_model(), o);
  std::string path = s->end_profiling();
  Json doc = parse_json(read_file(path));
  auto opt = events_of(doc, "Session", "graph_optimization");
  ASSERT_EQ(opt.size(), 1u);
  size_t passes = 0;
  for (auto& e : doc.array)
    if (e.str("name").rfind("optimizer_pass:", 0) == 0) {
      ++passes;
      EXPECT_GE(e.num("ts"), opt[0]->num("ts"));
      EXPECT_LE(e.num("ts") + e.num("dur"), opt[0]->num("ts") + opt[0]->num("dur") + 1e-3);
    }
  EXPECT_EQ(passes, s->optimization_report().passes.size());
  EXPECT_GT(passes, 1u);
  // Shape inference comes first, timed as a pass of its own.
  EXPECT_EQ(s->optimization_report().passes.front().name, "shape_inference");
  std::remove(path.c_str());
}

TEST(Profiler, ConcurrentRunsKeepTheirNodes) {
  SessionOptions o;
  o.enable_profiling = true;
  o.profile_file_prefix = temp_prefix("concurrent");
  o.optimization_level = OptimizationLevel::Disable;
  auto s = load(test::add_relu_model(), o);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 5; ++i) s->run(add_relu_feeds(3));
    });
  for (auto& t : threads) t.join();
  std::string path = s->end_profiling();
  Json doc = parse_json(read_file(path));
  auto runs = events_of(doc, "Session", "model_run");
  ASSERT_EQ(runs.size(), 20u);
  std::map<int, int> count;
  std::map<int, int64_t> run_tid;
  for (auto* r : runs) run_tid[static_cast<int>(r->get("args")->num("run"))] = static_cast<int64_t>(r->num("tid"));
  for (auto* n : events_of(doc, "Node")) {
    int run = static_cast<int>(n->get("args")->num("run"));
    ++count[run];
    EXPECT_EQ(static_cast<int64_t>(n->num("tid")), run_tid[run]);
  }
  EXPECT_EQ(count.size(), 20u);
  for (auto& [run, c] : count) EXPECT_EQ(c, 2) << "run " << run;
  std::remove(path.c_str());
}

TEST(Profiler, RejectedRunRecordsNothing) {
  SessionOptions o;
  o.enable_profiling = true;
  o.profile_file_prefix = temp_prefix("throwing");
  auto s = load(test::add_relu_model(), o);
  Tensor bad(DataType::Float, {2, 4});  // wrong last dim: rejected before running
  EXPECT_THROW(s->run({{"x", Value(bad)}}), Error);
  s->run(add_relu_feeds(1));
  std::string path = s->end_profiling();
  Json doc = parse_json(read_file(path));
  EXPECT_EQ(events_of(doc, "Session", "model_run").size(), 1u);
  std::remove(path.c_str());
}

TEST(TraceWriter, QuotesAndMetadata) {
  TraceWriter w;
  w.metadata("process_name", 1, 0, "onyx");
  w.complete("Node", "a \"quoted\"\\name\n\x01", 1.5, 2.25, 1, 7, "{\"k\":1}");
  Json doc = parse_json(w.finish());
  ASSERT_EQ(doc.array.size(), 2u);
  EXPECT_EQ(doc.array[0].str("ph"), "M");
  EXPECT_EQ(doc.array[1].str("name"), "a \"quoted\"\\name\n\x01");
  EXPECT_EQ(doc.array[1].num("ts"), 1.5);
  EXPECT_EQ(doc.array[1].num("dur"), 2.25);
  EXPECT_EQ(doc.array[1].num("tid"), 7);
  EXPECT_EQ(doc.array[1].get("args")->num("k"), 1);
  EXPECT_EQ(parse_json(TraceWriter().finish()).array.size(), 0u);
}

TEST(Json, ParsesAndRejects) {
  Json j = parse_json(R"( {"a": [1, -2.5e3, true, false, null], "s": "x\u00e9\ud83d\ude00\t", "o": {}} )");
  ASSERT_EQ(j.type, Json::Type::Object);
  auto* a = j.get("a");
  ASSERT_TRUE(a);
  ASSERT_EQ(a->array.size(), 5u);
  EXPECT_EQ(a->array[1].number, -2500);
  EXPECT_TRUE(a->array[2].boolean);
  EXPECT_EQ(a->array[4].type, Json::Type::Null);
  EXPECT_EQ(j.str("s"), "x\xc3\xa9\xf0\x9f\x98\x80\t");
  EXPECT_EQ(j.get("o")->type, Json::Type::Object);
  for (const char* bad : {"", "[1,", "{\"a\" 1}", "[1] x", "\"abc", "tru", "{1:2}"})
    EXPECT_THROW(parse_json(bad), Error) << bad;
}

// A hand-made trace in onnxruntime's style: no run numbers in args, so nodes
// are assigned to runs by time.
const char* kOrtStyleTrace = R"([
{"cat":"Session","pid":1,"tid":5,"dur":1000,"ts":0,"ph":"X","name":"model_loading","args":{}},
{"cat":"Session","pid":1,"tid":5,"dur":100,"ts":2000,"ph":"X","name":"model_run","args":{}},
{"cat":"Node","pid":1,"tid":5,"dur":60,"ts":2010,"ph":"X","name":"conv1","args":{"op_name":"Conv","provider":"CPUExecutionProvider","output_type_shape":[{"float":[1,8,4,4]}],"output_size":"512"}},
{"cat":"Node","pid":1,"tid":5,"dur":20,"ts":2075,"ph":"X","name":"relu1","args":{"op_name":"Relu","provider":"CPUExecutionProvider"}},
{"cat":"Session","pid":1,"tid":5,"dur":200,"ts":3000,"ph":"X","name":"model_run","args":{}},
{"cat":"Node","pid":1,"tid":5,"dur":140,"ts":3010,"ph":"X","name":"conv1","args":{"op_name":"Conv","provider":"CPUExecutionProvider"}},
{"cat":"Node","pid":1,"tid":5,"dur":20,"ts":3160,"ph":"X","name":"relu1","args":{"op_name":"Relu","provider":"CPUExecutionProvider"}},
{"cat":"Node","pid":1,"tid":5,"dur":10,"ts":3185,"ph":"X","name":"relu<2>","args":{"op_name":"Relu","provider":"CPUExecutionProvider"}}
])";

TEST(TraceSummary, RanksOpsAndNodes) {
  TraceSummary s = summarize_trace(parse_json(kOrtStyleTrace));
  EXPECT_EQ(s.runs.size(), 2u);
  EXPECT_EQ(s.nodes.size(), 5u);
  EXPECT_DOUBLE_EQ(s.node_total_us, 250);
  ASSERT_EQ(s.by_op.size(), 2u);
  EXPECT_EQ(s.by_op[0].key, "Conv");
  EXPECT_EQ(s.by_op[0].count, 2);
  EXPECT_DOUBLE_EQ(s.by_op[0].total_us, 200);
  EXPECT_DOUBLE_EQ(s.by_op[0].mean_us, 100);
  EXPECT_DOUBLE_EQ(s.by_op[0].share, 0.8);
  EXPECT_EQ(s.by_op[1].key, "Relu");
  EXPECT_EQ(s.by_op[1].count, 3);
  ASSERT_EQ(s.by_node.size(), 3u);
  EXPECT_EQ(s.by_node[0].key, "conv1");
  EXPECT_EQ(s.by_node[0].op, "Conv");
  EXPECT_EQ(s.by_node[2].key, "relu<2>");
  EXPECT_EQ(s.nodes[0].run, 0);
  EXPECT_EQ(s.nodes[2].run, 1);
  EXPECT_EQ(s.nodes[0].output_shape, "float[1,8,4,4]");
  EXPECT_EQ(s.nodes[0].output_size, 512);

  std::string text = summary_text(s, 10);
  EXPECT_NE(text.find("Top op types by total time"), std::string::npos);
  EXPECT_NE(text.find("Top nodes by total time"), std::string::npos);
  EXPECT_NE(text.find("80.0%"), std::string::npos) << text;
  EXPECT_LT(text.find("Conv"), text.find("Relu"));

  std::string html = summary_html(s, "trace <x>.json", 10);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg id=\"ops\""), std::string::npos);
  EXPECT_NE(html.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_NE(html.find("relu&lt;2&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(html.find("relu<2>"), std::string::npos);
  EXPECT_EQ(html.find("http://"), html.find("http://www.w3.org/2000/svg"));  // only the SVG namespace
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);  // nothing loaded from elsewhere
  // The timeline shows the median run: of two runs, the longer (index 1): 3 nodes.
  EXPECT_NE(html.find("Timeline of run 1"), std::string::npos);
}

TEST(TraceSummary, RejectsNonTraces) {
  EXPECT_THROW(summarize_trace(parse_json("{\"a\":1}")), Error);
  EXPECT_THROW(summarize_trace(parse_json("3")), Error);
  TraceSummary s = summarize_trace(parse_json("{\"traceEvents\":[]}"));
  EXPECT_TRUE(s.nodes.empty());
}

TEST(TraceSummary, ReadsItsOwnTraces) {
  SessionOptions o;
  o.enable_profiling = true;
  o.profile_file_prefix = temp_prefix("own");
  o.optimization_level = OptimizationLevel::Disable;
  auto s = load(test::add_relu_model(), o);
  for (int i = 0; i < 4; ++i) s->run(add_relu_feeds(2));
  std::string path = s->end_profiling();
  TraceSummary t = summarize_trace_file(path);
  EXPECT_EQ(t.runs.size(), 4u);
  EXPECT_EQ(t.nodes.size(), 8u);
  ASSERT_EQ(t.by_op.size(), 2u);
  EXPECT_EQ(t.by_op[0].count, 4);
  EXPECT_EQ(t.nodes[0].provider, "CPUExecutionProvider");
  EXPECT_EQ(t.nodes[0].output_shape, "float[2,3]");
  std::remove(path.c_str());
}

TEST(Logging, VerboseListsPlacement) {
  SessionOptions o;
  o.optimization_level = OptimizationLevel::Disable;
  o.log_severity_level = LogLevel::Verbose;
  testing::internal::CaptureStderr();
  load(test::add_relu_model(), o);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("placement: node 'add' (Add, opset 17) -> CPUExecutionProvider, kernel Add opset"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("placement: node 'relu' (Relu"), std::string::npos) << err;
  EXPECT_NE(err.find("2 nodes (CPU: 2)"), std::string::npos) << err;

  o.log_severity_level = LogLevel::Warning;
  testing::internal::CaptureStderr();
  load(test::add_relu_model(), o);
  EXPECT_EQ(testing::internal::GetCapturedStderr().find("placement"), std::string::npos);
}

}  // namespace
}  // namespace onyx
