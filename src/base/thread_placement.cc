#include "base/thread_placement.h"

#if defined(__linux__)
#include <sched.h>
#endif

namespace onyx {

#if defined(__linux__)

int current_cpu() { return sched_getcpu(); }

void move_off_cpu(int busy_cpu) {
  if (busy_cpu < 0 || sched_getcpu() != busy_cpu) return;
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0 || CPU_COUNT(&allowed) <= 1) return;
  cpu_set_t others = allowed;
  CPU_CLR(busy_cpu, &others);
  // Narrowing the mask migrates the thread before the call returns (to the
  // idlest of the others); restoring it leaves the thread where it now is.
  if (sched_setaffinity(0, sizeof(others), &others) == 0) sched_setaffinity(0, sizeof(allowed), &allowed);
}

#else

int current_cpu() { return -1; }
void move_off_cpu(int) {}

#endif

}  // namespace onyx
