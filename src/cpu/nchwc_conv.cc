// Direct blocked convolution: weight packing, tiling, threading and the
// selection policy; the AVX-512 micro-kernels are in nchwc_conv_avx512.cc.
//
// Work: units of (image, group of up to 4 output blocks, output row,
// segment of the row) split over the ThreadPool. A row segment is cut into
// tiles of up to max_pixels(nb) pixels (evenly: 55 -> 5 x 6 + 5 x 5). Output
// rows whose kernel rows leave the image sum the rows inside only; tiles
// whose pixels reach into the left / right padding read from a copy of their
// input columns with zeros in the padding, so every tile runs the same fast
// kernel. 1x1 stride-1 unpadded convolutions are one long row of H*W pixels.
// Depthwise convolutions run a row kernel per (pair of channel blocks,
// output row): edge pixels over their valid taps, the rest in tiles of 8.
// A unit sums its input blocks in passes whose weights fit L1; every tile
// call of a pass prefetches its share of the next pass's weights into L2,
// so weights that come from memory (late layers of large CNNs: megabytes
// used over a few pixels) arrive while the previous pass computes.
#include "cpu/nchwc_conv.h"
#include "base/cpu_features.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "base/aligned_memory.h"
#include "base/env_switch.h"
#include "cpu/nchwc_conv_kernel.h"
#include "kernels/kernel.h"

namespace onyx {

using nchwc::TileArgs;
using nchwc::TileFn;

bool nchwc_direct_available() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
}

namespace {

constexpr int kBlock = 16;

// ONYX_CONV_DIRECT: 0 never, 1 always (where supported), unset: the policy.
int direct_env() {
  static const int p = env_switch("ONYX_CONV_DIRECT");
  return p;
}

}  // namespace

bool nchwc_activation(const std::string& act, const std::vector<float>& p, int* kind, float* p0, float* p1) {
  auto param = [&](size_t i, float def) { return i < p.size() ? p[i] : def; };
  *p0 = 0.0f;
  *p1 = 0.0f;
  if (act.empty()) *kind = nchwc::kActNone;
  else if (act == "Relu") *kind = nchwc::kActRelu;
  else if (act == "LeakyRelu") *kind = nchwc::kActLeakyRelu, *p0 = param(0, 0.01f);
  else if (act == "Clip") *kind = nchwc::kActClip, *p0 = param(0, -3.4e38f), *p1 = param(1, 3.4e38f);
  else if (act == "HardSigmoid") *kind = nchwc::kActHardSigmoid, *p0 = param(0, 0.2f), *p1 = param(1, 0.5f);
  else if (act == "HardSwish") *kind = nchwc::kActHardSwish, *p0 = param(0, 1.0f / 6), *p1 = param(1, 0.5f);
  else if (act == "Sigmoid") *kind = nchwc::kActSigmoid;
  else if (act == "Tanh") *kind = nchwc::kActTanh;
  else if (act == "Swish") *kind = nchwc::kActSwish, *p0 = param(0, 1.0f);
  else if (act == "Gelu") *kind = nchwc::kActGelu;
  else if (act == "GeluTanh") *kind = nchwc::kActGeluTanh;
  else return false;
  return true;
}

namespace {

// 64-byte aligned float buffer, zeroed.
struct AlignedBuf {
  explicit AlignedBuf(size_t count) : data(allocate_zeroed_floats(count)), n(count) {}
  float* p() const { return data.get(); }
  AlignedFloats data;
  size_t n;
};

float* scratch(size_t floats) {
  thread_local std::vector<float> buf;
  if (buf.size() < floats) buf.resize(floats);
  return buf.data();
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A run of output columns [begin, end) whose taps inside the image are the
// kernel columns [kw_lo, kw_hi).
struct ColumnRun {
  int64_t begin, end, kw_lo, kw_hi;
};

// The columns [s0, s1) of an output row as tiles see them. Normally one run
// over every kernel column: tiles reaching into the padding read zeros from
// a copy. But where a dilated kernel is wider than the image most pixels
// read few columns (DeepLabV3's ASPP: 3x3 at dilation 12 on 14x14, where
// the middle ten columns read the centre tap only), so when skipping the
// columns that read only padding saves a quarter of the taps, the row is cut
// where the live columns change.
std::vector<ColumnRun> column_runs(int64_t SW, int64_t PW, int64_t DW, int64_t KW, int64_t W, int64_t s0,
                                   int64_t s1) {
  std::vector<ColumnRun> runs;
  int64_t live = 0;
  for (int64_t ow = s0; ow < s1; ++ow) {
    int64_t lo, hi;
    nchwc_tap_range(ow, SW, PW, DW, KW, W, &lo, &hi);
    if (lo >= hi) lo = 0, hi = KW;  // all padding: zeros from the copy, as before
    live += hi - lo;
    if (!runs.empty() && runs.back().kw_lo == lo && runs.back().kw_hi == hi) runs.back().end = ow + 1;
    else runs.push_back({ow, ow + 1, lo, hi});
  }
  if (live * 4 > (s1 - s0) * KW * 3) return {{s0, s1, 0, KW}};
  return runs;
}

// Of nseg - 1, nseg and nseg + 1 row segments (each of at least 16 pixels),
// the count whose units (units_per_seg per segment) the threads share most
// evenly. Few units split unevenly: 9 units on 2 threads kept one thread
// busy for 5 while the other waited after 4 (MnasNet's 1x1 convs at 7x7 with
// 192 outputs: 1.61x faster on 2 threads than on 1 with 9 units, 1.79x with 6).
int64_t evenly_shared_segments(int64_t nseg, int64_t units_per_seg, int64_t OW, int nthr) {
  if (nthr <= 1 || OW > 192 || units_per_seg * nseg >= 8 * nthr) return nseg;  // long rows; units enough to even out
  auto share = [&](int64_t n) {  // busy fraction of the threads
    const int64_t units = units_per_seg * n;
    return static_cast<double>(units) / static_cast<double>(nthr * ceil_div(units, int64_t{nthr}));
  };
  int64_t best = nseg;
  for (int64_t n : {nseg - 1, nseg + 1})
    if (n >= 1 && (n == 1 || ceil_div(OW, n) >= 16) && share(n) > share(best) + 1e-9) best = n;
  return best;
}

}  // namespace

bool pointwise_weights_streamed(int64_t C, int64_t M, int64_t out_pixels, bool strided) {
  return C * M >= (strided ? 1024 * 256 : 256 * 256) && out_pixels <= 12 * 12;
}

// Policy, from bench/conv_bench.cc on this machine (Zen 5, 1 thread, bias +
// Relu fused; medians of 15-30 interleaved rounds; ratio = oneDNN 2.6 time /
// ours, > 1: the direct kernel is faster). The machine was shared and
// loaded (load average 6-10 on 2 cores), so ratios within ~5% are ties;
// ranges are over several runs.
//   plain 3-channel input, 3x3 s2, 64 outputs (SqueezeNet conv1)  1.02-1.12
//   plain 3->64 7x7 s2 (ResNet-50 conv1)                          0.92-0.98
//     (in the model on 2026-11-25: 0.86x oneDNN's time, so it goes direct)
//   plain 3->32 3x3 s2 (MobileNetV2 conv1; 2 output blocks)       0.60-0.80
//   blocked 3x3 s1 without Winograd (16->64 @55, 48->192 and
//     64->256 @13: oneDNN's direct kernel)                         0.95-1.11
//   blocked 3x3 s2 (ResNet-50: 128 @56, 256 @28, 512 @14)         0.88-1.00, 0.89-1.07, 1.04-1.41
//   blocked 3x3 s2 of few outputs (8 -> 16 @128, 16 -> 32 @64; the
//     8 input channels no longer multiplied as 16)                 1.39, 1.19
//   3x3 s1 where oneDNN runs Winograd (see dnnl_conv.cc: C, M >= 32
//     at >= 27x27, or C >= 128 at >= 7x7)                          0.21-0.63
//   1x1 at <= 14x14 with C >= 192, M <= 160 (SqueezeNet squeeze
//     convs @13, MobileNetV2 projections @14 and @7)               0.99-1.13
//   1x1 at <= 28x28 with C <= 64, M >= 128 (SqueezeNet expand1x1
//     @27 and @13, MobileNetV2 expansions @28 and @14): in the
//     model, min of 4 profiles, 1 thread, SqueezeNet @13 43 -> 32,
//     30 -> 20 us, @27 41 -> 36 us; MobileNetV2 even (53-60 us)
//     (isolated, oneDNN wins these by ~5%; why the model turns
//     that around was not found)
//   1x1 at <= 32x32 with C x M <= 256 x 256 (a YOLOv8-n-shaped net's
//     C2f and head convs, 2026-11-23; per-node medians in the model,
//     1 thread): 1.08-2.8, the smallest (8x8) the most; ResNet-50's
//     512 <-> 2048 at 7x7 lost 9% at 2 threads, so they stay
//   other 1x1 (large images, or many outputs)                      0.67-1.05
//   1x1 whose weights are >= 256 KB (strided: >= 1 MB) at <= 12x12,
//     since the direct kernel prefetches the next pass's weights
//     (2026-11-25; in the model, 1 thread, per-node medians):
//     Inception-v3 1280 / 2048 -> 320..448 @5 0.65-0.75x oneDNN's
//     time, 768 -> 128..192 @12 0.90-0.94x, ResNet-50 layer4 (and its
//     1024 -> 2048 s2 downsample) 0.80-0.83x; at 13x13 and 14x14 it
//     was mixed (ResNet-50 layer3 0.97x, SqueezeNet's 512 -> 1000
//     classifier 1.04x), so they stay
//   depthwise 3x3 stride 2 (MobileNetV2)                           0.96-1.02
//   depthwise 3x3 stride 1 (MobileNetV2; edge pixels in unrolled
//     tiles since 2026-11-22): @112 and @56 0.92-1.07, @28 0.91-1.09,
//     @14 0.80-0.87, @7 0.75-0.79. With --cold the direct kernel wins
//     these (@28 1.20-1.25, @14 0.97-1.24, @7 1.08-1.45), but in
//     MobileNetV2 they ran even at 1 thread and ~5% slower at 2 (per-node
//     minima, 10 alternating rounds), so oneDNN keeps them
//   depthwise 5x5 (EfficientNet-B0; the 3x3 row kernel made 5 wide in
//     2026-11-22, edge columns skipped by a bit mask), warm / --cold:
//     s2 56 -> 28 1.04-1.12 / 1.03-1.20, s1 @28 1.00-1.15 / 1.28-1.37,
//     s1 @14 0.85-1.02 / 0.82-1.08, s2 14 -> 7 0.81-0.85 / 0.83-1.00,
//     s1 @7 0.87-0.98 / 1.13-1.30; 2 threads cold 1.01-1.80 (before:
//     0.37-0.79 warm). In EfficientNet-B0 the @14 and @7 layers ran
//     0.85-0.92x oneDNN's time, so every 5x5 goes direct.
//   depthwise 7x7 s1 p3 (ConvNeXt; tiles of 6), warm / --cold: @56
//     1.25 / 1.35, @28 1.19 / 1.35, @14 0.89 / 1.04, @7 0.83 / 1.16;
//     2 threads 1.07-1.58 / 1.15-1.60: every 7x7 goes direct too.
// At 2 threads the same per-layer choice holds when the session's pool runs
// on oneDNN's OpenMP team (ThreadPoolOptions::use_openmp_team, the default
// for plans with oneDNN convolutions): bench/conv_bench at 2 threads gave
// the same winners within ~10%. With a separate pool (one_runtime false:
// the application's own threads) the two thread sets trade the cores at
// every switch - SqueezeNet / MobileNetV2 at 2 threads ran at 0.61 / 0.70 of
// onnxruntime mixed, against ~0.85 / ~1.0 on one runtime - so there oneDNN
// runs every convolution.
bool direct_conv_preferred(const DirectConvShape& s, int threads, bool one_runtime) {
  if (threads > 1 && !one_runtime) return false;
  const bool depthwise = s.group > 1 && s.group == s.C && s.group == s.M;
  if (depthwise) {
    if (s.DH != 1 || s.DW != 1 || s.SH != s.SW || s.SH > 2) return false;
    if (s.KH == 3 && s.KW == 3) return s.SH == 2 || s.OH * s.OW >= 56 * 56;
    return s.KH == s.KW && (s.KH == 5 || s.KH == 7);
  }
  if (s.group != 1) return false;
  const int64_t out_px = s.OH * s.OW;
  if (s.KH * s.KW == 1) {
    // see the 2026-11-25 note above
    if (pointwise_weights_streamed(s.C, s.M, out_px, s.SH != 1 || s.SW != 1)) return true;
    if (s.SH != 1 || s.SW != 1) return false;
    const bool squeeze = out_px <= 14 * 14 && s.C >= 192 && s.M <= 160;
    const bool expand = out_px <= 28 * 28 && s.C <= 64 && s.M >= 128;
    const bool small = out_px <= 32 * 32 && s.C * s.M <= 256 * 256;  // a narrow net's late layers
    return squeeze || expand || small;
  }
  if (s.plain_input) return s.C <= 4 && s.M % 64 == 0 && s.KH * s.KW <= 49;
  const bool s1 = s.SH == 1 && s.SW == 1 && s.DH == 1 && s.DW == 1;
  const bool winograd = s1 && s.KH == 3 && s.KW == 3 && s.C >= 32 && s.M >= 32 &&
                        (out_px >= 27 * 27 || (s.C >= 128 && out_px >= 7 * 7));
  if (winograd) return false;
  return s.M % 64 == 0 || s.M >= 128 || s.SH == 2;  // full tiles of output blocks, or a stride-2 downsampling
}

size_t nchwc_pack_tiles(const float* w, int64_t M, int64_t Cg, int64_t KH, int64_t KW, int64_t G, bool plain,
                        int64_t max_blocks, std::vector<NchwcTile>* tiles, float* dst) {
  const int64_t Mg = M / G;
  const int64_t ici = plain ? Cg : kBlock;
  const int64_t icb_n = plain ? 1 : ceil_div(Cg, kBlock);
  const int64_t ocb_g = ceil_div(Mg, kBlock);
  const int64_t nt = ceil_div(ocb_g, max_blocks);
  tiles->clear();
  size_t off = 0;
  for (int64_t g = 0; g < G; ++g)
    for (int64_t t = 0, ob = 0; t < nt; ++t) {
      const int64_t nb = ocb_g / nt + (t < ocb_g % nt ? 1 : 0);
      tiles->push_back({g, ob, nb, off});
      off += static_cast<size_t>(icb_n * KH * KW * ici * nb * kBlock);
      ob += nb;
    }
  if (!dst) return off;
  for (const NchwcTile& o : *tiles) {
    float* d = dst + o.w_offset;
    for (int64_t icb = 0; icb < icb_n; ++icb)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t ic = 0; ic < ici; ++ic)
            for (int64_t bb = 0; bb < o.blocks; ++bb)
              for (int64_t l = 0; l < kBlock; ++l, ++d) {
                const int64_t c = plain ? ic : icb * kBlock + ic;
                const int64_t m = (o.first_block + bb) * kBlock + l;
                if (c < Cg && m < Mg) *d = w[(((o.group * Mg + m) * Cg + c) * KH + kh) * KW + kw];
              }
  }
  return off;
}

const TileFn* nchwc_tile_kernels(int nb, int ic) {
  using Table = std::array<std::array<TileFn, 16>, nchwc::kMaxBlocks + 1>;
  auto make = [](int icode) {
    Table t{};
    for (int b = 1; b <= nchwc::kMaxBlocks; ++b)
      for (int p = 1; p <= nchwc::max_pixels(b); ++p) t[b][p] = nchwc::tile_kernel_avx512(b, p, icode);
    return t;
  };
  static const Table tables[3] = {make(kBlock), make(3), make(0)};
  return tables[ic == kBlock ? 0 : ic == 3 ? 1 : 2][nb].data();
}

void nchwc_pack_depthwise(const float* w, int64_t M, int64_t taps, float* dst) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t k = 0; k < taps; ++k) dst[((m / kBlock) * taps + k) * kBlock + m % kBlock] = w[m * taps + k];
}

struct NchwcDirectConv::Impl : NchwcConvSetup {
  explicit Impl(const NchwcConvSetup& setup) : NchwcConvSetup(setup) {}

  struct Packed {
    const void* w_from = nullptr;
    const void* b_from = nullptr;
    bool plain = false;
    std::unique_ptr<AlignedBuf> w, bias;
    std::vector<NchwcTile> ocg;
  };
  mutable std::mutex mu;
  mutable std::vector<std::shared_ptr<const Packed>> packs;  // one per (weights, bias, plain)

  std::shared_ptr<const Packed> pack(const Tensor& w, const Tensor* b, bool plain, bool depthwise) const {
    const float* wd = w.data<float>();
    const float* bd = b ? b->data<float>() : nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& p : packs)
        if (p->w_from == wd && p->b_from == bd && p->plain == plain) return p;
    }
    auto pk = std::make_shared<Packed>();
    pk->w_from = wd;
    pk->b_from = bd;
    pk->plain = plain;
    const int64_t M = w.dim(0), Cg = w.dim(1), KH = w.dim(2), KW = w.dim(3), G = cfg.group;
    const int64_t OCB = ceil_div(M, kBlock);
    pk->bias = std::make_unique<AlignedBuf>(OCB * kBlock);
    if (bd) std::memcpy(pk->bias->p(), bd, M * sizeof(float));
    if (depthwise) {
      pk->w = std::make_unique<AlignedBuf>(OCB * KH * KW * kBlock);
      nchwc_pack_depthwise(wd, M, KH * KW, pk->w->p());
    } else {
      // With many input channels and a spatial kernel, tiles of 2 blocks
      // (2 x 12 pixels) keep a tile's filters closer to L1; measured
      // (bench/conv_bench, 1 thread, ours / oneDNN speedup, 4 vs 2 blocks):
      // 16->64 @55 1.10 vs 1.11, 48->192 @13 1.05 vs 1.05, 64->256 @13 1.09
      // vs 0.98; ResNet-50 3x3 s2 128->128 @56 0.26 vs 0.90, 256->256 @28
      // 0.86 vs 1.01.
      const int64_t max_nb = !plain && KH * KW > 1 && Cg > 64 ? 2 : nchwc::kMaxBlocks;
      const size_t size = nchwc_pack_tiles(wd, M, Cg, KH, KW, G, plain, max_nb, &pk->ocg, nullptr);
      pk->w = std::make_unique<AlignedBuf>(size);
      nchwc_pack_tiles(wd, M, Cg, KH, KW, G, plain, max_nb, &pk->ocg, pk->w->p());
    }
    std::lock_guard<std::mutex> lock(mu);
    packs.push_back(pk);
    return pk;
  }
};

bool nchwc_conv_setup(const DnnlConvConfig& cfg, int block, bool bias_constant, NchwcConvSetup* setup) {
  if (!nchwc_direct_available() || block != kBlock || !cfg.constant_weights || cfg.group < 1) return false;
  if (!nchwc_activation(cfg.activation, cfg.activation_params, &setup->act, &setup->p0, &setup->p1)) return false;
  setup->cfg = cfg;
  setup->cfg.attrs.ceil_mode = false;
  setup->bias_constant = bias_constant;
  return true;
}

std::unique_ptr<NchwcDirectConv> NchwcDirectConv::create(const DnnlConvConfig& cfg, int block, bool bias_constant) {
  NchwcConvSetup setup;
  if (!nchwc_conv_setup(cfg, block, bias_constant, &setup)) return nullptr;
  std::unique_ptr<NchwcDirectConv> d(new NchwcDirectConv());
  d->impl_ = std::make_unique<Impl>(setup);
  return d;
}

NchwcDirectConv::~NchwcDirectConv() = default;

namespace {

struct Geo {
  int64_t N, C, H, W, M, OH, OW, KH, KW, SH, SW, DH, DW, PH, PW, G;
  bool plain, depthwise;
};

bool geometry(const DnnlConvConfig& cfg, const DnnlConv::Io& io, Geo* g) {
  if (!io.w || io.w->rank() != 4 || io.w->dtype() != DataType::Float) return false;
  if (io.y_block != kBlock) return false;
  const Shape& ws = io.w->shape();
  g->G = cfg.group;
  g->plain = io.x_block == 0;
  if (!g->plain && io.x_block != kBlock) return false;
  if (g->plain ? io.x_shape.size() != 4 : io.x_shape.size() != 5) return false;
  g->N = io.x_shape[0];
  g->C = g->plain ? io.x_shape[1] : ws[1] * g->G;
  g->H = io.x_shape[2];
  g->W = io.x_shape[3];
  g->M = ws[0];
  g->KH = ws[2];
  g->KW = ws[3];
  if (g->C != ws[1] * g->G || g->M % g->G != 0) return false;
  if (!g->plain && io.x_shape[1] != ceil_div(g->C, kBlock)) return false;
  const int64_t Cg = ws[1], Mg = g->M / g->G;
  g->depthwise = g->G > 1 && Cg == 1 && Mg == 1;
  if (g->G > 1 && !g->depthwise && (g->plain || Cg % kBlock || Mg % kBlock)) return false;
  if (g->depthwise && g->plain) return false;
  SpatialGeometry sg = compute_geometry({g->H, g->W}, cfg.attrs, {g->KH, g->KW});
  g->OH = sg.out[0];
  g->OW = sg.out[1];
  g->SH = sg.strides[0];
  g->SW = sg.strides[1];
  g->DH = sg.dilations[0];
  g->DW = sg.dilations[1];
  g->PH = sg.pad_begin[0];
  g->PW = sg.pad_begin[1];
  // A k x 1 kernel over a column (width 1: a 1-D conv laid along H, as JAX and
  // TF exports have them) is the same memory as a 1 x k kernel over a row: run
  // it as one, since the kernels tile along rows (one pixel per row ran 2x slower).
  if (g->W == 1 && g->KW == 1 && g->OW == 1 && g->PW == 0 && g->H > 1) {
    std::swap(g->H, g->W), std::swap(g->OH, g->OW), std::swap(g->KH, g->KW);
    std::swap(g->SH, g->SW), std::swap(g->DH, g->DW), std::swap(g->PH, g->PW);
  }
  return true;
}

}  // namespace

bool NchwcDirectConv::supports(const DnnlConv::Io& io) const {
  Geo g;
  if (!geometry(impl_->cfg, io, &g)) return false;
  if (io.b && !impl_->bias_constant) return false;
  return true;
}

bool NchwcDirectConv::use_for(const DnnlConv::Io& io, const ThreadPool* pool) const {
  int env = direct_env();
  if (env == 0) return false;
  Geo g;
  if (!geometry(impl_->cfg, io, &g)) return false;
  if (io.b && !impl_->bias_constant) return false;
  if (env == 1) return true;
  DirectConvShape s;
  s.C = g.C, s.M = g.M, s.H = g.H, s.W = g.W, s.OH = g.OH, s.OW = g.OW, s.KH = g.KH, s.KW = g.KW;
  s.SH = g.SH, s.SW = g.SW, s.DH = g.DH, s.DW = g.DW, s.group = g.G, s.plain_input = g.plain;
  const int threads = pool ? pool->num_threads() : 1;
  return direct_conv_preferred(s, threads, !pool || pool->uses_openmp_team());
}

void NchwcDirectConv::run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const {
  const Impl& im = *impl_;
  Geo g;
  if (!geometry(im.cfg, io, &g)) kernel_fail("NchwcConv: this shape is not supported by the direct kernel");
  auto pk = im.pack(*io.w, io.b, g.plain, g.depthwise);
  const float* bias = io.b ? pk->bias->p() : nullptr;
  const int64_t OCB = ceil_div(g.M, kBlock);
  const uint32_t tail_mask = g.M % kBlock ? (1u << (g.M % kBlock)) - 1 : 0xFFFFu;
  const int64_t CB = g.plain ? 0 : ceil_div(g.C, kBlock);

  // 1x1, stride 1, no padding: one row of H*W pixels.
  int64_t H = g.H, W = g.W, OH = g.OH, OW = g.OW;
  if (g.KH == 1 && g.KW == 1 && g.SH == 1 && g.SW == 1 && g.PH == 0 && g.PW == 0 && g.OH == g.H && g.OW == g.W) {
    W = OW = g.H * g.W;
    H = OH = 1;
  }
  const int64_t out_plane = OH * OW * kBlock;  // one output block of one image

  if (g.depthwise) {
    static const nchwc::DwRowFn dw_row = nchwc::dw_row_kernel_avx512();
    // units: (image, pair of channel blocks, output row); two blocks per
    // call give 16 independent FMA chains
    const int64_t npairs = ceil_div(OCB, 2);
    const int64_t units = g.N * npairs * OH;
    parallel_for(units * OW * g.KH * g.KW > 4096 ? pool : nullptr, units, [&](int64_t u0, int64_t u1) {
      nchwc::DwRowArgs a{};
      a.x_kh_stride = g.DH * W * kBlock;
      a.KW = g.KW, a.SW = g.SW, a.DW = g.DW, a.PW = g.PW, a.W = W, a.OW = OW;
      a.x_cb_stride = H * W * kBlock;
      a.w_cb_stride = g.KH * g.KW * kBlock;
      a.y_cb_stride = OH * OW * kBlock;
      a.act = im.act;
      a.p0 = im.p0;
      a.p1 = im.p1;
      for (int64_t u = u0; u < u1; ++u) {
        const int64_t oh = u % OH, cb = (u / OH) % npairs * 2, n = u / (OH * npairs);
        int64_t kh_lo, kh_hi;
        nchwc_tap_range(oh, g.SH, g.PH, g.DH, g.KH, H, &kh_lo, &kh_hi);
        a.ncb = std::min<int64_t>(2, OCB - cb);
        a.x = io.x + ((n * CB + cb) * H + (oh * g.SH - g.PH + kh_lo * g.DH)) * W * kBlock;
        a.w = pk->w->p() + (cb * g.KH + kh_lo) * g.KW * kBlock;
        a.kh_count = kh_hi - kh_lo;
        a.bias = bias ? bias + cb * kBlock : nullptr;
        a.last_mask = cb + a.ncb == OCB ? tail_mask : 0xFFFFu;
        const int64_t yoff = ((n * OCB + cb) * OH + oh) * OW * kBlock;
        a.y = y + yoff;
        a.z = io.z ? io.z + yoff : nullptr;
        dw_row(a);
      }
    });
    return;
  }

  const int64_t Cg = g.C / g.G, Mg = g.M / g.G;
  // One input block with fewer real channels (a stem's 8): the inner loop stops at them
  // instead of multiplying the block's zero lanes (half the work for 8 channels).
  const bool partial_block = !g.plain && Cg < kBlock;
  const int ic_code = g.plain ? (g.C == 3 ? 3 : 0) : partial_block ? 0 : kBlock;
  const int64_t icb_g = g.plain ? 1 : ceil_div(Cg, kBlock);  // input blocks per group
  const int64_t ici = g.plain ? g.C : kBlock;
  const int64_t nocg = static_cast<int64_t>(pk->ocg.size());
  const int nthr = pool ? pool->num_threads() : 1;
  // Row segments: long rows (1x1 flattened) are cut in ~96 pixels, and with
  // several threads rows are cut further (not below 16 pixels) until there
  // are 4 units per thread: a 1x1 conv at 13x13 with 64 outputs was one
  // unit, so one thread did it all.
  int64_t nseg = OW > 192 ? ceil_div(OW, 96) : 1;
  while (nthr > 1 && g.N * nocg * OH * nseg < 4 * nthr && ceil_div(OW, nseg + 1) >= 16) ++nseg;
  nseg = evenly_shared_segments(nseg, g.N * nocg * OH, OW, nthr);
  const int64_t seg_len = ceil_div(OW, nseg);
  nseg = ceil_div(OW, seg_len);
  // rows per unit: the weights of an input-block chunk (loaded into L1 once)
  // serve up to 4 rows, while leaving >= 8 units per thread
  int64_t rows = 1;
  while (rows < 4 && g.N * nocg * ceil_div(OH, rows * 2) * nseg >= 8 * nthr) rows *= 2;
  const int64_t nrg = ceil_div(OH, rows);
  const int64_t units = g.N * nocg * nrg * nseg;
  const double flops = 2.0 * g.N * g.M * g.OH * g.OW * Cg * g.KH * g.KW;
  // input strides (blocked: [n][cb][h][w][16]; plain: [n][c][h][w])
  const int64_t x_img = g.plain ? g.C * H * W : CB * H * W * kBlock;
  const int64_t x_icb = g.plain ? 0 : H * W * kBlock;
  const int64_t x_row = g.plain ? W : W * kBlock;  // one input row
  const int64_t x_col = g.plain ? 1 : kBlock;      // one input column
  const int64_t x_ic = g.plain ? H * W : 1;
  const bool z_in_y = io.z == y;
  // Which index varies slowest among a thread's units: output channel groups
  // when the weights outweigh the input (each thread streams only its share
  // of them), else rows, so a thread reads the rows the layer before wrote
  // on the same core and writes the rows the next one will read there.
  const bool rows_outer = nthr > 1 && static_cast<double>(pk->w->n) <= static_cast<double>(x_img);

  // Each segment's pixels in runs that read the same kernel columns (see column_runs).
  std::vector<std::vector<ColumnRun>> seg_runs(static_cast<size_t>(nseg));
  for (int64_t seg = 0; seg < nseg; ++seg)
    seg_runs[seg] = column_runs(g.SW, g.PW, g.DW, g.KW, W, seg * seg_len, std::min(OW, (seg + 1) * seg_len));
  auto tile_of_unit = [&](int64_t u) { return rows_outer ? u % nocg : (u / (nseg * nrg)) % nocg; };
  // input blocks per pass of a tile of nb blocks: their weights stay in L1 (<= 32 KB)
  const int64_t w_icb_floats = g.KH * g.KW * ici * kBlock;  // per output block
  auto chunk_of = [&](int64_t nb) { return std::clamp<int64_t>(32768 / (w_icb_floats * nb * 4), 1, icb_g); };

  // A tile reaching into the padding reads a copy of the input columns
  // [iw0, iw1] of its khc rows, zeros outside the image: blocked
  // [icb][kh][col][16], plain [c][kh][col].
  auto read_padded_copy = [&](const float* xbase, int64_t cn, int64_t khc, int64_t iw0, int64_t iw1, TileArgs& a) {
    const int64_t cols = iw1 - iw0 + 1;
    const int64_t planes = g.plain ? g.C : cn;
    const int64_t width = g.plain ? 1 : kBlock;
    float* sc = scratch(static_cast<size_t>(planes * std::max<int64_t>(khc, 1) * cols * width));
    const int64_t plane_stride = g.plain ? H * W : x_icb;
    // columns [v0, v1) are inside the image: one copy per row
    const int64_t v0 = std::max<int64_t>(iw0, 0), v1 = std::min<int64_t>(iw1 + 1, W);
    const int64_t left = std::min(cols, v0 - iw0), mid = std::max<int64_t>(v1 - v0, 0);
    const int64_t right = cols - left - mid;
    for (int64_t c = 0; c < planes; ++c)
      for (int64_t r = 0; r < khc; ++r) {
        const float* src = xbase + c * plane_stride + r * g.DH * x_row;
        float* d = sc + (c * khc + r) * cols * width;
        if (left) std::memset(d, 0, left * width * sizeof(float));
        if (mid) std::memcpy(d + left * width, src + v0 * width, mid * width * sizeof(float));
        if (right > 0) std::memset(d + (left + mid) * width, 0, right * width * sizeof(float));
      }
    a.x = sc;
    a.x_kh_stride = cols * width;
    a.x_icb_stride = khc * cols * width;
    a.x_ic_stride = g.plain ? khc * cols : 1;
  };

  parallel_for(flops > 2e5 ? pool : nullptr, units, [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      int64_t seg, rg;
      const int64_t n = u / (nseg * nrg * nocg), oi = tile_of_unit(u);
      if (rows_outer) {
        seg = (u / nocg) % nseg, rg = (u / (nocg * nseg)) % nrg;
      } else {
        seg = u % nseg, rg = (u / nseg) % nrg;
      }
      const NchwcTile& o = pk->ocg[oi];
      const TileFn* tf = nchwc_tile_kernels(static_cast<int>(o.blocks), ic_code);
      const int64_t pmax = nchwc::max_pixels(static_cast<int>(o.blocks));
      const int64_t ob_global = o.group * (Mg / kBlock) + o.first_block;  // G > 1: Mg % 16 == 0
      TileArgs a{};
      a.w_kw_stride = ici * o.blocks * kBlock;
      a.w_kh_stride = g.KW * a.w_kw_stride;
      a.w_icb_stride = g.KH * a.w_kh_stride;
      a.ic_inner = partial_block ? Cg : ici;
      a.x_kw_stride = g.DW * x_col;
      a.x_px_stride = g.SW * x_col;
      a.y_block_stride = out_plane;
      a.bias = bias ? bias + ob_global * kBlock : nullptr;
      a.last_mask = ob_global + o.blocks == OCB ? tail_mask : 0xFFFFu;
      a.act = im.act;
      a.p0 = im.p0;
      a.p1 = im.p1;
      const int64_t chunk = chunk_of(o.blocks);
      const std::vector<ColumnRun>& runs = seg_runs[seg];
      int64_t seg_tiles = 0;
      for (const ColumnRun& r : runs) seg_tiles += ceil_div(r.end - r.begin, pmax);
      const int64_t oh0 = rg * rows, oh1 = std::min(OH, oh0 + rows);
      const int64_t calls = (oh1 - oh0) * seg_tiles;
      for (int64_t c0 = 0; c0 < icb_g; c0 += chunk) {
        const int64_t cn = std::min(chunk, icb_g - c0);
        a.icb_count = cn;
        // the weights of the next pass (this tile's next chunk, or the next
        // unit's first), spread over this pass's calls
        const float* pf_from = nullptr;
        int64_t pf_floats = 0;
        if (c0 + cn < icb_g) {
          pf_from = pk->w->p() + o.w_offset + (c0 + cn) * a.w_icb_stride;
          pf_floats = std::min(chunk, icb_g - c0 - cn) * a.w_icb_stride;
        } else if (u + 1 < u1) {
          const NchwcTile& on = pk->ocg[tile_of_unit(u + 1)];
          pf_from = pk->w->p() + on.w_offset;
          pf_floats = chunk_of(on.blocks) * w_icb_floats * on.blocks;
        }
        const int64_t pf_lines_per_call = ceil_div(pf_floats / 16, calls);
        int64_t call = 0;
        // z in place of y: start from it (and don't read it again at the end)
        a.accumulate = c0 > 0 || z_in_y;
        a.finish = c0 + cn == icb_g;
        for (int64_t oh = oh0; oh < oh1; ++oh) {
          int64_t kh_lo, kh_hi;
          nchwc_tap_range(oh, g.SH, g.PH, g.DH, g.KH, H, &kh_lo, &kh_hi);
          const int64_t khc = kh_hi - kh_lo;
          const int64_t ih_first = oh * g.SH - g.PH + kh_lo * g.DH;
          const float* xbase = io.x + n * x_img + (o.group * icb_g + c0) * x_icb + ih_first * x_row;
          const float* wrow = pk->w->p() + o.w_offset + c0 * a.w_icb_stride + kh_lo * a.w_kh_stride;
          a.kh_count = khc;
          float* yrow = y + ((n * OCB + ob_global) * OH + oh) * OW * kBlock;
          const float* zrow = io.z && !z_in_y ? io.z + ((n * OCB + ob_global) * OH + oh) * OW * kBlock : nullptr;
          for (const ColumnRun& run : runs) {
            const int64_t len = run.end - run.begin, ntiles = ceil_div(len, pmax);
            a.w = wrow + run.kw_lo * a.w_kw_stride;
            a.kw_count = run.kw_hi - run.kw_lo;
            for (int64_t t = 0, ow = run.begin; t < ntiles; ++t) {
              const int64_t P = len / ntiles + (t < len % ntiles ? 1 : 0);
              const int64_t iw0 = ow * g.SW - g.PW + run.kw_lo * g.DW;
              const int64_t iw1 = (ow + P - 1) * g.SW - g.PW + (run.kw_hi - 1) * g.DW;
              a.y = yrow + ow * kBlock;
              a.z = zrow ? zrow + ow * kBlock : nullptr;
              if (iw0 >= 0 && iw1 < W) {
                a.x = xbase + iw0 * x_col;
                a.x_kh_stride = g.DH * x_row;
                a.x_icb_stride = x_icb;
                a.x_ic_stride = x_ic;
              } else {
                read_padded_copy(xbase, cn, khc, iw0, iw1, a);
              }
              a.pf = pf_from ? pf_from + call * pf_lines_per_call * 16 : nullptr;
              // per kernel tap (a row wholly in the padding has none)
              a.pf_lines = ceil_div(pf_lines_per_call, std::max<int64_t>(cn * khc * a.kw_count, 1));
              ++call;
              tf[P](a);
              ow += P;
            }
          }
        }
      }
    }
  });
}

}  // namespace onyx
