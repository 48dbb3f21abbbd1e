// GEMM throughput on transformer-sized products, timed in thread CPU time
// (robust on a shared machine: time spent descheduled is not counted).
// Usage: gemm_bench [iters]
//        gemm_bench --threads T [iters]: wall time on a T-thread pool, the B
//        operand cycling through copies larger than the L3 cache (weights
//        that come from memory, as in a whole BERT run); best of 7 medians.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <chrono>

#include "base/thread_pool.h"
#include "cpu/gemm.h"

namespace {
double thread_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}
}  // namespace

// Wall time per product with weights from memory on a pool of `threads`.
void cold_weights(int threads, int iters) {
  onyx::ThreadPool pool(threads);
  struct Shape { long M, N, K; };
  // BERT-base layer products, then a small LM head (vocabulary 32000).
  for (Shape s : std::vector<Shape>{{128, 768, 768}, {128, 2304, 768}, {128, 3072, 768}, {128, 768, 3072},
                                    {48, 32000, 256}}) {
    const int copies = static_cast<int>(std::max<long>(2, (96L << 20) / (s.K * s.N * 4)));
    std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = (i % 17) * 0.01f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = (i % 13) * 0.01f;
    std::vector<onyx::PackedB> pbs;
    for (int c = 0; c < copies; ++c) pbs.push_back(onyx::gemm_pack_b(false, s.K, s.N, B.data(), s.N));
    double best = 1e9;
    for (int r = 0; r < 7; ++r) {
      std::vector<double> t;
      for (int i = 0; i < iters; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        onyx::gemm_f32_packed(false, s.M, 1.0f, A.data(), s.K, pbs[i % copies], 0.0f, C.data(), s.N, &pool);
        t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(t.begin(), t.end());
      best = std::min(best, t[t.size() / 2]);
    }
    std::printf("%d threads, cold B  M=%5ld N=%5ld K=%5ld  %7.3f ms  %6.1f GFLOP/s\n", threads, s.M, s.N, s.K,
                best * 1e3, 2.0 * s.M * s.N * s.K / best * 1e-9);
  }
}

int main(int argc, char** argv) {
  // A count that atoi reads as 0 (a typo, --help) would print 1e12 ms rows.
  auto count_arg = [&](int i, int fallback) {  // fallback 0: the count is required
    if (i >= argc && fallback > 0) return fallback;
    const int v = i < argc ? std::atoi(argv[i]) : 0;
    if (v > 0) return v;
    std::fprintf(stderr, "usage: gemm_bench [ITERATIONS]  |  gemm_bench --threads T [ITERATIONS]\n"
                         "gemm_bench: '%s' is not a positive count\n", i < argc ? argv[i] : "");
    std::exit(2);
  };
  if (argc > 1 && std::string(argv[1]) == "--threads") {
    cold_weights(count_arg(2, 0), count_arg(3, 40));
    return 0;
  }
  int iters = count_arg(1, 20);
  struct Shape { long M, N, K; };
  std::vector<Shape> shapes = {{128, 768, 768}, {128, 2304, 768}, {128, 3072, 768}, {128, 768, 3072},
                               {64, 128, 128}, {64, 512, 128}, {64, 128, 512}, {1024, 1024, 1024},
                               // a recurrent step's few rows: h [batch, H] x R^T (LSTM 4H, GRU 2H / H columns)
                               {1, 256, 64}, {2, 256, 64}, {2, 96, 48}, {3, 1024, 256}, {4, 1024, 256}, {8, 2048, 512}};
  for (auto s : shapes) {
    std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
    for (size_t i = 0; i < A.size(); ++i) A[i] = (i % 17) * 0.01f;
    for (size_t i = 0; i < B.size(); ++i) B[i] = (i % 13) * 0.01f;
    onyx::PackedB pb = onyx::gemm_pack_b(false, s.K, s.N, B.data(), s.N);
    double best = 1e9;
    const int reps = s.M * s.N * s.K < 1000000 ? iters * 200 : iters;  // tiny products: above the clock's grain
    for (int r = 0; r < 7; ++r) {
      double t0 = thread_seconds();
      for (int i = 0; i < reps; ++i)
        onyx::gemm_f32_packed(false, s.M, 1.0f, A.data(), s.K, pb, 0.0f, C.data(), s.N);
      best = std::min(best, (thread_seconds() - t0) / reps);
    }
    std::printf("M=%5ld N=%5ld K=%5ld  %9.5f ms  %6.1f GFLOP/s\n", s.M, s.N, s.K, best * 1e3,
                2.0 * s.M * s.N * s.K / best * 1e-9);
  }
}
