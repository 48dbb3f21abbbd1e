// ONNX Runtime's quantized contrib ops (com.microsoft), the ones its
// quantizer emits in QOperator format and its dynamic-quantization fusions:
// QLinearAdd, QLinearMul, QGemm, QLinearConcat, QLinearSigmoid,
// QLinearLeakyRelu, QLinearWhere, MatMulIntegerToFloat, DynamicQuantizeMatMul.
// The pooling ones are in contrib_quantization_pool.cc.
//
// Requantization follows ORT's float order of operations (checked by
// experiment against onnxruntime) so that results are bit-equal: a value is
// scaled in float32 and rounded half to even, then saturated.
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "cpu/cpu_provider.h"
#include "cpu/elementwise_loops.h"
#include "cpu/gemm.h"
#include "cpu/gemm_vmath.h"
#include "cpu/matmul_plan.h"
#include "cpu/quantize_8bit.h"
#include "cpu/requantize_8bit.h"
#include "cpu/kernels/contrib_quantization.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"


namespace onyx {
namespace {

using namespace contrib_q;

// ---- QLinearAdd / QLinearMul ----

// How ORT combines one output element from integer a and b (already widened
// to float, zero points not subtracted). Scalar operands within a run are
// folded into a constant first, as ORT does, which changes float rounding.
struct AddMath {
  float ra, rb, fixed;  // a/c and b/c scale ratios; zc - (ra*za + rb*zb)
  AddMath(QParam a, QParam b, QParam c) {
    ra = a.scale / c.scale;
    rb = b.scale / c.scale;
    // ORT's compiler fuses ra * za + (rb * zb) into one multiply-add: with separate roundings
    // one residual add of BERT-base landed 153.5 (rounding to 154) where ORT has 153.49998.
    fixed = static_cast<float>(c.zero) - std::fma(ra, static_cast<float>(a.zero), rb * static_cast<float>(b.zero));
  }
  float both(float a, float b) const { return fma_small_int(a, ra, fma_small_int(b, rb, fixed)); }
  float fold_a(float a) const { return fixed + a * ra; }
  float fold_b(float b) const { return fixed + b * rb; }
};

template <class Q>
void qlinear_add_run(const Q* a, int64_t sa, const Q* b, int64_t sb, Q* y, int64_t n, const AddMath& m) {
  const bool is_signed = std::is_signed_v<Q>;
  auto bytes = [](const Q* p) { return reinterpret_cast<const uint8_t*>(p); };
  if (sa == 1 && sb == 1) {
    qlinear_add_8bit(bytes(a), bytes(b), n, is_signed, m.ra, m.rb, m.fixed, reinterpret_cast<uint8_t*>(y));
  } else if (sa == 1 && sb == 0) {  // fma(a, ra, fma(a, 0, folded)) is fma(a, ra, folded)
    qlinear_add_8bit(bytes(a), bytes(a), n, is_signed, m.ra, 0.f, m.fold_b(static_cast<float>(b[0])),
                     reinterpret_cast<uint8_t*>(y));
  } else if (sa == 0 && sb == 1) {
    qlinear_add_8bit(bytes(b), bytes(b), n, is_signed, m.rb, 0.f, m.fold_a(static_cast<float>(a[0])),
                     reinterpret_cast<uint8_t*>(y));
  } else {
    for (int64_t i = 0; i < n; ++i)
      y[i] = saturate<Q>(m.both(static_cast<float>(a[i * sa]), static_cast<float>(b[i * sb])));
  }
}

template <class Q>
void qlinear_mul_run(const Q* a, int64_t sa, const Q* b, int64_t sb, Q* y, int64_t n, QParam pa, QParam pb, QParam pc) {
  const float ratio = pa.scale * pb.scale / pc.scale;
  // The product of two zero-point-shifted 8-bit values is exact in float, so the operands commute.
  if (sa == 0 && sb == 1) return qlinear_mul_run(b, sb, a, sa, y, n, pb, pa, pc);
  auto mul = [&](const Q* x, const Q* other, int64_t len, Q* out) {
    qlinear_mul_8bit(reinterpret_cast<const uint8_t*>(x), reinterpret_cast<const uint8_t*>(other), len,
                     std::is_signed_v<Q>, static_cast<float>(pa.zero), static_cast<float>(pb.zero), ratio,
                     static_cast<float>(pc.zero), reinterpret_cast<uint8_t*>(out));
  };
  if (sa == 1 && sb == 1) return mul(a, b, n, y);
  if (sa == 1 && sb == 0) {  // b repeats one value: the vector loop reads it from a filled block
    std::array<Q, 256> repeated;
    repeated.fill(b[0]);
    for (int64_t i = 0; i < n; i += 256) mul(a + i, repeated.data(), std::min<int64_t>(256, n - i), y + i);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    int32_t prod = (static_cast<int32_t>(a[i * sa]) - pa.zero) * (static_cast<int32_t>(b[i * sb]) - pb.zero);
    y[i] = saturate<Q>(static_cast<float>(prod) * ratio + static_cast<float>(pc.zero));  // ORT adds zc before rounding
  }
}

// Whether `row` repeats along the rows of the last dim of `full` (the output's shape):
// squeeze-excitation's per-channel scale on a channel-last map, [1, 1, 1, C] against
// [N, H, W, C].
bool repeats_along_rows(const Shape& full, const Shape& row, const Shape& ys) {
  if (full != ys || full.empty() || row.empty() || full.back() <= 0 || row.back() != full.back()) return false;
  return shape_numel(row) == full.back();
}

// y = a op b where one operand is a row repeated (repeats_along_rows): broadcast
// pieces would be one row each, a call per row (C = 32 on a 112 x 112 map: 12544);
// the row tiled to ~1 KiB lets the vector loops take the rows in blocks. Same
// per-element arithmetic as the pieces, so the same bytes.
template <bool kMul, class Q>
void qlinear_binary_by_row_blocks(const Q* a, const Q* b, bool b_is_row, Q* y, int64_t total, int64_t C,
                                  QParam pa, QParam pb, QParam pc, ThreadPool* pool) {
  const int64_t rows = std::max<int64_t>(1, 1024 / C), block = rows * C;
  const Q* row = b_is_row ? b : a;
  std::vector<Q> tiled(static_cast<size_t>(block));
  for (int64_t r = 0; r < rows; ++r) std::copy(row, row + C, tiled.begin() + r * C);
  const AddMath m(pa, pb, pc);
  parallel_for(total >= ew::kParallelElements ? pool : nullptr, (total + block - 1) / block, [&](int64_t k0, int64_t k1) {
    for (int64_t k = k0; k < k1; ++k) {
      const int64_t off = k * block, n = std::min(block, total - off);
      const Q* pa_data = b_is_row ? a + off : tiled.data();
      const Q* pb_data = b_is_row ? tiled.data() : b + off;
      if constexpr (kMul) qlinear_mul_run(pa_data, 1, pb_data, 1, y + off, n, pa, pb, pc);
      else qlinear_add_run(pa_data, 1, pb_data, 1, y + off, n, m);
    }
  });
}

template <bool kMul>
void run_qlinear_binary(KernelContext& ctx) {
  const char* op = kMul ? "QLinearMul" : "QLinearAdd";
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(3);
  if (B.dtype() != A.dtype())
    kernel_fail(std::string(op) + ": B type " + dtype_name(B.dtype()) + " differs from A type " + dtype_name(A.dtype()));
  dispatch_q8(A.dtype(), std::string(op) + " input A", [&](auto tag) {
    using Q = typename decltype(tag)::type;
    QParam pa = read_qparam(ctx, 1, 2, A.dtype(), "A");
    QParam pb = read_qparam(ctx, 4, 5, A.dtype(), "B");
    QParam pc = read_qparam(ctx, 6, 7, A.dtype(), "C");
    Shape ys = broadcast_shapes({A.shape(), B.shape()});
    Tensor& Y = ctx.allocate_output(0, A.dtype(), ys);
    const Q* a = A.data<Q>();
    const Q* b = B.data<Q>();
    Q* y = Y.data<Q>();
    const bool b_is_row = repeats_along_rows(A.shape(), B.shape(), ys);
    if (b_is_row || repeats_along_rows(B.shape(), A.shape(), ys))
      return qlinear_binary_by_row_blocks<kMul>(a, b, b_is_row, y, Y.numel(), ys.back(), pa, pb, pc,
                                                ctx.thread_pool());
    AddMath m(pa, pb, pc);
    // Residual adds, SiLU's x * sigmoid(x), and squeeze-excitation's per-channel scales
    // (rows of C channel-last, or planes against one value): vector loops over the pool.
    ew::for_each_broadcast_piece(A.shape(), B.shape(), ys, ctx.thread_pool(),
                                 [&](int64_t oa, int64_t sa, int64_t ob, int64_t sb, int64_t oy, int64_t n) {
                                   if constexpr (kMul) {
                                     qlinear_mul_run(a + oa, sa, b + ob, sb, y + oy, n, pa, pb, pc);
                                   } else {
                                     qlinear_add_run(a + oa, sa, b + ob, sb, y + oy, n, m);
                                   }
                                 });
  });
}

// ---- QGemm ----

struct QGemmAttrs {
  bool trans_a = false, trans_b = false;
  float alpha = 1.f;
};

void run_qgemm(KernelContext& ctx, const QGemmAttrs& at, const PackedInt8B* packed_b) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(3);
  if (A.rank() != 2 || B.rank() != 2)
    kernel_fail("QGemm A and B must be 2-D, got " + shape_to_string(A.shape()) + " and " + shape_to_string(B.shape()));
  dispatch_q8(A.dtype(), "QGemm input A", [](auto) {});
  dispatch_q8(B.dtype(), "QGemm input B", [](auto) {});
  const int64_t M = at.trans_a ? A.dim(1) : A.dim(0), K = at.trans_a ? A.dim(0) : A.dim(1);
  const int64_t KB = at.trans_b ? B.dim(1) : B.dim(0), N = at.trans_b ? B.dim(0) : B.dim(1);
  if (K != KB)
    kernel_fail("QGemm inner dimensions differ: op(A) " + std::to_string(M) + "x" + std::to_string(K) + ", op(B) " +
                std::to_string(KB) + "x" + std::to_string(N));
  QParam pa = read_qparam(ctx, 1, 2, A.dtype(), "a");
  const Tensor& bs = ctx.input(4);
  if (bs.dtype() != DataType::Float) kernel_fail("QGemm b_scale must be float, got " + dtype_name(bs.dtype()));
  if (bs.numel() != 1 && bs.numel() != N)
    kernel_fail("QGemm b_scale must have 1 or N=" + std::to_string(N) + " values, got " + shape_to_string(bs.shape()));
  const Tensor* bz = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  if (bz && bz->dtype() != B.dtype())
    kernel_fail("QGemm b_zero_point type " + dtype_name(bz->dtype()) + " differs from B type " + dtype_name(B.dtype()));
  if (bz && bz->numel() != 1 && bz->numel() != N)
    kernel_fail("QGemm b_zero_point must have 1 or N=" + std::to_string(N) + " values, got " + shape_to_string(bz->shape()));
  const Tensor* C = ctx.has_input(6) ? &ctx.input(6) : nullptr;
  if (C && C->dtype() != DataType::Int32) kernel_fail("QGemm C must be int32, got " + dtype_name(C->dtype()));
  if (C) {
    if (C->rank() > 2) kernel_fail("QGemm C must have rank <= 2, got " + shape_to_string(C->shape()));
    Shape cs = C->shape();
    for (size_t i = 0; i < cs.size(); ++i) {
      int64_t want = i + cs.size() == 2 ? M : N;  // aligned from the right
      if (cs[i] != 1 && cs[i] != want)
        kernel_fail("QGemm C shape " + shape_to_string(cs) + " does not broadcast to " + std::to_string(M) + "x" +
                    std::to_string(N));
    }
  }
  bool quant_out = ctx.has_input(7);
  DataType out_type = DataType::Float;
  QParam py;
  if (quant_out) {
    out_type = ctx.has_input(8) ? ctx.input(8).dtype() : A.dtype();
    dispatch_q8(out_type, "QGemm y_zero_point", [](auto) {});
    py = read_qparam(ctx, 7, 8, out_type, "y");
  }
  std::vector<int32_t> acc(static_cast<size_t>(M * N));
  if (M * N > 0) {
    std::vector<int32_t> zb;
    const int64_t zb_count = bz ? bz->numel() : 0;
    for (int64_t n = 0; n < zb_count; ++n) zb.push_back(static_cast<int32_t>(bz->int_at(n)));
    PackedInt8B local;
    if (!packed_b) local = PackedInt8B(B.raw(), B.dtype() == DataType::Int8, K, N, B.dim(1), at.trans_b);
    int8_gemm(M, Int8A{A.raw(), A.dtype() == DataType::Int8, A.dim(1), at.trans_a}, {pa.zero},
              packed_b ? *packed_b : local, zb, acc.data(), N, ctx.thread_pool());
  }
  // C as a bias row (the usual MatMul + Add fusion) joins the requantization; any other
  // broadcast is added first.
  const bool bias_row = C && C->numel() == N && (C->rank() == 1 || C->dim(0) == 1) && N > 1;
  if (C && !bias_row) {
    const std::vector<int64_t> c_off = broadcast_offsets(C->shape(), {M, N});
    for (int64_t i = 0; i < M * N; ++i) acc[i] += C->data<int32_t>()[c_off[i]];
  }
  const int32_t* bias = bias_row ? C->data<int32_t>() : nullptr;
  Tensor& Y = ctx.allocate_output(0, out_type, {M, N});
  // ORT's per-column multiplier: alpha * a_scale * b_scale[n] (/ y_scale).
  std::vector<float> mult(static_cast<size_t>(N));
  const float* b_scales = bs.data<float>();
  const int64_t b_step = bs.numel() == 1 ? 0 : 1;
  for (int64_t n = 0; n < N; ++n) {
    float m = at.alpha * pa.scale * b_scales[n * b_step];
    mult[n] = quant_out ? m / py.scale : m;
  }
  if (!quant_out) {
    float* y = Y.data<float>();
    for (int64_t r = 0; r < M; ++r)
      for (int64_t n = 0; n < N; ++n)
        y[r * N + n] = static_cast<float>(acc[r * N + n] + (bias ? bias[n] : 0)) * mult[n];
    return;
  }
  requantize_rows_8bit(acc.data(), M, N, N, bias, mult.data(), static_cast<float>(py.zero),
                       out_type == DataType::Int8, static_cast<uint8_t*>(Y.raw()), N);
}

// ---- table ops: QLinearSigmoid, QLinearLeakyRelu, QLinearConcat, QLinearWhere ----

// For every 8-bit code x: quantize(fn(dequantize(x))) with ORT's float steps
// (x_scale * (x - x_zp), then / y_scale, round half to even, + y_zp).
using Table = std::array<uint8_t, 256>;

template <class Q, class Fn>
Table build_table(QParam x, QParam y, Fn&& fn) {
  std::array<float, 256> in{}, out{};
  for (int i = 0; i < 256; ++i) {
    Q code = static_cast<Q>(static_cast<uint8_t>(i));
    in[i] = x.scale * static_cast<float>(static_cast<int32_t>(code) - x.zero);
  }
  fn(in.data(), out.data());
  Table t{};
  for (int i = 0; i < 256; ++i) {
    Q q = saturate<Q>(round_half_even(out[i] / y.scale) + static_cast<float>(y.zero));
    t[i] = static_cast<uint8_t>(q);
  }
  return t;
}

Table build_table_for(DataType t, QParam x, QParam y, const std::function<void(const float*, float*)>& fn) {
  return dispatch_q8(t, "input", [&](auto tag) { return build_table<typename decltype(tag)::type>(x, y, fn); });
}

// Y[i] = table[X[i]] (by the byte's bits), large tensors in chunks over the pool.
void apply_table(const uint8_t* table, const Tensor& X, Tensor& Y, ThreadPool* pool = nullptr) {
  const uint8_t* x = static_cast<const uint8_t*>(X.raw());
  uint8_t* y = static_cast<uint8_t*>(Y.raw());
  const int64_t n = X.numel();
  ew::for_each_chunk(n >= ew::kParallelElements ? pool : nullptr, n,
                     [&](int64_t b0, int64_t len) { lookup_8bit(table, x + b0, len, y + b0); });
}

void apply_table(const Table& t, const Tensor& X, Tensor& Y, ThreadPool* pool = nullptr) {
  apply_table(t.data(), X, Y, pool);
}

// Y = per-channel tables [C, 256] applied along `axis` of X: planes of one channel (NCHW) take
// the vector lookup, channel-last rows one byte per channel.
void apply_channel_tables(const uint8_t* tables, int64_t axis, const Tensor& X, Tensor& Y, ThreadPool* pool) {
  const uint8_t* x = static_cast<const uint8_t*>(X.raw());
  uint8_t* y = static_cast<uint8_t*>(Y.raw());
  const int64_t C = X.dim(static_cast<int>(axis)), n = X.numel();
  int64_t inner = 1;
  for (int d = static_cast<int>(axis) + 1; d < X.rank(); ++d) inner *= X.dim(d);
  if (n == 0) return;
  if (inner > 1) {
    parallel_for(n >= ew::kParallelElements ? pool : nullptr, n / inner, [&](int64_t p0, int64_t p1) {
      for (int64_t p = p0; p < p1; ++p) lookup_8bit(tables + (p % C) * 256, x + p * inner, inner, y + p * inner);
    });
    return;
  }
  parallel_for(n >= ew::kParallelElements ? pool : nullptr, n / C, [&](int64_t r0, int64_t r1) {
    lookup_8bit_channels(tables, C, x + r0 * C, r1 - r0, y + r0 * C);
  });
}

// com.onyx LookupTable(X, table): any function of one 8-bit value, tabulated for its 256
// codes by the optimizer (lookup_table_fusion, qdq_fusion); a [C, 256] table holds one per
// channel along `axis`.
void run_lookup_table(KernelContext& ctx, int64_t axis) {
  const Tensor& X = ctx.input(0);
  const Tensor& T = ctx.input(1);
  dispatch_q8(X.dtype(), "LookupTable input X", [](auto) {});
  dispatch_q8(T.dtype(), "LookupTable table", [](auto) {});
  const uint8_t* tables = static_cast<const uint8_t*>(T.raw());
  if (T.rank() == 2 && T.dim(1) == 256) {
    const int64_t a = normalize_axis(axis, X.rank());
    if (X.dim(static_cast<int>(a)) != T.dim(0))
      kernel_fail("LookupTable: " + std::to_string(T.dim(0)) + " tables for " + std::to_string(X.dim(static_cast<int>(a))) +
                  " channels along axis " + std::to_string(a) + " of X " + shape_to_string(X.shape()));
    apply_channel_tables(tables, a, X, ctx.allocate_output(0, T.dtype(), X.shape()), ctx.thread_pool());
    return;
  }
  if (T.numel() != 256)
    kernel_fail("LookupTable: table " + shape_to_string(T.shape()) + " is neither [256] nor [channels, 256]");
  apply_table(tables, X, ctx.allocate_output(0, T.dtype(), X.shape()), ctx.thread_pool());
}

// Inputs X, X_scale, X_zero_point?, Y_scale, Y_zero_point?.
void run_lookup_op(KernelContext& ctx, const char* op, const std::function<void(const float*, float*)>& fn) {
  const Tensor& X = ctx.input(0);
  dispatch_q8(X.dtype(), std::string(op) + " input X", [](auto) {});
  QParam px = read_qparam(ctx, 1, 2, X.dtype(), "X");
  QParam py = read_qparam(ctx, 3, 4, X.dtype(), "Y");
  Table t = build_table_for(X.dtype(), px, py, fn);
  apply_table(t, X, ctx.allocate_output(0, X.dtype(), X.shape()), ctx.thread_pool());
}

const auto kIdentity = [](const float* in, float* out) { std::copy(in, in + 256, out); };

bool same_params(QParam a, QParam b) { return a.scale == b.scale && a.zero == b.zero; }

// Inputs Y_scale, Y_zero_point, then (X, X_scale, X_zero_point) per input.
void run_qlinear_concat(KernelContext& ctx, int64_t axis_attr) {
  size_t n_in = ctx.num_inputs();
  if (n_in < 5 || (n_in - 2) % 3 != 0)
    kernel_fail("QLinearConcat needs Y_scale, Y_zero_point and (X, X_scale, X_zero_point) triples, got " +
                std::to_string(n_in) + " inputs");
  const Tensor& yz = ctx.input(1);
  DataType qt = yz.dtype();
  dispatch_q8(qt, "QLinearConcat Y_zero_point", [](auto) {});
  QParam py = read_qparam(ctx, 0, 1, qt, "Y");
  size_t count = (n_in - 2) / 3;
  const Tensor& first = ctx.input(2);
  int64_t rank = first.rank();
  int64_t axis = normalize_axis(axis_attr, std::max<int64_t>(rank, 1));
  Shape ys = first.shape();
  ys[axis] = 0;
  for (size_t k = 0; k < count; ++k) {
    const Tensor& X = ctx.input(2 + 3 * k);
    if (X.dtype() != qt)
      kernel_fail("QLinearConcat input " + std::to_string(k) + " type " + dtype_name(X.dtype()) + " differs from Y type " +
                  dtype_name(qt));
    if (X.rank() != rank) kernel_fail("QLinearConcat inputs must have the same rank");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && X.dim(d) != first.dim(d))
        kernel_fail("QLinearConcat input " + std::to_string(k) + " shape " + shape_to_string(X.shape()) +
                    " differs from " + shape_to_string(first.shape()) + " outside axis " + std::to_string(axis));
    ys[axis] += X.dim(axis);
  }
  Tensor& Y = ctx.allocate_output(0, qt, ys);
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= ys[d];
  for (int64_t d = axis + 1; d < rank; ++d) inner *= ys[d];
  // Each input's piece of every output row: copied, or requantized through a table. Rows are
  // split over the pool (channel-last concatenations have one short row per pixel).
  struct Piece {
    const uint8_t* x;
    int64_t row, at;
    bool copy;
    Table table;
  };
  std::vector<Piece> pieces(count);
  for (size_t k = 0, at = 0; k < count; ++k) {
    const Tensor& X = ctx.input(2 + 3 * k);
    QParam px = read_qparam(ctx, 3 + 3 * k, 4 + 3 * k, qt, "X" + std::to_string(k));
    Piece& p = pieces[k];
    p = {static_cast<const uint8_t*>(X.raw()), X.dim(static_cast<int>(axis)) * inner, static_cast<int64_t>(at),
         same_params(px, py), Table{}};
    if (!p.copy) p.table = build_table_for(qt, px, py, kIdentity);
    at += static_cast<size_t>(p.row);
  }
  uint8_t* y = static_cast<uint8_t*>(Y.raw());
  const int64_t y_row = ys[axis] * inner;
  parallel_for(Y.numel() >= ew::kParallelElements ? ctx.thread_pool() : nullptr, outer, [&](int64_t o0, int64_t o1) {
    for (const Piece& p : pieces)
      for (int64_t o = o0; o < o1; ++o) {
        const uint8_t* src = p.x + o * p.row;
        uint8_t* dst = y + o * y_row + p.at;
        if (p.copy) std::copy(src, src + p.row, dst);
        else lookup_8bit(p.table.data(), src, p.row, dst);
      }
  });
}

// Inputs condition, X, x_scale, x_zp, Y, y_scale, y_zp, z_scale, z_zp.
void run_qlinear_where(KernelContext& ctx) {
  const Tensor& C = ctx.input(0);
  const Tensor& X = ctx.input(1);
  const Tensor& Yin = ctx.input(4);
  if (C.dtype() != DataType::Bool) kernel_fail("QLinearWhere condition must be bool, got " + dtype_name(C.dtype()));
  DataType qt = X.dtype();
  dispatch_q8(qt, "QLinearWhere input X", [](auto) {});
  if (Yin.dtype() != qt) kernel_fail("QLinearWhere Y type " + dtype_name(Yin.dtype()) + " differs from X type " + dtype_name(qt));
  QParam px = read_qparam(ctx, 2, 3, qt, "x");
  QParam py = read_qparam(ctx, 5, 6, qt, "y");
  QParam pz = read_qparam(ctx, 7, 8, qt, "z");
  Table tx = build_table_for(qt, px, pz, kIdentity), ty = build_table_for(qt, py, pz, kIdentity);
  bool copy_x = same_params(px, pz), copy_y = same_params(py, pz);
  Shape zs = broadcast_shapes({C.shape(), X.shape(), Yin.shape()});
  Tensor& Z = ctx.allocate_output(0, qt, zs);
  std::vector<int64_t> oc = broadcast_offsets(C.shape(), zs), ox = broadcast_offsets(X.shape(), zs),
                       oy = broadcast_offsets(Yin.shape(), zs);
  const bool* c = C.data<bool>();
  const uint8_t* x = static_cast<const uint8_t*>(X.raw());
  const uint8_t* yv = static_cast<const uint8_t*>(Yin.raw());
  uint8_t* z = static_cast<uint8_t*>(Z.raw());
  for (int64_t i = 0, n_ = Z.numel(); i < n_; ++i) {
    if (c[oc[i]]) z[i] = copy_x ? x[ox[i]] : tx[x[ox[i]]];
    else z[i] = copy_y ? yv[oy[i]] : ty[yv[oy[i]]];
  }
}

// ---- MatMulIntegerToFloat, DynamicQuantizeMatMul ----

// y = float((A - a_zp) x (B - b_zp)) * (a_scale * b_scale[n]) + bias[n], the
// float steps of ORT's scale-and-bias output stage.
void integer_matmul_to_float(KernelContext& ctx, const Tensor& A, const Tensor* a_zp, float a_scale, const Tensor& B,
                             const PackedInt8B* packed_b, const Tensor& b_scale, const Tensor* b_zp, const Tensor* bias) {
  MatMulPlan p = plan_matmul(A.shape(), B.shape());
  if (b_scale.dtype() != DataType::Float) kernel_fail("b_scale must be float, got " + dtype_name(b_scale.dtype()));
  if (b_scale.numel() != 1 && !(b_scale.rank() == 1 && b_scale.numel() == p.N))
    kernel_fail("b_scale must be a scalar or have N=" + std::to_string(p.N) + " values, got shape " +
                shape_to_string(b_scale.shape()));
  if (b_zp && b_zp->numel() != 1 && !(b_zp->rank() == 1 && b_zp->numel() == p.N))
    kernel_fail("b_zero_point must be a scalar or have N=" + std::to_string(p.N) + " values, got shape " +
                shape_to_string(b_zp->shape()));
  if (bias && (bias->dtype() != DataType::Float || bias->rank() != 1 || bias->numel() != p.N))
    kernel_fail("bias must be a float vector of N=" + std::to_string(p.N) + " values, got " + dtype_name(bias->dtype()) +
                " " + shape_to_string(bias->shape()));
  Tensor& Y = ctx.allocate_output(0, DataType::Float, p.out_shape);
  int8_matmul_to_float(p, A, a_zp, a_scale, B, b_zp, b_scale, packed_b, bias ? bias->data<float>() : nullptr,
                       Y.data<float>(), ctx.thread_pool(), "A", "B");
}

// Inputs A, B, a_scale, b_scale, a_zero_point?, b_zero_point?, bias?.
void run_matmul_integer_to_float(KernelContext& ctx, const PackedInt8B* packed_b) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  const Tensor& as = ctx.input(2);
  if (as.dtype() != DataType::Float || as.numel() != 1)
    kernel_fail("MatMulIntegerToFloat a_scale must be a float scalar, got " + dtype_name(as.dtype()) + " " +
                shape_to_string(as.shape()));
  const Tensor* az = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if (az && az->numel() != 1) kernel_fail("MatMulIntegerToFloat a_zero_point must be a scalar");
  if (az && az->dtype() != A.dtype()) kernel_fail("MatMulIntegerToFloat a_zero_point type differs from A");
  const Tensor* bz = ctx.has_input(5) ? &ctx.input(5) : nullptr;
  if (bz && bz->dtype() != B.dtype()) kernel_fail("MatMulIntegerToFloat b_zero_point type differs from B");
  integer_matmul_to_float(ctx, A, az, as.data<float>()[0], B, packed_b, ctx.input(3), bz,
                          ctx.has_input(6) ? &ctx.input(6) : nullptr);
}

// Inputs A (float), B, b_scale, b_zero_point?, bias?.
void run_dynamic_quantize_matmul(KernelContext& ctx, const PackedInt8B* packed_b) {
  const Tensor& A = ctx.input(0);
  const Tensor& B = ctx.input(1);
  if (A.dtype() != DataType::Float) kernel_fail("DynamicQuantizeMatMul A must be float, got " + dtype_name(A.dtype()));
  const Tensor* bz = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (bz && bz->dtype() != B.dtype()) kernel_fail("DynamicQuantizeMatMul b_zero_point type differs from B");
  Tensor a(DataType::UInt8, A.shape()), a_zp(DataType::UInt8, Shape{});
  const float a_scale = quantize_u8_dynamic(A.data<float>(), A.numel(), a.data<uint8_t>(), a_zp.data<uint8_t>()[0]);
  integer_matmul_to_float(ctx, a, &a_zp, a_scale, B, packed_b, ctx.input(2), bz, ctx.has_input(4) ? &ctx.input(4) : nullptr);
}

// ---- QLinearSoftmax ----

// ORT's algorithm, whose rounding users see: exp(x - max) comes from a float
// table scaled up by a power that keeps the row sum finite, y_scale is used
// as floor(1 / y_scale), and x's zero point cancels out. For int8 ORT wraps
// results above 127; Onyx saturates (differs only where p * floor(1/y_scale)
// + y_zp > 127).
// One softmax row of D values `stride` apart: e[255 + x - max] / sum, times floor(1 / y_scale).
template <class Q>
void softmax_row(const Q* x, Q* y, int64_t D, int64_t stride, const float* e, float y_mult, float zero) {
  int32_t xmax = std::numeric_limits<Q>::lowest();
  for (int64_t i = 0; i < D; ++i) xmax = std::max<int32_t>(xmax, x[i * stride]);
  const float* er = e + 255 - xmax;  // er[v] = e[255 + v - max]
  float sum = 0.f;
  for (int64_t i = 0; i < D; ++i) sum += er[x[i * stride]];
  constexpr float kTwo23 = 8388608.f, lo = std::numeric_limits<Q>::lowest(), hi = std::numeric_limits<Q>::max();
  if (!(y_mult < kTwo23 / 2)) {
    for (int64_t i = 0; i < D; ++i)
      y[i * stride] = saturate<Q>(round_half_even(er[x[i * stride]] * y_mult / sum) + zero);
    return;
  }
  // p * y_mult lies in [0, 2^22): adding 2^23 rounds it half to even, without branches.
  for (int64_t i = 0; i < D; ++i) {
    const float v = ((er[x[i * stride]] * y_mult / sum + kTwo23) - kTwo23) + zero;
    y[i * stride] = static_cast<Q>(static_cast<int32_t>(std::min(std::max(v, lo), hi)));
  }
}

void run_qlinear_softmax(KernelContext& ctx, int64_t axis_attr, int64_t opset) {
  const Tensor& X = ctx.input(0);
  dispatch_q8(X.dtype(), "QLinearSoftmax input X", [&](auto tag) {
    using Q = typename decltype(tag)::type;
    QParam px = read_qparam(ctx, 1, 2, X.dtype(), "X");
    QParam py = read_qparam(ctx, 3, 4, X.dtype(), "Y");
    Tensor& Y = ctx.allocate_output(0, X.dtype(), X.shape());
    if (X.numel() == 0) return;
    const int64_t axis = normalize_axis(axis_attr, std::max<int64_t>(X.rank(), 1));
    int64_t before = 1, D = 1, after = 1;
    for (int64_t d = 0; d < X.rank(); ++d) (d < axis ? before : d == axis ? D : after) *= X.dim(d);
    if (opset < 13) {  // the old softmax flattens everything from axis on
      D *= after;
      after = 1;
    }
    // logf, as ORT's log() of a float resolves to: the double log put one output of BERT-base
    // one step off.
    double shift = static_cast<double>(std::log(std::numeric_limits<float>::max() / static_cast<float>(D)));
    shift = std::max(0.0, shift - 5.0) / static_cast<double>(px.scale);
    std::array<float, 256> e{};  // e[255 + x - max]
    for (int i = 0; i < 256; ++i)
      e[i] = static_cast<float>(std::exp((static_cast<double>(i) - 255 + shift) * static_cast<double>(px.scale)));
    const float y_mult = std::floor(1.0f / py.scale), zero = static_cast<float>(py.zero);
    const Q* x = X.data<Q>();
    Q* y = Y.data<Q>();
    parallel_for(X.numel() >= ew::kParallelElements ? ctx.thread_pool() : nullptr, before * after,
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     const int64_t offset = r / after * D * after + r % after;
                     softmax_row(x + offset, y + offset, D, after, e.data(), y_mult, zero);
                   }
                 });
  });
}

}  // namespace

std::unique_ptr<Kernel> make_qgemm(const KernelInitContext& ic) {
  QGemmAttrs at;
  at.trans_a = ic.get_int("transA", 0) != 0;
  at.trans_b = ic.get_int("transB", 0) != 0;
  at.alpha = ic.get_float("alpha", 1.f);
  std::shared_ptr<const PackedInt8B> packed;
  const Tensor* b = ic.constant_input(3);
  if (b && b->rank() == 2 && b->numel() > 0 && (b->dtype() == DataType::UInt8 || b->dtype() == DataType::Int8))
    packed = std::make_shared<const PackedInt8B>(b->raw(), b->dtype() == DataType::Int8, at.trans_b ? b->dim(1) : b->dim(0),
                                                 at.trans_b ? b->dim(0) : b->dim(1), b->dim(1), at.trans_b);
  return std::make_unique<LambdaKernel>([at, packed](KernelContext& ctx) { run_qgemm(ctx, at, packed.get()); });
}

// A MatMulIntegerToFloat / DynamicQuantizeMatMul kernel whose constant 2-D B
// (input 1) is packed once.
template <void (*Run)(KernelContext&, const PackedInt8B*)>
std::unique_ptr<Kernel> make_int8_to_float(const KernelInitContext& ic) {
  std::shared_ptr<const PackedInt8B> packed = pack_constant_int8_b(ic.constant_input(1));
  return std::make_unique<LambdaKernel>([packed](KernelContext& ctx) { Run(ctx, packed.get()); });
}

void register_contrib_quantization(KernelRegistry& r) {
  contrib_q::register_contrib_quantization_pool(r);
  r.add("QLinearAdd", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_qlinear_binary<false>; }),
        kMicrosoft);
  r.add("QLinearMul", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_qlinear_binary<true>; }),
        kMicrosoft);
  r.add("QGemm", 1, kMaxOpset, make_qgemm, kMicrosoft);
  r.add("QLinearSigmoid", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) {
          return [](KernelContext& ctx) {
            run_lookup_op(ctx, "QLinearSigmoid", [](const float* in, float* out) { vm::sigmoid(in, out, 256); });
          };
        }),
        kMicrosoft);
  r.add("QLinearLeakyRelu", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          float alpha = ic.get_float("alpha", 0.01f);
          return [=](KernelContext& ctx) {
            run_lookup_op(ctx, "QLinearLeakyRelu", [=](const float* in, float* out) {
              for (int i = 0; i < 256; ++i) out[i] = in[i] >= 0.f ? in[i] : alpha * in[i];
            });
          };
        }),
        kMicrosoft);
  r.add("QLinearConcat", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          int64_t axis = ic.get_int("axis");
          return [=](KernelContext& ctx) { run_qlinear_concat(ctx, axis); };
        }),
        kMicrosoft);
  r.add("MatMulIntegerToFloat", 1, kMaxOpset, make_int8_to_float<run_matmul_integer_to_float>,
        kMicrosoft);
  r.add("DynamicQuantizeMatMul", 1, kMaxOpset, make_int8_to_float<run_dynamic_quantize_matmul>,
        kMicrosoft);
  r.add("QLinearSoftmax", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          int64_t opset = ic.get_int("opset");
          int64_t axis = ic.get_int("axis", opset < 13 ? 1 : -1);
          return [=](KernelContext& ctx) { run_qlinear_softmax(ctx, axis, opset); };
        }),
        kMicrosoft);
  r.add("LookupTable", 1, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          const int64_t axis = ic.get_int("axis", 1);
          return [axis](KernelContext& ctx) { run_lookup_table(ctx, axis); };
        }),
        "com.onyx");
  r.add("QLinearWhere", 1, kMaxOpset, lambda_factory([](const KernelInitContext&) { return run_qlinear_where; }),
        kMicrosoft);
}

}  // namespace onyx
