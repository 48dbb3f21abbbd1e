// onyx perf MODEL [options]: measures load time, first-run time, latency
// percentiles, throughput and peak RSS, with the knobs of onnxruntime_perf_test.
// The last line printed is one JSON object (the contract in DESIGN.md).
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <thread>

#include "base/thread_pool.h"
#include "cli_common.h"
#include "profile/trace_writer.h"

namespace onyx::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

double peak_rss_mb() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

const char* kHelp =
    "usage: onyx perf MODEL [options]\n"
    "Runs MODEL repeatedly and reports load time, first-run time, latency percentiles\n"
    "(p50 p90 p95 p99 p999), throughput and peak RSS; the last line is one JSON object.\n"
    "Options (short forms as in onnxruntime_perf_test):\n"
    "  -x, --threads N        intra-op threads: threads one node's kernel may use (0: one per core)\n"
    "  -y, --inter-threads N  inter-op threads in parallel mode, the caller included (0: one per core)\n"
    "  -P, --parallel         parallel execution mode: independent nodes run at once on -y threads\n"
    "  -C \"K|V [K|V ...]\"    session config entries, e.g. -C \"session.dynamic_block_base|4\"\n"
    "  -o, --opt-level L      graph optimization level: disable|basic|extended|all or 0|1|2|99 (default all)\n"
    "  -e, --provider P       execution provider: cpu or cuda (default cpu)\n"
    "  --provider-option K=V  a provider option (repeatable), e.g. enable_cuda_graph=1\n"
    "  --io-binding           inputs on the device before timing, outputs left there (one caller)\n"
    "  -m, --mode M           'times' (run -r times) or 'duration' (run for -t seconds);\n"
    "                         default: duration when only -t is given, else times\n"
    "  -r, --runs N           repetitions in times mode, over all callers together (default 20)\n"
    "  -t, --duration S       seconds to run in duration mode (default 10)\n"
    "  -c, --concurrent N     concurrent callers: N threads calling run() on one session;\n"
    "                         throughput is the aggregate over all of them (default 1)\n"
    "      --warmup N         untimed runs after the first run (default 3)\n"
    "  -p, --profile FILE     profile the session and write its Chrome trace to FILE\n"
    "                         (read it with `onyx profile FILE`, chrome://tracing or Perfetto)\n"
    "  -I, --generate-inputs  generate random inputs of the declared types even when --input is given\n"
    "      --input [NAME=]PATH  input data (.pb or .npy); without it inputs are generated\n"
    "  -f NAME:VALUE          free dimension override for generated inputs (repeatable)\n"
    "      --dim NAME=VALUE   the same (repeatable); free dims default to 1\n"
    "      --log-level L      verbose|info|warning|error|fatal; verbose lists where every node runs\n"
    "  -v, --verbose          the same as --log-level verbose\n"
    "  -h, --help             this help\n";

// Value of the first of `keys` present, else def.
std::string pick(const Args& args, std::initializer_list<const char*> keys, const std::string& def = "") {
  for (const char* k : keys)
    if (args.has(k)) return args.get(k);
  return def;
}

bool any(const Args& args, std::initializer_list<const char*> keys) {
  for (const char* k : keys)
    if (args.has(k)) return true;
  return false;
}

int to_int(const std::string& key, const std::string& s) {
  try {
    size_t used = 0;
    int v = std::stoi(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  fail(ErrorCode::InvalidArgument, "option " + key + " needs an integer, got '" + s + "'");
}

double to_double(const std::string& key, const std::string& s) {
  try {
    size_t used = 0;
    double v = std::stod(s, &used);
    if (used == s.size()) return v;
  } catch (const std::exception&) {
  }
  fail(ErrorCode::InvalidArgument, "option " + key + " needs a number, got '" + s + "'");
}

// Nearest-rank percentile of sorted `v`.
double percentile(const std::vector<double>& v, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p * v.size()));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

}  // namespace

int cmd_perf(int argc, char** argv) {
  Args args = parse_args(argc, argv, 2, {"-P", "--parallel", "-I", "--generate-inputs", "-h", "--help", "-v", "--verbose", "--io-binding"});
  if (args.has("-h") || args.has("--help")) {
    std::printf("%s", kHelp);
    return 0;
  }
  if (args.positional.size() != 1)
    fail(ErrorCode::InvalidArgument, "usage: onyx perf MODEL [options] (onyx perf -h explains them)");
  const std::string model = args.positional[0];

  SessionOptions options = session_options_from(args);
  if (args.has("-x")) options.intra_op_num_threads = to_int("-x", args.get("-x"));
  std::string inter = pick(args, {"-y", "--inter-threads"});
  if (!inter.empty()) options.inter_op_num_threads = to_int("-y", inter);
  if (any(args, {"-P", "--parallel"})) options.execution_mode = ExecutionMode::Parallel;
  for (auto& entries : args.all("-C")) {
    std::stringstream ss(entries);
    std::string kv;
    while (ss >> kv) {
      size_t bar = kv.find('|');
      if (bar == std::string::npos || bar == 0)
        fail(ErrorCode::InvalidArgument, "-C needs KEY|VALUE entries, got '" + kv + "'");
      options.config[kv.substr(0, bar)] = kv.substr(bar + 1);
    }
  }
  if (args.has("-o")) options.optimization_level = parse_opt_level(args.get("-o"));
  if (args.has("-e")) {
    std::string p = args.get("-e");
    if (p != "cpu" && p != "cuda") fail(ErrorCode::InvalidArgument, "-e must be cpu or cuda, got '" + p + "'");
    options.providers = {p};
  }
  if (any(args, {"-v", "--verbose"})) options.log_severity_level = LogLevel::Verbose;
  if (options.intra_op_num_threads < 0 || options.inter_op_num_threads < 0)
    fail(ErrorCode::InvalidArgument, "thread counts must be 0 or more");

  std::string mode = pick(args, {"-m", "--mode"});
  bool has_runs = any(args, {"-r", "--runs"}), has_duration = any(args, {"-t", "--duration"});
  if (mode.empty()) mode = has_duration && !has_runs ? "duration" : "times";
  if (mode != "times" && mode != "duration")
    fail(ErrorCode::InvalidArgument, "-m must be 'times' or 'duration', got '" + mode + "'");
  int runs = to_int("-r", pick(args, {"-r", "--runs"}, "20"));
  double duration_s = to_double("-t", pick(args, {"-t", "--duration"}, "10"));
  int callers = to_int("-c", pick(args, {"-c", "--concurrent"}, "1"));
  int warmup = to_int("--warmup", args.get("--warmup", "3"));
  if (runs < 1) fail(ErrorCode::InvalidArgument, "-r must be at least 1");
  if (!(duration_s > 0)) fail(ErrorCode::InvalidArgument, "-t must be more than 0 seconds");
  if (callers < 1) fail(ErrorCode::InvalidArgument, "-c must be at least 1");
  if (warmup < 0) fail(ErrorCode::InvalidArgument, "--warmup must be 0 or more");

  std::string profile_file = pick(args, {"-p", "--profile"});
  if (!profile_file.empty()) {
    options.enable_profiling = true;
    options.profile_file_prefix = profile_file + ".onyx_tmp";
  }

  std::map<std::string, int64_t> dims;
  auto add_dim = [&](const std::string& opt, const std::string& d, char sep) {
    size_t eq = d.find(sep);
    if (eq == std::string::npos || eq == 0)
      fail(ErrorCode::InvalidArgument, opt + " needs NAME" + sep + "VALUE, got '" + d + "'");
    dims[d.substr(0, eq)] = to_int(opt, d.substr(eq + 1));
  };
  for (auto& d : args.all("--dim")) add_dim("--dim", d, '=');
  for (auto& d : args.all("-f")) add_dim("-f", d, ':');

  // Once per process, before the timed load, as onnxruntime does at environment creation.
  prepare_operator_schemas();
  auto t0 = Clock::now();
  auto session = Session::from_file(model, options);
  double load_ms = ms_since(t0);
  std::vector<std::string> specs = args.all("--input");
  bool generate = specs.empty() || any(args, {"-I", "--generate-inputs"});
  Feeds feeds = generate ? random_inputs(*session, dims) : read_inputs(*session, specs);

  // --io-binding: inputs copied to the device once and outputs left there
  // (run_with_binding), as onnxruntime's I/O binding; with the CUDA provider
  // option enable_cuda_graph=1 the runs after the second replay a CUDA graph.
  const bool io_binding = args.has("--io-binding");
  IoBinding binding;
  if (io_binding && callers != 1) fail(ErrorCode::InvalidArgument, "--io-binding takes one caller (-c 1)");
  if (io_binding) {
    Device dev{DeviceType::CUDA, 0};
    for (auto& [k, v] : options.provider_options[options.providers.front()])
      if (k == "device_id") dev.id = std::stoi(v);
    if (session->providers().size() < 2)
      fail(ErrorCode::InvalidArgument, "--io-binding needs a device provider in use (e.g. --provider cuda on a GPU)");
    for (auto& [name, value] : feeds) {
      const Tensor& t = value.tensor();
      Tensor d = session->allocate_on(dev, t.dtype(), t.shape());
      session->copy_tensor(t, d);
      binding.bind_input(name, Value(d));
    }
    for (auto& out : session->outputs()) binding.bind_output(out.name, dev);
  }
  auto run_once = [&]() {
    if (io_binding) session->run_with_binding(binding);
    else session->run(feeds);
  };

  t0 = Clock::now();
  run_once();
  double first_ms = ms_since(t0);
  for (int i = 0; i < warmup; ++i) run_once();

  // The measured phase: `callers` threads share the session; in times mode
  // they take runs from one counter, in duration mode they run to a deadline.
  std::vector<double> times;
  std::mutex times_mu;
  std::atomic<int> next_run{0};
  std::string error;
  Clock::time_point start, deadline;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  auto begin = [&]() {  // the measured phase starts when every caller is ready
    start = Clock::now();
    deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(duration_s));
    go.store(true, std::memory_order_release);
  };
  auto caller = [&]() {
    std::vector<double> mine;
    ready.fetch_add(1);
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    try {
      while (true) {
        if (mode == "times") {
          if (next_run.fetch_add(1) >= runs) break;
        } else if (Clock::now() >= deadline) {
          break;
        }
        auto r0 = Clock::now();
        run_once();
        mine.push_back(ms_since(r0));
      }
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(times_mu);
      if (error.empty()) error = e.what();
    }
    std::lock_guard<std::mutex> lock(times_mu);
    times.insert(times.end(), mine.begin(), mine.end());
  };
  if (callers == 1) {
    begin();
    caller();
  } else {
    std::vector<std::thread> threads;
    for (int i = 0; i < callers; ++i) threads.emplace_back(caller);
    while (ready.load() < callers) std::this_thread::yield();
    begin();
    for (auto& t : threads) t.join();
  }
  double wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (!error.empty()) fail(ErrorCode::RuntimeException, error);
  if (times.empty()) fail(ErrorCode::RuntimeException, "no run finished within " + std::to_string(duration_s) + " s");

  std::string profile_written;
  if (!profile_file.empty()) {
    std::string path = session->end_profiling();
    if (std::rename(path.c_str(), profile_file.c_str()) != 0)
      fail(ErrorCode::RuntimeException, "cannot move the profile '" + path + "' to '" + profile_file + "'");
    profile_written = profile_file;
  }

  std::sort(times.begin(), times.end());
  double sum = 0;
  for (double t : times) sum += t;
  const size_t n = times.size();
  const double mean = sum / n, median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  const double throughput = n / wall_s;
  int threads = options.intra_op_num_threads > 0 ? options.intra_op_num_threads : physical_core_count();
  // inter-op threads: as given; by default one per core in parallel mode (sequential mode has no inter-op pool)
  const int inter_threads = options.inter_op_num_threads > 0                     ? options.inter_op_num_threads
                            : options.execution_mode == ExecutionMode::Parallel ? physical_core_count()
                                                                                : 0;
  const char* level_names[] = {"disable", "basic", "extended", "all"};
  int lvl = static_cast<int>(options.optimization_level);
  const char* level = level_names[lvl == 99 ? 3 : std::clamp(lvl, 0, 2)];

  std::string profile_json;
  json_quote(profile_json, profile_written);
  std::printf("model: %s\n", model.c_str());
  std::printf("settings: provider %s, %d intra-op threads, %d inter-op threads, %s execution, opt level %s, "
              "%d caller%s, %s mode\n",
              options.providers.front().c_str(), threads, inter_threads,
              options.execution_mode == ExecutionMode::Parallel ? "parallel" : "sequential", level, callers,
              callers == 1 ? "" : "s", mode.c_str());
  std::printf("load: %.1f ms, first run: %.2f ms, warmup runs: %d\n", load_ms, first_ms, warmup);
  std::printf("runs: %zu in %.3f s, throughput %.2f inferences/s\n", n, wall_s, throughput);
  std::printf("latency ms: min %.3f, mean %.3f, p50 %.3f, p90 %.3f, p95 %.3f, p99 %.3f, p999 %.3f, max %.3f\n",
              times.front(), mean, percentile(times, 0.5), percentile(times, 0.9), percentile(times, 0.95),
              percentile(times, 0.99), percentile(times, 0.999), times.back());
  std::printf("peak RSS: %.1f MB\n", peak_rss_mb());
  if (!profile_written.empty()) std::printf("profile: %s\n", profile_written.c_str());
  std::printf(
      "{\"load_ms\": %.3f, \"first_run_ms\": %.3f, \"median_ms\": %.3f, \"mean_ms\": %.3f, \"min_ms\": %.3f, "
      "\"max_ms\": %.3f, \"p50_ms\": %.3f, \"p90_ms\": %.3f, \"p95_ms\": %.3f, \"p99_ms\": %.3f, \"p999_ms\": %.3f, "
      "\"runs\": %zu, \"threads\": %d, \"inter_op_threads\": %d, \"execution_mode\": \"%s\", \"opt_level\": \"%s\", "
      "\"provider\": \"%s\", \"callers\": %d, \"mode\": \"%s\", \"warmup\": %d, \"wall_s\": %.9g, "
      "\"throughput_per_s\": %.3f, \"generated_inputs\": %s, \"profile\": %s, \"peak_rss_mb\": %.1f}\n",
      load_ms, first_ms, median, mean, times.front(), times.back(), percentile(times, 0.5), percentile(times, 0.9),
      percentile(times, 0.95), percentile(times, 0.99), percentile(times, 0.999), n, threads,
      inter_threads, options.execution_mode == ExecutionMode::Parallel ? "parallel" : "sequential",
      level, options.providers.front().c_str(), callers, mode.c_str(), warmup, wall_s, throughput,
      generate ? "true" : "false", profile_json.c_str(), peak_rss_mb());
  return 0;
}

}  // namespace onyx::cli
