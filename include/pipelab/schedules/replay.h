// Lock-step replay: every rank runs its list in order, one step per compute action, an action
// starting only once its prerequisites (dependencies.h) completed in earlier steps; SEND/RECV take
// no time. It yields the rank x step grid `pipelab show` prints, and detects deadlock.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "pipelab/schedules/dependencies.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab {

struct StuckRank {
  int rank;
  int position;                         // index into the rank's list (idle slots counted)
  Action action;
  std::vector<SignalKey> waiting_for;   // prerequisites that never became true
};

struct Replay {
  bool completed = false;
  int steps = 0;
  /// Per rank, per list position: the step its compute action ran at; -1 for idle slots, comm
  /// actions and actions that never ran.
  std::vector<std::vector<int>> step_of;
  std::vector<StuckRank> stuck;   // non-empty iff !completed

  /// Per rank, per step: the compute action run then, if any.
  std::vector<std::vector<Slot>> grid(const Schedule& s) const;
};

/// Requires stage/microbatch indices in range (validate() checks that first).
Replay replay_lockstep(const Schedule& s);

/// Each rank whose list is unfinished at `positions[r]` (idle slots skipped): its next action and
/// the prerequisites `holds` says are missing. The one account of who is stuck and on what, used by
/// the lock-step replay and the simulator's deadlock error.
std::vector<StuckRank> stuck_ranks(const Schedule& s, const std::vector<std::size_t>& positions, CommMode mode,
                                   const std::function<bool(const SignalKey&)>& holds);

/// "F(0, mb 0) done, SEND_F(1, mb 2) posted": what a stuck rank waits for ("" when nothing).
std::string describe_waits(const StuckRank& stuck);

}  // namespace pipelab
