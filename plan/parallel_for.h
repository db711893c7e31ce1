// A parallel loop over independent items on a fixed number of threads: workers claim chunks of
// indices from one atomic counter; the calling thread polls `on_tick` (a progress bar) until they
// finish. An exception in a body is rethrown on the calling thread after every worker stopped.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace pipelab::plan::detail {

/// Threads to use: `asked` when positive, else every core (at least 1).
inline int thread_count(int asked) {
  if (asked > 0) return asked;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

/// Runs body(i) for i in [0, n) on `threads` threads, `chunk` indices at a time. `stop()` is asked
/// before each chunk: true ends the loop early (items not yet claimed are skipped). `on_tick` runs
/// on the calling thread about every 100 ms while the loop runs.
inline void parallel_for(std::int64_t n, int threads, std::int64_t chunk, const std::function<void(std::int64_t)>& body,
                         const std::function<bool()>& stop = {}, const std::function<void()>& on_tick = {}) {
  if (n <= 0) return;
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    while (!failed.load(std::memory_order_relaxed)) {
      if (stop && stop()) return;
      const std::int64_t begin = next.fetch_add(chunk, std::memory_order_relaxed);
      if (begin >= n) return;
      const std::int64_t end = std::min(n, begin + chunk);
      try {
        for (std::int64_t i = begin; i < end; ++i) body(i);
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed = true;
      }
    }
  };
  const int workers = static_cast<int>(std::min<std::int64_t>(std::max(1, threads), (n + chunk - 1) / chunk));
  std::vector<std::thread> pool;
  std::atomic<int> running{workers};
  for (int t = 0; t < workers; ++t) {
    pool.emplace_back([&] {
      work();
      --running;
    });
  }
  while (on_tick && running.load() > 0) {
    on_tick();
    for (int i = 0; i < 10 && running.load() > 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace pipelab::plan::detail
