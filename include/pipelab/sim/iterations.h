// Consecutive training iterations as one lowered schedule: each rank's list repeated, microbatches
// renumbered per iteration, and the list positions where each later iteration starts, at which the
// engine puts the optimizer step (SimOptions::iteration_starts; docs/simulator.md, "Iterations").
#pragma once

#include <cstddef>
#include <vector>

#include "pipelab/schedules/schedule.h"

namespace pipelab::sim {

struct RepeatedSchedule {
  Schedule schedule;  // microbatches x iterations; iteration k's microbatch j of chain c is c*(m_c*n) + k*m_c + j
  /// Per rank, the list position where iteration k starts, for k = 1 .. iterations-1.
  std::vector<std::vector<std::size_t>> iteration_starts;
};

/// `iterations` (>= 1) back-to-back copies of `lowered`. Throws InputError for iterations < 1 or a
/// schedule that would exceed kMaxStageMicrobatches.
RepeatedSchedule repeat_iterations(const Schedule& lowered, int iterations);

}  // namespace pipelab::sim
