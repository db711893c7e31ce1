// When a configuration does not fit in GPU memory: the nearest change that does. Each candidate is
// one step a Megatron user would take — more recompute, the precision-aware optimizer, a smaller
// micro-batch, FSDP, a larger TP, PP or EP on the same GPUs — simulated with the same schedule;
// the advice is the candidate that fits with the most tokens/s/GPU.
#pragma once

#include <optional>
#include <string>

#include "pipelab/sim/simulation.h"

namespace pipelab::sim {

struct MemoryAdvice {
  std::string change;            // Megatron flags, e.g. "--recompute-granularity full"
  std::int64_t peak_memory_bytes = 0;  // largest rank's peak with the change
  double tokens_per_s_per_gpu = 0;
  /// "--recompute-granularity full (peak 61.2 GiB, 402 tokens/s/GPU)"
  std::string text() const;
};

/// The best fitting single change to `request` (which should be out of memory), or nothing when
/// no candidate fits. Candidates the configuration rules refuse are skipped.
std::optional<MemoryAdvice> nearest_fitting_change(const SimulationRequest& request);

}  // namespace pipelab::sim
