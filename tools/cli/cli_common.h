// Pieces shared by the onyx subcommands: argument parsing, reading inputs,
// comparing outputs.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "onyx/session.h"

namespace onyx::cli {

struct Args {
  std::vector<std::string> positional;
  std::multimap<std::string, std::string> options;  // "--threads" -> "2"
  bool has(const std::string& key) const { return options.count(key) != 0; }
  std::string get(const std::string& key, const std::string& def = "") const;
  std::vector<std::string> all(const std::string& key) const;
  int get_int(const std::string& key, int def) const;
};

// Parses argv; `flags` are options that take no value.
Args parse_args(int argc, char** argv, int start, const std::vector<std::string>& flags);

// Reads --threads, --opt-level, --provider and --log-level.
SessionOptions session_options_from(const Args& args);
OptimizationLevel parse_opt_level(const std::string& level);  // disable|basic|extended|all or 0|1|2|99
LogLevel parse_log_level(const std::string& level);           // verbose|info|warning|error|fatal or 0-4

// Reads `--input [NAME=]PATH` values for the session's inputs (.pb or .npy).
Feeds read_inputs(const Session& session, const std::vector<std::string>& specs);

// Random inputs of the declared types; free dims from `dims` (NAME=VALUE) or 1.
Feeds random_inputs(const Session& session, const std::map<std::string, int64_t>& dims);

// Compares two values with |a-b| <= atol + rtol*|b| for floats, exact otherwise.
// Returns "" when equal, else a description of the first difference.
std::string compare_values(const Value& actual, const Value& expected, double rtol, double atol);

std::string describe_value(const Value& v);

int cmd_run(int argc, char** argv);
int cmd_perf(int argc, char** argv);
int cmd_test(int argc, char** argv);
int cmd_optimize(int argc, char** argv);
int cmd_profile(int argc, char** argv);

}  // namespace onyx::cli
