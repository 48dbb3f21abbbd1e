// Onyx's direct blocked convolution (cpu/nchwc_conv.h, AVX-512) against a
// double-precision loop reference: strides, pads, dilations, 1x1 / 5x5 / 7x7,
// groups, depthwise, plain 3-channel input, channel counts that leave the
// last block part empty, bias + residual + each fused activation, a thread
// pool. The Winograd kernels (cpu/nchwc_winograd.h, F(2,3) and F(4,3)) on
// the same reference: partial edge tiles, pads 0-2, chunks of tiles, several
// input-block passes, groups of whole blocks. Skipped on CPUs without AVX-512.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>

#include "cpu/nchwc_conv.h"
#include "cpu/nchwc_winograd.h"
#include "base/thread_pool.h"
#include "conv_test_util.h"
#include "op_test_util.h"

namespace onyx::test {

namespace {

struct Case {
  const char* name;
  int64_t N, C, M, H, W, KH, KW, stride, pad, dil, group;
  bool plain = false, bias = true, residual = false;
  std::string act = "Relu";
  std::vector<float> act_params = {};
  int threads = 1;
  bool z_in_place = false;
  int winograd_tile = 0;  // 2 or 4: run NchwcWinogradConv F(m, 3) instead of the direct kernel
  std::vector<int64_t> pads4 = {};  // top, left, bottom, right; empty: `pad` on every side
};

// The kernel a case runs, behind one interface.
struct ConvUnderTest {
  std::unique_ptr<NchwcDirectConv> direct;
  std::unique_ptr<NchwcWinogradConv> winograd;
  explicit operator bool() const { return direct || winograd; }
  bool supports(const DnnlConv::Io& io) const { return direct ? direct->supports(io) : winograd->supports(io); }
  void run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const {
    if (direct) direct->run(io, y, pool);
    else winograd->run(io, y, pool);
  }
};

void run_case(const Case& c) {
  SCOPED_TRACE(c.name);
  DnnlConvConfig cfg;
  cfg.attrs.kernel = {c.KH, c.KW};
  cfg.attrs.strides = {c.stride, c.stride};
  cfg.attrs.dilations = {c.dil, c.dil};
  const std::vector<int64_t> pads = c.pads4.empty() ? std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad} : c.pads4;
  cfg.attrs.pads = pads;
  cfg.group = c.group;
  cfg.activation = c.act;
  cfg.activation_params = c.act_params;
  cfg.constant_weights = true;
  ConvUnderTest conv;
  if (c.winograd_tile) conv.winograd = NchwcWinogradConv::create(cfg, 16, true, c.winograd_tile);
  else conv.direct = NchwcDirectConv::create(cfg, 16);
  ASSERT_TRUE(conv);
  Tensor x = pattern({c.N, c.C, c.H, c.W}, 1), w = pattern({c.M, c.C / c.group, c.KH, c.KW}, 2);
  // keep sums in a range where Sigmoid / Tanh are not flat
  for (int64_t i = 0; i < w.numel(); ++i) w.data<float>()[i] *= 0.1f;
  Tensor b = pattern({c.M}, 3);
  const int64_t OH = (c.H + pads[0] + pads[2] - (c.KH - 1) * c.dil - 1) / c.stride + 1;
  const int64_t OW = (c.W + pads[1] + pads[3] - (c.KW - 1) * c.dil - 1) / c.stride + 1;
  Tensor z = pattern({c.N, c.M, OH, OW}, 4);
  Tensor xb(DataType::Float, blocked_shape(x.shape(), 16));
  reorder_to_blocked(x.data<float>(), x.shape(), 16, xb.data<float>(), nullptr);
  Shape ys = blocked_shape({c.N, c.M, OH, OW}, 16);
  Tensor zb(DataType::Float, ys);
  reorder_to_blocked(z.data<float>(), z.shape(), 16, zb.data<float>(), nullptr);
  Tensor y(DataType::Float, ys);
  for (int64_t i = 0; i < y.numel(); ++i) y.data<float>()[i] = 12345.0f;  // every value must be written
  if (c.z_in_place) std::memcpy(y.data<float>(), zb.data<float>(), y.nbytes());

  DnnlConv::Io io;
  io.x = c.plain ? x.data<float>() : xb.data<float>();
  io.x_shape = c.plain ? x.shape() : xb.shape();
  io.x_block = c.plain ? 0 : 16;
  io.w = &w;
  io.b = c.bias ? &b : nullptr;
  io.z = c.residual ? (c.z_in_place ? y.data<float>() : zb.data<float>()) : nullptr;
  io.y_block = 16;
  ASSERT_TRUE(conv.supports(io));
  std::unique_ptr<ThreadPool> pool;
  if (c.threads > 1) pool = std::make_unique<ThreadPool>(c.threads);
  conv.run(io, y.data<float>(), pool.get());

  ReferenceConv rc;
  rc.group = c.group, rc.stride = c.stride, rc.dil = c.dil, rc.pads = pads;
  rc.b = c.bias ? &b : nullptr, rc.z = c.residual ? &z : nullptr, rc.act = c.act, rc.act_params = c.act_params;
  Tensor expected = reference_conv(x, w, rc);
  // channels past M in the last block are zero
  const int64_t OCB = ys[1];
  for (int64_t n = 0; n < c.N; ++n)
    for (int64_t m = c.M; m < OCB * 16; ++m)
      for (int64_t p = 0; p < OH * OW; ++p)
        ASSERT_EQ(y.data<float>()[((n * OCB + m / 16) * OH * OW + p) * 16 + m % 16], 0.0f) << "padding channel " << m;
  Tensor got(DataType::Float, expected.shape());
  reorder_from_blocked(y.data<float>(), expected.shape(), 16, got.data<float>(), nullptr);
  double scale = 1e-6, max_abs = 0, max_rel = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) scale = std::max<double>(scale, std::abs(expected.data<float>()[i]));
  for (int64_t i = 0; i < expected.numel(); ++i) {
    double e = expected.data<float>()[i], g = got.data<float>()[i];
    max_abs = std::max(max_abs, std::abs(e - g));
    max_rel = std::max(max_rel, std::abs(e - g) / std::max(std::abs(e), 1e-2 * scale));
  }
  // F(4, 3)'s transforms scale values by up to 8 (A^T) and 5 (B^T) before
  // they cancel: rounding errors ~10x the direct sum's
  const double tolerance = c.winograd_tile == 4 ? 1e-4 : 2e-5;
  EXPECT_LE(max_abs, tolerance * scale) << "max abs diff " << max_abs << " (scale " << scale << ")";
  EXPECT_LE(max_rel, 1e-3) << "max rel diff " << max_rel;
}

}  // namespace

TEST(NchwcDirectConv, MatchesReference) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  std::vector<Case> cases = {
      {"3x3 s1 p1", 1, 32, 64, 9, 11, 3, 3, 1, 1, 1, 1},
      {"3x3 s1 p1 wide row", 1, 16, 64, 5, 55, 3, 3, 1, 1, 1, 1},
      {"3x3 s2 p1", 1, 16, 48, 13, 13, 3, 3, 2, 1, 1, 1},
      {"3x3 s2 p0 batch 2", 2, 32, 32, 12, 15, 3, 3, 2, 0, 1, 1},
      {"1x1 M=40", 1, 48, 40, 7, 7, 1, 1, 1, 0, 1, 1},
      {"1x1 long row", 1, 64, 80, 20, 20, 1, 1, 1, 0, 1, 1},
      {"1x1 s2", 1, 32, 64, 9, 9, 1, 1, 2, 0, 1, 1},
      {"5x5 p2", 1, 16, 16, 10, 12, 5, 5, 1, 2, 1, 1},
      {"3x3 dilation 2", 1, 32, 32, 11, 9, 3, 3, 1, 2, 2, 1},
      // a dilated kernel wider than the image: rows cut into runs of pixels
      // that read the same kernel columns (ASPP's dilation 12 at 14x14; a
      // dilation 5 at 17 wide, whose runs have 2, 3 and 2 live columns)
      {"3x3 dilation 12 at 14x14", 1, 48, 32, 14, 14, 3, 3, 1, 12, 12, 1},
      {"3x3 dilation 5, 13 wide", 1, 32, 64, 6, 13, 3, 3, 1, 5, 5, 1},
      {"C=20 (part block)", 1, 20, 24, 8, 9, 3, 3, 1, 1, 1, 1},
      {"C=8 (one part block) 3x3 s2", 1, 8, 16, 13, 12, 3, 3, 2, 1, 1, 1},
      {"C=5 (one part block) 1x1", 2, 5, 24, 6, 7, 1, 1, 1, 0, 1, 1},
      {"many input blocks", 1, 160, 32, 6, 7, 3, 3, 1, 1, 1, 1},
      // rows and columns whose taps all fall in the padding, in passes that
      // prefetch the next pass's weights
      {"padding past the kernel, several passes", 1, 160, 32, 4, 5, 3, 3, 1, 3, 1, 1},
      {"groups 2", 1, 64, 64, 8, 8, 3, 3, 1, 1, 1, 2},
      {"groups 4, 1x1", 1, 64, 128, 6, 6, 1, 1, 1, 0, 1, 4},
      {"depthwise", 1, 40, 40, 10, 10, 3, 3, 1, 1, 1, 40},
      {"depthwise s2", 1, 32, 32, 15, 15, 3, 3, 2, 1, 1, 32},
      {"depthwise 5x5 wide", 2, 16, 16, 7, 30, 5, 5, 1, 2, 1, 16},
      // 3-wide rows in tiles: padding 2 (two skipped columns), a one-pixel
      // row (both edges in one tile), no padding, a right edge at stride 2
      {"depthwise 3x3 p2", 1, 32, 32, 9, 9, 3, 3, 1, 2, 1, 32},
      {"depthwise width 1", 1, 16, 16, 5, 1, 3, 3, 1, 1, 1, 16},
      {"depthwise p0 long row", 1, 32, 32, 4, 21, 3, 3, 1, 0, 1, 32},
      {"depthwise s2 odd width", 1, 16, 16, 6, 17, 3, 3, 2, 1, 1, 16},
      // 5-wide rows: short stride-1 rows run as EDGE tiles only (7, 14 and
      // 16 wide; 40 channels leave a part block and a lone block), stride 2
      // with even and odd widths, a row narrower than the kernel, dilation
      // (the generic row kernel)
      {"depthwise 5x5 7x7", 1, 40, 40, 7, 7, 5, 5, 1, 2, 1, 40},
      {"depthwise 5x5 14 wide", 1, 32, 32, 6, 14, 5, 5, 1, 2, 1, 32},
      {"depthwise 3x3 16 wide", 1, 16, 16, 4, 16, 3, 3, 1, 1, 1, 16},
      {"depthwise 5x5 s2 even", 1, 48, 48, 14, 14, 5, 5, 2, 2, 1, 48},
      {"depthwise 5x5 s2 odd", 1, 16, 16, 11, 23, 5, 5, 2, 2, 1, 16},
      {"depthwise 5x5 narrow", 1, 16, 16, 5, 3, 5, 5, 1, 2, 1, 16},
      {"depthwise 5x5 dilation 2", 1, 16, 16, 9, 12, 5, 5, 1, 4, 2, 16},
      // 7-wide rows (tiles of 6): short, wide, stride 2
      {"depthwise 7x7 7x7", 1, 48, 48, 7, 7, 7, 7, 1, 3, 1, 48},
      {"depthwise 7x7 wide", 1, 16, 16, 5, 29, 7, 7, 1, 3, 1, 16},
      {"depthwise 7x7 s2", 1, 32, 32, 12, 19, 7, 7, 2, 3, 1, 32},
  };
  Case dw_asym = {"depthwise 5x5 pads 1,2,3,0", 1, 32, 32, 9, 13, 5, 5, 1, 0, 1, 32};
  dw_asym.pads4 = {1, 2, 3, 0};
  Case dw_hswish = {"depthwise 5x5 HardSwish", 1, 32, 32, 7, 7, 5, 5, 1, 2, 1, 32};
  dw_hswish.act = "HardSwish";
  cases.push_back(dw_asym);
  cases.push_back(dw_hswish);
  // k x 1 kernels over a column (width 1) run as rows: padded, strided, dilated, depthwise
  Case column = {"5x1 column pads 2,0,1,0", 1, 32, 48, 40, 1, 5, 1, 1, 0, 1, 1};
  column.pads4 = {2, 0, 1, 0};
  Case column_s2 = {"3x1 column s2", 2, 16, 32, 23, 1, 3, 1, 2, 0, 1, 1};
  Case column_dil = {"3x1 column dilation 2", 1, 16, 16, 30, 1, 3, 1, 1, 0, 2, 1};
  Case column_dw = {"depthwise 5x1 column", 1, 32, 32, 33, 1, 5, 1, 1, 0, 1, 32};
  column_dw.pads4 = {2, 0, 2, 0};
  for (const Case& c : {column, column_s2, column_dil, column_dw}) cases.push_back(c);
  Case plain1 = {"plain IC=3 3x3 s2 p0", 1, 3, 64, 17, 19, 3, 3, 2, 0, 1, 1};
  plain1.plain = true;
  Case plain2 = {"plain IC=3 7x7 s2 p3", 1, 3, 20, 23, 23, 7, 7, 2, 3, 1, 1};
  plain2.plain = true;
  Case plain3 = {"plain IC=5 3x3 p1", 1, 5, 32, 9, 10, 3, 3, 1, 1, 1, 1};
  plain3.plain = true;
  Case plain_dil = {"plain IC=3 3x3 dilation 6", 1, 3, 64, 7, 9, 3, 3, 1, 6, 6, 1};
  plain_dil.plain = true;
  cases.push_back(plain_dil);
  Case dil_threads = {"3x3 dilation 12 at 14x14, two threads", 1, 32, 64, 14, 14, 3, 3, 1, 12, 12, 1};
  dil_threads.threads = 2;
  cases.push_back(dil_threads);
  cases.push_back(plain1);
  cases.push_back(plain2);
  cases.push_back(plain3);
  for (const Case& c : cases) run_case(c);
}

TEST(NchwcDirectConv, ResidualBiasActivations) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  Case base = {"residual + bias + relu", 1, 16, 32, 9, 10, 3, 3, 1, 1, 1, 1};
  base.residual = true;
  run_case(base);
  Case in_place = base;
  in_place.name = "residual in place (z is y)";
  in_place.C = 64;  // several input-block passes
  in_place.z_in_place = true;
  run_case(in_place);
  Case dw = {"depthwise residual", 1, 24, 24, 6, 7, 3, 3, 1, 1, 1, 24};
  dw.residual = true;
  run_case(dw);
  Case no_bias = base;
  no_bias.name = "no bias, no activation";
  no_bias.bias = false;
  no_bias.act = "";
  run_case(no_bias);
  struct Act {
    std::string name;
    std::vector<float> params;
  };
  for (const Act& a : std::vector<Act>{{"LeakyRelu", {0.1f}},
                                       {"Clip", {-0.5f, 0.75f}},
                                       {"HardSigmoid", {0.2f, 0.5f}},
                                       {"HardSwish", {}},
                                       {"Sigmoid", {}},
                                       {"Tanh", {}},
                                       {"Swish", {1.0f}},
                                       {"Swish", {1.702f}}}) {
    Case c = base;
    c.name = a.name.c_str();
    c.act = a.name;
    c.act_params = a.params;
    c.M = 40;  // a part block: padding lanes must stay 0 even where act(0) != 0
    run_case(c);
  }
}

TEST(NchwcDirectConv, ThreadPool) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  Case a = {"3x3 two threads", 2, 32, 80, 13, 13, 3, 3, 1, 1, 1, 1};
  a.threads = 2;
  a.residual = true;
  run_case(a);
  Case b = {"1x1 two threads", 1, 64, 64, 28, 28, 1, 1, 1, 0, 1, 1};
  b.threads = 2;
  run_case(b);
  Case c = {"depthwise two threads", 1, 96, 96, 14, 14, 3, 3, 1, 1, 1, 96};
  c.threads = 2;
  run_case(c);
  Case d = {"plain two threads", 1, 3, 32, 30, 30, 3, 3, 2, 1, 1, 1};
  d.plain = true;
  d.threads = 2;
  run_case(d);
}

TEST(NchwcWinogradConv, MatchesReference) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  std::vector<Case> cases = {
      {"13x13 p1 (partial edge tiles)", 1, 48, 64, 13, 13, 3, 3, 1, 1, 1, 1},
      {"wide, one tile row", 1, 16, 32, 3, 57, 3, 3, 1, 1, 1, 1},
      {"p0", 1, 32, 48, 10, 11, 3, 3, 1, 0, 1, 1},
      {"p2", 2, 16, 16, 7, 9, 3, 3, 1, 2, 1, 1},
      {"C=20 M=40 (part blocks)", 1, 20, 40, 9, 8, 3, 3, 1, 1, 1, 1},
      {"many input blocks, several chunks", 1, 160, 80, 30, 22, 3, 3, 1, 1, 1, 1},
      {"1x1 output", 1, 16, 16, 3, 3, 3, 3, 1, 0, 1, 1},
      {"2 groups of 16", 1, 32, 32, 9, 10, 3, 3, 1, 1, 1, 2},
      {"4 groups, 16 in / 32 out each", 2, 64, 128, 8, 11, 3, 3, 1, 1, 1, 4},
      {"2 groups of 80 in (several passes)", 1, 160, 96, 7, 7, 3, 3, 1, 1, 1, 2},
  };
  Case same_upper = {"asymmetric pads (SAME_UPPER-like)", 1, 16, 32, 10, 9, 3, 3, 1, 0, 1, 1};
  same_upper.pads4 = {0, 1, 2, 1};
  cases.push_back(same_upper);
  for (int tile : {2, 4})
    for (Case c : cases) {
      SCOPED_TRACE("F(" + std::to_string(tile) + ", 3)");
      c.winograd_tile = tile;
      run_case(c);
    }
}

TEST(NchwcWinogradConv, ResidualActivationsThreads) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  for (int tile : {2, 4}) {
    SCOPED_TRACE("F(" + std::to_string(tile) + ", 3)");
    Case res = {"residual + bias + relu", 1, 32, 48, 11, 14, 3, 3, 1, 1, 1, 1};
    res.residual = true;
    res.winograd_tile = tile;
    run_case(res);
    Case in_place = res;
    in_place.name = "residual in place (z is y)";
    in_place.z_in_place = true;
    run_case(in_place);
    Case none = res;
    none.name = "no bias, no activation";
    none.residual = false;
    none.bias = false;
    none.act = "";
    run_case(none);
    Case hs = res;
    hs.name = "HardSigmoid, part block";
    hs.act = "HardSigmoid";
    hs.act_params = {0.2f, 0.5f};
    hs.M = 40;
    run_case(hs);
    Case threads = {"two threads, batch 2", 2, 32, 96, 26, 27, 3, 3, 1, 1, 1, 1};
    threads.threads = 2;
    threads.residual = true;
    threads.winograd_tile = tile;
    run_case(threads);
    Case split = {"two threads, one chunk (groups split)", 1, 64, 128, 6, 6, 3, 3, 1, 1, 1, 1};
    split.threads = 2;
    split.winograd_tile = tile;
    run_case(split);
    // > 2 MB of transformed weights: the fewest chunks, output blocks split
    // over the threads, each position prefetching the next group's weights
    Case streamed = {"two threads, weights streamed", 1, 256, 256, 9, 9, 3, 3, 1, 1, 1, 1};
    streamed.threads = 2;
    streamed.residual = true;
    streamed.winograd_tile = tile;
    run_case(streamed);
    Case grouped = {"two threads, 8 groups, residual", 1, 128, 128, 14, 14, 3, 3, 1, 1, 1, 8};
    grouped.threads = 2;
    grouped.residual = true;
    grouped.winograd_tile = tile;
    run_case(grouped);
  }
}

TEST(NchwcWinogradConv, RejectsOtherShapes) {
  if (!nchwc_direct_available()) GTEST_SKIP() << "this CPU has no AVX-512";
  DnnlConvConfig cfg;
  cfg.attrs.kernel = {3, 3};
  cfg.attrs.strides = {2, 2};
  cfg.attrs.pads = {1, 1, 1, 1};
  cfg.constant_weights = true;
  auto conv = NchwcWinogradConv::create(cfg, 16);
  ASSERT_TRUE(conv);  // the stride is checked per call (attributes may come from auto_pad)
  Tensor w = pattern({16, 16, 3, 3}, 2);
  Tensor xb(DataType::Float, blocked_shape({1, 16, 8, 8}, 16));
  DnnlConv::Io io;
  io.x = xb.data<float>();
  io.x_shape = xb.shape();
  io.x_block = 16;
  io.w = &w;
  io.y_block = 16;
  EXPECT_FALSE(conv->supports(io));
  cfg.attrs.strides = {1, 1};
  cfg.group = 2;  // groups of 8 channels are not whole blocks
  auto grouped = NchwcWinogradConv::create(cfg, 16);
  ASSERT_TRUE(grouped);
  Tensor w8 = pattern({16, 8, 3, 3}, 2);
  io.w = &w8;
  EXPECT_FALSE(grouped->supports(io));
  cfg.group = 1;
  cfg.attrs.kernel = {5, 5};
  EXPECT_FALSE(NchwcWinogradConv::create(cfg, 16));
  cfg.attrs.kernel = {3, 3};
  EXPECT_FALSE(NchwcWinogradConv::create(cfg, 16, true, 3));
}

}  // namespace onyx::test
