// Sequence and optional ops: values that are lists of tensors, or maybe-a-value.
#include "cpu/axis_ops.h"
#include "cpu/cpu_provider.h"
#include "kernels/broadcast.h"

namespace onyx {

namespace {

int64_t sequence_position(const Tensor& pos, int64_t size, bool allow_end) {
  ONYX_KERNEL_CHECK(pos.numel() == 1, "sequence position must be a scalar");
  int64_t p = pos.int_at(0);
  int64_t limit = allow_end ? size : size - 1;
  ONYX_KERNEL_CHECK(p >= -size && p <= limit,
                    "sequence position " + std::to_string(p) + " is out of range for a sequence of " + std::to_string(size));
  return p < 0 ? p + size : p;
}

void check_elem_type(const Sequence& s, const Tensor& t) {
  if (s.elem_type != DataType::Undefined && s.elem_type != t.dtype())
    kernel_fail("cannot put a " + dtype_name(t.dtype()) + " tensor into a sequence of " + dtype_name(s.elem_type));
}

TypeInfo type_attr(const KernelInitContext& ctx) {
  if (!ctx.has("type")) return {};
  return ctx.get("type", AttrType::TypeProto).type_info;
}

void sequence_empty(KernelRegistry& r) {
  r.add("SequenceEmpty", 11, kMaxOpset, lambda_factory([](const KernelInitContext& ctx) {
          auto dt = static_cast<DataType>(ctx.get_int("dtype", static_cast<int64_t>(DataType::Float)));
          return [dt](KernelContext& k) {
            Sequence s;
            s.elem_type = dt;
            k.set_output(0, Value(s));
          };
        }));
  r.add("SequenceConstruct", 11, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            Sequence s;
            for (size_t i = 0; i < k.num_inputs(); ++i) {
              const Tensor& t = k.input(i);
              if (i == 0) s.elem_type = t.dtype();
              check_elem_type(s, t);
              s.items.push_back(t);
            }
            k.set_output(0, Value(s));
          };
        }));
  r.add("SequenceInsert", 11, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            Sequence s = k.input_value(0).sequence();
            const Tensor& t = k.input(1);
            check_elem_type(s, t);
            if (s.elem_type == DataType::Undefined) s.elem_type = t.dtype();
            int64_t n = static_cast<int64_t>(s.items.size());
            int64_t p = k.has_input(2) ? sequence_position(k.input(2), n, true) : n;
            s.items.insert(s.items.begin() + p, t);
            k.set_output(0, Value(s));
          };
        }));
  r.add("SequenceAt", 11, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            const Sequence& s = k.input_value(0).sequence();
            int64_t p = sequence_position(k.input(1), static_cast<int64_t>(s.items.size()), false);
            k.set_output(0, Value(s.items[p]));
          };
        }));
  r.add("SequenceErase", 11, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            Sequence s = k.input_value(0).sequence();
            int64_t n = static_cast<int64_t>(s.items.size());
            int64_t p = k.has_input(1) ? sequence_position(k.input(1), n, false) : n - 1;
            ONYX_KERNEL_CHECK(n > 0, "cannot erase from an empty sequence");
            s.items.erase(s.items.begin() + p);
            k.set_output(0, Value(s));
          };
        }));
  r.add("SequenceLength", 11, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            k.set_output(0, Value(Tensor::scalar<int64_t>(static_cast<int64_t>(k.input_value(0).sequence().items.size()))));
          };
        }));
}

void split_concat(KernelRegistry& r) {
  r.add("SplitToSequence", 11, kMaxOpset, lambda_factory([](const KernelInitContext& ctx) {
          int64_t axis_attr = ctx.get_int("axis", 0);
          bool keepdims = ctx.get_int("keepdims", 1) != 0;
          return [=](KernelContext& k) {
            const Tensor& x = k.input(0);
            int axis = static_cast<int>(normalize_axis(axis_attr, x.rank()));
            int64_t dim = x.dim(axis);
            Sequence s;
            s.elem_type = x.dtype();
            if (!k.has_input(1)) {
              for (int64_t i = 0; i < dim; ++i) s.items.push_back(keepdims ? slice_axis(x, axis, i, 1) : index_axis(x, axis, i));
            } else {
              const Tensor& split = k.input(1);
              std::vector<int64_t> sizes;
              if (split.rank() == 0) {
                int64_t chunk = split.int_at(0);
                ONYX_KERNEL_CHECK(chunk > 0, "split size must be positive");
                for (int64_t start = 0; start < dim; start += chunk) sizes.push_back(std::min(chunk, dim - start));
              } else {
                sizes = split.to_int64_vector();
                int64_t total = 0;
                for (int64_t v : sizes) total += v;
                ONYX_KERNEL_CHECK(total == dim, "split sizes add up to " + std::to_string(total) + ", axis has " + std::to_string(dim));
              }
              int64_t start = 0;
              for (int64_t len : sizes) {
                s.items.push_back(slice_axis(x, axis, start, len));
                start += len;
              }
            }
            k.set_output(0, Value(s));
          };
        }));
  r.add("ConcatFromSequence", 11, kMaxOpset, lambda_factory([](const KernelInitContext& ctx) {
          int64_t axis_attr = ctx.get_int("axis");
          bool new_axis = ctx.get_int("new_axis", 0) != 0;
          return [=](KernelContext& k) {
            const Sequence& s = k.input_value(0).sequence();
            ONYX_KERNEL_CHECK(!s.items.empty(), "ConcatFromSequence needs a non-empty sequence");
            int rank = s.items[0].rank() + (new_axis ? 1 : 0);
            int axis = static_cast<int>(normalize_axis(axis_attr, rank));
            k.set_output(0, Value(new_axis ? stack_axis(s.items, axis) : concat_axis(s.items, axis)));
          };
        }));
}

void optional_ops(KernelRegistry& r) {
  r.add("Optional", 15, kMaxOpset, lambda_factory([](const KernelInitContext& ctx) {
          TypeInfo declared = type_attr(ctx);
          return [declared](KernelContext& k) {
            Optional o;
            o.type = declared;
            if (k.has_input(0)) {
              o.content = std::make_shared<Value>(k.input_value(0));
              if (o.type.kind == TypeInfo::Kind::Unknown)
                o.type.kind = o.content->is_sequence() ? TypeInfo::Kind::Sequence : TypeInfo::Kind::Tensor;
            }
            k.set_output(0, Value(o));
          };
        }));
  r.add("OptionalHasElement", 15, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            bool has = false;
            if (k.has_input(0)) {
              const Value& v = k.input_value(0);
              has = v.is_optional() ? v.optional().content != nullptr : !v.is_none();
            }
            k.set_output(0, Value(Tensor::scalar<bool>(has)));
          };
        }));
  r.add("OptionalGetElement", 15, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& k) {
            const Value& v = k.input_value(0);
            if (!v.is_optional()) {
              k.set_output(0, v);  // opset 18 accepts plain tensors and sequences
              return;
            }
            ONYX_KERNEL_CHECK(v.optional().content != nullptr, "OptionalGetElement on an empty optional");
            k.set_output(0, *v.optional().content);
          };
        }));
}

// SequenceMap: runs `body` once per position; sequence inputs give their i-th
// item, tensor inputs are passed whole; each body output becomes a sequence.
class SequenceMapKernel final : public Kernel {
 public:
  explicit SequenceMapKernel(const KernelInitContext& ctx) : body_(ctx.subgraph("body")) {}
  void run(KernelContext& k) const override {
    size_t n = k.input_value(0).sequence().items.size();
    for (size_t i = 1; i < k.num_inputs(); ++i)
      if (k.has_input(i) && k.input_value(i).is_sequence())
        ONYX_KERNEL_CHECK(k.input_value(i).sequence().items.size() == n, "SequenceMap input sequences differ in length");
    std::vector<Sequence> outs(k.num_outputs());
    for (size_t pos = 0; pos < n; ++pos) {
      std::vector<Value> in;
      for (size_t i = 0; i < k.num_inputs(); ++i) {
        const Value& v = k.input_value(i);
        in.push_back(v.is_sequence() ? Value(v.sequence().items[pos]) : v);
      }
      std::vector<Value> out = k.run_subgraph(*body_, std::move(in));
      for (size_t j = 0; j < outs.size(); ++j) {
        outs[j].items.push_back(out[j].tensor());
        outs[j].elem_type = out[j].tensor().dtype();
      }
    }
    for (size_t j = 0; j < outs.size(); ++j) k.set_output(j, Value(std::move(outs[j])));
  }

 private:
  std::shared_ptr<const CompiledGraph> body_;
};

}  // namespace

void register_sequence(KernelRegistry& r) {
  r.add("SequenceMap", 17, kMaxOpset, [](const KernelInitContext& ctx) -> std::unique_ptr<Kernel> {
    return std::make_unique<SequenceMapKernel>(ctx);
  });
  sequence_empty(r);
  split_concat(r);
  optional_ops(r);
}

}  // namespace onyx
