// Partitioning: assigns every node of a graph to a provider and inserts the
// copies where a value crosses between the host and a device.
//
//  - A node goes to the first device provider whose registry has a kernel
//    that supports it; otherwise to the CPU. Nodes with subgraphs (If, Loop,
//    Scan) and the producers of values their subgraphs read stay on the CPU.
//  - Shape computations stay on the CPU: integer nodes whose results are only
//    read on the host (a CPU node, or an input a device kernel declares
//    host-side such as Reshape's shape) and whose inputs are on the host.
//  - A value read on the other side gets one copy node per target
//    (com.onyx MemcpyToDevice / MemcpyToHost, run by the device provider);
//    constant initializers read on a device are uploaded once, at compile
//    time, as "<name>@<provider>" initializers.
//  - A CUDA graph replays only device work: CPU nodes may remain in a
//    captured graph when they compute from constants and input shapes alone
//    (fixed while the captured shapes are) and feed no copy to the device.
//  - Graph outputs are left where they are produced: the session moves them
//    to the host unless they are bound to the device.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "kernels/execution_provider.h"

namespace onyx {

struct Placement {
  // Per node of the graph after partitioning (copy nodes appended at the end):
  // the device provider, or null for the CPU, and the kernel chosen.
  std::vector<ExecutionProvider*> provider;
  std::vector<const KernelDef*> def;
  // Op type -> why nodes of that type run on the CPU (and how many).
  std::map<std::string, std::pair<int, std::string>> fallbacks;
  int copies = 0;            // copy nodes inserted
  int uploaded_constants = 0;
  // Why the placed graph cannot be captured in a CUDA graph; empty when it can.
  std::string capture_blocker;
};

// Partitions `graph` in place (renames inputs, appends copy nodes, adds
// device initializers). `upload` false leaves constants unuploaded (tests).
Placement partition_graph(Graph& graph, const Model& model, const std::vector<ExecutionProvider*>& device_providers,
                          const KernelRegistry& cpu_registry, bool upload = true);

}  // namespace onyx
