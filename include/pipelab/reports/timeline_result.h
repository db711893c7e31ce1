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
  /// False when the times are synthetic (uniform costs): TFLOPS/GPU and MFU are written as null.
  bool hardware_figures = true;
  /// Communication inside compute actions, mean over ranks (the simulator's cost model; 0 when unknown).
  std::int64_t exposed_tp_comm_ns = 0;
  std::int64_t exposed_ep_comm_ns = 0;
  std::int64_t exposed_cp_comm_ns = 0;
  std::int64_t exposed_fsdp_comm_ns = 0;
  std::int64_t exposed_offload_ns = 0;
  std::int64_t host_wait_ns = 0;       // the GPU waiting for the host's launches, inside compute
  std::int64_t optimizer_step_ns = 0;  // after the pipeline (0 when not modelled)
  std::vector<ActionPhases> phases;    // the cost model's phases of the timeline's actions (or none)
  std::vector<Phase> phase_totals;     // phase_totals of the timeline and its phases (or none)
};

/// The result's view of one timeline: the summary from `metrics` and `throughput` (computed by the
/// producer from facts.timeline); peak memory per rank = static + peak activations, out of memory
/// when a rank's peak exceeds a known capacity; a row per rank of `metrics`; and per rank of
/// activation_steps a memory series [0, static], then [time, static + activations].
TimelineResult make_timeline_result(TimelineFacts facts, const TimelineMetrics& metrics, const Throughput& throughput);

}  // namespace pipelab::reports
