// onyx run MODEL [--input [NAME=]PATH]... [--output-dir DIR] [--threads N] [--opt-level L] [--provider P]
#include <sys/stat.h>

#include <cstdio>

#include "cli_common.h"
#include "onnx/tensor_proto.h"

namespace onyx::cli {

int cmd_run(int argc, char** argv) {
  Args args = parse_args(argc, argv, 2, {});
  if (args.positional.size() != 1) fail(ErrorCode::InvalidArgument, "usage: onyx run MODEL [--input [NAME=]PATH]... [--output-dir DIR]");
  auto session = Session::from_file(args.positional[0], session_options_from(args));
  Feeds feeds = read_inputs(*session, args.all("--input"));
  std::vector<Value> outputs = session->run(feeds);
  std::string dir = args.get("--output-dir");
  if (!dir.empty()) {
    mkdir(dir.c_str(), 0755);
    for (size_t k = 0; k < outputs.size(); ++k)
      write_value_pb(dir + "/output_" + std::to_string(k) + ".pb", outputs[k], session->outputs()[k].name);
    return 0;
  }
  for (size_t k = 0; k < outputs.size(); ++k)
    std::printf("%s: %s\n", session->outputs()[k].name.c_str(), describe_value(outputs[k]).c_str());
  return 0;
}

}  // namespace onyx::cli
