// Where a rank's idle time goes: the split of `makespan - busy` into named parts that sum to it
// exactly, computed from the Timeline alone (docs/metrics.md, "Idle time by cause"). One
// implementation for simulated and measured timelines, like every other timeline metric.
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/schedules/timeline.h"

namespace pipelab {

/// One rank's idle time by cause; total() is the rank's idle time (makespan - busy).
struct IdleParts {
  std::int64_t pipeline_bubble_ns = 0;   // waiting for a neighbour stage to produce an input, or for the pipeline to drain
  std::int64_t imbalance_ns = 0;         // the share of that waiting owed to having less work than the busiest rank
  std::int64_t exposed_pp_comm_ns = 0;   // waiting for an input that was produced but is still in flight (P2P)
  std::int64_t exposed_dp_comm_ns = 0;   // after the last compute of the iteration, while a gradient reduction runs
  std::int64_t other_ns = 0;             // what the timeline does not explain (0 in the simulator)

  std::int64_t total() const { return pipeline_bubble_ns + imbalance_ns + exposed_pp_comm_ns + exposed_dp_comm_ns + other_ns; }
  bool operator==(const IdleParts&) const = default;
};

/// Per rank of `t`, its idle time split by cause. Deterministic; O(N log N) in events.
std::vector<IdleParts> split_idle(const Timeline& t);

}  // namespace pipelab
