#include "runtime/in_place_concat.h"

#include "runtime/execution_plan.h"

namespace onyx {

namespace {

constexpr size_t kSliceAlignment = 64;  // kernels' vector stores may assume it

bool plain_element_type(DataType t) {
  return t != DataType::String && t != DataType::Undefined && dtype_bits(t) == 8 * static_cast<int>(dtype_size(t));
}

// The producing node of every slot (-1: none, e.g. inputs and constants).
std::vector<int> producers(const CompiledGraph& plan) {
  std::vector<int> producer(plan.num_slots, -1);
  for (size_t i = 0; i < plan.nodes.size(); ++i)
    for (int s : plan.nodes[i].outputs)
      if (s >= 0) producer[s] = static_cast<int>(i);
  return producer;
}

bool qualifies(const CompiledGraph& plan, const PlannedNode& pn, const std::vector<int>& producer) {
  const Node& n = *pn.node;
  if (n.op_type != "Concat" || !n.domain.empty() || pn.ep || pn.inputs.size() < 2 || pn.outputs.size() != 1 ||
      pn.outputs[0] < 0)
    return false;
  for (size_t k = 0; k < pn.inputs.size(); ++k) {
    const int s = pn.inputs[k];
    if (s < 0 || producer[s] < 0 || plan.nodes[producer[s]].ep || plan.slot_readers[s] != 1) return false;
    for (size_t j = 0; j < k; ++j)
      if (pn.inputs[j] == s) return false;
  }
  return true;
}

}  // namespace

void plan_in_place_concats(CompiledGraph& plan) {
  const std::vector<int> producer = producers(plan);
  for (PlannedNode& pn : plan.nodes) {
    if (!qualifies(plan, pn, producer)) continue;
    auto c = std::make_shared<InPlaceConcat>();
    c->out_slot = pn.outputs[0];
    c->part_slots = pn.inputs;
    const Attribute* axis = pn.node->attr("axis");
    c->axis = axis ? axis->i : 1;  // opset < 4 defaults to 1; later opsets require it
    if (plan.concat_part_of.empty()) plan.concat_part_of.resize(plan.num_slots);
    for (size_t k = 0; k < pn.inputs.size(); ++k) plan.concat_part_of[pn.inputs[k]] = {c.get(), static_cast<int>(k)};
    pn.in_place_concat = std::move(c);
  }
}

Tensor make_slot_tensor(const CompiledGraph& plan, std::vector<Value>& slots, int slot, DataType dtype,
                        const Shape& shape, BufferPool* buffers) {
  const ConcatPart* part = plan.concat_part_of.empty() ? nullptr : &plan.concat_part_of[slot];
  const ConcatLayout* layout = part && part->concat ? part->concat->layout.load(std::memory_order_acquire) : nullptr;
  if (layout && layout->dtype == dtype && layout->part_shapes[part->part] == shape) {
    Value& out = slots[part->concat->out_slot];
    if (out.is_none())
      out = Value(make_slot_tensor(plan, slots, part->concat->out_slot, layout->dtype, layout->out_shape, buffers));
    Tensor& whole = out.tensor();
    if (whole.dtype() == dtype && whole.shape() == layout->out_shape)
      return Tensor::wrap(dtype, shape, static_cast<char*>(whole.raw()) + layout->part_offsets[part->part],
                          whole.holder());
  }
  return buffers ? buffers->make(dtype, shape) : Tensor(dtype, shape);
}

bool concat_in_place(const InPlaceConcat& c, const std::vector<Value>& slots) {
  const ConcatLayout* layout = c.layout.load(std::memory_order_acquire);
  const Value& out = slots[c.out_slot];
  if (!layout || !out.is_tensor()) return false;
  const char* base = static_cast<const char*>(out.tensor().raw());
  for (size_t k = 0; k < c.part_slots.size(); ++k) {
    const Value& v = slots[c.part_slots[k]];
    if (!v.is_tensor() || v.tensor().raw() != base + layout->part_offsets[k] ||
        v.tensor().shape() != layout->part_shapes[k])
      return false;
  }
  return true;
}

void learn_concat_layout(InPlaceConcat& c, const std::vector<Value>& slots) {
  if (c.layout.load(std::memory_order_acquire)) return;
  const Value& out = slots[c.out_slot];
  if (!out.is_tensor() || !plain_element_type(out.tensor().dtype())) return;
  const Tensor& whole = out.tensor();
  const int64_t rank = whole.rank();
  const int64_t axis = c.axis < 0 ? c.axis + rank : c.axis;
  if (axis < 0 || axis >= rank) return;
  for (int64_t d = 0; d < axis; ++d)
    if (whole.shape()[d] != 1) return;  // each input would be several pieces of the output
  auto layout = std::make_unique<ConcatLayout>();
  layout->dtype = whole.dtype();
  layout->out_shape = whole.shape();
  size_t offset = 0;
  for (int s : c.part_slots) {
    const Value& v = slots[s];
    if (!v.is_tensor() || v.tensor().dtype() != whole.dtype() || offset % kSliceAlignment) return;
    layout->part_shapes.push_back(v.tensor().shape());
    layout->part_offsets.push_back(offset);
    offset += v.tensor().nbytes();
  }
  if (offset != whole.nbytes()) return;
  const ConcatLayout* expected = nullptr;
  if (c.layout.compare_exchange_strong(expected, layout.get(), std::memory_order_acq_rel)) layout.release();
}

}  // namespace onyx
