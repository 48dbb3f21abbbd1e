// onyx perf MODEL [--input ...] [--threads N] [--runs N] [--warmup N] [--opt-level L] [--provider P] [--dim NAME=VALUE]
// The last line printed is one JSON object (the contract in DESIGN.md).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "cli_common.h"

namespace onyx::cli {

static double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

static double peak_rss_mb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

int cmd_perf(int argc, char** argv) {
  Args args = parse_args(argc, argv, 2, {});
  if (args.positional.size() != 1) fail(ErrorCode::InvalidArgument, "usage: onyx perf MODEL [--input PATH]... [--runs N]");
  SessionOptions options = session_options_from(args);
  auto t0 = std::chrono::steady_clock::now();
  auto session = Session::from_file(args.positional[0], options);
  double load_ms = ms_since(t0);
  std::map<std::string, int64_t> dims;
  for (auto& d : args.all("--dim")) {
    size_t eq = d.find('=');
    if (eq == std::string::npos) fail(ErrorCode::InvalidArgument, "--dim needs NAME=VALUE, got '" + d + "'");
    dims[d.substr(0, eq)] = std::stoll(d.substr(eq + 1));
  }
  std::vector<std::string> specs = args.all("--input");
  Feeds feeds = specs.empty() ? random_inputs(*session, dims) : read_inputs(*session, specs);
  int runs = std::max(1, args.get_int("--runs", 20));
  int warmup = std::max(0, args.get_int("--warmup", 3));
  t0 = std::chrono::steady_clock::now();
  session->run(feeds);
  double first_ms = ms_since(t0);
  for (int i = 0; i < warmup; ++i) session->run(feeds);
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    t0 = std::chrono::steady_clock::now();
    session->run(feeds);
    times.push_back(ms_since(t0));
  }
  std::sort(times.begin(), times.end());
  auto pct = [&](double p) { return times[std::min(times.size() - 1, static_cast<size_t>(times.size() * p))]; };
  int threads = options.intra_op_num_threads;
  std::printf("model %s: load %.1f ms, first run %.2f ms, median %.3f ms over %d runs\n", args.positional[0].c_str(),
              load_ms, first_ms, times[times.size() / 2], runs);
  std::printf(
      "{\"load_ms\": %.3f, \"first_run_ms\": %.3f, \"median_ms\": %.3f, \"p90_ms\": %.3f, \"p99_ms\": %.3f, "
      "\"min_ms\": %.3f, \"runs\": %d, \"threads\": %d, \"peak_rss_mb\": %.1f}\n",
      load_ms, first_ms, times[times.size() / 2], pct(0.9), pct(0.99), times.front(), runs, threads, peak_rss_mb());
  return 0;
}

}  // namespace onyx::cli
