// Reads a Chrome trace (onyx's or onnxruntime's profile format) and
// summarizes it: time per op type and per node, as a text table and as one
// self-contained HTML page (inline SVG, no scripts or fonts from elsewhere).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "profile/json.h"

namespace onyx {

struct TraceEvent {
  std::string cat, name;
  double ts = 0, dur = 0;  // microseconds
  int64_t tid = 0;
  int64_t run = -1;        // for Node and model_run events: the run they belong to
  std::string op, provider, output_shape;
  double output_size = 0;
};

struct TimeStat {
  std::string key;       // op type, or node name
  std::string op;        // the node's op type (per-node stats)
  std::string provider;  // per-node stats
  int64_t count = 0;
  double total_us = 0, mean_us = 0, share = 0;  // share of all node time
};

struct TraceSummary {
  std::vector<TraceEvent> session_events;  // cat Session, other than model_run
  std::vector<TraceEvent> runs;            // model_run events
  std::vector<TraceEvent> nodes;           // cat Node
  std::vector<TimeStat> by_op, by_node;    // sorted by total time, largest first
  double node_total_us = 0;
};

// `doc` is a JSON array of events or an object with "traceEvents".
TraceSummary summarize_trace(const Json& doc);
TraceSummary summarize_trace_file(const std::string& path);

// The text report: top `top` op types and nodes (count, total, mean, share).
std::string summary_text(const TraceSummary& s, size_t top);

// One HTML page: a bar chart of time per op type, a timeline of one run (the
// run of median duration) and the top tables.
std::string summary_html(const TraceSummary& s, const std::string& title, size_t top);

}  // namespace onyx
