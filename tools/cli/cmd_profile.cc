// onyx profile TRACE.json [--top N] [--html OUT.html]: summarizes a profile
// (from `onyx perf -p`, SessionOptions::enable_profiling or onnxruntime):
// the top op types and nodes by total time, and optionally one self-contained
// HTML page with a chart of time per op type and a timeline of one run.
#include <cstdio>
#include <fstream>

#include "cli_common.h"
#include "profile/summary.h"

namespace onyx::cli {

int cmd_profile(int argc, char** argv) {
  Args args = parse_args(argc, argv, 2, {"-h", "--help"});
  if (args.has("-h") || args.has("--help")) {
    std::printf(
        "usage: onyx profile TRACE.json [--top N] [--html OUT.html]\n"
        "Prints the top op types and nodes by total time (count, total, mean, share of node time).\n"
        "  --top N          rows per table (default 15)\n"
        "  --html OUT.html  also write one self-contained page (works offline) with a chart of time\n"
        "                   per op type and a timeline of the median run\n");
    return 0;
  }
  if (args.positional.size() != 1)
    fail(ErrorCode::InvalidArgument, "usage: onyx profile TRACE.json [--top N] [--html OUT.html]");
  const std::string& path = args.positional[0];
  int top = args.get_int("--top", 15);
  if (top < 1) fail(ErrorCode::InvalidArgument, "--top must be at least 1");
  TraceSummary s = summarize_trace_file(path);
  if (s.nodes.empty()) fail(ErrorCode::InvalidArgument, "trace '" + path + "' has no Node events");
  std::printf("profile %s: %s", path.c_str(), summary_text(s, top).c_str());
  std::string html = args.get("--html");
  if (!html.empty()) {
    std::ofstream f(html, std::ios::binary);
    f << summary_html(s, path, top);
    if (!f) fail(ErrorCode::RuntimeException, "cannot write '" + html + "'");
    std::printf("\nwrote %s\n", html.c_str());
  }
  return 0;
}

}  // namespace onyx::cli
