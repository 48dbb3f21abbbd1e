// onyx test [--expect-fail FILE] [--rtol R] [--atol A] [-v] DIR...
// Runs ONNX backend test cases (model.onnx + test_data_set_*). A DIR is a case
// or a folder of cases. Cases named in the expect-fail file may fail (counted
// as skipped); one of them passing is reported so the list can only shrink.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>

#include "cli_common.h"
#include "onnx/tensor_proto.h"

namespace onyx::cli {

namespace {

bool exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

std::vector<std::string> list_dir(const std::string& dir, const std::string& prefix) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != ".." && n.rfind(prefix, 0) == 0) out.push_back(n);
    }
    closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string base_name(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  size_t s = p.find_last_of('/');
  return s == std::string::npos ? p : p.substr(s + 1);
}

// Returns "" on success, else why the case failed.
// With a device provider and claimed_only, a case none of whose nodes runs on
// the device returns "unclaimed".
std::string run_case(const std::string& dir, double rtol, double atol, const std::string& provider = "cpu",
                     bool claimed_only = false) {
  try {
    SessionOptions options;
    options.log_severity_level = LogLevel::Error;
    options.providers = {provider};
    auto session = Session::from_file(dir + "/model.onnx", options);
    if (claimed_only) {
      bool claimed = false;
      for (auto& [node, p] : session->node_placement())
        claimed |= p != "CPUExecutionProvider" && node.rfind("Memcpy", 0) != 0;
      if (!claimed) return "unclaimed";
    }
    std::vector<std::string> sets = list_dir(dir, "test_data_set_");
    if (sets.empty()) return "no test_data_set_* folder";
    for (auto& set : sets) {
      std::string sd = dir + "/" + set;
      Feeds feeds;
      auto& inputs = session->inputs();
      for (size_t k = 0; exists(sd + "/input_" + std::to_string(k) + ".pb"); ++k) {
        if (k >= inputs.size()) return set + ": more input files than model inputs";
        feeds.push_back({inputs[k].name, read_value_pb(sd + "/input_" + std::to_string(k) + ".pb", inputs[k].type)});
      }
      std::vector<Value> outputs = session->run(feeds);
      if (!exists(sd + "/output_0.pb")) return set + ": no expected output files";
      for (size_t k = 0; exists(sd + "/output_" + std::to_string(k) + ".pb"); ++k) {
        if (k >= outputs.size()) return set + ": model has fewer outputs than expected";
        Value expected = read_value_pb(sd + "/output_" + std::to_string(k) + ".pb", session->outputs()[k].type);
        std::string diff = compare_values(outputs[k], expected, rtol, atol);
        if (!diff.empty()) return set + " output " + std::to_string(k) + ": " + diff;
      }
    }
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace

int cmd_test(int argc, char** argv) {
  Args args = parse_args(argc, argv, 2, {"-v", "--claimed-only"});
  // --provider cuda runs the cases on the CUDA provider (CPU fallback per
  // node); with --claimed-only, cases where no node runs on CUDA are skipped.
  const std::string provider = args.get("--provider", "cpu");
  const bool claimed_only = args.has("--claimed-only");
  double rtol = args.has("--rtol") ? std::stod(args.get("--rtol")) : 1e-3;
  double atol = args.has("--atol") ? std::stod(args.get("--atol")) : 1e-5;
  std::set<std::string> expect_fail;
  if (args.has("--expect-fail")) {
    std::ifstream in(args.get("--expect-fail"));
    if (!in) fail(ErrorCode::NoSuchFile, "cannot read expect-fail list '" + args.get("--expect-fail") + "'");
    std::string line;
    while (std::getline(in, line)) {
      line.erase(std::find(line.begin(), line.end(), '#'), line.end());
      line.erase(line.find_last_not_of(" \t\r") + 1);
      if (!line.empty()) expect_fail.insert(line);
    }
  }
  std::vector<std::string> cases;
  for (auto& p : args.positional) {
    // a mistyped folder must not read as "0 passed"
    if (!exists(p)) fail(ErrorCode::NoSuchFile, "test folder '" + p + "' does not exist");
    if (exists(p + "/model.onnx")) cases.push_back(p);
    else
      for (auto& c : list_dir(p, ""))
        if (exists(p + "/" + c + "/model.onnx")) cases.push_back(p + "/" + c);
  }
  int passed = 0, failed = 0, skipped = 0, fixed = 0;
  for (auto& c : cases) {
    std::string name = base_name(c);
    std::string why = run_case(c, rtol, atol, provider, claimed_only);
    bool expected = expect_fail.count(name) != 0;
    if (why == "unclaimed") {
      ++skipped;
      if (args.has("-v")) std::printf("skip %s: no node runs on %s\n", name.c_str(), provider.c_str());
    } else if (why.empty()) {
      ++passed;
      if (expected) {
        ++fixed;
        std::printf("FIXED %s (remove it from the expect-fail list)\n", name.c_str());
      } else if (args.has("-v")) {
        std::printf("ok   %s\n", name.c_str());
      }
    } else if (expected) {
      ++skipped;
      if (args.has("-v")) std::printf("xfail %s: %s\n", name.c_str(), why.c_str());
    } else {
      ++failed;
      std::printf("FAIL %s: %s\n", name.c_str(), why.c_str());
    }
    std::fflush(stdout);
  }
  std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  return failed == 0 && fixed == 0 ? 0 : 1;
}

}  // namespace onyx::cli
