// Building the TimelineResult of a result file from what a producer knows: a timeline, its metrics
// (compute_metrics / compute_throughput), and the memory it held. The simulator's outcome and both
// sides of a run go through here, so peak memory, the OOM flag, the per-rank rows and the memory
// series mean the same thing in every result.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "pipelab/reports/result.h"
#include "pipelab/schedules/metrics.h"

namespace pipelab::reports {

/// What a producer knows about one timeline besides its metrics.
struct TimelineFacts {
  std::string source;                                // "simulated", "predicted" or "measured"
  Timeline timeline;
  std::vector<std::int64_t> static_memory_bytes;     // per rank (a rank past the end holds 0)
  std::vector<std::int64_t> peak_activation_bytes;   // per rank (a rank past the end holds 0)
  std::vector<StaticMemoryParts> static_parts;       // per rank, or empty (not known)
  /// Per rank, (time_ns, activation bytes held from then on) steps; empty: no memory series.
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> activation_steps;
  std::int64_t memory_capacity_bytes = 0;            // 0: unknown, nothing is out of memory
  double model_flops = 0;                            // per iteration, all GPUs
  std::int64_t tokens_per_iteration = 0;
};

/// The result's view of one timeline: the summary from `metrics` and `throughput` (computed by the
/// producer from facts.timeline); peak memory per rank = static + peak activations, out of memory
/// when a rank's peak exceeds a known capacity; a row per rank of `metrics`; and per rank of
/// activation_steps a memory series [0, static], then [time, static + activations].
TimelineResult make_timeline_result(TimelineFacts facts, const TimelineMetrics& metrics, const Throughput& throughput);

}  // namespace pipelab::reports
