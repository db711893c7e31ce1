// The executor: runs one rank's part of a lowered schedule on a Backend, moving data through a
// Transport, and records what happened as Timeline events. The semantics are the simulator's
// (sim/engine.h): actions run in list order on one compute stream; an action starts once its
// prerequisites (schedules/dependencies.h, CommMode::Explicit) hold; SEND is asynchronous, RECV a
// non-blocking post, and the consumer waits for the data; an F&B unit runs its F then its B and is
// recorded as one event.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/transport.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab::runtime {

struct ExecutorOptions {
  /// Watchdog: the longest a rank waits for one message or barrier before failing with an error
  /// naming the action and what it waits for.
  std::chrono::milliseconds timeout{60'000};
  /// Fail an iteration that ends with per-microbatch state, activations or messages left over (a
  /// schedule that drops a W or never consumes a message).
  bool check_state = true;
  /// Called before each action (tests inject faults and delays here). Runs outside the timed span.
  std::function<void(int rank, std::size_t position, const Action& action)> before_action;
};

/// What one rank did in one iteration.
struct IterationRecord {
  std::vector<TimelineEvent> events;   // by start time; ns since the iteration epoch
  double loss = 0;                     // sum over the microbatches whose loss this rank computed
  /// Peak, over the iteration's actions, of the memory of microbatches in progress: the backend's
  /// per-microbatch state plus the activation-sized buffers the rank holds between actions. A loaded
  /// input counts from when its F consumes it (the simulator's activation memory likewise starts at F).
  std::int64_t peak_state_bytes = 0;
};

class RankExecutor {
 public:
  /// `lowered` must outlive the executor. Throws ScheduleError if `rank` is out of range or the
  /// backend holds different stages than the schedule places on the rank.
  RankExecutor(const Schedule& lowered, int rank, Backend& backend, Transport& transport, ExecutorOptions options = {});
  ~RankExecutor();
  RankExecutor(const RankExecutor&) = delete;
  RankExecutor& operator=(const RankExecutor&) = delete;

  /// Loads inputs, waits at the transport barrier (which starts the iteration clock), runs the list.
  /// On failure it tells the other ranks (transport.abort), frees every buffer and all backend
  /// state, and rethrows; a rank stopped by a peer's failure throws PeerAborted.
  IterationRecord run_iteration();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pipelab::runtime
