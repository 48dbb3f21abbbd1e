#include "base/openmp_team.h"

#if defined(ONYX_WITH_OPENMP)
#include <omp.h>
#endif

namespace onyx {

#if defined(ONYX_WITH_OPENMP)

bool openmp_available() { return true; }

void run_on_openmp_team(int threads, void (*fn)(void*), void* arg) {
  if (threads <= 1 || omp_in_parallel()) {
    fn(arg);
    return;
  }
#pragma omp parallel num_threads(threads)
  fn(arg);
}

#else

bool openmp_available() { return false; }

void run_on_openmp_team(int, void (*fn)(void*), void* arg) { fn(arg); }

#endif

}  // namespace onyx
