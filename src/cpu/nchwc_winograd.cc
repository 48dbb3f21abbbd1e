// Winograd F(4x4, 3x3) and F(2x2, 3x3) on the blocked layout: weight
// transform and packing, chunking, threading and the policy. The tile
// transforms are in nchwc_winograd_avx512.cc, the products run on the direct
// convolution's tile kernels (nchwc_conv_avx512.cc).
//
// Work: units of (image, chunk of output tiles in row-major order, output-
// block groups: all of them, or one per unit with convolution groups or too
// few chunks) split over the ThreadPool. With P = (m+2)^2 positions, a unit
// transforms its chunk's tiles of the input blocks its groups read into
// V[P][input block][tile][16], then per group of up to 4 output blocks: P
// products V[p] x U[p] into Mp[P][block][tile][16] and the output transform
// of those blocks. Both buffers are per thread and sized to stay in L2; U
// (P x C/G x M) is read once per chunk.
#include "cpu/nchwc_winograd.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "base/aligned_memory.h"
#include "base/env_switch.h"
#include "cpu/conv_geometry.h"
#include "cpu/nchwc_conv_kernel.h"
#include "cpu/nchwc_winograd_kernel.h"
#include "kernels/kernel.h"

namespace onyx {

namespace {

constexpr int kBlock = 16;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ONYX_CONV_WINOGRAD_OWN: 0 never, 1 always (where supported), unset: the policy.
int winograd_env() {
  static const int p = env_switch("ONYX_CONV_WINOGRAD_OWN");
  return p;
}

// The most output tiles per chunk: as many as keep a thread's V and Mp
// within ~1 MB of L2, at least 24. Fewer chunks read the transformed weights
// fewer times: ResNet-50's 256@14 (F(2,3)) took 0.85 ms per call with
// 256 KB, 0.71 ms with 1 MB (per-node minima in the model, 1 thread).
int64_t chunk_tiles(int64_t positions, int64_t CB) {
  const int64_t per_tile = positions * (CB + nchwc::kMaxBlocks) * kBlock * sizeof(float);
  return std::max<int64_t>(24, (int64_t{1} << 20) / per_tile);
}

// G g G^T for one 3x3 filter g (row-major), in double: the (m+2)^2 positions.
void transform_filter(int m, const float* g, double* u) {
  static const double G4[6][3] = {{1.0 / 4, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
  static const double G2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const double(*G)[3] = m == 4 ? G4 : G2;
  const int n = m + 2;
  double t[6][3];  // G g
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 3; ++j) t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < n; ++k) u[i * n + k] = t[i][0] * G[k][0] + t[i][1] * G[k][1] + t[i][2] * G[k][2];
}

struct Geometry {
  int64_t N, C, H, W, M, OH, OW, PH, PW;
  int64_t G;  // groups: 1, or each group's channels whole blocks
};

bool geometry(const DnnlConvConfig& cfg, const DnnlConv::Io& io, Geometry* g) {
  if (!io.w || io.w->rank() != 4 || io.w->dtype() != DataType::Float) return false;
  if (io.x_block != kBlock || io.y_block != kBlock || io.x_shape.size() != 5 || cfg.group < 1) return false;
  const Shape& ws = io.w->shape();
  if (ws[2] != 3 || ws[3] != 3) return false;
  g->G = cfg.group;
  if (g->G > 1 && (ws[1] % kBlock != 0 || ws[0] % (g->G * kBlock) != 0)) return false;
  g->N = io.x_shape[0];
  g->C = ws[1] * g->G;
  g->H = io.x_shape[2];
  g->W = io.x_shape[3];
  g->M = ws[0];
  if (io.x_shape[1] != ceil_div(g->C, kBlock)) return false;
  SpatialGeometry sg = compute_geometry({g->H, g->W}, cfg.attrs, {3, 3});
  for (int i = 0; i < 2; ++i)
    if (sg.strides[i] != 1 || sg.dilations[i] != 1) return false;
  g->OH = sg.out[0];
  g->OW = sg.out[1];
  g->PH = sg.pad_begin[0];
  g->PW = sg.pad_begin[1];
  return g->OH > 0 && g->OW > 0;
}

}  // namespace

// The output tile side m of F(m, 3) for an output of OH x OW: F(4, 3) has
// 2.25x F(2, 3)'s transformed weights, which small outputs reuse over too
// few tiles (SqueezeNet @13: F(2, 3) 0.69x, F(4, 3) 0.95x the direct
// kernel's time; at @55 and @27 F(4, 3) takes 0.87-0.98x F(2, 3)'s).
int winograd_tile(int64_t OH, int64_t OW) { return OH * OW >= 20 * 20 ? 4 : 2; }

// Policy, measured in models (per-node profiles, 1 thread, this build
// against ONYX_CONV_WINOGRAD_OWN=0): SqueezeNet's 3x3 convolutions 16->64
// @55 0.64-0.72x the direct kernel's time, 32->128 @27 0.72-0.75x oneDNN's
// Winograd, 48->192 and 64->256 @13 (F(2, 3)) 0.69x the direct kernel's;
// ResNet-50 64@56 and 128@28 0.6-0.85x oneDNN's Winograd, but 256@14 1.3-1.4x
// and 512@7 2x: the transformed weights (16 or 36 x C x M) come from memory
// at every call and outweigh the saved multiplications once C x M is large.
// Several threads that are not oneDNN's OpenMP team: oneDNN runs every
// convolution, as for the direct kernel (see direct_conv_preferred).
// Cg <= 512 bounds a thread's transformed-input buffer (V, 36 x Cg x 24 tiles).
// Groups of 16 channels (RegNet, ResNeXt after merging): products of 16 x 16
// per group, where only F(4, 3)'s 4x fewer multiplications pay: against
// oneDNN's grouped convolution 0.70-0.77x at 56x56 and 28x28, 0.92-1.06x at
// 14x14, 1.05-1.13x at 7x7; groups of 32 at 7x7 0.79x.
//
// Since 2026-11-25 each position's products prefetch the next position's
// weights a little per call instead of all at once, and large weights pay
// (per-node medians in the model, 1 thread, against this policy before):
// ResNet-50 256@14 0.68x oneDNN's Winograd, 512@7 0.72x; GoogLeNet's
// 144..192 -> 288..384 @14 and @7 0.71-0.73x the direct kernel's time;
// RegNet-Y's groups of 16 @14 0.88x (at 2 threads the model lost 6%
// with them, so there they stay with oneDNN). They lose on the smallest
// maps (Inception-v3 448 -> 384 @5 1.15-1.23x the direct kernel's) and
// with groups of 16 @7 (1.24x).
bool winograd_conv_preferred(const DirectConvShape& s, int threads, bool one_runtime) {
  if (threads > 1 && !one_runtime) return false;
  const int64_t Cg = s.C / std::max<int64_t>(s.group, 1);  // the weights are M x Cg
  const int64_t out_px = s.OH * s.OW;
  if (s.group > 1 && Cg < 32) return winograd_tile(s.OH, s.OW) == 4 || (threads == 1 && out_px >= 14 * 14);
  return Cg <= 512 && (Cg * s.M <= 32768 || out_px >= 7 * 7);
}

struct NchwcWinogradConv::Impl : NchwcConvSetup {
  Impl(const NchwcConvSetup& setup, int tile) : NchwcConvSetup(setup), tile(tile) {}
  int tile;  // 0: winograd_tile()

  struct Packed {
    const void* w_from = nullptr;
    const void* b_from = nullptr;
    int m = 0;  // F(m, 3)
    // u: per output-block group (tile of nchwc_pack_tiles) o, its
    // positions' 1x1 weights, at positions * o.w_offset
    AlignedFloats u, bias;
    std::vector<NchwcTile> ocg;
  };
  mutable std::mutex mu;
  mutable std::vector<std::shared_ptr<const Packed>> packs;  // one per (weights, bias)

  std::shared_ptr<const Packed> pack(const Tensor& w, const Tensor* b, int m) const {
    const float* wd = w.data<float>();
    const float* bd = b ? b->data<float>() : nullptr;
    {
      std::lock_guard<std::mutex> lock(mu);
      for (auto& p : packs)
        if (p->w_from == wd && p->b_from == bd && p->m == m) return p;
    }
    auto pk = std::make_shared<Packed>();
    pk->w_from = wd;
    pk->b_from = bd;
    pk->m = m;
    const int64_t positions = (m + 2) * (m + 2);
    const int64_t M = w.dim(0), C = w.dim(1), G = cfg.group;  // C: per group
    pk->bias = allocate_zeroed_floats(ceil_div(M, kBlock) * kBlock);
    if (bd) std::copy(bd, bd + M, pk->bias.get());
    // all filters transformed, [position][m][c]
    std::vector<float> u(static_cast<size_t>(positions * M * C));
    double t[36];
    for (int64_t oc = 0; oc < M; ++oc)
      for (int64_t c = 0; c < C; ++c) {
        transform_filter(m, wd + (oc * C + c) * 9, t);
        for (int64_t p = 0; p < positions; ++p) u[(p * M + oc) * C + c] = static_cast<float>(t[p]);
      }
    // per output-block group, its positions one after the other: a unit
    // reads its group's weights as one stream
    const size_t position_size = nchwc_pack_tiles(u.data(), M, C, 1, 1, G, false, nchwc::kMaxBlocks, &pk->ocg, nullptr);
    AlignedFloats one = allocate_zeroed_floats(position_size);
    pk->u = allocate_zeroed_floats(position_size * positions);
    for (int64_t p = 0; p < positions; ++p) {
      nchwc_pack_tiles(u.data() + p * M * C, M, C, 1, 1, G, false, nchwc::kMaxBlocks, &pk->ocg, one.get());
      for (const NchwcTile& o : pk->ocg) {
        const size_t tile_size = static_cast<size_t>(ceil_div(C, kBlock) * kBlock * o.blocks * kBlock);
        std::copy(one.get() + o.w_offset, one.get() + o.w_offset + tile_size,
                  pk->u.get() + positions * o.w_offset + p * tile_size);
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    packs.push_back(pk);
    return pk;
  }
};

std::unique_ptr<NchwcWinogradConv> NchwcWinogradConv::create(const DnnlConvConfig& cfg, int block,
                                                              bool bias_constant, int tile) {
  if (tile != 0 && tile != 2 && tile != 4) return nullptr;
  if (cfg.attrs.kernel.size() == 2 && (cfg.attrs.kernel[0] != 3 || cfg.attrs.kernel[1] != 3)) return nullptr;
  NchwcConvSetup setup;
  if (!nchwc_conv_setup(cfg, block, bias_constant, &setup)) return nullptr;
  std::unique_ptr<NchwcWinogradConv> d(new NchwcWinogradConv());
  d->impl_ = std::make_unique<Impl>(setup, tile);
  return d;
}

NchwcWinogradConv::~NchwcWinogradConv() = default;

bool NchwcWinogradConv::supports(const DnnlConv::Io& io) const {
  Geometry g;
  return geometry(impl_->cfg, io, &g) && (!io.b || impl_->bias_constant);
}

bool NchwcWinogradConv::use_for(const DnnlConv::Io& io, const ThreadPool* pool) const {
  const int env = winograd_env();
  if (env == 0) return false;
  Geometry g;
  if (!geometry(impl_->cfg, io, &g) || (io.b && !impl_->bias_constant)) return false;
  if (env == 1) return true;
  DirectConvShape s;
  s.C = g.C, s.M = g.M, s.H = g.H, s.W = g.W, s.OH = g.OH, s.OW = g.OW, s.KH = 3, s.KW = 3, s.group = g.G;
  return winograd_conv_preferred(s, pool ? pool->num_threads() : 1, !pool || pool->uses_openmp_team());
}

void NchwcWinogradConv::run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const {
  const Impl& im = *impl_;
  Geometry g;
  if (!geometry(im.cfg, io, &g)) kernel_fail("NchwcConv: this shape is not supported by the Winograd kernel");
  const int m = im.tile ? im.tile : winograd_tile(g.OH, g.OW), n_in = m + 2;
  const int64_t positions = n_in * n_in;
  auto pk = im.pack(*io.w, io.b, m);
  const float* bias = io.b ? pk->bias.get() : nullptr;
  const int64_t CB = ceil_div(g.C, kBlock), OCB = ceil_div(g.M, kBlock);
  const int64_t icb_g = ceil_div(g.C / g.G, kBlock), ocb_g = g.M / g.G / kBlock;  // per group (ocb_g: G > 1)
  const uint32_t tail_mask = g.M % kBlock ? (1u << (g.M % kBlock)) - 1 : 0xFFFFu;
  const int64_t TW = ceil_div(g.OW, m), tiles = ceil_div(g.OH, m) * TW;
  // chunks of (nearly) equal size, as many per thread: a short last chunk,
  // or one more chunk on one thread, left the others idle. But every chunk
  // reads all the weights: where they come from memory (more than L2 holds)
  // threads split the output blocks of the fewest chunks instead (ResNet-50
  // 512@7 at 2 threads took 1.7x oneDNN's time with two chunks).
  const int nthr = pool ? pool->num_threads() : 1;
  const int64_t fewest_chunks = ceil_div(tiles, chunk_tiles(positions, icb_g));
  const bool weights_streamed = positions * (g.C / g.G) * g.M * sizeof(float) > (size_t{2} << 20);
  const int64_t chunks = std::min(tiles, weights_streamed ? fewest_chunks : ceil_div(fewest_chunks, nthr) * nthr);
  const int64_t T = ceil_div(tiles, chunks);
  const int64_t nocg = static_cast<int64_t>(pk->ocg.size());
  // A unit is one chunk x one output-block group with several groups, or with
  // several threads and fewer than 4 chunks per thread (each unit transforms
  // the input blocks of its group: ~6% of a group's products; uneven ranges
  // of groups left threads idle). So V holds one group's input blocks.
  const int64_t parts = g.G > 1 || (nthr > 1 && g.N * chunks < 4 * nthr) ? nocg : 1;
  const int64_t units = g.N * chunks * parts;

  const nchwc::WinoInputFn input_tile = nchwc::wino_input_kernel_avx512(m);
  const nchwc::WinoOutputFn output_tile = nchwc::wino_output_kernel_avx512(m);

  const int64_t x_plane = g.H * g.W * kBlock, y_plane = g.OH * g.OW * kBlock;
  const int64_t v_position = icb_g * T * kBlock;  // floats per position in V
  parallel_for(pool, units, [&](int64_t u0, int64_t u1) {
    thread_local AlignedScratch v_buf, m_buf;
    float* V = v_buf.get(static_cast<size_t>(positions * v_position));
    float* Mp = m_buf.get(static_cast<size_t>(positions * nchwc::kMaxBlocks * T * kBlock));
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t part = u % parts, chunk = (u / parts) % chunks, n = u / (parts * chunks);
      const int64_t t0 = chunk * tiles / chunks, tn = (chunk + 1) * tiles / chunks - t0;
      const int64_t oi0 = nocg * part / parts, oi1 = nocg * (part + 1) / parts;
      // the input blocks of this unit's groups
      const int64_t icb0 = pk->ocg[oi0].group * icb_g, icb1 = (pk->ocg[oi1 - 1].group + 1) * icb_g;
      for (int64_t icb = icb0; icb < icb1; ++icb) {
        nchwc::WinoInputArgs a;
        a.x = io.x + (n * CB + icb) * x_plane;
        a.H = g.H, a.W = g.W;
        a.v_stride = v_position;
        for (int64_t t = 0; t < tn; ++t) {
          const int64_t th = (t0 + t) / TW, tw = (t0 + t) % TW;
          a.ih0 = th * m - g.PH;
          a.iw0 = tw * m - g.PW;
          a.v = V + ((icb - icb0) * T + t) * kBlock;
          input_tile(a);
        }
      }
      for (int64_t oi = oi0; oi < oi1; ++oi) {
        const NchwcTile& o = pk->ocg[oi];
        const int nb = static_cast<int>(o.blocks);
        const int64_t pmax = nchwc::max_pixels(nb);
        const nchwc::TileFn* fns = nchwc_tile_kernels(nb, kBlock);
        const int64_t m_position = nb * T * kBlock;
        nchwc::TileArgs a{};
        a.x_icb_stride = T * kBlock;
        a.w_icb_stride = kBlock * nb * kBlock;
        a.kh_count = a.kw_count = 1;
        a.ic_inner = kBlock;
        a.x_ic_stride = 1;
        a.x_px_stride = kBlock;
        a.y_block_stride = T * kBlock;
        a.last_mask = 0xFFFFu;
        a.finish = false;
        // input blocks per pass: their weights stay in L1 (<= 32 KB)
        const int64_t cchunk = std::clamp<int64_t>(32768 / (a.w_icb_stride * 4), 1, icb_g);
        const int64_t w_position = icb_g * a.w_icb_stride;
        const int64_t gicb = o.group * icb_g;  // the group's first input block
        const int64_t calls = ceil_div(icb_g, cchunk) * ceil_div(tn, pmax);
        for (int64_t p = 0; p < positions; ++p) {
          const float* wp = pk->u.get() + positions * o.w_offset + p * w_position;
          // the next position's weights (or the next group's first), from
          // memory while these multiply, spread over this position's calls
          // (SqueezeNet's F(4, 3) layers @27 and @13: 0.79-0.86x the time
          // without; spread rather than all at once: ResNet-50 256@14 and
          // 512@7 0.76x and 0.53x, conv_bench --cold)
          const float* next = nullptr;
          int64_t next_floats = 0;
          if (p + 1 < positions) {
            next = wp + w_position, next_floats = w_position;
          } else if (oi + 1 < oi1) {
            const NchwcTile& on = pk->ocg[oi + 1];
            next = pk->u.get() + positions * on.w_offset, next_floats = icb_g * kBlock * on.blocks * kBlock;
          }
          const int64_t next_lines = next_floats / 16;
          const int64_t lines_per_call = ceil_div(next_lines, calls);
          int64_t call = 0;
          for (int64_t c0 = 0; c0 < icb_g; c0 += cchunk) {
            a.icb_count = std::min(cchunk, icb_g - c0);
            a.accumulate = c0 > 0;
            a.w = wp + c0 * a.w_icb_stride;
            a.pf_lines = ceil_div(lines_per_call, a.icb_count);
            for (int64_t t = 0; t < tn;) {
              const int64_t P = std::min(pmax, tn - t);
              a.x = V + p * v_position + ((gicb - icb0 + c0) * T + t) * kBlock;
              a.y = Mp + p * m_position + t * kBlock;
              a.pf = next ? next + call++ * lines_per_call * 16 : nullptr;
              fns[P](a);
              t += P;
            }
          }
        }
        nchwc::WinoOutputArgs oa;
        oa.m_stride = m_position;
        oa.y_row = g.OW;
        oa.act = im.act;
        oa.p0 = im.p0;
        oa.p1 = im.p1;
        for (int b = 0; b < nb; ++b) {
          const int64_t ob = o.group * ocb_g + o.first_block + b;
          oa.bias = bias ? bias + ob * kBlock : nullptr;
          oa.mask = ob == OCB - 1 ? tail_mask : 0xFFFFu;
          float* yb = y + (n * OCB + ob) * y_plane;
          const float* zb = io.z ? io.z + (n * OCB + ob) * y_plane : nullptr;
          for (int64_t t = 0; t < tn; ++t) {
            const int64_t oh = (t0 + t) / TW * m, ow = (t0 + t) % TW * m;
            oa.m = Mp + (b * T + t) * kBlock;
            oa.rows = static_cast<int>(std::min<int64_t>(m, g.OH - oh));
            oa.cols = static_cast<int>(std::min<int64_t>(m, g.OW - ow));
            oa.y = yb + (oh * g.OW + ow) * kBlock;
            oa.z = zb ? zb + (oh * g.OW + ow) * kBlock : nullptr;
            output_tile(oa);
          }
        }
      }
    }
  });
}

}  // namespace onyx
