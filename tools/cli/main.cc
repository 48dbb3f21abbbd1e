// The onyx command: run, perf and test subcommands (see ../shared/DESIGN.md).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cli_common.h"

// oneDNN and, with it, the intra-op pool run on OpenMP, and libgomp spins
// ~2 ms after each parallel region by default, burning a core between runs.
// It reads GOMP_SPINCOUNT once, when it is loaded, before main: set a short
// spin from the executable's pre-init array unless the user chose one. 2000
// kept the speed and ~3% idle CPU at 2 threads (runs 10 ms apart); 10000
// burned 18-22% on a host where each spin step costs ~0.2 us.
static void set_openmp_defaults(int, char**, char**) { setenv("GOMP_SPINCOUNT", "2000", 0); }
__attribute__((section(".preinit_array"), used)) static void (*const onyx_preinit)(int, char**, char**) =
    &set_openmp_defaults;

static void usage() {
  std::fprintf(stderr,
               "usage: onyx <command> ...\n"
               "  run MODEL [--input [NAME=]PATH]... [--output-dir DIR] [--threads N] [--opt-level L] [--provider P]\n"
               "  perf MODEL [--input PATH]... [-x N] [-r N] [-t S] [-c N] [-p TRACE] ... (onyx perf -h)\n"
               "  profile TRACE.json [--top N] [--html OUT.html]\n"
               "  test [--expect-fail FILE] [-v] DIR...\n"
               "  optimize MODEL OUT [--opt-level L] [--disable PASS,...]\n"
               "Common options: --log-level verbose|info|warning|error|fatal (verbose lists where each node runs)\n");
}

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    usage();
    return argc < 2 ? 1 : 0;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "run") return onyx::cli::cmd_run(argc, argv);
    if (cmd == "perf") return onyx::cli::cmd_perf(argc, argv);
    if (cmd == "test") return onyx::cli::cmd_test(argc, argv);
    if (cmd == "optimize") return onyx::cli::cmd_optimize(argc, argv);
    if (cmd == "profile") return onyx::cli::cmd_profile(argc, argv);
    std::fprintf(stderr, "onyx: error: unknown command '%s' (commands: run, perf, test, optimize, profile; see onyx --help)\n",
                 cmd.c_str());
    return 1;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "onyx: error: %s\n", msg.c_str());
    return 1;
  }
}
