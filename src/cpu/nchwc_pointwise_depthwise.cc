// Band-by-band 1x1 + depthwise convolution (see the header).
//
// Work: each thread takes an equal contiguous share of (image, tile of <= 4
// channel blocks, output row), weighted by the tile's blocks; a tile split
// between two threads has both compute the (KH - stride) expanded rows their
// depthwise rows share. Within a tile, output rows go in bands: the expanded
// rows the band's depthwise taps read are computed into a per-thread buffer
// [block][row][W][16] (rows the previous band already computed move to its
// top) and the band's output rows follow while that buffer is in L2.
#include "cpu/nchwc_pointwise_depthwise.h"

#include <algorithm>
#include <cstring>

#include "base/aligned_memory.h"
#include "base/env_switch.h"
#include "cpu/nchwc_conv_kernel.h"
#include "kernels/kernel.h"

namespace onyx {

namespace {

constexpr int64_t kBlock = 16;
// The expanded rows of one tile held per thread: well inside a 1 MB L2,
// beside the input rows and the output rows of a band.
constexpr int64_t kBandBytes = 192 << 10;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int fuse_env() {
  static const int v = env_switch("ONYX_FUSE_POINTWISE_DEPTHWISE");
  return v;
}

float* band_buffer(size_t floats) {
  thread_local AlignedScratch buf;
  return buf.get(floats);
}

struct Act {
  int kind = 0;
  float p0 = 0, p1 = 0;
};

}  // namespace

struct NchwcPointwiseDepthwise::Impl {
  int64_t C = 0, M = 0, KH = 1, KW = 1;
  SpatialAttrs dw_attrs;
  Act pw_act, dw_act;
  std::vector<NchwcTile> tiles;
  AlignedFloats pw_w, pw_b, dw_w, dw_b;  // packed; biases padded to whole blocks
  bool has_pw_b = false, has_dw_b = false;

  struct Geo {
    int64_t N, CB, MB, H, W, OH, OW, SH, SW, DH, DW, PH, PW;
  };
  Geo geometry(const Shape& xs) const {
    if (xs.size() != 5 || xs[4] != kBlock || xs[1] != ceil_div(C, kBlock))
      kernel_fail("NchwcPointwiseDepthwise: input " + shape_to_string(xs) + " is not a blocked tensor of " +
                  std::to_string(C) + " channels");
    SpatialGeometry sg = compute_geometry({xs[2], xs[3]}, dw_attrs, {KH, KW});
    return {xs[0], xs[1], ceil_div(M, kBlock), xs[2], xs[3], sg.out[0], sg.out[1], sg.strides[0], sg.strides[1],
            sg.dilations[0], sg.dilations[1], sg.pad_begin[0], sg.pad_begin[1]};
  }

  // Expanded rows [r0, r1) of image n for tile t into buf rows from 0
  // (block stride blk_stride).
  void pointwise_rows(const Geo& g, const float* x, int64_t n, const NchwcTile& t, int64_t r0, int64_t r1, float* buf,
                      int64_t blk_stride) const {
    const nchwc::TileFn* fns = nchwc_tile_kernels(static_cast<int>(t.blocks), kBlock);
    const int64_t len = (r1 - r0) * g.W;
    if (len <= 0) return;
    const int64_t pmax = nchwc::max_pixels(static_cast<int>(t.blocks));
    const int64_t ntiles = ceil_div(len, pmax);
    nchwc::TileArgs a{};
    a.w_kw_stride = kBlock * t.blocks * kBlock;
    a.w_kh_stride = a.w_kw_stride;
    a.w_icb_stride = a.w_kw_stride;
    a.kh_count = a.kw_count = 1;
    a.ic_inner = kBlock;
    a.x_ic_stride = 1;
    a.x_px_stride = kBlock;
    a.x_icb_stride = g.H * g.W * kBlock;
    a.y_block_stride = blk_stride;
    a.bias = has_pw_b ? pw_b.get() + t.first_block * kBlock : nullptr;
    a.last_mask = t.first_block + t.blocks == g.MB && M % kBlock ? (1u << (M % kBlock)) - 1 : 0xFFFFu;
    a.act = pw_act.kind;
    a.p0 = pw_act.p0;
    a.p1 = pw_act.p1;
    // input blocks per pass: their weights stay in L1 (<= 32 KB)
    const int64_t chunk = std::clamp<int64_t>(32768 / (a.w_icb_stride * 4), 1, g.CB);
    const float* xrow = x + (n * g.CB * g.H + r0) * g.W * kBlock;
    for (int64_t c0 = 0; c0 < g.CB; c0 += chunk) {
      a.icb_count = std::min(chunk, g.CB - c0);
      a.accumulate = c0 > 0;
      a.finish = c0 + a.icb_count == g.CB;
      a.w = pw_w.get() + t.w_offset + c0 * a.w_icb_stride;
      for (int64_t i = 0, p = 0; i < ntiles; ++i) {
        const int64_t P = len / ntiles + (i < len % ntiles ? 1 : 0);
        a.x = xrow + c0 * a.x_icb_stride + p * kBlock;
        a.y = buf + p * kBlock;
        fns[P](a);
        p += P;
      }
    }
  }

  // Output rows [o0, o1) of tile t; buf holds the expanded rows from `first`.
  void depthwise_rows(const Geo& g, int64_t n, const NchwcTile& t, int64_t o0, int64_t o1, const float* buf,
                      int64_t first, int64_t blk_stride, float* y) const {
    static const nchwc::DwRowFn dw_row = nchwc::dw_row_kernel_avx512();
    nchwc::DwRowArgs a{};
    a.x_kh_stride = g.DH * g.W * kBlock;
    a.KW = KW, a.SW = g.SW, a.DW = g.DW, a.PW = g.PW, a.W = g.W, a.OW = g.OW;
    a.x_cb_stride = blk_stride;
    a.w_cb_stride = KH * KW * kBlock;
    a.y_cb_stride = g.OH * g.OW * kBlock;
    a.act = dw_act.kind;
    a.p0 = dw_act.p0;
    a.p1 = dw_act.p1;
    const uint32_t tail = M % kBlock ? (1u << (M % kBlock)) - 1 : 0xFFFFu;
    for (int64_t oh = o0; oh < o1; ++oh) {
      int64_t kh_lo, kh_hi;
      nchwc_tap_range(oh, g.SH, g.PH, g.DH, KH, g.H, &kh_lo, &kh_hi);
      const int64_t ih = oh * g.SH - g.PH + kh_lo * g.DH;  // the first input row read
      a.kh_count = kh_hi - kh_lo;
      for (int64_t c = 0; c < t.blocks; c += 2) {
        const int64_t ob = t.first_block + c;
        a.ncb = std::min<int64_t>(2, t.blocks - c);
        a.x = buf + c * blk_stride + (a.kh_count ? (ih - first) * g.W * kBlock : 0);
        a.w = dw_w.get() + (ob * KH + kh_lo) * KW * kBlock;
        a.bias = has_dw_b ? dw_b.get() + ob * kBlock : nullptr;
        a.last_mask = ob + a.ncb == g.MB ? tail : 0xFFFFu;
        a.y = y + ((n * g.MB + ob) * g.OH + oh) * g.OW * kBlock;
        dw_row(a);
      }
    }
  }

  // The expanded rows [lo, hi) the depthwise taps of output rows [o0, o1) read.
  void rows_read(const Geo& g, int64_t o0, int64_t o1, int64_t* lo, int64_t* hi) const {
    *lo = std::clamp<int64_t>(o0 * g.SH - g.PH, 0, g.H);
    *hi = std::clamp<int64_t>((o1 - 1) * g.SH - g.PH + (KH - 1) * g.DH + 1, *lo, g.H);
  }

  void run_unit(const Geo& g, const float* x, int64_t n, const NchwcTile& t, int64_t o_begin, int64_t o_end,
                int64_t band, int64_t rows_cap, float* y) const {
    const int64_t row = g.W * kBlock, blk_stride = rows_cap * row;
    float* buf = band_buffer(static_cast<size_t>(t.blocks * blk_stride));
    int64_t have_lo = 0, have_hi = 0;  // expanded rows in buf, from its first row
    for (int64_t o0 = o_begin; o0 < o_end; o0 += band) {
      const int64_t o1 = std::min(o_end, o0 + band);
      int64_t lo, hi;
      rows_read(g, o0, o1, &lo, &hi);
      int64_t from = lo;
      if (have_lo <= lo && lo < have_hi) {  // rows the last band computed move up
        from = std::min(have_hi, hi);
        if (lo > have_lo)
          for (int64_t b = 0; b < t.blocks; ++b)
            std::memmove(buf + b * blk_stride, buf + b * blk_stride + (lo - have_lo) * row,
                         (from - lo) * row * sizeof(float));
      }
      pointwise_rows(g, x, n, t, from, hi, buf + (from - lo) * row, blk_stride);
      have_lo = lo;
      have_hi = hi;
      depthwise_rows(g, n, t, o0, o1, buf, lo, blk_stride, y);
    }
  }
};

std::unique_ptr<NchwcPointwiseDepthwise> NchwcPointwiseDepthwise::create(const DnnlConvConfig& pointwise,
                                                                         const Tensor& w_pointwise,
                                                                         const Tensor* b_pointwise,
                                                                         const DnnlConvConfig& depthwise,
                                                                         const Tensor& w_depthwise,
                                                                         const Tensor* b_depthwise) {
  if (!nchwc_direct_available()) return nullptr;
  auto is_float = [](const Tensor* t) { return !t || t->dtype() == DataType::Float; };
  if (!is_float(&w_pointwise) || !is_float(b_pointwise) || !is_float(&w_depthwise) || !is_float(b_depthwise))
    return nullptr;
  if (w_pointwise.rank() != 4 || w_pointwise.dim(2) != 1 || w_pointwise.dim(3) != 1 || pointwise.group != 1)
    return nullptr;
  const int64_t M = w_pointwise.dim(0), C = w_pointwise.dim(1);
  if (w_depthwise.rank() != 4 || w_depthwise.dim(0) != M || w_depthwise.dim(1) != 1 || depthwise.group != M)
    return nullptr;
  if ((b_pointwise && b_pointwise->numel() != M) || (b_depthwise && b_depthwise->numel() != M)) return nullptr;
  auto d = std::unique_ptr<NchwcPointwiseDepthwise>(new NchwcPointwiseDepthwise());
  auto im = std::make_unique<Impl>();
  if (!nchwc_activation(pointwise.activation, pointwise.activation_params, &im->pw_act.kind, &im->pw_act.p0,
                        &im->pw_act.p1) ||
      !nchwc_activation(depthwise.activation, depthwise.activation_params, &im->dw_act.kind, &im->dw_act.p0,
                        &im->dw_act.p1))
    return nullptr;
  im->C = C;
  im->M = M;
  im->KH = w_depthwise.dim(2);
  im->KW = w_depthwise.dim(3);
  im->dw_attrs = depthwise.attrs;
  im->dw_attrs.ceil_mode = false;
  const int64_t padded = ceil_div(M, kBlock) * kBlock;
  const size_t pw_size = nchwc_pack_tiles(w_pointwise.data<float>(), M, C, 1, 1, 1, false, nchwc::kMaxBlocks,
                                          &im->tiles, nullptr);
  im->pw_w = allocate_zeroed_floats(pw_size);
  nchwc_pack_tiles(w_pointwise.data<float>(), M, C, 1, 1, 1, false, nchwc::kMaxBlocks, &im->tiles, im->pw_w.get());
  im->dw_w = allocate_zeroed_floats(static_cast<size_t>(padded * im->KH * im->KW));
  nchwc_pack_depthwise(w_depthwise.data<float>(), M, im->KH * im->KW, im->dw_w.get());
  auto pack_bias = [&](const Tensor* b, AlignedFloats* dst, bool* has) {
    *has = b != nullptr;
    *dst = allocate_zeroed_floats(static_cast<size_t>(padded));
    if (b) std::memcpy(dst->get(), b->data<float>(), M * sizeof(float));
  };
  pack_bias(b_pointwise, &im->pw_b, &im->has_pw_b);
  pack_bias(b_depthwise, &im->dw_b, &im->has_dw_b);
  d->impl_ = std::move(im);
  return d;
}

NchwcPointwiseDepthwise::~NchwcPointwiseDepthwise() = default;

Shape NchwcPointwiseDepthwise::output_shape(const Shape& x_blocked) const {
  const Impl::Geo g = impl_->geometry(x_blocked);
  return {g.N, g.MB, g.OH, g.OW, kBlock};
}

bool NchwcPointwiseDepthwise::pays_for(const Shape& x_blocked, const ThreadPool* pool) const {
  if (fuse_env() >= 0) return fuse_env() != 0;
  if (x_blocked.size() != 5) return false;
  // A dilated depthwise reads rows far apart: DeepLabV3-MobileNetV3's 5x5
  // dilation-2 layers at 14x14 ran 193 -> 253 us fused (1 thread).
  for (int64_t d : impl_->dw_attrs.dilations)
    if (d != 1) return false;
  // With more threads than one, fusing won at every size measured (one job
  // instead of two; MobileNetV2 2 threads 1.98 -> 1.85 ms, MnasNet 2.09 ->
  // 2.00), unless the pool is not oneDNN's OpenMP team: the unfused
  // convolutions then run on oneDNN alone (see direct_conv_preferred).
  if (pool && pool->num_threads() > 1) return pool->uses_openmp_team();
  // One thread: fusing loses only where the 1x1 weights are too large to stay
  // cached over few pixels, which the unfused direct kernel streams with
  // prefetches (MnasNet's 192 -> 1152 at 7x7: 138 us unfused, 152 fused).
  return !pointwise_weights_streamed(impl_->C, impl_->M, x_blocked[2] * x_blocked[3], false);
}

void NchwcPointwiseDepthwise::run(const float* x, const Shape& x_blocked, float* y, ThreadPool* pool) const {
  const Impl& im = *impl_;
  const Impl::Geo g = im.geometry(x_blocked);
  if (g.N == 0 || g.OH == 0 || g.OW == 0) return;
  const int64_t nt = static_cast<int64_t>(im.tiles.size());
  const int nthr = pool ? pool->num_threads() : 1;
  // output rows per band: the expanded rows they read fit kBandBytes
  const int64_t max_blocks = std::max_element(im.tiles.begin(), im.tiles.end(), [](auto& a, auto& b) {
                               return a.blocks < b.blocks;
                             })->blocks;
  const int64_t reach = (im.KH - 1) * g.DH + 1;
  const int64_t rows_fit = kBandBytes / (max_blocks * g.W * kBlock * 4);
  const int64_t band = std::max<int64_t>(1, (rows_fit - reach) / g.SH + 1);
  const int64_t rows_cap = (band - 1) * g.SH + reach;
  // One equal, contiguous share of the work per thread, measured in output
  // rows x channel blocks over (image, tile, row). A tile cut between two
  // shares recomputes the expanded rows both read, once per cut. Whole tiles
  // as units left threads idle: MobileNetV2's 9 tiles at 14x14 ran 5 against 4.
  const int64_t per_image = g.MB * g.OH, total = g.N * per_image;
  const int64_t shares = std::min<int64_t>(nthr, total);
  struct RowOfTile {
    int64_t image_tile, row;  // image * nt + tile; image_tile N * nt, row 0: the end
  };
  auto start_of = [&](int64_t share) -> RowOfTile {
    const int64_t pos = total * share / shares, n = pos / per_image, rem = pos % per_image;
    int64_t t = 0;
    while (t + 1 < nt && (im.tiles[t].first_block + im.tiles[t].blocks) * g.OH <= rem) ++t;
    const int64_t blocks = im.tiles[t].blocks;
    const int64_t row = (rem - im.tiles[t].first_block * g.OH + blocks / 2) / blocks;
    if (row >= g.OH) return {n * nt + t + 1, 0};
    return {n * nt + t, row};
  };
  parallel_for(pool, shares, [&](int64_t s0, int64_t s1) {
    for (int64_t s = s0; s < s1; ++s) {
      const RowOfTile begin = start_of(s), end = start_of(s + 1);
      for (int64_t it = begin.image_tile; it <= end.image_tile; ++it) {
        const int64_t o0 = it == begin.image_tile ? begin.row : 0, o1 = it == end.image_tile ? end.row : g.OH;
        if (o0 < o1) im.run_unit(g, x, it / nt, im.tiles[it % nt], o0, o1, band, rows_cap, y);
      }
    }
  });
}

}  // namespace onyx
