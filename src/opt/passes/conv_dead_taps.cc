// A dilated convolution whose outer kernel taps read only padding at every
// output position loses those taps. DeepLabV3's ASPP runs 3x3 convolutions
// with dilation 24 and 36 over 14x14 maps: only the centre tap ever lands in
// the image, so each is really a 1x1 convolution doing a ninth of the work.
// The trimmed Conv is exact (the removed taps only ever multiplied zeros).
#include "opt/passes/passes.h"
#include "opt/rewrite.h"

namespace onyx {

namespace {

struct AxisTrim {
  int64_t first = 0, last = 0;         // live taps [first, last]
  int64_t pad_begin = 0, pad_end = 0;  // of the trimmed kernel
};

// The live taps of one spatial axis and the pads that keep the output size,
// or nullopt when the axis cannot be trimmed (nothing dead, nothing live, or
// pads that would have to go negative).
std::optional<AxisTrim> trim_axis(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pb, int64_t pe) {
  const int64_t span = (kernel - 1) * dilation + 1;
  if (in + pb + pe < span) return std::nullopt;
  const int64_t out = (in + pb + pe - span) / stride + 1;
  auto live = [&](int64_t k) {
    const int64_t offset = k * dilation - pb;  // input position of tap k at output 0
    const int64_t o0 = offset >= 0 ? 0 : (-offset + stride - 1) / stride;  // first output reaching >= 0
    return o0 < out && o0 * stride + offset < in;
  };
  AxisTrim t;
  t.first = 0;
  while (t.first < kernel && !live(t.first)) ++t.first;
  if (t.first == kernel) return std::nullopt;
  t.last = kernel - 1;
  while (!live(t.last)) --t.last;
  if (t.first == 0 && t.last == kernel - 1) return std::nullopt;
  t.pad_begin = pb - t.first * dilation;
  if (t.pad_begin < 0) return std::nullopt;
  const int64_t new_span = (t.last - t.first) * dilation + 1;
  t.pad_end = std::max<int64_t>(0, (out - 1) * stride + new_span - in - t.pad_begin);
  if ((in + t.pad_begin + t.pad_end - new_span) / stride + 1 != out) return std::nullopt;
  return t;
}

// Copies the [first, last] taps of every spatial axis of a float weight tensor [M, C, k...].
Tensor slice_taps(const Tensor& w, const std::vector<AxisTrim>& trims) {
  const int nd = static_cast<int>(trims.size());
  Shape s = {w.dim(0), w.dim(1)};
  for (const AxisTrim& t : trims) s.push_back(t.last - t.first + 1);
  Tensor out(DataType::Float, s);
  const float* src = w.data<float>();
  float* dst = out.data<float>();
  for (int64_t o = 0; o < out.numel(); ++o) {
    int64_t rest = o, off = 0, stride = 1;
    for (int d = nd + 1; d >= 0; --d) {  // innermost axis first
      const int64_t i = rest % s[d];
      rest /= s[d];
      off += (d >= 2 ? i + trims[d - 2].first : i) * stride;
      stride *= w.dim(d);
    }
    dst[o] = src[off];
  }
  return out;
}

class ConvDeadTapsRule final : public RewriteRule {
 public:
  std::string op_type() const override { return "Conv"; }

  std::optional<Patch> match(const Graph& g, const GraphView& view, int i, PassContext&) const override {
    const Node& n = g.nodes[i];
    if (n.inputs.size() < 2 || n.outputs.size() != 1) return std::nullopt;
    const Attribute* auto_pad = n.attr("auto_pad");
    if (auto_pad && auto_pad->s != "NOTSET") return std::nullopt;
    const Tensor* w = view.constant(n.inputs[1]);
    const TypeInfo* x = view.type_of(n.inputs[0]);
    if (!w || w->dtype() != DataType::Float || w->rank() < 3 || !x || !x->has_shape ||
        x->shape.size() != static_cast<size_t>(w->rank()))
      return std::nullopt;
    const int nd = w->rank() - 2;
    std::vector<int64_t> strides = read_ints(n, "strides", std::vector<int64_t>(nd, 1));
    std::vector<int64_t> dilations = read_ints(n, "dilations", std::vector<int64_t>(nd, 1));
    std::vector<int64_t> pads = read_ints(n, "pads", std::vector<int64_t>(2 * nd, 0));
    if (strides.size() != static_cast<size_t>(nd) || dilations.size() != static_cast<size_t>(nd) ||
        pads.size() != static_cast<size_t>(2 * nd))
      return std::nullopt;
    std::vector<AxisTrim> trims(nd);
    bool any = false;
    for (int d = 0; d < nd; ++d) {
      const int64_t in = x->shape[2 + d].value, k = w->dim(2 + d);
      trims[d] = {0, k - 1, pads[d], pads[nd + d]};
      if (in <= 0 || dilations[d] <= 1) continue;  // without dilation the padding is at most the kernel
      if (auto t = trim_axis(in, k, strides[d], dilations[d], pads[d], pads[nd + d])) {
        trims[d] = *t;
        any = true;
      }
    }
    if (!any) return std::nullopt;
    Node trimmed = n;
    std::vector<int64_t> kernel, new_pads(2 * nd);
    for (int d = 0; d < nd; ++d) {
      kernel.push_back(trims[d].last - trims[d].first + 1);
      new_pads[d] = trims[d].pad_begin;
      new_pads[nd + d] = trims[d].pad_end;
    }
    trimmed.attributes["kernel_shape"] = ints_attr(kernel);
    trimmed.attributes["pads"] = ints_attr(new_pads);
    std::string name = view.fresh_name(n.inputs[1] + "_live_taps");
    trimmed.inputs[1] = name;
    Patch p;
    p.remove = {i};
    p.add = {trimmed};
    p.initializers = {{name, slice_taps(*w, trims)}};
    p.fusion = "Conv dead dilated taps";
    return p;
  }
};

}  // namespace

std::unique_ptr<GraphPass> make_conv_dead_taps() {
  return single_rule_pass<ConvDeadTapsRule>("conv_dead_taps");
}

}  // namespace onyx
