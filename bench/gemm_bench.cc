// GEMM throughput on transformer-sized products, timed in thread CPU time
// (robust on a shared machine: time spent descheduled is not counted).
// Usage: gemm_bench [iters]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cpu/gemm.h"

namespace {
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
}  // namespace

int main(int argc, char** argv) {
  int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  struct Shape { long M, N, K; };
  std::vector<Shape> shapes = {{128, 768, 768}, {128, 2304, 768}, {128, 3072, 768}, {128, 768, 3072},
                               {64, 128, 128}, {64, 512, 128}, {1024, 1024, 1024}};
  for (auto s : shapes) {
    std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = (i % 17) * 0.01f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = (i % 13) * 0.01f;
    onyx::PackedB pb = onyx::gemm_pack_b(false, s.K, s.N, B.data(), s.N);
    double best = 1e9;
    for (int r = 0; r < 7; ++r) {
      double t0 = thread_seconds();
      for (int i = 0; i < iters; ++i)
        onyx::gemm_f32_packed(false, s.M, 1.0f, A.data(), s.K, pb, 0.0f, C.data(), s.N);
      best = std::min(best, (thread_seconds() - t0) / iters);
    }
    std::printf("M=%5ld N=%5ld K=%5ld  %7.3f ms  %6.1f GFLOP/s\n", s.M, s.N, s.K, best * 1e3,
                2.0 * s.M * s.N * s.K / best * 1e-9);
  }
}
