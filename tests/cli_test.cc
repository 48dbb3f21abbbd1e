// The onyx command's perf and profile subcommands, run as a user would: each
// perf option has a test here.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "model_builder.h"
#include "onnx/npy.h"
#include "profile/json.h"

namespace onyx {
namespace {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string out, err;
  Json json;  // the last line of stdout, when it is JSON
};

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class Cli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("onyx_cli_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    model_ = (dir_ / "add_relu.onnx").string();  // x: float[N, 3]
    std::ofstream(model_, std::ios::binary) << test::serialize(test::add_relu_model());
    Tensor x(DataType::Float, {2, 3});
    for (int i = 0; i < 6; ++i) x.data<float>()[i] = static_cast<float>(i);
    input_ = (dir_ / "x.npy").string();
    write_npy(input_, x);
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string path(const std::string& name) { return (dir_ / name).string(); }

  // Runs `onyx ARGS`; stdout and stderr are captured apart.
  static Result onyx(const std::string& args) {
    Result r;
    std::string out = path("stdout.txt"), err = path("stderr.txt");
    std::string cmd = std::string(ONYX_CLI_PATH) + " " + args + " >" + out + " 2>" + err;
    int status = std::system(cmd.c_str());
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(out);
    r.err = read_file(err);
    std::string last = r.out;
    while (!last.empty() && last.back() == '\n') last.pop_back();
    last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
    try {
      r.json = parse_json(last);
    } catch (const std::exception&) {
    }
    return r;
  }

  static Result perf(const std::string& args) {
    Result r = onyx("perf " + model_ + " " + args);
    EXPECT_EQ(r.rc, 0) << args << "\n" << r.out << r.err;
    EXPECT_EQ(r.json.type, Json::Type::Object) << r.out;
    return r;
  }

  static inline fs::path dir_;
  static inline std::string model_, input_;
};

// The trace's first Node event's first input shape, e.g. {4, 3}.
std::vector<double> first_input_shape(const std::string& trace) {
  Json doc = parse_json(read_file(trace));
  for (auto& e : doc.array)
    if (e.str("cat") == "Node") {
      std::vector<double> dims;
      for (auto& d : e.get("args")->get("input_type_shape")->array.at(0).get("float")->array) dims.push_back(d.number);
      return dims;
    }
  return {};
}

TEST_F(Cli, PerfJsonContract) {
  Result r = perf("-r 5");
  for (const char* key : {"load_ms", "first_run_ms", "median_ms", "p90_ms", "p99_ms", "min_ms", "runs", "threads",
                          "peak_rss_mb", "p50_ms", "p95_ms", "p999_ms", "throughput_per_s", "max_ms", "mean_ms"})
    EXPECT_TRUE(r.json.get(key)) << key;
  EXPECT_EQ(r.json.num("runs"), 5);
  EXPECT_LE(r.json.num("min_ms"), r.json.num("p50_ms"));
  EXPECT_LE(r.json.num("p50_ms"), r.json.num("p90_ms"));
  EXPECT_LE(r.json.num("p90_ms"), r.json.num("p95_ms"));
  EXPECT_LE(r.json.num("p95_ms"), r.json.num("p99_ms"));
  EXPECT_LE(r.json.num("p99_ms"), r.json.num("p999_ms"));
  EXPECT_LE(r.json.num("p999_ms"), r.json.num("max_ms"));
  EXPECT_GT(r.json.num("throughput_per_s"), 0);
  EXPECT_GT(r.json.num("peak_rss_mb"), 0);
  EXPECT_NE(r.out.find("latency ms: min"), std::string::npos);
  EXPECT_NE(r.out.find("throughput"), std::string::npos);
}

TEST_F(Cli, PerfHelpExplainsEachOption) {
  for (const char* h : {"-h", "--help"}) {
    Result r = onyx(std::string("perf ") + h);
    EXPECT_EQ(r.rc, 0);
    for (const char* opt : {"-x", "-y", "-P", "-o", "-e", "-r", "-t", "-m", "-c", "-p", "-I", "-f", "--dim", "--threads",
                            "--runs", "--warmup", "--input", "--opt-level", "--provider", "--profile", "--log-level"})
      EXPECT_TRUE(r.out.find(std::string(" ") + opt + " ") != std::string::npos ||
                  r.out.find(std::string(" ") + opt + ",") != std::string::npos)
          << opt;
  }
}

TEST_F(Cli, PerfIntraOpThreads) {
  EXPECT_EQ(perf("-x 2 -r 2").json.num("threads"), 2);
  EXPECT_EQ(perf("--threads 1 -r 2").json.num("threads"), 1);
}

TEST_F(Cli, PerfInterOpThreadsAndParallel) {
  Result r = perf("-y 2 -r 2");
  EXPECT_EQ(r.json.num("inter_op_threads"), 2);
  EXPECT_EQ(r.json.str("execution_mode"), "sequential");
  r = perf("-P -y 2 -r 2");
  EXPECT_EQ(r.json.str("execution_mode"), "parallel");
  EXPECT_EQ(onyx("perf " + model_ + " -y x").rc, 1);
  EXPECT_GE(perf("-P -r 2").json.num("inter_op_threads"), 1);
}

TEST_F(Cli, PerfSessionConfigEntries) {
  Result r = perf("-C 'session.dynamic_block_base|4' -x 2 -r 2");
  EXPECT_EQ(r.rc, 0) << r.err;
  Result bad = onyx("perf " + model_ + " -C 'session.dynamic_block_base|x'");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("'session.dynamic_block_base' must be an integer"), std::string::npos) << bad.err;
  EXPECT_EQ(onyx("perf " + model_ + " -C nobar").rc, 1);
}

TEST_F(Cli, PerfOptimizationLevel) {
  for (auto [arg, name] : std::vector<std::pair<std::string, std::string>>{
           {"-o 0", "disable"}, {"-o 1", "basic"}, {"-o 2", "extended"}, {"-o 99", "all"}, {"-o basic", "basic"},
           {"--opt-level extended", "extended"}, {"--opt-level 0", "disable"}})
    EXPECT_EQ(perf(arg + " -r 1").json.str("opt_level"), name) << arg;
  Result bad = onyx("perf " + model_ + " -o 7");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("optimization level"), std::string::npos) << bad.err;
}

TEST_F(Cli, PerfProvider) {
  EXPECT_EQ(perf("-e cpu -r 1").json.str("provider"), "cpu");
  EXPECT_EQ(perf("--provider cpu -r 1").json.str("provider"), "cpu");
  Result bad = onyx("perf " + model_ + " -e tpu");
  EXPECT_EQ(bad.rc, 1);
  EXPECT_NE(bad.err.find("-e must be cpu or cuda"), std::string::npos) << bad.err;
}

TEST_F(Cli, PerfRepetitionsAndTimesMode) {
  EXPECT_EQ(perf("-r 7").json.num("runs"), 7);
  EXPECT_EQ(perf("--runs 3 --warmup 0").json.num("runs"), 3);
  Result r = perf("-m times -r 4 -t 100");
  EXPECT_EQ(r.json.str("mode"), "times");
  EXPECT_EQ(r.json.num("runs"), 4);
  EXPECT_EQ(perf("--warmup 5 -r 1").json.num("warmup"), 5);
  EXPECT_EQ(onyx("perf " + model_ + " -r 0").rc, 1);
}

TEST_F(Cli, PerfDurationMode) {
  Result r = perf("-m duration -t 0.3");
  EXPECT_EQ(r.json.str("mode"), "duration");
  EXPECT_GE(r.json.num("wall_s"), 0.3);
  EXPECT_LT(r.json.num("wall_s"), 5);
  EXPECT_GE(r.json.num("runs"), 1);
  // -t alone selects duration mode.
  EXPECT_EQ(perf("-t 0.2").json.str("mode"), "duration");
  EXPECT_EQ(onyx("perf " + model_ + " -m forever").rc, 1);
  EXPECT_EQ(onyx("perf " + model_ + " -t 0").rc, 1);
}

TEST_F(Cli, PerfConcurrentCallersShareOneSession) {
  // Times mode: the -r runs are shared among the callers.
  Result r = perf("-c 4 -r 40");
  EXPECT_EQ(r.json.num("callers"), 4);
  EXPECT_EQ(r.json.num("runs"), 40);
  // Aggregate throughput: all runs over the wall time of the measured phase.
  EXPECT_NEAR(r.json.num("throughput_per_s"), 40 / r.json.num("wall_s"), 0.01 * r.json.num("throughput_per_s") + 1);
  // Duration mode: every caller runs until the deadline; the trace shows the
  // measured runs on four threads besides the main one (first and warmup runs).
  std::string trace = path("concurrent.json");
  r = perf("-c 4 -m duration -t 0.3 --warmup 0 -p " + trace);
  EXPECT_EQ(r.json.num("callers"), 4);
  EXPECT_GT(r.json.num("throughput_per_s"), 0);
  Json doc = parse_json(read_file(trace));
  std::set<double> tids;
  int runs = 0;
  for (auto& e : doc.array)
    if (e.str("name") == "model_run") {
      ++runs;
      tids.insert(e.num("tid"));
    }
  EXPECT_EQ(runs, 1 + r.json.num("runs"));
  EXPECT_EQ(tids.size(), 5u);
  EXPECT_EQ(onyx("perf " + model_ + " -c 0").rc, 1);
}

TEST_F(Cli, PerfProfileFile) {
  for (const char* opt : {"-p", "--profile"}) {
    std::string trace = path(std::string("trace") + opt + ".json");
    Result r = perf(std::string(opt) + " " + trace + " -r 3 --warmup 1 -o 0");
    EXPECT_EQ(r.json.str("profile"), trace);
    ASSERT_TRUE(fs::exists(trace)) << trace;
    Json doc = parse_json(read_file(trace));
    int nodes = 0, runs = 0;
    for (auto& e : doc.array) {
      nodes += e.str("cat") == "Node";
      runs += e.str("name") == "model_run";
    }
    EXPECT_EQ(runs, 5);       // first + warmup + 3
    EXPECT_EQ(nodes, 2 * 5);  // Add and Relu per run
    // No stray temporary files beside it.
    for (auto& entry : fs::directory_iterator(dir_))
      EXPECT_EQ(entry.path().string().find(".onyx_tmp"), std::string::npos) << entry.path();
  }
}

TEST_F(Cli, PerfGeneratedInputsAndFreeDims) {
  std::string trace = path("dims.json");
  // Without --input, inputs are generated with free dims set to 1.
  Result r = perf("-r 1 -p " + trace);
  EXPECT_TRUE(r.json.get("generated_inputs")->boolean);
  EXPECT_EQ(first_input_shape(trace), (std::vector<double>{1, 3}));
  // --input feeds the file (batch 2) ...
  r = perf("-r 1 --input " + input_ + " -p " + trace);
  EXPECT_FALSE(r.json.get("generated_inputs")->boolean);
  EXPECT_EQ(first_input_shape(trace), (std::vector<double>{2, 3}));
  // ... unless -I asks for generated inputs.
  r = perf("-r 1 -I --input " + input_ + " -f N:5 -p " + trace);
  EXPECT_TRUE(r.json.get("generated_inputs")->boolean);
  EXPECT_EQ(first_input_shape(trace), (std::vector<double>{5, 3}));
  // Free-dimension overrides: -f NAME:VALUE and --dim NAME=VALUE.
  perf("-r 1 -f N:4 -p " + trace);
  EXPECT_EQ(first_input_shape(trace), (std::vector<double>{4, 3}));
  perf("-r 1 --dim N=6 -p " + trace);
  EXPECT_EQ(first_input_shape(trace), (std::vector<double>{6, 3}));
  EXPECT_EQ(onyx("perf " + model_ + " -f N=4").rc, 1);
  EXPECT_EQ(onyx("perf " + model_ + " --dim N:4").rc, 1);
}

TEST_F(Cli, LogLevelVerboseListsPlacement) {
  Result r = perf("-r 1 -o 0 --log-level verbose");
  EXPECT_NE(r.err.find("placement: node 'add' (Add"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("-> CPUExecutionProvider, kernel Add opset"), std::string::npos) << r.err;
  r = perf("-r 1 -o 0 -v");
  EXPECT_NE(r.err.find("placement: node 'relu'"), std::string::npos) << r.err;
  r = perf("-r 1 --log-level error");
  EXPECT_EQ(r.err.find("placement"), std::string::npos) << r.err;
  r = onyx("run " + model_ + " --input " + input_ + " --log-level verbose");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.err.find("placement: node"), std::string::npos) << r.err;
  EXPECT_EQ(onyx("perf " + model_ + " --log-level loud").rc, 1);
}

TEST_F(Cli, ProfileSummaryAndHtml) {
  std::string trace = path("summary.json"), html = path("summary.html");
  perf("-r 4 -o 0 -p " + trace);
  Result r = onyx("profile " + trace + " --html " + html);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Top op types by total time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Top nodes by total time"), std::string::npos);
  for (const char* col : {"count", "total ms", "mean ms", "share"}) EXPECT_NE(r.out.find(col), std::string::npos) << col;
  EXPECT_NE(r.out.find("Add"), std::string::npos);
  EXPECT_NE(r.out.find("relu"), std::string::npos);
  std::string page = read_file(html);
  EXPECT_NE(page.find("<svg id=\"ops\""), std::string::npos);
  EXPECT_NE(page.find("<svg id=\"timeline\""), std::string::npos);
  EXPECT_EQ(page.find("https://"), std::string::npos);
  EXPECT_EQ(onyx("profile " + trace + " --top 1").rc, 0);
  EXPECT_EQ(onyx("profile " + path("missing.json")).rc, 1);
  EXPECT_EQ(onyx("profile " + input_).rc, 1);  // not JSON
}

}  // namespace
}  // namespace onyx

namespace onyx {
namespace {

// Bad input: exit status 1 and exactly one line on stderr naming what is wrong.
void expect_one_line_error(const Result& r, const std::string& needle) {
  EXPECT_EQ(r.rc, 1) << r.err;
  std::string err = r.err;
  while (!err.empty() && err.back() == '\n') err.pop_back();
  EXPECT_EQ(err.find('\n'), std::string::npos) << "more than one line: " << r.err;
  EXPECT_NE(err.find(needle), std::string::npos) << r.err;
}

TEST_F(Cli, RunWritesOutputsAndRejectsBadInput) {
  Result ok = onyx("run " + model_ + " --input " + input_ + " --output-dir " + path("out"));
  EXPECT_EQ(ok.rc, 0) << ok.err;
  EXPECT_TRUE(fs::exists(path("out/output_0.pb")));

  expect_one_line_error(onyx("run " + path("missing.onnx")), "missing.onnx' does not exist");
  std::ofstream(path("garbage.onnx")) << "not a model";
  expect_one_line_error(onyx("run " + path("garbage.onnx")), "garbage.onnx");
  expect_one_line_error(onyx("run " + model_ + " --input nope=" + input_), "'nope' is not an input");
  expect_one_line_error(onyx("run " + model_ + " --input " + path("no_such_input.npy")), "no_such_input.npy");
  expect_one_line_error(onyx("run " + model_), "input 'x' is missing");
  expect_one_line_error(onyx("run " + model_ + " --opt-level fastest"), "optimization level");
  expect_one_line_error(onyx("frobnicate"), "unknown command 'frobnicate'");
  expect_one_line_error(onyx("test " + path("no_such_cases")), "test folder '" + path("no_such_cases") + "' does not exist");
}

TEST_F(Cli, OptimizeSavesAReloadableModel) {
  Result r = onyx("optimize " + model_ + " " + path("opt.onnx") + " --opt-level extended");
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("passes:"), std::string::npos);
  Result run = onyx("run " + path("opt.onnx") + " --input " + input_);
  EXPECT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("y: float[2,3] [1, 0, 2.5, 4, 3, 5.5]"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace onyx
