// Cache-blocked float32 GEMM (Goto/BLIS loop order) with packed panels and a
// 6x16 register-tiled micro-kernel. The micro-kernel is written with GCC
// vector extensions and compiled as function clones for AVX-512, AVX2+FMA and
// the baseline ISA; the loader picks one per CPU (ifunc), so the build flags
// stay portable.
#include "cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace onyx {
namespace {

constexpr int MR = 6;
constexpr int NR = 16;
constexpr int64_t KC = 256;
constexpr int64_t MC = 96;   // multiple of MR
constexpr int64_t NC = 2048; // multiple of NR

typedef float v16 __attribute__((vector_size(64)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONYX_GEMM_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ONYX_GEMM_CLONES
#endif

// acc[MR x NR] = sum_k a[k*MR + r] * b[k*NR + c]; then C[r, c] += alpha * acc
// for r < mr, c < nr.
ONYX_GEMM_CLONES
void micro_kernel(int64_t kc, const float* __restrict a, const float* __restrict b, float* __restrict c,
                  int64_t ldc, float alpha, int mr, int nr) {
  v16 c0 = {}, c1 = {}, c2 = {}, c3 = {}, c4 = {}, c5 = {};
  for (int64_t k = 0; k < kc; ++k) {
    v16 bv;
    std::memcpy(&bv, b, sizeof(bv));
    c0 += a[0] * bv;
    c1 += a[1] * bv;
    c2 += a[2] * bv;
    c3 += a[3] * bv;
    c4 += a[4] * bv;
    c5 += a[5] * bv;
    a += MR;
    b += NR;
  }
  v16 acc[MR] = {c0, c1, c2, c3, c4, c5};
  if (mr == MR && nr == NR) {
    for (int r = 0; r < MR; ++r) {
      v16 cv;
      std::memcpy(&cv, c + r * ldc, sizeof(cv));
      cv += alpha * acc[r];
      std::memcpy(c + r * ldc, &cv, sizeof(cv));
    }
  } else {
    for (int r = 0; r < mr; ++r) {
      float tmp[NR];
      std::memcpy(tmp, &acc[r], sizeof(tmp));
      for (int j = 0; j < nr; ++j) c[r * ldc + j] += alpha * tmp[j];
    }
  }
}

// Packs op(A)[i0:i0+mc, p0:p0+kc] into MR-row panels, zero-padded.
void pack_a(bool trans_a, const float* A, int64_t lda, int64_t i0, int64_t p0, int64_t mc, int64_t kc, float* dst) {
  for (int64_t ip = 0; ip < mc; ip += MR) {
    int64_t rows = std::min<int64_t>(MR, mc - ip);
    if (!trans_a) {
      const float* src[MR];
      for (int r = 0; r < MR; ++r) src[r] = A + (i0 + ip + std::min<int64_t>(r, rows - 1)) * lda + p0;
      if (rows == MR) {
        for (int64_t k = 0; k < kc; ++k)
          for (int r = 0; r < MR; ++r) dst[k * MR + r] = src[r][k];
      } else {
        for (int64_t k = 0; k < kc; ++k)
          for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < rows ? src[r][k] : 0.0f;
      }
    } else {
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = A + (p0 + k) * lda + i0 + ip;
        for (int r = 0; r < MR; ++r) dst[k * MR + r] = r < rows ? src[r] : 0.0f;
      }
    }
    dst += kc * MR;
  }
}

// Packs op(B)[p0:p0+kc, j0:j0+nc] into NR-column panels, zero-padded.
void pack_b(bool trans_b, const float* B, int64_t ldb, int64_t p0, int64_t j0, int64_t kc, int64_t nc, float* dst) {
  for (int64_t jp = 0; jp < nc; jp += NR) {
    int64_t cols = std::min<int64_t>(NR, nc - jp);
    if (!trans_b) {
      for (int64_t k = 0; k < kc; ++k) {
        const float* src = B + (p0 + k) * ldb + j0 + jp;
        float* d = dst + k * NR;
        if (cols == NR) {
          std::memcpy(d, src, NR * sizeof(float));
        } else {
          for (int c = 0; c < NR; ++c) d[c] = c < cols ? src[c] : 0.0f;
        }
      }
    } else {
      for (int c = 0; c < NR; ++c) {
        if (c < cols) {
          const float* src = B + (j0 + jp + c) * ldb + p0;
          for (int64_t k = 0; k < kc; ++k) dst[k * NR + c] = src[k];
        } else {
          for (int64_t k = 0; k < kc; ++k) dst[k * NR + c] = 0.0f;
        }
      }
    }
    dst += kc * NR;
  }
}

// C += alpha * op(A) op(B) on one thread.
void gemm_serial(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                 int64_t lda, const float* B, int64_t ldb, float* C, int64_t ldc) {
  thread_local std::vector<float> abuf, bbuf;
  int64_t nc_max = std::min<int64_t>(NC, (N + NR - 1) / NR * NR);
  int64_t kc_max = std::min<int64_t>(KC, K);
  int64_t mc_max = std::min<int64_t>(MC, (M + MR - 1) / MR * MR);
  if (static_cast<int64_t>(bbuf.size()) < nc_max * kc_max) bbuf.resize(nc_max * kc_max);
  if (static_cast<int64_t>(abuf.size()) < mc_max * kc_max) abuf.resize(mc_max * kc_max);
  float* bp = bbuf.data();
  float* ap = abuf.data();
  for (int64_t j0 = 0; j0 < N; j0 += NC) {
    int64_t nc = std::min(NC, N - j0);
    for (int64_t p0 = 0; p0 < K; p0 += KC) {
      int64_t kc = std::min(KC, K - p0);
      pack_b(trans_b, B, ldb, p0, j0, kc, nc, bp);
      for (int64_t i0 = 0; i0 < M; i0 += MC) {
        int64_t mc = std::min(MC, M - i0);
        pack_a(trans_a, A, lda, i0, p0, mc, kc, ap);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int nr = static_cast<int>(std::min<int64_t>(NR, nc - jr));
          const float* bpanel = bp + (jr / NR) * kc * NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int mr = static_cast<int>(std::min<int64_t>(MR, mc - ir));
            micro_kernel(kc, ap + (ir / MR) * kc * MR, bpanel, C + (i0 + ir) * ldc + j0 + jr, ldc, alpha, mr, nr);
          }
        }
      }
    }
  }
}

}  // namespace

void gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float beta, float* C, int64_t ldc, ThreadPool* pool) {
  if (M <= 0 || N <= 0) return;
  // C = beta * C first; the blocked loop then only accumulates.
  for (int64_t i = 0; i < M; ++i) {
    float* c = C + i * ldc;
    if (beta == 0.0f) {
      std::fill(c, c + N, 0.0f);
    } else if (beta != 1.0f) {
      for (int64_t j = 0; j < N; ++j) c[j] *= beta;
    }
  }
  if (K <= 0 || alpha == 0.0f) return;

  int threads = pool ? pool->num_threads() : 1;
  double flops = 2.0 * M * N * K;
  if (threads <= 1 || flops < 2.0e6) {
    gemm_serial(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, C, ldc);
    return;
  }
  // Split the output into tiles: along N when it is wide enough, else along M.
  int64_t m_blocks = 1, n_blocks = 1;
  if (N / NR >= threads * 2 || N >= M) {
    n_blocks = std::min<int64_t>((N + NR - 1) / NR, threads * 2);
  } else {
    m_blocks = std::min<int64_t>((M + MR - 1) / MR, threads * 2);
  }
  int64_t n_step = ((N + n_blocks - 1) / n_blocks + NR - 1) / NR * NR;
  int64_t m_step = ((M + m_blocks - 1) / m_blocks + MR - 1) / MR * MR;
  n_blocks = (N + n_step - 1) / n_step;
  m_blocks = (M + m_step - 1) / m_step;
  parallel_for(pool, m_blocks * n_blocks, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t mi = t / n_blocks, ni = t % n_blocks;
      int64_t i0 = mi * m_step, j0 = ni * n_step;
      int64_t mm = std::min(m_step, M - i0), nn = std::min(n_step, N - j0);
      const float* a = trans_a ? A + i0 : A + i0 * lda;
      const float* b = trans_b ? B + j0 * ldb : B + j0;
      gemm_serial(trans_a, trans_b, mm, nn, K, alpha, a, lda, b, ldb, C + i0 * ldc + j0, ldc);
    }
  });
}

}  // namespace onyx
