// DeformConv (opsets 19, 22): convolution whose sampling locations are moved
// by per-position offsets (linear interpolation between input elements; samples
// outside the input read zero), optionally weighted by a mask. N-D, with groups
// and offset groups, from the ONNX spec.
#include <cmath>
#include <string>
#include <vector>

#include "cpu/conv_geometry.h"
#include "cpu/cpu_provider.h"
#include "cpu/float_values.h"

namespace onyx {
namespace {

std::string S(int64_t v) { return std::to_string(v); }

template <class A>
void deform_conv_typed(KernelContext& ctx, const SpatialAttrs& sa, int64_t group, int64_t offset_group) {
  const Tensor& x = ctx.input(0);
  const Tensor& w = ctx.input(1);
  const Tensor& off = ctx.input(2);
  const Tensor* bias = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const Tensor* mask = ctx.has_input(4) ? &ctx.input(4) : nullptr;
  if (x.rank() < 3) kernel_fail("DeformConv: X must have rank >= 3, got " + shape_to_string(x.shape()));
  if (w.rank() != x.rank()) kernel_fail("DeformConv: W rank differs from X rank");
  const int nd = static_cast<int>(x.rank()) - 2;
  const int64_t N = x.dim(0), C = x.dim(1), M = w.dim(0), Cg = w.dim(1);
  if (group <= 0 || offset_group <= 0) kernel_fail("DeformConv: group and offset_group must be positive");
  if (C != Cg * group || M % group != 0)
    kernel_fail("DeformConv: X channels " + S(C) + " and W " + shape_to_string(w.shape()) + " do not match group " +
                S(group));
  if (C % offset_group != 0) kernel_fail("DeformConv: channels " + S(C) + " not divisible by offset_group " + S(offset_group));
  std::vector<int64_t> in_sp(x.shape().begin() + 2, x.shape().end());
  std::vector<int64_t> ksp(w.shape().begin() + 2, w.shape().end());
  if (!sa.kernel.empty() && sa.kernel != ksp) kernel_fail("DeformConv: kernel_shape does not match W");
  SpatialGeometry g = compute_geometry(in_sp, sa, ksp);
  const int64_t K = g.kernel_size(), O = g.out_size(), I = g.in_size();
  Shape expect_off = {N, offset_group * K * nd};
  for (auto o : g.out) expect_off.push_back(o);
  if (off.shape() != expect_off)
    kernel_fail("DeformConv: offset shape " + shape_to_string(off.shape()) + " should be " + shape_to_string(expect_off));
  if (mask) {
    Shape expect_mask = expect_off;
    expect_mask[1] = offset_group * K;
    if (mask->shape() != expect_mask)
      kernel_fail("DeformConv: mask shape " + shape_to_string(mask->shape()) + " should be " + shape_to_string(expect_mask));
  }
  if (bias && bias->numel() != M) kernel_fail("DeformConv: B must have " + S(M) + " values");
  std::vector<A> xv = load_floats<A>(x), wv = load_floats<A>(w), ov = load_floats<A>(off);
  std::vector<A> mv = mask ? load_floats<A>(*mask) : std::vector<A>();
  std::vector<A> bv = bias ? load_floats<A>(*bias) : std::vector<A>(static_cast<size_t>(M), A(0));
  Shape yshape = {N, M};
  for (auto o : g.out) yshape.push_back(o);
  std::vector<A> y(static_cast<size_t>(N * M * O));
  const int64_t Cog = C / offset_group, Mg = M / group;
  // cols[c][k][o]: the (masked) sampled input, for one image.
  std::vector<A> cols(static_cast<size_t>(C * K * O));
  std::vector<int64_t> oi(nd), ki(nd), lo(nd);
  std::vector<A> frac(nd);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t k = 0; k < K; ++k) {
      int64_t r = k;
      for (int d = nd - 1; d >= 0; --d) { ki[d] = r % g.kernel[d]; r /= g.kernel[d]; }
      for (int64_t o = 0; o < O; ++o) {
        int64_t r2 = o;
        for (int d = nd - 1; d >= 0; --d) { oi[d] = r2 % g.out[d]; r2 /= g.out[d]; }
        for (int64_t og = 0; og < offset_group; ++og) {
          bool any = true;
          for (int d = 0; d < nd; ++d) {
            A shift = ov[((n * offset_group + og) * K * nd + k * nd + d) * O + o];
            A p = static_cast<A>(oi[d] * g.strides[d] - g.pad_begin[d] + ki[d] * g.dilations[d]) + shift;
            A f = std::floor(p);
            lo[d] = static_cast<int64_t>(f);
            frac[d] = p - f;
            if (lo[d] < -1 || lo[d] >= g.in[d]) any = false;  // both neighbours outside
          }
          A m = mask ? mv[((n * offset_group + og) * K + k) * O + o] : A(1);
          for (int64_t c = og * Cog; c < (og + 1) * Cog; ++c) {
            A val = 0;
            if (any) {
              const A* xc = xv.data() + (n * C + c) * I;
              for (int corner = 0; corner < (1 << nd); ++corner) {
                A wgt = 1;
                int64_t idx = 0;
                bool inside = true;
                for (int d = 0; d < nd; ++d) {
                  int bit = (corner >> d) & 1;
                  int64_t pos = lo[d] + bit;
                  if (pos < 0 || pos >= g.in[d]) { inside = false; break; }
                  wgt *= bit ? frac[d] : A(1) - frac[d];
                  idx = idx * g.in[d] + pos;
                }
                if (inside && wgt != A(0)) val += wgt * xc[idx];
              }
            }
            cols[(c * K + k) * O + o] = val * m;
          }
        }
      }
    }
    for (int64_t mo = 0; mo < M; ++mo) {
      int64_t gi = mo / Mg;
      A* yp = y.data() + (n * M + mo) * O;
      for (int64_t o = 0; o < O; ++o) yp[o] = bv[mo];
      for (int64_t cc = 0; cc < Cg; ++cc) {
        int64_t c = gi * Cg + cc;
        for (int64_t k = 0; k < K; ++k) {
          A wk = wv[(mo * Cg + cc) * K + k];
          if (wk == A(0)) continue;
          const A* col = cols.data() + (c * K + k) * O;
          for (int64_t o = 0; o < O; ++o) yp[o] += wk * col[o];
        }
      }
    }
  }
  Tensor& out = ctx.allocate_output(0, x.dtype(), yshape);
  store_floats(y.data(), out);
}

}  // namespace

void register_deform_conv(KernelRegistry& r) {
  r.add("DeformConv", 19, kMaxOpset, lambda_factory([](const KernelInitContext& ic) {
          SpatialAttrs sa = SpatialAttrs::read(ic);
          sa.auto_pad = "NOTSET";
          int64_t group = ic.get_int("group", 1), offset_group = ic.get_int("offset_group", 1);
          return [sa, group, offset_group](KernelContext& ctx) {
            DataType t = ctx.input(0).dtype();
            if (t == DataType::Double) deform_conv_typed<double>(ctx, sa, group, offset_group);
            else if (dtype_is_float(t)) deform_conv_typed<float>(ctx, sa, group, offset_group);
            else kernel_fail("DeformConv: X must be a float type, got " + dtype_name(t));
          };
        }));
}

}  // namespace onyx
