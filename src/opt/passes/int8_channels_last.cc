// Channel-last 8-bit activations (level `all`): 1-D and 2-D QLinearConv
// become com.microsoft QLinearConv with channels_last = 1, reading and
// writing [N, spatial..., C]. The 8-bit convolution works on channel-last rows
// either way (GEMM rows, channel vectors for depthwise); in NCHW every layer
// transposes its input and output. Ops that only need the channel axis moved
// take the channel-last values as they are: QLinearAdd / QLinearMul (both
// operands channel-last and of one rank, so broadcasting lines up the same),
// QLinearGlobalAveragePool / QLinearAveragePool (channels_last = 1), 8-bit
// MaxPool (com.microsoft NhwcMaxPool), QLinearConcat and 8-bit Concat / Split
// along channels, and the elementwise QLinearSigmoid / QLinearLeakyRelu / LookupTable. A
// Transpose converts to the original layout, under the original name, for any other reader and for
// graph outputs; one converts into it where a chain starts. So a quantized CNN
// pays for its layout at the edges only, as with ORT's NHWC transformer.
#include "opt/passes/layout_values.h"
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

// [0, 2, ..., r - 1, 1]: channels-first to channels-last, and its inverse.
std::vector<int64_t> to_last_perm(int64_t rank) {
  std::vector<int64_t> p = {0};
  for (int64_t d = 2; d < rank; ++d) p.push_back(d);
  p.push_back(1);
  return p;
}

std::vector<int64_t> to_first_perm(int64_t rank) {
  std::vector<int64_t> p = {0, rank - 1};
  for (int64_t d = 1; d + 1 < rank; ++d) p.push_back(d);
  return p;
}

bool is_op(const Node& n, const char* op, const std::string& domain) {
  const bool onnx = n.domain.empty() || n.domain == "ai.onnx";
  return n.op_type == op && (domain.empty() ? onnx : n.domain == domain);
}

class Int8ChannelsLast final : public GraphPass {
 public:
  std::string name() const override { return "int8_channels_last"; }

  bool run(Graph& g, PassContext& ctx) override {
    if (!kernel_exists(ctx, "QLinearConv", kMicrosoftDomain)) return false;
    GraphView view(g);
    UniqueNames names(g);
    struct Last {
      std::string name;  // the channel-last value
      int64_t rank;
    };
    auto transpose = [&](const std::string& in, const std::string& result, std::vector<int64_t> perm) {
      Node t = make_node("Transpose", names.make(result + "_transpose"), {in}, {result});
      t.attributes["perm"] = ints_attr(std::move(perm));
      return t;
    };
    // original (channels-first) name -> its channel-last version; a Transpose writes the original back.
    LayoutValues<Last> last(
        [&](const Last& l, const std::string& v) { return transpose(l.name, v, to_first_perm(l.rank)); });
    auto is_last = [&](const std::string& v) { return last.has(v); };
    // The channel-last version of `v`, converting it when it has none.
    auto channel_last_input = [&](const std::string& v, int64_t rank) {
      if (!is_last(v)) {
        const std::string t = names.make(v + "_nhwc");
        last.append(transpose(v, t, to_last_perm(rank)));
        last.add(v, {t, rank}, true);
      }
      return last[v].name;
    };
    auto set_last_output = [&](Node& n, int64_t rank, size_t k = 0) {
      const std::string orig = n.outputs[k];
      n.outputs[k] = names.make(orig + "_nhwc");
      last.add(orig, {n.outputs[k], rank});
    };
    // The rank shared by n's channel-last inputs first, first + step, ...; -1 when none is
    // channel-last or their ranks differ. The others are converted (a pooled branch joining
    // DenseNet's concatenation), at the cost of one Transpose each.
    auto shared_last_rank = [&](const Node& n, size_t first, size_t step) {
      int64_t rank = -1;
      for (size_t k = first; k < n.inputs.size(); k += step) {
        if (!is_last(n.inputs[k])) continue;
        if (rank >= 0 && last[n.inputs[k]].rank != rank) return int64_t{-1};
        rank = last[n.inputs[k]].rank;
      }
      return rank;
    };

    for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
      Node n = g.nodes[i];
      bool converted = false;
      if (is_op(n, "QLinearConv", "") && n.inputs.size() >= 8 && n.outputs.size() == 1) {
        const Tensor* w = view.constant(n.inputs[3]);
        if (w && (w->rank() == 3 || w->rank() == 4)) {
          n.inputs[0] = channel_last_input(n.inputs[0], w->rank());
          n.domain = kMicrosoftDomain;
          n.attributes["channels_last"] = int_attr(1);
          set_last_output(n, w->rank());
          ++ctx.fusion_counts["QLinearConv as channels-last"];
          converted = true;
        }
      } else if ((is_op(n, "QLinearAdd", kMicrosoftDomain) || is_op(n, "QLinearMul", kMicrosoftDomain)) &&
                 n.inputs.size() >= 7 && n.outputs.size() == 1 && is_last(n.inputs[0]) && is_last(n.inputs[3]) &&
                 last[n.inputs[0]].rank == last[n.inputs[3]].rank) {
        const int64_t rank = last[n.inputs[0]].rank;
        n.inputs[0] = last[n.inputs[0]].name;
        n.inputs[3] = last[n.inputs[3]].name;
        set_last_output(n, rank);
        converted = true;
      } else if ((is_op(n, "QLinearGlobalAveragePool", kMicrosoftDomain) ||
                  is_op(n, "QLinearAveragePool", kMicrosoftDomain)) &&
                 n.outputs.size() == 1 && !n.inputs.empty() && is_last(n.inputs[0]) &&
                 read_int(n, "channels_last", 0) == 0) {
        const int64_t rank = last[n.inputs[0]].rank;
        n.inputs[0] = last[n.inputs[0]].name;
        n.attributes["channels_last"] = int_attr(1);
        set_last_output(n, rank);
        converted = true;
      } else if (is_op(n, "MaxPool", "") && n.inputs.size() == 1 && is_last(n.inputs[0]) &&
                 (n.outputs.size() == 1 || n.outputs[1].empty()) && read_int(n, "storage_order", 0) == 0) {
        // Only 8-bit values are ever channel-last here, which NhwcMaxPool takes.
        const int64_t rank = last[n.inputs[0]].rank;
        n.inputs[0] = last[n.inputs[0]].name;
        n.op_type = "NhwcMaxPool";
        n.domain = kMicrosoftDomain;
        n.outputs.resize(1);
        n.attributes.erase("storage_order");
        set_last_output(n, rank);
        converted = true;
      } else if ((is_op(n, "QLinearConcat", kMicrosoftDomain) && n.inputs.size() >= 5 &&
                  (n.inputs.size() - 2) % 3 == 0) ||
                 (is_op(n, "Concat", "") && !n.inputs.empty())) {
        // QLinearConcat, or a Concat of 8-bit values whose quantization was one (the QDQ pair dropped).
        const bool qlinear = n.op_type == "QLinearConcat";
        const size_t first = qlinear ? 2 : 0, step = qlinear ? 3 : 1;
        const int64_t rank = n.outputs.size() == 1 ? shared_last_rank(n, first, step) : -1;
        const int64_t axis = read_int(n, "axis", 0);
        if (rank > 0 && (axis == 1 || axis == 1 - rank)) {
          for (size_t k = first; k < n.inputs.size(); k += step) n.inputs[k] = channel_last_input(n.inputs[k], rank);
          n.attributes["axis"] = int_attr(rank - 1);
          set_last_output(n, rank);
          converted = true;
        }
      } else if (is_op(n, "Split", "") && !n.inputs.empty() && is_last(n.inputs[0]) &&
                 (read_int(n, "axis", 0) == 1 || read_int(n, "axis", 0) == 1 - last[n.inputs[0]].rank)) {
        // A split of channels (YOLO's C2f blocks): every part channel-last.
        const int64_t rank = last[n.inputs[0]].rank;
        n.inputs[0] = last[n.inputs[0]].name;
        n.attributes["axis"] = int_attr(rank - 1);
        for (size_t k = 0; k < n.outputs.size(); ++k)
          if (!n.outputs[k].empty()) set_last_output(n, rank, k);
        converted = true;
      } else if ((is_op(n, "QLinearSigmoid", kMicrosoftDomain) || is_op(n, "QLinearLeakyRelu", kMicrosoftDomain) ||
                  is_op(n, "LookupTable", kOnyxDomain)) &&
                 n.outputs.size() == 1 && !n.inputs.empty() && is_last(n.inputs[0])) {
        const int64_t rank = last[n.inputs[0]].rank;
        const Tensor* tables = n.op_type == "LookupTable" && n.inputs.size() > 1 ? view.constant(n.inputs[1]) : nullptr;
        const bool per_channel = tables && tables->rank() == 2;  // one table per channel, along axis 1
        const bool known = n.op_type != "LookupTable" || tables;
        if (known && (!per_channel || read_int(n, "axis", 1) == 1 || read_int(n, "axis", 1) == 1 - rank)) {
          if (per_channel) n.attributes["axis"] = int_attr(rank - 1);
          n.inputs[0] = last[n.inputs[0]].name;
          set_last_output(n, rank);
          converted = true;
        }
      }
      last.emit(view, i, std::move(n), converted);
    }
    return last.finish(g);
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_int8_channels_last() { return std::make_unique<Int8ChannelsLast>(); }

}  // namespace onyx
