// What the CPU this process runs on can execute, read once. SIMD paths are
// compiled with target attributes beside the baseline x86-64 code and picked
// at run time by these flags; elsewhere every flag is false.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#define ONYX_TARGET_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx2,fma")))
#endif

// A function of plain loops compiled three times, for AVX-512, AVX2 and
// baseline x86-64, at O3; the loader picks the one the CPU runs. The build's
// -O2 leaves loops that need a remainder scalar, and a branchy one (a Relu's
// select) mispredicts on every other value.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ONYX_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default"), optimize("O3")))
#else
#define ONYX_VECTOR_CLONES
#endif

namespace onyx {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avxvnni = false;  // vpdpbusd on 256-bit vectors without AVX-512 (Alder Lake and later)
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, avx512vnni = false;
  bool avx512vbmi = false;  // byte permutes (vpermi2b): 8-bit table lookups
};

// ONYX_MAX_ISA=avxvnni, =avx2 or =baseline runs the paths an older CPU takes
// (AVX2 + FMA without AVX-512, with or without AVX-VNNI; plain x86-64) on this
// one, so that they are tested and measured here: a machine with AVX-512
// otherwise never executes them. The loops compiled with ONYX_VECTOR_CLONES
// still take their AVX-512 clone.
inline void cap_cpu_features(CpuFeatures& c, const char* isa) {
  if (!isa || !*isa || std::strcmp(isa, "avx512") == 0) return;
  const bool vnni = std::strcmp(isa, "avxvnni") == 0, avx2 = vnni || std::strcmp(isa, "avx2") == 0;
  if (!avx2 && std::strcmp(isa, "baseline") != 0) {
    std::fprintf(stderr, "onyx: ONYX_MAX_ISA must be avx512, avxvnni, avx2 or baseline, got \"%s\"; not capped\n",
                 isa);
    return;
  }
  const CpuFeatures detected = c;
  c = CpuFeatures{};
  if (avx2) {
    c.avx2 = detected.avx2;
    c.fma = detected.fma;
    c.f16c = detected.f16c;
    c.avxvnni = vnni && detected.avxvnni;
  }
}

inline const CpuFeatures& cpu_features() {
  static const CpuFeatures features = [] {
    CpuFeatures c;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    c.avx2 = __builtin_cpu_supports("avx2");
    c.fma = __builtin_cpu_supports("fma");
    c.f16c = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    c.avx512f = __builtin_cpu_supports("avx512f");
    c.avx512bw = __builtin_cpu_supports("avx512bw");
    c.avx512dq = __builtin_cpu_supports("avx512dq");
    c.avx512vl = __builtin_cpu_supports("avx512vl");
    c.avx512vnni = __builtin_cpu_supports("avx512vnni");
    c.avx512vbmi = __builtin_cpu_supports("avx512vbmi");
    c.avxvnni = __builtin_cpu_supports("avxvnni");
#endif
    cap_cpu_features(c, std::getenv("ONYX_MAX_ISA"));
    return c;
  }();
  return features;
}

// The AVX-512 subset the 8-bit loops use: byte / word ops on 128- to 512-bit vectors.
inline bool has_avx512bw_vl() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512bw && f.avx512vl;
}

// The AVX-512 subset the float vector code uses: F with DQ and VL. Its
// functions are compiled with ONYX_TARGET_AVX512 and run where this is true.
inline bool has_avx512f_dq_vl() {
  const CpuFeatures& f = cpu_features();
  return f.avx512f && f.avx512dq && f.avx512vl;
}

}  // namespace onyx
