// onyx optimize MODEL OUT [--opt-level L] [--disable PASS,...]
// Optimizes MODEL, saves it as OUT, and prints what fused and each pass's time.
#include <cstdio>

#include "cli_common.h"

namespace onyx::cli {

int cmd_optimize(int argc, char** argv) {
  Args args = parse_args(argc, argv, 2, {});
  if (args.positional.size() != 2)
    fail(ErrorCode::InvalidArgument, "usage: onyx optimize MODEL OUT [--opt-level disable|basic|extended|all]");
  SessionOptions options = session_options_from(args);
  options.optimized_model_filepath = args.positional[1];
  if (args.has("--disable")) options.config["session.disable_passes"] = args.get("--disable");
  auto session = Session::from_file(args.positional[0], options);
  const OptimizationReport& r = session->optimization_report();
  std::printf("fusions:\n");
  if (r.fusions.empty()) std::printf("  (none)\n");
  for (auto& [name, count] : r.fusions) std::printf("  %-28s %d\n", name.c_str(), count);
  std::printf("passes:%*s%10s %8s\n", 24, "", "ms", "changed");
  for (auto& p : r.passes) std::printf("  %-32s %8.2f %8d\n", p.name.c_str(), p.ms, p.changed);
  std::printf("saved %s\n", args.positional[1].c_str());
  return 0;
}

}  // namespace onyx::cli
