// Runs a compiled graph with independent nodes at once (ExecutionMode::Parallel).
//
// Each node waits for a count of its producers (PlannedNode::num_producers,
// computed at compile time); a node whose count reaches zero goes to a ready
// queue that the threads of the inter-op pool, the caller among them, take
// from. A thread that finishes a node keeps one newly ready consumer for
// itself and queues the others. A slot's buffer is released when the last of
// its readers finishes (CompiledGraph::slot_readers). The first error stops
// the run (nodes already running finish) and is rethrown, naming the node as
// the sequential executor does.
#pragma once
#include <vector>

#include "runtime/executor.h"

namespace onyx {

// As execute_graph for a top-level graph (no outer-scope values). With no
// inter-op pool, one thread, or the pool busy with another run, it runs
// execute_graph on the calling thread instead.
std::vector<Value> execute_graph_parallel(const CompiledGraph& plan, std::vector<Value> inputs, const RunEnv& env,
                                          ThreadPool* inter_pool);

}  // namespace onyx
