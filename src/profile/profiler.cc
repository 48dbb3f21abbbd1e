#include "profile/profiler.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>

#include "onyx/status.h"
#include "profile/trace_writer.h"

namespace onyx {

namespace {

thread_local int64_t t_current_run = -1;

// Packed value description: a tensor is [dtype, rank, dims...]; a missing
// value [-1]; a sequence [-2, items, elem dtype]; an empty optional [-3].
uint64_t pack_value(std::vector<int64_t>& io, const Value* v) {
  if (!v || v->is_none()) {
    io.push_back(-1);
    return 0;
  }
  if (v->is_optional()) {
    const Optional& o = v->optional();
    if (!o.content) {
      io.push_back(-3);
      return 0;
    }
    return pack_value(io, o.content.get());
  }
  if (v->is_sequence()) {
    const Sequence& s = v->sequence();
    io.push_back(-2);
    io.push_back(static_cast<int64_t>(s.items.size()));
    io.push_back(static_cast<int64_t>(s.elem_type));
    uint64_t bytes = 0;
    for (auto& t : s.items) bytes += t.nbytes();
    return bytes;
  }
  const Tensor& t = v->tensor();
  io.push_back(static_cast<int64_t>(t.dtype()));
  io.push_back(t.rank());
  for (int64_t d : t.shape()) io.push_back(d);
  return t.nbytes();
}

// Unpacks `count` values from io[pos...] as onnxruntime writes them:
// [{"float":[1,3,224,224]}, ...].
void unpack_values(std::string& out, const std::vector<int64_t>& io, size_t& pos) {
  int64_t count = io[pos++];
  out += '[';
  for (int64_t k = 0; k < count; ++k) {
    if (k) out += ',';
    int64_t code = io[pos++];
    if (code == -1) {
      out += "{}";
    } else if (code == -3) {
      out += "{\"optional\":[]}";
    } else if (code == -2) {
      int64_t items = io[pos++];
      int64_t elem = io[pos++];
      out += "{\"seq(" + dtype_name(static_cast<DataType>(elem)) + ")\":[" + std::to_string(items) + "]}";
    } else {
      out += "{\"" + dtype_name(static_cast<DataType>(code)) + "\":[";
      int64_t rank = io[pos++];
      for (int64_t d = 0; d < rank; ++d) {
        if (d) out += ',';
        out += std::to_string(io[pos++]);
      }
      out += "]}";
    }
  }
  out += ']';
}

std::string fmt_double(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

// Creates PREFIX_YYYY-MM-DD_HH-MM-SS_mmm.json (onnxruntime's name, from the
// session's start) and sets `path`. Sessions started in the same millisecond
// (threads, a test's loop) get _1, _2, ...: the exclusive create keeps one
// trace from overwriting another.
std::FILE* create_trace_file(const std::string& prefix, std::chrono::system_clock::time_point start,
                             std::string& path) {
  const std::time_t t = std::chrono::system_clock::to_time_t(start);
  std::tm tm{};
  localtime_r(&t, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d_%H-%M-%S", &tm);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(start.time_since_epoch()).count() % 1000;
  char millis[8];
  std::snprintf(millis, sizeof millis, "_%03d", static_cast<int>(ms));
  const std::string base = prefix + "_" + stamp + millis;
  for (int n = 0;; ++n) {
    path = base + (n ? "_" + std::to_string(n) : std::string()) + ".json";
    if (std::FILE* f = std::fopen(path.c_str(), "wbx")) return f;
    if (errno != EEXIST) fail(ErrorCode::RuntimeException, "cannot write the profile to '" + path + "': " +
                                                             std::strerror(errno));
  }
}

}  // namespace

int profiler_thread_id() {
  thread_local int id = static_cast<int>(::syscall(SYS_gettid));
  return id;
}

Profiler::Profiler(std::string file_prefix)
    : file_prefix_(std::move(file_prefix)),
      origin_(std::chrono::steady_clock::now()),
      wall_origin_(std::chrono::system_clock::now()) {}

void Profiler::session_event(const std::string& name, int64_t start_ns, const std::string& args_json) {
  session_event(name, start_ns, now_ns(), args_json);
}

void Profiler::session_event(const std::string& name, int64_t start_ns, int64_t end_ns, const std::string& args_json) {
  if (!active()) return;
  Event e{"Session", name, start_ns, end_ns, profiler_thread_id(), -1, args_json};
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

void Profiler::record_kernel(const Node& node, const std::string& provider, int64_t node_start_ns, double device_ms) {
  if (!active() || device_ms < 0) return;
  std::string args = "{\"op_name\":";
  json_quote(args, node.op_type);
  args += ",\"provider\":";
  json_quote(args, provider + "ExecutionProvider");
  args += ",\"device_us\":" + std::to_string(device_ms * 1e3) + "}";
  Event e{"Kernel", node.name + "_kernel", node_start_ns, node_start_ns + static_cast<int64_t>(device_ms * 1e6),
          profiler_thread_id(), -1, args};
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

int64_t Profiler::begin_run() {
  t_current_run = next_run_.fetch_add(1, std::memory_order_relaxed);
  return now_ns();
}

int64_t Profiler::thread_run() { return t_current_run; }
void Profiler::set_thread_run(int64_t run) { t_current_run = run; }

void Profiler::end_run(int64_t start_ns) {
  int64_t end = now_ns();
  int64_t run = t_current_run;
  t_current_run = -1;
  if (!active()) return;
  Event e{"Session", "model_run", start_ns, end, profiler_thread_id(), run, ""};
  std::lock_guard<std::mutex> lock(mu_);
  events_.push_back(std::move(e));
}

void Profiler::record_node(const Node& node, const std::string& provider, const std::vector<int>& in_slots,
                           const std::vector<int>& out_slots, const std::vector<Value>& slots, int64_t start_ns) {
  int64_t end = now_ns();
  if (!active()) return;
  NodeRecord r{&node, &provider, start_ns, end, t_current_run, profiler_thread_id(), 0, {}};
  r.io.reserve(4 + 6 * (in_slots.size() + out_slots.size()));
  r.io.push_back(static_cast<int64_t>(in_slots.size()));
  for (int s : in_slots) pack_value(r.io, s >= 0 ? &slots[s] : nullptr);
  r.io.push_back(static_cast<int64_t>(out_slots.size()));
  for (int s : out_slots) r.output_bytes += pack_value(r.io, s >= 0 ? &slots[s] : nullptr);
  std::lock_guard<std::mutex> lock(mu_);
  nodes_.push_back(std::move(r));
}

size_t Profiler::node_event_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return nodes_.size();
}

std::string Profiler::to_json() const {
  std::lock_guard<std::mutex> lock(mu_);
  const int64_t pid = ::getpid();
  TraceWriter w;
  // No metadata ("ph":"M") events: as onnxruntime, every event is a complete
  // one with cat, ts and dur, which scripts reading these files rely on.
  // Activation bytes per run: the sum of the outputs its nodes produced.
  std::map<int64_t, uint64_t> run_bytes;
  for (auto& r : nodes_) run_bytes[r.run] += r.output_bytes;
  for (auto& e : events_) {
    std::string args = e.args_json;
    if (e.run >= 0) {
      args = "{\"run\":" + std::to_string(e.run) + ",\"activation_bytes\":" + std::to_string(run_bytes[e.run]) + "}";
    }
    w.complete(e.cat, e.name, e.start_ns / 1e3, (e.end_ns - e.start_ns) / 1e3, pid, e.tid, args);
  }
  std::string args;
  for (auto& r : nodes_) {
    const Node& n = *r.node;
    args.clear();
    args += "{\"op_name\":";
    json_quote(args, n.op_type);
    args += ",\"provider\":";
    json_quote(args, *r.provider + "ExecutionProvider");
    if (!n.domain.empty()) {
      args += ",\"domain\":";
      json_quote(args, n.domain);
    }
    size_t pos = 0;
    args += ",\"input_type_shape\":";
    unpack_values(args, r.io, pos);
    args += ",\"output_type_shape\":";
    unpack_values(args, r.io, pos);
    args += ",\"output_size\":" + std::to_string(r.output_bytes);
    uint64_t total = run_bytes[r.run];
    args += ",\"activation_share\":" + fmt_double(total ? static_cast<double>(r.output_bytes) / total : 0.0);
    args += ",\"run\":" + std::to_string(r.run) + "}";
    const std::string& name = n.name.empty() ? n.op_type : n.name;
    w.complete("Node", name, r.start_ns / 1e3, (r.end_ns - r.start_ns) / 1e3, pid, r.tid, args);
  }
  return w.finish();
}

std::string Profiler::end_profiling() {
  std::string doc = to_json();
  active_.store(false);
  std::string path;
  std::FILE* f = create_trace_file(file_prefix_, wall_origin_, path);
  const bool written = std::fwrite(doc.data(), 1, doc.size(), f) == doc.size();
  if (std::fclose(f) != 0 || !written) fail(ErrorCode::RuntimeException, "cannot write the profile to '" + path + "'");
  return path;
}

}  // namespace onyx
