// run_on_rank_threads: spawn, catch, abort the peers, join, rethrow the first error.
#include "pipelab/runtime/rank_threads.h"

#include <exception>
#include <thread>
#include <vector>

#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/machine.h"

namespace pipelab::runtime {

void run_on_rank_threads(InprocWorld& world, bool pin, const std::function<void(int rank)>& fn) {
  const int ranks = world.size();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> threads;
  threads.reserve(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      const auto i = static_cast<std::size_t>(r);
      try {
        if (pin) pin_current_thread(r);
        fn(r);
      } catch (const PeerAborted&) {
        errors[i] = std::current_exception();  // a peer failed first; its error is the one to report
      } catch (const std::exception& e) {
        errors[i] = std::current_exception();
        world.transport(r).abort(e.what());  // no-op when the executor already told the others
      } catch (...) {
        errors[i] = std::current_exception();
        world.transport(r).abort("unknown exception");
      }
    });
  }
  for (auto& t : threads) t.join();
  const int first = world.first_failed_rank();
  if (first >= 0 && errors[static_cast<std::size_t>(first)]) std::rethrow_exception(errors[static_cast<std::size_t>(first)]);
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace pipelab::runtime
