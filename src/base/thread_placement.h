// Keeping a pool's worker off the CPU of the thread it works with.
//
// A worker that sleeps is placed by the scheduler when it is woken, and a
// busy machine may place it on the CPU of the thread that woke it (Linux
// skips the search for an idle CPU when the cache domain looks busy). There
// it cannot run in parallel with the caller, only take turns with it, and the
// load balancer separates two threads that both just ran only after tens of
// milliseconds. Measured on a 2-vCPU VM: tiny BERT at 2 threads ran at its
// 1-thread speed for its first ~100 runs in about half the processes.
#pragma once

namespace onyx {

// The CPU the calling thread runs on, or -1 where that is unknown.
int current_cpu();

// When the calling thread runs on `busy_cpu`, moves it to another CPU it may
// run on and then allows it every one of them again: a new place, not a pin.
// No-op where unsupported, with one allowed CPU, or with busy_cpu < 0.
void move_off_cpu(int busy_cpu);

}  // namespace onyx
