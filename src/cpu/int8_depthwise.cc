#include "cpu/int8_depthwise.h"
#include "base/cpu_features.h"

#include <algorithm>
#include <memory>
#include <type_traits>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ONYX_DEPTHWISE_X86 1
// GCC 12's AVX-512 headers trip -Wmaybe-uninitialized on _mm512_undefined_*.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace onyx {

namespace {

// sum_t (x_t - x_zp) * w'_t = sum_t x_t * w'_t - x_zp * sum_t w'_t with
// w' = w - w_zp, so the loop multiplies raw input bytes and one constant per
// channel corrects the sum; padding reads a row of x_zp bytes, which the
// correction cancels like any other tap. Products fit 16-bit operands
// (|x| <= 255, |w'| <= 255) and a pair of them an int32 lane: exact.
struct DepthwisePlan {
  int64_t C = 0, taps = 0, pairs = 0, blocks = 0;  // blocks of 16 channels
  std::vector<int32_t> w;                          // [taps][C]: w - w_zp
  std::vector<int16_t> paired;                     // [pairs][blocks * 16][2]: taps 2p and 2p + 1 interleaved
  std::vector<int32_t> sum;                        // [blocks * 16]: sum_t w' (times -x_zp: the correction)
};

DepthwisePlan plan_depthwise(const Int8ConvWeights& wt, const std::vector<int32_t>& wzp) {
  DepthwisePlan p;
  const int64_t taps = wt.ksize;
  p.C = wt.M;
  p.taps = taps;
  p.pairs = (taps + 1) / 2;
  p.blocks = (p.C + 15) / 16;
  p.w.assign(static_cast<size_t>(taps * p.C), 0);
  p.paired.assign(static_cast<size_t>(p.pairs * p.blocks * 32), 0);
  p.sum.assign(static_cast<size_t>(p.blocks * 16), 0);
  for (int64_t c = 0; c < p.C; ++c) {
    const int32_t z = wzp[wzp.size() == 1 ? 0 : c];
    int32_t sum = 0;
    for (int64_t t = 0; t < taps; ++t) {
      const int32_t v = wt.raw[c * taps + t] - z;
      p.w[t * p.C + c] = v;
      p.paired[((t / 2) * p.blocks * 16 + c) * 2 + t % 2] = static_cast<int16_t>(v);
      sum += v;
    }
    p.sum[c] = sum;
  }
  return p;
}

// vpdpbusd multiplies 4 unsigned bytes by 4 signed ones into an int32 lane:
// four taps of one channel per lane when every w' fits a signed byte (int8
// weights with a zero point of 0, uint8 ones with 128, ...). Int8 input is
// made unsigned by flipping its top bit (x + 128), which the correction
// takes back. Four 64-byte loads (taps) interleave into four vectors of 16
// channels, lane L of vector j holding channels 16L + 4j .. 16L + 4j + 3: the
// sums are kept in that order and put back in place once per pixel.
// Up to 32 channels past the last whole block of 64 go 16 at a time in one
// vector, in channel order (two shuffles from the four taps' 16 bytes): a
// tail of 16 then costs 10 instructions a quad instead of a block's 16.
// Longer tails take a block of their own, masked.
struct QuadPlan {
  int64_t quads = 0, blocks = 0;  // groups of 4 taps; blocks of 64 channels (the last may be partial)
  int64_t tails = 0;              // blocks of 16 channels after them (the last may be partial)
  std::vector<int8_t> w;          // [quads][blocks][64 sums][4 taps]
  std::vector<int8_t> tail_w;     // [quads][tails][16 channels][4 taps]
  std::vector<int32_t> sum;       // DepthwisePlan's sum in the order the kernel keeps its sums
};

// The channel (within its block of 64) that sum s accumulates.
int64_t channel_of_sum(int64_t s) { return (s / 4) % 4 * 16 + s / 16 * 4 + s % 4; }

// The channel of the kernel's sum i: permuted within the blocks of 64, in order in the tail.
int64_t channel_of_slot(const QuadPlan& q, int64_t i) {
  return i < q.blocks * 64 ? i / 64 * 64 + channel_of_sum(i % 64) : i;
}

bool plan_quads(const DepthwisePlan& p, QuadPlan* q) {
  if (std::any_of(p.w.begin(), p.w.end(), [](int32_t v) { return v < -128 || v > 127; })) return false;
  q->quads = (p.taps + 3) / 4;
  q->blocks = p.C % 64 > 32 ? (p.C + 63) / 64 : p.C / 64;
  q->tails = (std::max<int64_t>(0, p.C - q->blocks * 64) + 15) / 16;
  q->w.assign(static_cast<size_t>(q->quads * q->blocks * 256), 0);
  q->tail_w.assign(static_cast<size_t>(q->quads * q->tails * 64), 0);
  for (int64_t t = 0; t < p.taps; ++t) {
    for (int64_t i = 0; i < q->blocks * 64; ++i) {
      const int64_t c = channel_of_slot(*q, i);
      if (c < p.C) q->w[((t / 4) * q->blocks * 64 + i) * 4 + t % 4] = static_cast<int8_t>(p.w[t * p.C + c]);
    }
    for (int64_t c = q->blocks * 64; c < p.C; ++c) {
      const int64_t tail_c = c - q->blocks * 64;  // [tails][16] is the channels in order
      q->tail_w[((t / 4) * q->tails * 16 + tail_c) * 4 + t % 4] = static_cast<int8_t>(p.w[t * p.C + c]);
    }
  }
  q->sum.assign(static_cast<size_t>(q->blocks * 64 + q->tails * 16), 0);
  for (int64_t i = 0; i < static_cast<int64_t>(q->sum.size()); ++i) {
    const int64_t c = channel_of_slot(*q, i);
    if (c < p.C) q->sum[i] = p.sum[c];
  }
  return true;
}

// The input pixel each tap of output (oh, ow) reads, or the padding row.
void tap_pointers(const uint8_t* image, const uint8_t* pad_row, int64_t C, const Geo2& g, int64_t oh, int64_t ow,
                  const uint8_t** ptr) {
  const int64_t ih0 = oh * g.SH - g.PT, iw0 = ow * g.SW - g.PL;
  int64_t t = 0;
  for (int64_t kh = 0; kh < g.KH; ++kh) {
    const int64_t ih = ih0 + kh * g.DH;
    for (int64_t kw = 0; kw < g.KW; ++kw, ++t) {
      const int64_t iw = iw0 + kw * g.DW;
      ptr[t] = ih < 0 || ih >= g.H || iw < 0 || iw >= g.W ? pad_row : image + (ih * g.W + iw) * C;
    }
  }
}

// acc[c] for one output pixel's channels c0 .. C - 1, plain C++.
void depthwise_pixel_scalar(const DepthwisePlan& p, const int32_t* init, const uint8_t* const* ptr, bool is_signed,
                            int32_t* acc, int64_t c0 = 0) {
  for (int64_t c = c0; c < p.C; ++c) acc[c] = init[c];
  for (int64_t t = 0; t < p.taps; ++t) {
    const int32_t* w = p.w.data() + t * p.C;
    if (is_signed) {
      const auto* x = reinterpret_cast<const int8_t*>(ptr[t]);
      for (int64_t c = c0; c < p.C; ++c) acc[c] += x[c] * w[c];
    } else {
      for (int64_t c = c0; c < p.C; ++c) acc[c] += ptr[t][c] * w[c];
    }
  }
}

#ifdef ONYX_DEPTHWISE_X86
// 16 channels at a time: the bytes of taps 2p and 2p + 1 interleaved and
// widened to 16 bits, then vpmaddwd against the interleaved weights. NB
// blocks of 16 channels together: independent sums hide vpmaddwd's latency.
template <bool Signed, int NB>
__attribute__((target("avx512f,avx512bw,avx512vl"))) inline void depthwise_blocks_avx512(const DepthwisePlan& p,
                                                                                       const int32_t* init,
                                                                                       const uint8_t* const* ptr,
                                                                                       int64_t b0, int32_t* acc) {
  __m512i sum[NB];
  __mmask16 mask[NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) {
    const int64_t left = p.C - (b0 + j) * 16;
    mask[j] = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    sum[j] = _mm512_loadu_si512(init + (b0 + j) * 16);
  }
  for (int64_t k = 0; k < p.pairs; ++k) {
    const uint8_t *pa = ptr[2 * k], *pb = ptr[2 * k + 1];
    const int16_t* w = p.paired.data() + (k * p.blocks + b0) * 32;
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      const int64_t c0 = (b0 + j) * 16;
      const __m128i a = _mm_maskz_loadu_epi8(mask[j], pa + c0), b = _mm_maskz_loadu_epi8(mask[j], pb + c0);
      const __m256i ab =
          _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_unpacklo_epi8(a, b)), _mm_unpackhi_epi8(a, b), 1);
      const __m512i x = Signed ? _mm512_cvtepi8_epi16(ab) : _mm512_cvtepu8_epi16(ab);
      sum[j] = _mm512_add_epi32(sum[j], _mm512_madd_epi16(x, _mm512_loadu_si512(w + j * 32)));
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) _mm512_mask_storeu_epi32(acc + (b0 + j) * 16, mask[j], sum[j]);
}

template <bool Signed>
__attribute__((target("avx512f,avx512bw,avx512vl"))) void depthwise_pixel_avx512(const DepthwisePlan& p,
                                                                                const int32_t* init,
                                                                                const uint8_t* const* ptr,
                                                                                int32_t* acc) {
  int64_t b = 0;
  for (; b + 4 <= p.blocks; b += 4) depthwise_blocks_avx512<Signed, 4>(p, init, ptr, b, acc);
  switch (p.blocks - b) {
    case 3: depthwise_blocks_avx512<Signed, 3>(p, init, ptr, b, acc); break;
    case 2: depthwise_blocks_avx512<Signed, 2>(p, init, ptr, b, acc); break;
    case 1: depthwise_blocks_avx512<Signed, 1>(p, init, ptr, b, acc); break;
    default: break;
  }
}

// depthwise_blocks_avx512 on AVX2: NB blocks of 8 channels from channel c0,
// each tap pair's 16 bytes widened to one vector of 16-bit values.
template <bool Signed, int NB>
__attribute__((target("avx2"))) inline void depthwise_blocks_avx2(const DepthwisePlan& p, const int32_t* init,
                                                                   const uint8_t* const* ptr, int64_t c0,
                                                                   int32_t* acc) {
  __m256i sum[NB];
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) sum[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(init + c0 + 8 * j));
  for (int64_t k = 0; k < p.pairs; ++k) {
    const uint8_t *pa = ptr[2 * k], *pb = ptr[2 * k + 1];
    const int16_t* w = p.paired.data() + (k * p.blocks * 16 + c0) * 2;
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) {
      const __m128i a = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pa + c0 + 8 * j));
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pb + c0 + 8 * j));
      const __m128i ab = _mm_unpacklo_epi8(a, b);
      const __m256i x = Signed ? _mm256_cvtepi8_epi16(ab) : _mm256_cvtepu8_epi16(ab);
      const __m256i wv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16 * j));
      sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(x, wv));
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < NB; ++j) _mm256_storeu_si256(reinterpret_cast<__m256i*>(acc + c0 + 8 * j), sum[j]);
}

// Whole blocks of 8 channels with AVX2, the last C % 8 in plain C++.
template <bool Signed>
__attribute__((target("avx2"))) void depthwise_pixel_avx2(const DepthwisePlan& p, const int32_t* init,
                                                          const uint8_t* const* ptr, int32_t* acc) {
  const int64_t whole = p.C / 8 * 8;
  int64_t c = 0;
  for (; c + 32 <= whole; c += 32) depthwise_blocks_avx2<Signed, 4>(p, init, ptr, c, acc);
  for (; c < whole; c += 8) depthwise_blocks_avx2<Signed, 1>(p, init, ptr, c, acc);
  if (whole < p.C) depthwise_pixel_scalar(p, init, ptr, Signed, acc, whole);
}

// NP pixels, all channels, through QuadPlan; each pixel has quads * 4 = slots
// taps. Strided: pixel j reads tap t at ptr[t] + j * step (a run inside the
// image); else at ptr[j * slots + t] (border pixels). Pixel j writes
// acc + j * C. The pixels share each weight load (loads, not arithmetic,
// bound this loop).
template <bool Signed, bool Strided, int NP>
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni"))) void depthwise_pixels_quads(const QuadPlan& q, int64_t C,
                                                                                 const int32_t* init,
                                                                                 const uint8_t* const* ptr,
                                                                                 int64_t step, int32_t* acc) {
  const int64_t slots = q.quads * 4;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  for (int64_t b = 0; b < q.blocks; ++b) {
    const int64_t c0 = b * 64, left = C - c0;
    const __mmask64 mask = left >= 64 ? ~__mmask64(0) : (__mmask64(1) << left) - 1;
    __m512i s[NP][4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m512i start = _mm512_loadu_si512(init + c0 + 16 * j);
#pragma GCC unroll 4
      for (int px = 0; px < NP; ++px) s[px][j] = start;
    }
    for (int64_t k = 0; k < q.quads; ++k) {
      const int8_t* w = q.w.data() + (k * q.blocks + b) * 256;
      const __m512i w0 = _mm512_loadu_si512(w), w1 = _mm512_loadu_si512(w + 64), w2 = _mm512_loadu_si512(w + 128),
                    w3 = _mm512_loadu_si512(w + 192);
#pragma GCC unroll 4
      for (int px = 0; px < NP; ++px) {
        const uint8_t* const* p = ptr + (Strided ? 0 : px * slots) + 4 * k;
        const int64_t o = c0 + (Strided ? px * step : 0);
        __m512i x0 = _mm512_maskz_loadu_epi8(mask, p[0] + o), x1 = _mm512_maskz_loadu_epi8(mask, p[1] + o),
                x2 = _mm512_maskz_loadu_epi8(mask, p[2] + o), x3 = _mm512_maskz_loadu_epi8(mask, p[3] + o);
        if (Signed) {
          x0 = _mm512_xor_si512(x0, flip);
          x1 = _mm512_xor_si512(x1, flip);
          x2 = _mm512_xor_si512(x2, flip);
          x3 = _mm512_xor_si512(x3, flip);
        }
        const __m512i lo01 = _mm512_unpacklo_epi8(x0, x1), hi01 = _mm512_unpackhi_epi8(x0, x1);
        const __m512i lo23 = _mm512_unpacklo_epi8(x2, x3), hi23 = _mm512_unpackhi_epi8(x2, x3);
        s[px][0] = _mm512_dpbusd_epi32(s[px][0], _mm512_unpacklo_epi16(lo01, lo23), w0);
        s[px][1] = _mm512_dpbusd_epi32(s[px][1], _mm512_unpackhi_epi16(lo01, lo23), w1);
        s[px][2] = _mm512_dpbusd_epi32(s[px][2], _mm512_unpacklo_epi16(hi01, hi23), w2);
        s[px][3] = _mm512_dpbusd_epi32(s[px][3], _mm512_unpackhi_epi16(hi01, hi23), w3);
      }
    }
#pragma GCC unroll 4
    for (int px = 0; px < NP; ++px) {
      // Lane L of s0..s3 are channels 16L .. 16L + 15: a 4 x 4 transpose of 128-bit lanes.
      const __m512i t0 = _mm512_shuffle_i64x2(s[px][0], s[px][1], 0x44);
      const __m512i t1 = _mm512_shuffle_i64x2(s[px][0], s[px][1], 0xEE);
      const __m512i t2 = _mm512_shuffle_i64x2(s[px][2], s[px][3], 0x44);
      const __m512i t3 = _mm512_shuffle_i64x2(s[px][2], s[px][3], 0xEE);
      const __m512i out[4] = {_mm512_shuffle_i64x2(t0, t2, 0x88), _mm512_shuffle_i64x2(t0, t2, 0xDD),
                              _mm512_shuffle_i64x2(t1, t3, 0x88), _mm512_shuffle_i64x2(t1, t3, 0xDD)};
      int32_t* a = acc + px * C + c0;
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) {
        const int64_t n = left - 16 * j;
        if (n >= 16) _mm512_storeu_si512(a + 16 * j, out[j]);
        else if (n > 0) _mm512_mask_storeu_epi32(a + 16 * j, __mmask16((1u << n) - 1), out[j]);
      }
    }
  }
  // Byte 4c + t of the dot products' operand is channel c of tap t, where tap t's 16 bytes sit in
  // lane t: dword 4L + t <- dword 4t + L (each lane L gets channels 4L .. 4L + 3 of the four taps),
  // then a 4 x 4 byte transpose in each lane.
  const __m512i dwords = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  // Bytes 0, 4, 8, 12, 1, 5, 9, 13, ... of each lane.
  const __m512i bytes = _mm512_setr4_epi32(0x0C080400, 0x0D090501, 0x0E0A0602, 0x0F0B0703);
  for (int64_t b = 0; b < q.tails; ++b) {
    const int64_t c0 = q.blocks * 64 + b * 16, left = C - c0;
    const __mmask16 mask = left >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << left) - 1);
    __m512i s[NP];
    const __m512i start = _mm512_loadu_si512(init + c0);
#pragma GCC unroll 4
    for (int px = 0; px < NP; ++px) s[px] = start;
    for (int64_t k = 0; k < q.quads; ++k) {
      const __m512i w = _mm512_loadu_si512(q.tail_w.data() + (k * q.tails + b) * 64);
#pragma GCC unroll 4
      for (int px = 0; px < NP; ++px) {
        const uint8_t* const* p = ptr + (Strided ? 0 : px * slots) + 4 * k;
        const int64_t o = c0 + (Strided ? px * step : 0);
        __m512i x = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(mask, p[0] + o));
        x = _mm512_inserti32x4(x, _mm_maskz_loadu_epi8(mask, p[1] + o), 1);
        x = _mm512_inserti32x4(x, _mm_maskz_loadu_epi8(mask, p[2] + o), 2);
        x = _mm512_inserti32x4(x, _mm_maskz_loadu_epi8(mask, p[3] + o), 3);
        if (Signed) x = _mm512_xor_si512(x, flip);
        x = _mm512_shuffle_epi8(_mm512_permutexvar_epi32(dwords, x), bytes);
        s[px] = _mm512_dpbusd_epi32(s[px], x, w);
      }
    }
#pragma GCC unroll 4
    for (int px = 0; px < NP; ++px) _mm512_mask_storeu_epi32(acc + px * C + c0, mask, s[px]);
  }
}

// count (1-4) pixels: step > 0 for a strided run from ptr's one pixel, 0 for ptr's [count][slots].
void depthwise_quads(const QuadPlan& q, int64_t C, const int32_t* init, const uint8_t* const* ptr, int64_t step,
                     int64_t count, bool is_signed, int32_t* acc) {
  auto run = [&](auto np) {
    constexpr int kNP = decltype(np)::value;
    if (step > 0) {
      if (is_signed) depthwise_pixels_quads<true, true, kNP>(q, C, init, ptr, step, acc);
      else depthwise_pixels_quads<false, true, kNP>(q, C, init, ptr, step, acc);
    } else {
      if (is_signed) depthwise_pixels_quads<true, false, kNP>(q, C, init, ptr, 0, acc);
      else depthwise_pixels_quads<false, false, kNP>(q, C, init, ptr, 0, acc);
    }
  };
  switch (count) {
    case 4: return run(std::integral_constant<int, 4>{});
    case 3: return run(std::integral_constant<int, 3>{});
    case 2: return run(std::integral_constant<int, 2>{});
    default: return run(std::integral_constant<int, 1>{});
  }
}
#endif

}  // namespace

// The weights' part of the kernels' data: it depends on w and w_zp only.
struct Int8DepthwisePlan {
  std::vector<int32_t> wzp;  // the zero points it was made with
  DepthwisePlan pairs;
  bool quads_fit = false;
  QuadPlan quads;
};

std::shared_ptr<const Int8DepthwisePlan> plan_int8_depthwise(const Int8ConvWeights& w,
                                                             const std::vector<int32_t>& wzp) {
  auto plan = std::make_shared<Int8DepthwisePlan>();
  plan->wzp = wzp;
  plan->pairs = plan_depthwise(w, wzp);
  plan->quads_fit = plan_quads(plan->pairs, &plan->quads);
  return plan;
}

void int8_depthwise_channels_last(const Int8ConvInput& x, const Geo2& g, const Int8ConvWeights& w,
                                  const std::vector<int32_t>& wzp, const Int8ConvSink& sink, ThreadPool* pool,
                                  Int8Isa isa) {
  const int64_t C = x.C, taps = g.KH * g.KW;
  const std::shared_ptr<const Int8DepthwisePlan> made =
      w.depthwise && w.depthwise->wzp == wzp ? w.depthwise : plan_int8_depthwise(w, wzp);
  const DepthwisePlan& plan = made->pairs;
  const QuadPlan& quads = made->quads;
  enum class Kernel { Scalar, PairsAvx2, Pairs, Quads } kernel = Kernel::Scalar;
#ifdef ONYX_DEPTHWISE_X86
  if (isa != Int8Isa::Scalar && cpu_features().avx2) kernel = Kernel::PairsAvx2;
  if (isa != Int8Isa::Scalar && has_avx512bw_vl()) kernel = Kernel::Pairs;
  if (isa == Int8Isa::Avx512Vnni && has_avx512bw_vl() && made->quads_fit) kernel = Kernel::Quads;
#endif
  // The sums start at the correction -zero * sum_t w' (the quads' zero is that of the unsigned bytes,
  // their sums in QuadPlan's order).
  const std::vector<int32_t>& sums = kernel == Kernel::Quads ? quads.sum : plan.sum;
  const int32_t zero = kernel == Kernel::Quads ? x.zero_point + (x.is_signed ? 128 : 0) : x.zero_point;
  std::vector<int32_t> init(sums.size());
  for (size_t i = 0; i < sums.size(); ++i) init[i] = -zero * sums[i];
  // Taps past the last one (to whole pairs or quads) have weight 0 and read the last tap's pixel.
  const int64_t tap_slots = kernel == Kernel::Quads ? quads.quads * 4 : plan.pairs * 2;
  const std::vector<uint8_t> pad_row(static_cast<size_t>(C), static_cast<uint8_t>(x.zero_point));
  const auto* src = static_cast<const uint8_t*>(x.x);
  // Output columns whose taps all lie inside the row: [ow_in, ow_out).
  const int64_t ow_in = std::min(g.OW, (g.PL + g.SW - 1) / g.SW);
  const int64_t last_start = g.W + g.PL - (g.KW - 1) * g.DW - 1;  // the last padded column a first tap may read
  const int64_t ow_out = last_start < 0 ? ow_in : std::max(ow_in, std::min(g.OW, last_start / g.SW + 1));
  parallel_for(x.N * g.pixels() * C * taps >= (1 << 14) ? pool : nullptr, x.N * g.OH, [&](int64_t t0, int64_t t1) {
    // [OW][tap_slots]: output pixels' tap pointers; a run inside the image uses its first pixel's only.
    std::vector<const uint8_t*> ptr(static_cast<size_t>(g.OW * tap_slots));
    std::vector<int32_t> tile(static_cast<size_t>(g.OW * C));
    auto point_at = [&](const uint8_t* image, int64_t oh, int64_t ow) {
      const uint8_t** p = ptr.data() + ow * tap_slots;
      tap_pointers(image, pad_row.data(), C, g, oh, ow, p);
      std::fill(p + taps, p + tap_slots, p[taps - 1]);
    };
    // Pixels [ow, ow + count) of the row; strided: the taps of pixel ow + j are pixel ow's, j strides
    // on, else its own.
    auto compute = [&](int64_t ow, int64_t count, const uint8_t* const* p, bool strided) {
      int32_t* acc = tile.data() + ow * C;
      switch (kernel) {
#ifdef ONYX_DEPTHWISE_X86
        case Kernel::Quads:
          return depthwise_quads(quads, C, init.data(), p, strided ? g.SW * C : 0, count, x.is_signed, acc);
#endif
        default:  // one pixel at a time, each with its own pointers
          for (int64_t j = 0; j < count; ++j) {
#ifdef ONYX_DEPTHWISE_X86
            if (kernel == Kernel::Pairs) {
              if (x.is_signed) depthwise_pixel_avx512<true>(plan, init.data(), p + j * tap_slots, acc + j * C);
              else depthwise_pixel_avx512<false>(plan, init.data(), p + j * tap_slots, acc + j * C);
              continue;
            }
            if (kernel == Kernel::PairsAvx2) {
              if (x.is_signed) depthwise_pixel_avx2<true>(plan, init.data(), p + j * tap_slots, acc + j * C);
              else depthwise_pixel_avx2<false>(plan, init.data(), p + j * tap_slots, acc + j * C);
              continue;
            }
#endif
            depthwise_pixel_scalar(plan, init.data(), p + j * tap_slots, x.is_signed, acc + j * C);
          }
      }
    };
    // Pixels [ow0, ow1) in groups of up to 4, each with its own pointers.
    auto own_pointers = [&](const uint8_t* image, int64_t oh, int64_t ow0, int64_t ow1) {
      for (int64_t ow = ow0; ow < ow1; ow += 4) {
        const int64_t count = std::min<int64_t>(4, ow1 - ow);
        for (int64_t j = 0; j < count; ++j) point_at(image, oh, ow + j);
        compute(ow, count, ptr.data() + ow * tap_slots, false);
      }
    };
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t n = t / g.OH, oh = t % g.OH;
      const uint8_t* image = src + n * g.H * g.W * C;
      const int64_t ih0 = oh * g.SH - g.PT;
      const bool rows_inside = ih0 >= 0 && ih0 + (g.KH - 1) * g.DH < g.H;
      // Only the quads kernel takes strided runs.
      const bool runs = rows_inside && kernel == Kernel::Quads;
      const int64_t run0 = runs ? ow_in : g.OW, run1 = runs ? ow_out : g.OW;
      // As few groups as the row allows: the left border with the first interior pixels, strided
      // groups of 4, then the rest with the right border.
      const int64_t head = run0 == 0 ? 0 : std::min(run1, (run0 + 3) / 4 * 4);
      const int64_t tail = head + (run1 - head) / 4 * 4;
      own_pointers(image, oh, 0, head);
      if (head < tail) point_at(image, oh, head);
      const uint8_t** run = ptr.data() + head * tap_slots;
      for (int64_t ow = head; ow < tail; ow += 4) {
        compute(ow, 4, run, true);
        for (int64_t k = 0; k < tap_slots; ++k) run[k] += 4 * g.SW * C;
      }
      own_pointers(image, oh, tail, g.OW);
      sink.fn(n, 0, C, oh * g.OW, g.OW, tile.data(), 1, C);
    }
  });
}

}  // namespace onyx
