// Direct convolution on the blocked activation layout [N, C/16, H, W, 16]
// with AVX-512 micro-kernels (nchwc_conv_avx512.cc), used by NchwcConv in
// place of oneDNN for the shapes where it measured faster (see
// direct_conv_preferred in nchwc_conv.cc).
//
// Handles: 2-D, any kernel / stride / dilation / padding; blocked input
// (block 16), or plain NCHW input with one group (the first conv of a CNN);
// groups whose input and output channels per group are multiples of 16;
// depthwise (group == C == M); bias, residual z and the activations Relu,
// LeakyRelu, Clip, HardSigmoid, HardSwish, Sigmoid, Tanh in the store:
// y = act(conv(x) + b + z). Channels past C / M in the last block are zero.
//
// ONYX_CONV_DIRECT=0 never uses it, =1 whenever it can run, unset: the policy.
#pragma once
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "cpu/dnnl_conv.h"
#include "cpu/nchwc_conv_kernel.h"

namespace onyx {

// True when this CPU has AVX-512F (checked once).
bool nchwc_direct_available();

// The activation (as FusedConv's attribute) as the micro-kernels' ActKind
// and parameters; false when they don't implement it.
bool nchwc_activation(const std::string& act, const std::vector<float>& params, int* kind, float* p0, float* p1);

// What the blocked AVX-512 convolutions (direct and Winograd) keep of a
// convolution's config: the config itself (ceil_mode cleared: the caller's
// shapes are final), whether input 2 is a constant, and the store's
// activation as nchwc_activation gives it.
struct NchwcConvSetup {
  DnnlConvConfig cfg;
  bool bias_constant = false;
  int act = 0;
  float p0 = 0, p1 = 0;
};
// False when those kernels can't run cfg: no AVX-512, block != 16, weights
// not constant, group < 1, or an activation they don't implement.
bool nchwc_conv_setup(const DnnlConvConfig& cfg, int block, bool bias_constant, NchwcConvSetup* setup);

// The kernel taps [lo, hi) of output position o that fall inside an input of
// `in` positions along one axis (stride s, pad p, dilation d, kernel k).
inline void nchwc_tap_range(int64_t o, int64_t s, int64_t p, int64_t d, int64_t k, int64_t in, int64_t* lo,
                            int64_t* hi) {
  const int64_t i0 = o * s - p;
  *lo = i0 < 0 ? (-i0 + d - 1) / d : 0;
  *hi = in - 1 - i0 < 0 ? 0 : std::min(k, (in - 1 - i0) / d + 1);
  if (*hi < *lo) *hi = *lo;
}

// A tile of output blocks of one group, and where its weights start in the
// packed buffer.
struct NchwcTile {
  int64_t group, first_block, blocks;
  size_t w_offset;
};
// Packs weights [M, Cg, KH, KW] (G groups) for the tile kernels: each group's
// output blocks in tiles of at most max_blocks (as even as possible), each
// tile [input block][kh][kw][ic][block][16] (plain input: one block of Cg
// channels). Fills `tiles` and returns the packed size in floats; writes
// into dst (zeroed, that size) when it is not null.
size_t nchwc_pack_tiles(const float* w, int64_t M, int64_t Cg, int64_t KH, int64_t KW, int64_t G, bool plain,
                        int64_t max_blocks, std::vector<NchwcTile>* tiles, float* dst);
// The tile kernels of nb output blocks (1..nchwc::kMaxBlocks) and an inner
// channel loop of ic (16 for blocked input, 3, or 0: any), indexed by the
// pixel count 1..nchwc::max_pixels(nb); looked up once per process.
const nchwc::TileFn* nchwc_tile_kernels(int nb, int ic);
// Depthwise weights [M, 1, KH, KW] as [M/16][KH * KW][16].
void nchwc_pack_depthwise(const float* w, int64_t M, int64_t taps, float* dst);

// The shape of one convolution, for the selection policy.
struct DirectConvShape {
  int64_t C = 0, M = 0, H = 0, W = 0, OH = 0, OW = 0, KH = 1, KW = 1, SH = 1, SW = 1, DH = 1, DW = 1;
  int64_t group = 1;
  bool plain_input = false;
};
// Whether the direct kernel is expected to beat oneDNN on this shape.
// one_runtime: the pool runs on oneDNN's OpenMP team, so mixing the two
// kernels costs no switch between thread sets.
bool direct_conv_preferred(const DirectConvShape& s, int threads, bool one_runtime);

// Whether a 1x1 conv's weights [M, C] are too large to stay cached between
// runs while its few output pixels reuse them little: the direct kernel then
// streams them, prefetching a pass ahead.
bool pointwise_weights_streamed(int64_t C, int64_t M, int64_t out_pixels, bool strided);

class NchwcDirectConv {
 public:
  // Null when the configuration can't run here (no AVX-512, block != 16,
  // activation not supported, not 2-D).
  // bias_constant: input 2, when given, is a constant (it is packed once).
  static std::unique_ptr<NchwcDirectConv> create(const DnnlConvConfig& cfg, int block, bool bias_constant = true);
  ~NchwcDirectConv();

  // Whether this call (shapes; weights and bias constant) can run here.
  bool supports(const DnnlConv::Io& io) const;
  // supports() and the policy / ONYX_CONV_DIRECT say to use it (cached per shape).
  bool use_for(const DnnlConv::Io& io, const ThreadPool* pool) const;
  // Same contract as DnnlConv::run with y_block == 16; requires supports(io).
  // The weights (and bias) are packed on the first call and kept: they must
  // be constants that stay at the same address.
  void run(const DnnlConv::Io& io, float* y, ThreadPool* pool) const;

 private:
  NchwcDirectConv() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onyx
