// TreeEnsembleRegressor and TreeEnsembleClassifier (ai.onnx.ml opsets 1 and
// 3): the forests scikit-learn, XGBoost and LightGBM converters emit.
//
// The attributes describe nodes by (tree id, node id) with string modes;
// they are compiled once into a flat array per forest where a child index
// below zero names a leaf, so evaluation is a tight loop with no lookups.
#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/kernels/ml_common.h"
#include "kernels/dispatch.h"

namespace onyx {
namespace {

const char* kMl = "ai.onnx.ml";

// Mixed: the nodes use several modes (a template argument only).
enum class Branch : uint8_t { Leq, Lt, Gte, Gt, Eq, Neq, Mixed };

struct ForestNode {
  double threshold;
  int32_t feature;
  int32_t next[2];  // the false and the true branch: node index, or ~leaf index for a leaf
  Branch mode;
  bool missing_goes_true;
};

struct Contribution {
  int64_t target;  // the regression target or the class id
  double weight;
};

template <Branch M>
inline bool compare(Branch mode, double v, double threshold) {
  switch (M == Branch::Mixed ? mode : M) {
    case Branch::Leq: return v <= threshold;
    case Branch::Lt: return v < threshold;
    case Branch::Gte: return v >= threshold;
    case Branch::Gt: return v > threshold;
    case Branch::Eq: return v == threshold;
    default: return v != threshold;
  }
}

struct Forest {
  std::vector<ForestNode> nodes;
  std::vector<int32_t> roots;  // per tree: node index, or ~leaf for a tree that is one leaf
  std::vector<int64_t> leaf_start;  // leaf i's contributions: [leaf_start[i], leaf_start[i + 1])
  std::vector<Contribution> contributions;
  Branch uniform_mode = Branch::Mixed;  // the one mode all branch nodes use, if they do
  int64_t min_features = 0;  // X needs at least this many columns
  // Weights given as float attributes are summed in float, as the model's
  // producers (and ONNX Runtime) do: a probability that sums to exactly 0.5
  // in float must not land a hair above it in double.
  bool float_sums = true;

  double add(double sum, double weight) const {
    return float_sums ? static_cast<float>(sum + weight) : sum + weight;
  }

  // Calls visit(row, contribution) for every leaf contribution that rows
  // [r0, r1) of X (F columns) reach. Tree by tree over the block, so a tree's
  // upper nodes stay in cache across rows; each row still sums its trees in order.
  template <typename Visit>
  void evaluate(const double* X, int64_t F, int64_t r0, int64_t r1, Visit&& visit) const {
    switch (uniform_mode) {
      case Branch::Leq: return evaluate_as<Branch::Leq>(X, F, r0, r1, visit);
      case Branch::Lt: return evaluate_as<Branch::Lt>(X, F, r0, r1, visit);
      case Branch::Gte: return evaluate_as<Branch::Gte>(X, F, r0, r1, visit);
      case Branch::Gt: return evaluate_as<Branch::Gt>(X, F, r0, r1, visit);
      default: return evaluate_as<Branch::Mixed>(X, F, r0, r1, visit);
    }
  }

 private:
  // One step down from node `at` for row x.
  template <Branch M>
  int32_t step(int32_t at, const double* x) const {
    const ForestNode& n = nodes[at];
    double v = x[n.feature];
    // The spec: a missing value takes the branch the node names. (ONNX
    // Runtime compares NaN when the flag is off: that differs for BRANCH_NEQ.)
    bool go_true;
    if constexpr (M == Branch::Mixed)  // NaN compares true under BRANCH_NEQ: test it first
      go_true = std::isnan(v) ? n.missing_goes_true : compare<M>(n.mode, v, n.threshold);
    else  // NaN compares false: OR in the node's flag, without a branch to mispredict
      go_true = compare<M>(n.mode, v, n.threshold) | (n.missing_goes_true & (v != v));
    return n.next[go_true];
  }

  // Descends from four starting nodes, each with its row, to four leaves.
  template <Branch M>
  [[gnu::always_inline]] inline void descend4(std::array<int32_t, 4> start, std::array<const double*, 4> x, int32_t* leaf) const {
    int32_t a0 = start[0], a1 = start[1], a2 = start[2], a3 = start[3];  // scalars, kept in registers
    while (a0 >= 0 || a1 >= 0 || a2 >= 0 || a3 >= 0) {
      if (a0 >= 0) a0 = step<M>(a0, x[0]);
      if (a1 >= 0) a1 = step<M>(a1, x[1]);
      if (a2 >= 0) a2 = step<M>(a2, x[2]);
      if (a3 >= 0) a3 = step<M>(a3, x[3]);
    }
    leaf[0] = a0, leaf[1] = a1, leaf[2] = a2, leaf[3] = a3;
  }

  template <Branch M, typename Visit>
  void evaluate_as(const double* X, int64_t F, int64_t r0, int64_t r1, Visit& visit) const {
    auto emit = [&](int64_t r, int32_t at) {
      for (int64_t k = leaf_start[~at]; k < leaf_start[~at + 1]; ++k) visit(r, contributions[k]);
    };
    // Four descents at a time so their node loads overlap instead of waiting
    // on each other: four rows through one tree, or for the rows left over,
    // one row through four trees. Each row still takes its trees in order.
    const int64_t grouped_end = r0 + (r1 - r0) / 4 * 4;
    for (int32_t root : roots)
      for (int64_t r = r0; r < grouped_end; r += 4) {
        const double* x = X + r * F;
        int32_t at[4];
        descend4<M>({root, root, root, root}, {x, x + F, x + 2 * F, x + 3 * F}, at);
        for (int k = 0; k < 4; ++k) emit(r + k, at[k]);
      }
    const int64_t T = static_cast<int64_t>(roots.size());
    for (int64_t r = grouped_end; r < r1; ++r) {
      const double* x = X + r * F;
      int64_t t = 0;
      for (; t + 4 <= T; t += 4) {
        int32_t at[4];
        descend4<M>({roots[t], roots[t + 1], roots[t + 2], roots[t + 3]}, {x, x, x, x}, at);
        for (int k = 0; k < 4; ++k) emit(r, at[k]);
      }
      for (; t < T; ++t) {
        int32_t at = roots[t];
        while (at >= 0) at = step<M>(at, x);
        emit(r, at);
      }
    }
  }
};

// Reads a float attribute that opset 3 may give as a (double) tensor instead.
std::vector<double> doubles_attr(const AttributeReader& a, const std::string& name) {
  std::vector<double> out;
  if (a.has(name + "_as_tensor")) {
    Tensor t = a.get_tensor(name + "_as_tensor");
    for (int64_t i = 0; i < t.numel(); ++i) out.push_back(t.float_at(i));
  } else {
    for (float f : a.get_floats(name)) out.push_back(f);
  }
  return out;
}

Branch parse_mode(const std::string& m, bool& leaf) {
  leaf = m == "LEAF";
  if (m == "BRANCH_LEQ" || leaf) return Branch::Leq;
  if (m == "BRANCH_LT") return Branch::Lt;
  if (m == "BRANCH_GTE") return Branch::Gte;
  if (m == "BRANCH_GT") return Branch::Gt;
  if (m == "BRANCH_EQ") return Branch::Eq;
  if (m == "BRANCH_NEQ") return Branch::Neq;
  kernel_fail("node mode '" + m + "' is not LEAF or BRANCH_LEQ/LT/GTE/GT/EQ/NEQ");
}

// Rejects a tree whose branches loop back, so evaluation always ends at a leaf.
void check_acyclic(const Forest& f, int32_t root, const std::string& op) {
  std::vector<uint8_t> state(f.nodes.size(), 0);  // 0 unseen, 1 on the path, 2 done
  std::vector<std::pair<int32_t, int>> stack;
  if (root >= 0) stack.push_back({root, 0});
  while (!stack.empty()) {
    auto& [node, child] = stack.back();
    if (child == 0) state[node] = 1;
    if (child == 2) {
      state[node] = 2;
      stack.pop_back();
      continue;
    }
    int32_t next = f.nodes[node].next[child];
    ++child;
    if (next < 0 || state[next] == 2) continue;
    if (state[next] == 1) kernel_fail(op + ": a tree's branches form a cycle");
    stack.push_back({next, 0});
  }
}

// The forest of either op: its nodes_* attributes and its leaf weights
// (`prefix` "target" for the regressor, "class" for the classifier).
Forest read_forest(const AttributeReader& a, const std::string& op, const std::string& prefix) {
  auto tree_ids = a.get_ints("nodes_treeids");
  auto node_ids = a.get_ints("nodes_nodeids");
  auto features = a.get_ints("nodes_featureids");
  auto modes = a.get_strings("nodes_modes");
  auto values = doubles_attr(a, "nodes_values");
  auto true_ids = a.get_ints("nodes_truenodeids");
  auto false_ids = a.get_ints("nodes_falsenodeids");
  auto missing = a.get_ints("nodes_missing_value_tracks_true");
  const size_t n = tree_ids.size();
  if (node_ids.size() != n || features.size() != n || modes.size() != n || true_ids.size() != n ||
      false_ids.size() != n || (!values.empty() && values.size() != n) || (!missing.empty() && missing.size() != n))
    kernel_fail(op + ": the nodes_* attributes must all have " + std::to_string(n) + " entries");
  if (n == 0) kernel_fail(op + ": the forest has no nodes");

  std::map<std::pair<int64_t, int64_t>, int32_t> index;  // (tree, node id) -> position
  for (size_t i = 0; i < n; ++i)
    if (!index.emplace(std::make_pair(tree_ids[i], node_ids[i]), static_cast<int32_t>(i)).second)
      kernel_fail(op + ": tree " + std::to_string(tree_ids[i]) + " has node " + std::to_string(node_ids[i]) + " twice");

  // Leaves first get their own index; a leaf's contributions are filled below.
  Forest f;
  std::vector<std::vector<Contribution>> leaves;
  std::vector<int32_t> as_child(n);  // what a branch to node i stores
  std::vector<bool> is_leaf(n);
  for (size_t i = 0; i < n; ++i) {
    bool leaf;
    parse_mode(modes[i], leaf);
    is_leaf[i] = leaf;
    as_child[i] = leaf ? ~static_cast<int32_t>(leaves.size()) : 0;
    if (leaf) leaves.emplace_back();
  }
  // Branch nodes, renumbered densely.
  int32_t count = 0;
  for (size_t i = 0; i < n; ++i)
    if (!is_leaf[i]) as_child[i] = count++;
  f.nodes.resize(static_cast<size_t>(count));
  std::vector<bool> referenced(n);
  for (size_t i = 0; i < n; ++i) {
    if (is_leaf[i]) continue;
    auto child = [&](int64_t id) {
      auto it = index.find({tree_ids[i], id});
      if (it == index.end())
        kernel_fail(op + ": node " + std::to_string(node_ids[i]) + " of tree " + std::to_string(tree_ids[i]) +
                    " branches to node " + std::to_string(id) + ", which does not exist");
      referenced[it->second] = true;
      return as_child[it->second];
    };
    if (features[i] < 0 || features[i] > INT32_MAX) kernel_fail(op + ": feature id " + std::to_string(features[i]) + " is out of range");
    if (values.empty()) kernel_fail(op + ": nodes_values is missing");
    bool leaf;
    ForestNode& node = f.nodes[as_child[i]];
    node.mode = parse_mode(modes[i], leaf);
    node.threshold = values[i];
    node.feature = static_cast<int32_t>(features[i]);
    node.next[1] = child(true_ids[i]);
    node.next[0] = child(false_ids[i]);
    node.missing_goes_true = !missing.empty() && missing[i] != 0;
    f.min_features = std::max(f.min_features, features[i] + 1);
  }
  // A tree's root is its first listed node that no branch points to.
  std::set<int64_t> seen_trees;
  for (size_t i = 0; i < n; ++i) {
    if (referenced[i] || !seen_trees.insert(tree_ids[i]).second) continue;
    f.roots.push_back(as_child[i]);
    check_acyclic(f, as_child[i], op);
  }
  if (seen_trees.size() != std::set<int64_t>(tree_ids.begin(), tree_ids.end()).size())
    kernel_fail(op + ": a tree has no root (every node is some branch's child)");

  auto w_trees = a.get_ints(prefix + "_treeids");
  auto w_nodes = a.get_ints(prefix + "_nodeids");
  auto w_targets = a.get_ints(prefix + "_ids");
  auto weights = doubles_attr(a, prefix + "_weights");
  f.float_sums = !a.has(prefix + "_weights_as_tensor");
  if (w_nodes.size() != w_trees.size() || w_targets.size() != w_trees.size() || weights.size() != w_trees.size())
    kernel_fail(op + ": the " + prefix + "_* attributes must all have " + std::to_string(w_trees.size()) + " entries");
  for (size_t k = 0; k < w_trees.size(); ++k) {
    auto it = index.find({w_trees[k], w_nodes[k]});
    if (it == index.end() || !is_leaf[it->second])
      kernel_fail(op + ": " + prefix + " weight " + std::to_string(k) + " names node " + std::to_string(w_nodes[k]) +
                  " of tree " + std::to_string(w_trees[k]) + ", which is not a leaf");
    if (w_targets[k] < 0) kernel_fail(op + ": negative " + prefix + " id");
    leaves[~as_child[it->second]].push_back({w_targets[k], weights[k]});
  }
  f.leaf_start.push_back(0);
  for (auto& leaf : leaves) {
    f.contributions.insert(f.contributions.end(), leaf.begin(), leaf.end());
    f.leaf_start.push_back(static_cast<int64_t>(f.contributions.size()));
  }
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    Branch m = f.nodes[i].mode;
    f.uniform_mode = i == 0 ? m : (f.uniform_mode == m ? m : Branch::Mixed);
  }
  return f;
}

// X as rows of doubles (the comparisons are exact for float and double inputs).
std::vector<double> read_rows(const Tensor& X, const Forest& f, const std::string& op, int64_t& N, int64_t& F) {
  if (X.rank() > 2) kernel_fail(op + ": X must be [N, F] or [F], got " + shape_to_string(X.shape()));
  if (!dtype_is_float(X.dtype()) && X.dtype() != DataType::Int64 && X.dtype() != DataType::Int32)
    kernel_fail(op + ": X must be float, double, int64 or int32, got " + dtype_name(X.dtype()));
  N = X.rank() == 2 ? X.dim(0) : 1;
  F = X.rank() == 0 ? 1 : X.dim(-1);
  if (F < f.min_features)
    kernel_fail(op + ": X has " + std::to_string(F) + " features, the trees read feature " + std::to_string(f.min_features - 1));
  std::vector<double> rows(static_cast<size_t>(X.numel()));
  for (int64_t i = 0; i < X.numel(); ++i) rows[i] = X.float_at(i);
  return rows;
}

// Runs body(r0, r1) over blocks of rows, in parallel when the work is worth it.
template <typename Body>
void for_row_blocks(KernelContext& ctx, int64_t N, const Forest& f, Body&& body) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (N + kBlock - 1) / kBlock;
  const bool big = N * static_cast<int64_t>(f.nodes.size() + f.roots.size()) > (1 << 15);
  parallel_for(big ? ctx.thread_pool() : nullptr, blocks, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) body(b * kBlock, std::min(N, (b + 1) * kBlock));
  });
}

// ---------------------------------------------------------------- TreeEnsembleRegressor

enum class Aggregate { Sum, Average, Min, Max };

Aggregate parse_aggregate(const std::string& name) {
  if (name == "SUM") return Aggregate::Sum;
  if (name == "AVERAGE") return Aggregate::Average;
  if (name == "MIN") return Aggregate::Min;
  if (name == "MAX") return Aggregate::Max;
  kernel_fail("TreeEnsembleRegressor: aggregate_function '" + name + "' is not SUM, AVERAGE, MIN or MAX");
}

KernelFactory tree_regressor_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    const std::string op = "TreeEnsembleRegressor";
    auto forest = std::make_shared<Forest>(read_forest(ic, op, "target"));
    const int64_t T = ic.get_int("n_targets", 1);
    if (T <= 0) kernel_fail(op + ": n_targets must be positive");
    for (auto& c : forest->contributions)
        if (c.target >= T) kernel_fail(op + ": target id " + std::to_string(c.target) + " >= n_targets " + std::to_string(T));
    Aggregate aggregate = parse_aggregate(ic.get_string("aggregate_function", "SUM"));
    auto base = doubles_attr(ic, "base_values");
    if (!base.empty() && static_cast<int64_t>(base.size()) != T)
      kernel_fail(op + ": base_values has " + std::to_string(base.size()) + " values for " + std::to_string(T) + " targets");
    auto post = ml::parse_post_transform(ic.get_string("post_transform", "NONE"));
    return [=](KernelContext& ctx) {
      int64_t N, F;
      std::vector<double> rows = read_rows(ctx.input(0), *forest, op, N, F);
      Tensor& Y = ctx.allocate_output(0, DataType::Float, {N, T});
      const double trees = static_cast<double>(forest->roots.size());
      for_row_blocks(ctx, N, *forest, [&](int64_t r0, int64_t r1) {
        std::vector<double> acc(static_cast<size_t>((r1 - r0) * T), 0.0);
        std::vector<uint8_t> hit(acc.size(), 0);
        forest->evaluate(rows.data(), F, r0, r1, [&](int64_t r, const Contribution& c) {
          size_t i = static_cast<size_t>((r - r0) * T + c.target);
          double& a = acc[i];
          if (aggregate == Aggregate::Min) a = hit[i] ? std::min(a, c.weight) : c.weight;
          else if (aggregate == Aggregate::Max) a = hit[i] ? std::max(a, c.weight) : c.weight;
          else a = forest->add(a, c.weight);
          hit[i] = 1;
        });
        for (int64_t r = r0; r < r1; ++r) {
          float* y = Y.data<float>() + r * T;
          const double* row_acc = acc.data() + (r - r0) * T;
          for (int64_t t = 0; t < T; ++t) {
            double v = aggregate == Aggregate::Average ? row_acc[t] / trees : row_acc[t];
            y[t] = static_cast<float>(v + (base.empty() ? 0.0 : base[t]));
          }
          ml::post_transform_row(post, y, T);
        }
      });
    };
  });
}

// ---------------------------------------------------------------- TreeEnsembleClassifier

struct ClassifierModel {
  Forest forest;
  ml::ClassLabels labels;
  std::vector<double> base;
  ml::PostTransform post;
  // Two classes and every leaf weight for one class id: the forest scores
  // that one class, and its complement is derived (how scikit-learn's and
  // gradient-boosting converters write binary models).
  bool single_score = false;
  int64_t scored_class = 0;
  bool weights_positive = true;  // probabilities (threshold 0.5), not margins (threshold 0)
};

// Scores of a binary model whose forest scores only class 0's slot: the value
// s is the positive class's, as probability (1-s, s) or margin (-s, s).
void binary_from_single_score(const ClassifierModel& m, double s, float* z, int64_t& label) {
  label = s > (m.weights_positive ? 0.5 : 0.0) ? 1 : 0;
  double other = m.weights_positive ? 1.0 - s : -s;
  switch (m.post) {
    case ml::PostTransform::Logistic:
      z[0] = static_cast<float>(ml::logistic(-s));
      z[1] = static_cast<float>(ml::logistic(s));
      break;
    case ml::PostTransform::Probit:
      z[0] = static_cast<float>(ml::probit(other));
      z[1] = static_cast<float>(ml::probit(s));
      break;
    default:  // NONE; SOFTMAX over a derived pair would only rescale it, so it is left as is (as ONNX Runtime does)
      z[0] = static_cast<float>(other);
      z[1] = static_cast<float>(s);
  }
}

// Turns one row's class scores (and which classes any leaf scored) into its
// label and output scores z.
void finish_row(const ClassifierModel& m, double* score, uint8_t* scored, float* z, int64_t& label) {
  const int64_t C = m.labels.size();
  if (m.single_score && m.scored_class == 0) {
    double s = m.forest.add(score[0], m.base.empty() ? 0.0 : m.base[0]);
    binary_from_single_score(m, s, z, label);
    return;
  }
  for (size_t c = 0; c < m.base.size(); ++c) {
    score[c] = m.forest.add(score[c], m.base[c]);
    scored[c] = 1;
  }
  if (m.single_score) {  // class 1 scored: a probability or margin compared to its threshold
    label = score[1] > (m.weights_positive ? 0.5 : 0.0) ? 1 : 0;
  } else {  // the highest-scoring class among those any tree (or a base value) scored; first wins ties
    label = 0;
    double best = -INFINITY;
    for (int64_t c = 0; c < C; ++c)
      if (scored[c] && score[c] > best) {
        best = score[c];
        label = c;
      }
  }
  for (int64_t c = 0; c < C; ++c) z[c] = static_cast<float>(score[c]);
  ml::post_transform_row(m.post, z, C);
}

KernelFactory tree_classifier_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    const std::string op = "TreeEnsembleClassifier";
    auto m = std::make_shared<ClassifierModel>();
    m->forest = read_forest(ic, op, "class");
    m->labels = ml::read_class_labels(ic, op.c_str());
    m->base = doubles_attr(ic, "base_values");
    m->post = ml::parse_post_transform(ic.get_string("post_transform", "NONE"));
    const int64_t C = m->labels.size();
    std::set<int64_t> ids;
    for (auto& c : m->forest.contributions) {
        if (c.target >= C) kernel_fail(op + ": class id " + std::to_string(c.target) + " >= " + std::to_string(C) + " class labels");
        ids.insert(c.target);
        m->weights_positive &= c.weight >= 0;
      }
    if (!m->base.empty() && static_cast<int64_t>(m->base.size()) != C && !(C == 2 && m->base.size() == 1))
      kernel_fail(op + ": base_values has " + std::to_string(m->base.size()) + " values for " + std::to_string(C) + " classes");
    if (C == 2 && ids.size() == 1) {
      m->single_score = true;
      m->scored_class = *ids.begin();
    }
    return [m, op](KernelContext& ctx) {
      int64_t N, F;
      std::vector<double> rows = read_rows(ctx.input(0), m->forest, op, N, F);
      const int64_t C = m->labels.size();
      std::vector<int64_t> label(static_cast<size_t>(N));
      Tensor scores(DataType::Float, {N, C});
      for_row_blocks(ctx, N, m->forest, [&](int64_t r0, int64_t r1) {
        std::vector<double> score(static_cast<size_t>((r1 - r0) * C), 0.0);
        std::vector<uint8_t> scored(score.size(), 0);
        m->forest.evaluate(rows.data(), F, r0, r1, [&](int64_t r, const Contribution& c) {
          size_t i = static_cast<size_t>((r - r0) * C + c.target);
          score[i] = m->forest.add(score[i], c.weight);
          scored[i] = 1;
        });
        for (int64_t r = r0; r < r1; ++r)
          finish_row(*m, score.data() + (r - r0) * C, scored.data() + (r - r0) * C, scores.data<float>() + r * C, label[r]);
      });
      ml::write_labels(ctx, 0, m->labels, label);
      if (ctx.wants_output(1)) ctx.set_output(1, Value(std::move(scores)));
    };
  });
}

}  // namespace

void register_ml_tree_ops(KernelRegistry& r) {
  r.add("TreeEnsembleRegressor", 1, kMaxOpset, tree_regressor_factory(), kMl);
  r.add("TreeEnsembleClassifier", 1, kMaxOpset, tree_classifier_factory(), kMl);
}

}  // namespace onyx
