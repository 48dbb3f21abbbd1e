// The com.microsoft ops of LLM exports (onnxruntime-genai's model builder,
// ORT's MatMulNBitsQuantizer): GatherBlockQuantized (int4 embedding tables),
// RotaryEmbedding; MatMulNBits and GroupQueryAttention have their own files
// (contrib_matmul_nbits.cc, contrib_gqa.cc). Behaviour checked against ONNX Runtime 1.31's CPU
// kernels (scripts/contrib_cases/llm.py).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"
#include "cpu/kernels/rotary.h"

namespace onyx {

void register_contrib_matmul_nbits(KernelRegistry& r);  // contrib_matmul_nbits.cc
void register_contrib_gqa(KernelRegistry& r);           // contrib_gqa.cc

namespace {

const char* kMicrosoft = "com.microsoft";
std::string S(int64_t v) { return std::to_string(v); }

int64_t normalize_axis(int64_t axis, int64_t rank, const std::string& what) {
  if (axis < -rank || axis >= rank) kernel_fail(what + " " + S(axis) + " is out of range for rank " + S(rank));
  return axis < 0 ? axis + rank : axis;
}

// ---- GatherBlockQuantized ----

// The codes of data (or zero_points): int4 / uint4 tensors hold one code per
// element; uint8 holds two 4-bit codes per byte (low nibble first, packed
// along the last axis) or one 8-bit code.
struct QuantCodes {
  const Tensor* t = nullptr;
  bool nibbles = false;
  int64_t at(int64_t i) const {
    if (!nibbles) return t->int_at(i);
    uint8_t byte = t->data<uint8_t>()[i / 2];
    return i % 2 ? byte >> 4 : byte & 15;
  }
};

Shape logical_shape(const Tensor& t, bool nibbles) {
  Shape s = t.shape();
  if (nibbles && !s.empty()) s.back() *= 2;
  return s;
}

KernelFactory gather_block_quantized_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t gather_attr = ic.get_int("gather_axis", 0), quant_attr = ic.get_int("quantize_axis", 1);
    int64_t block = ic.get_int("block_size", 128), bits = ic.get_int("bits", 4);
    if (block < 16 || (block & (block - 1)) != 0)
      kernel_fail("GatherBlockQuantized: block_size must be a power of 2 and at least 16, got " + S(block));
    if (bits != 4 && bits != 8) kernel_fail("GatherBlockQuantized: bits must be 4 or 8, got " + S(bits));
    return [=](KernelContext& ctx) {
      const Tensor& data = ctx.input(0);
      const Tensor& indices = ctx.input(1);
      const Tensor& scales = ctx.input(2);
      const Tensor* zp = ctx.has_input(3) ? &ctx.input(3) : nullptr;
      DataType dt = data.dtype();
      if (dt != DataType::Int4 && dt != DataType::UInt4 && dt != DataType::UInt8)
        kernel_fail("GatherBlockQuantized: data must be int4, uint4 or uint8, got " + dtype_name(dt));
      if ((dt == DataType::Int4 || dt == DataType::UInt4) && bits != 4)
        kernel_fail("GatherBlockQuantized: " + dtype_name(dt) + " data needs bits = 4, got " + S(bits));
      if (!dtype_is_float(scales.dtype())) kernel_fail("GatherBlockQuantized: scales must be float, got " + dtype_name(scales.dtype()));
      if (indices.dtype() != DataType::Int32 && indices.dtype() != DataType::Int64)
        kernel_fail("GatherBlockQuantized: indices must be int32 or int64, got " + dtype_name(indices.dtype()));
      if (zp && zp->dtype() != dt) kernel_fail("GatherBlockQuantized: zero_points type " + dtype_name(zp->dtype()) + " differs from data's");
      const bool nibbles = dt == DataType::UInt8 && bits == 4;
      const Shape shape = logical_shape(data, nibbles);
      const int64_t r = static_cast<int64_t>(shape.size());
      if (r < 1) kernel_fail("GatherBlockQuantized: data must have rank >= 1");
      const int64_t ga = normalize_axis(gather_attr, r, "GatherBlockQuantized: gather_axis");
      const int64_t qa = normalize_axis(quant_attr, r, "GatherBlockQuantized: quantize_axis");
      if (dt == DataType::UInt8 && qa != r - 1)
        kernel_fail("GatherBlockQuantized: uint8 data must be quantized along its last axis, got quantize_axis " + S(quant_attr));
      Shape scale_shape = shape;
      scale_shape[qa] = (shape[qa] + block - 1) / block;
      if (scales.shape() != scale_shape)
        kernel_fail("GatherBlockQuantized: scales shape " + shape_to_string(scales.shape()) + " should be " +
                    shape_to_string(scale_shape));
      if (zp && logical_shape(*zp, nibbles) != scale_shape &&
          !(nibbles && zp->shape().back() == (scale_shape.back() + 1) / 2 &&
            std::equal(scale_shape.begin(), scale_shape.end() - 1, zp->shape().begin())))
        kernel_fail("GatherBlockQuantized: zero_points shape " + shape_to_string(zp->shape()) + " does not match scales " +
                    shape_to_string(scale_shape));
      // Without zero points uint8 codes are unsigned around the middle, as in MatMulNBits.
      const int64_t default_zp = dt == DataType::UInt8 ? int64_t{1} << (bits - 1) : 0;
      int64_t outer = 1, inner = 1, qstride = 1;
      for (int64_t d = 0; d < ga; ++d) outer *= shape[d];
      for (int64_t d = ga + 1; d < r; ++d) inner *= shape[d];
      for (int64_t d = qa + 1; d < r; ++d) qstride *= shape[d];
      const int64_t G = shape[ga], Dq = shape[qa], nbq = scale_shape[qa];
      std::vector<int64_t> idx = indices.to_int64_vector();
      for (int64_t& i : idx) {
        if (i < -G || i >= G) kernel_fail("GatherBlockQuantized: index " + S(i) + " is outside [" + S(-G) + ", " + S(G) + ")");
        if (i < 0) i += G;
      }
      Shape out_shape(shape.begin(), shape.begin() + ga);
      out_shape.insert(out_shape.end(), indices.shape().begin(), indices.shape().end());
      out_shape.insert(out_shape.end(), shape.begin() + ga + 1, shape.end());
      std::vector<float> sc = load_floats<float>(scales);
      QuantCodes codes{&data, nibbles}, zcodes{zp, nibbles && zp};
      const int64_t n_idx = static_cast<int64_t>(idx.size());
      std::vector<float> out(static_cast<size_t>(outer * n_idx * inner));
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t t = 0; t < n_idx; ++t)
          for (int64_t i = 0; i < inner; ++i) {
            int64_t src = (o * G + idx[t]) * inner + i;
            int64_t q_outer = src / (qstride * Dq), q = (src / qstride) % Dq, q_inner = src % qstride;
            int64_t s = (q_outer * nbq + q / block) * qstride + q_inner;
            int64_t z = zp ? zcodes.at(s) : default_zp;
            out[(o * n_idx + t) * inner + i] = static_cast<float>(codes.at(src) - z) * sc[s];
          }
      store_floats(out.data(), ctx.allocate_output(0, scales.dtype(), out_shape));
    };
  });
}

// ---- RotaryEmbedding (com.microsoft) ----

// Cache rows per (batch, token): position_ids [B, S], or [1] holding the
// first position of every row.
std::vector<int64_t> rotary_rows(const Tensor& pos, int64_t B, int64_t Sq, int64_t max_pos, const char* op) {
  std::vector<int64_t> p = pos.to_int64_vector(), rows(static_cast<size_t>(B * Sq));
  if (pos.numel() == 1) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t s = 0; s < Sq; ++s) rows[b * Sq + s] = p[0] + s;
  } else if (pos.rank() == 2 && pos.dim(0) == B && pos.dim(1) == Sq) {
    rows = p;
  } else {
    kernel_fail(std::string(op) + ": position_ids shape " + shape_to_string(pos.shape()) + " should be [1] or [" + S(B) +
                ", " + S(Sq) + "]");
  }
  for (int64_t r : rows)
    if (r < 0 || r >= max_pos)
      kernel_fail(std::string(op) + ": position id " + S(r) + " is outside the cache of " + S(max_pos) + " rows");
  return rows;
}

void check_caches(const Tensor& c, const Tensor& s, const char* op) {
  if (c.rank() != 2 || c.shape() != s.shape())
    kernel_fail(std::string(op) + ": cos_cache " + shape_to_string(c.shape()) + " and sin_cache " + shape_to_string(s.shape()) +
                " must both be [max_position, rotary_dim / 2]");
}

// `scale` and `is_packed_batching` do not change ORT's CPU results: ignored likewise.
KernelFactory ms_rotary_embedding_factory() {
  return lambda_factory([](const KernelInitContext& ic) {
    int64_t num_heads = ic.get_int("num_heads", 0), rot_attr = ic.get_int("rotary_embedding_dim", 0);
    bool interleaved = ic.get_int("interleaved", 0) != 0;
    return [=](KernelContext& ctx) {
      const Tensor& x = ctx.input(0);
      const Tensor& cos_t = ctx.input(2);
      const Tensor& sin_t = ctx.input(3);
      if (!dtype_is_float(x.dtype()) || x.dtype() == DataType::Double)
        kernel_fail("RotaryEmbedding: input must be float, float16 or bfloat16, got " + dtype_name(x.dtype()));
      check_caches(cos_t, sin_t, "RotaryEmbedding");
      const int64_t rot = rot_attr > 0 ? rot_attr : 2 * cos_t.dim(1);
      if (2 * cos_t.dim(1) != rot)
        kernel_fail("RotaryEmbedding: cos_cache last dimension " + S(cos_t.dim(1)) + " should be rotary_embedding_dim / 2 = " + S(rot / 2));
      RotaryLayout l;
      if (x.rank() == 4) {
        l = {x.dim(0), x.dim(1), x.dim(2), x.dim(3), false};
      } else if (x.rank() == 3) {
        int64_t heads = num_heads > 0 ? num_heads : x.dim(2) / rot;
        if (heads <= 0 || x.dim(2) % heads != 0)
          kernel_fail("RotaryEmbedding: hidden size " + S(x.dim(2)) + " does not split into num_heads " + S(heads));
        l = {x.dim(0), heads, x.dim(1), x.dim(2) / heads, true};
      } else {
        kernel_fail("RotaryEmbedding: input must be 3-D [B, S, hidden] or 4-D [B, heads, S, head_size], got " +
                    shape_to_string(x.shape()));
      }
      if (rot > l.D || rot % 2 != 0)
        kernel_fail("RotaryEmbedding: rotary dim " + S(rot) + " must be even and at most head size " + S(l.D));
      std::vector<int64_t> rows = rotary_rows(ctx.input(1), l.B, l.S, cos_t.dim(0), "RotaryEmbedding");
      std::vector<float> xv = load_floats<float>(x), c_scratch, s_scratch;
      rotary_rotate(xv.data(), xv.data(), l, float_values(cos_t, c_scratch), float_values(sin_t, s_scratch), rot,
                    interleaved, rows);
      store_floats(xv.data(), ctx.allocate_output(0, x.dtype(), x.shape()));
    };
  });
}

}  // namespace

void register_contrib_llm(KernelRegistry& r) {
  register_contrib_matmul_nbits(r);
  register_contrib_gqa(r);
  r.add("GatherBlockQuantized", 1, kMaxOpset, gather_block_quantized_factory(), kMicrosoft);
  r.add("RotaryEmbedding", 1, kMaxOpset, ms_rotary_embedding_factory(), kMicrosoft);
}

}  // namespace onyx
