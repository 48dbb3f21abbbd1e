// Runs a job on the OpenMP team of the calling thread. Kernels from a library
// built on OpenMP (oneDNN here) keep an OpenMP team alive between calls; a
// thread pool that runs its jobs on that same team instead of its own
// workers leaves one set of threads on the cores (see ThreadPoolOptions).
#pragma once

namespace onyx {

// Whether Onyx was built with OpenMP.
bool openmp_available();

// Calls fn(arg) once on each thread of a team of `threads` (the caller
// included) and returns when all have returned. Without OpenMP, or inside
// an OpenMP parallel region, it calls fn(arg) once on the caller.
void run_on_openmp_team(int threads, void (*fn)(void*), void* arg);

}  // namespace onyx
