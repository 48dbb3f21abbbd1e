// Measures whether the CPUs this process is given run independently: an
// AVX-512 FMA loop (12 independent accumulators, compute-bound) timed per
// repetition. Run one copy per CPU, alone and together:
//   taskset -c 0 build/bench/fma_loop & taskset -c 1 build/bench/fma_loop; wait
// On dedicated cores both copies take the time one takes alone; on vCPUs
// that share the host's cores they slow each other down.
#include <immintrin.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__attribute__((target("avx512f"))) static float run(int reps, long iters) {
  __m512 acc[12];
  for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
  const __m512 m = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-6f);
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < iters; ++i)
      for (int k = 0; k < 12; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, c);
    std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
    std::printf("%.1f ", dt.count());
    std::fflush(stdout);
  }
  std::printf("ms per repetition\n");
  alignas(64) float lanes[16];
  float sum = 0;
  for (int k = 0; k < 12; ++k) {
    _mm512_store_ps(lanes, acc[k]);
    for (float v : lanes) sum += v;
  }
  return sum;
}

int main(int argc, char** argv) {
  if (!__builtin_cpu_supports("avx512f")) {
    std::fprintf(stderr, "fma_loop: this CPU has no AVX-512\n");
    return 1;
  }
  const int reps = argc > 1 ? std::atoi(argv[1]) : 8;
  const float sum = run(reps, 10000000);  // ~50 ms per repetition on Zen 5
  return sum == 12345.0f ? 2 : 0;  // keeps the loop's result live
}
