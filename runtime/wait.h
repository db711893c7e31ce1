// Private: the wait loop shared by the transports. Spins (with a pause hint) while the policy allows,
// then sleeps in short slices; checks the deadline and an abort probe every few iterations.
#pragma once

#include <chrono>
#include <thread>

#include "pipelab/runtime/transport.h"

namespace pipelab::runtime::detail {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Resolves Auto: spin when every rank has a core.
inline WaitPolicy resolve(WaitPolicy p, int ranks, int cores) {
  if (p != WaitPolicy::Auto) return p;
  return ranks <= cores ? WaitPolicy::Spin : WaitPolicy::Block;
}

/// Polls `ready()` until it returns true (-> true) or `deadline` passes (-> false). `probe()` runs
/// every 64 polls (it may throw, e.g. PeerAborted). With Block, after a short spin the loop yields
/// the core between polls, then sleeps `nap` per poll.
template <class Ready, class Probe>
bool poll_until(Ready&& ready, Probe&& probe, Clock::time_point deadline, WaitPolicy policy,
                std::chrono::microseconds nap = std::chrono::microseconds(20)) {
  for (std::uint64_t i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63) {
      probe();
      if (Clock::now() >= deadline) return ready();
    }
    if (policy == WaitPolicy::Spin || i < 2000) {
      cpu_relax();
    } else if (i < 4000) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(nap);
    }
  }
}

}  // namespace pipelab::runtime::detail
