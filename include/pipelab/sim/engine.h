// The discrete-event simulator of a lowered schedule (docs/simulator.md): integer nanoseconds, events
// ordered by (time, insertion sequence), so identical input gives byte-identical output.
//
// Semantics (the runtime matches them): each rank runs its list in order on one compute stream;
// an action starts when the stream is free and its prerequisites (schedules/dependencies.h) hold;
// SEND posts a transfer on the rank's outgoing link (transfers serialize per link) and the receiver
// may use the data once it has arrived; RECV is a non-blocking post; an F&B unit runs as one unit
// whose time the cost model gives.
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/schedules/schedule.h"
#include "pipelab/schedules/timeline.h"
#include "pipelab/sim/cost_model.h"

namespace pipelab::sim {

/// Activation memory of one microbatch at one stage: `bytes` allocated when its F starts; an I
/// frees `freed_by_input_grad` of it and allocates `allocated_by_input_grad` (what a deferred W
/// needs but the forward did not keep, e.g. under full recompute); its W frees what is left, and a
/// full B frees everything at once.
struct StageActivation {
  std::int64_t bytes = 0;
  std::int64_t freed_by_input_grad = 0;
  std::int64_t allocated_by_input_grad = 0;
  std::int64_t largest_layer = 0;  // the most one of the stage's layers keeps (SimOptions::overlap_frees_by_layer)
  /// Held by a backward (B, I, or an F&B unit's B half) while it runs, on top of what it started
  /// with: under full recompute, the largest recompute group's activations rebuilt at once.
  std::int64_t recompute_transient = 0;
};

struct MemorySample {
  std::int64_t time_ns;
  std::int64_t bytes;  // activation bytes held by the rank from this time on
  bool operator==(const MemorySample&) const = default;
};

/// The optimizer step between iterations. Sync: every rank waits until all ranks finished the
/// iteration and every gradient reduction is done, then the step takes optimizer_step_ns. Overlap
/// (zero-bubble's post-validation): a rank steps as soon as its own work and reductions are done
/// and starts the next iteration, while other ranks may still be in the previous one.
enum class OptimizerStep : std::uint8_t { Sync, Overlap };

struct SimOptions {
  /// Per stage; empty = no activation tracking.
  std::vector<StageActivation> activations;
  /// How an F&B unit holds memory. False: the forward's activations are all allocated before the
  /// backward's are freed (DualPipe's count, PP + 1 chunks). True: the two run layer by layer in
  /// opposite directions and each backward layer is freed after its phase, so the unit holds what it
  /// ends with plus one forward layer, never more than the forward's whole activation (Megatron's
  /// merged 1F1B: schedule_chunk_1f1b in megatron/core/models/common/model_chunk_schedule_plan.py,
  /// pop_layer then release_state). Exact for equal layers; with layer sizes that fall along a
  /// chunk the true peak can be higher.
  bool overlap_frees_by_layer = false;
  /// Consecutive iterations (repeat_iterations): per rank, the list positions where iterations
  /// 1, 2, ... start, at which the optimizer step happens. Empty: one iteration.
  std::vector<std::vector<std::size_t>> iteration_starts;
  OptimizerStep optimizer_step = OptimizerStep::Sync;
  std::int64_t optimizer_step_ns = 0;
  /// False: no timeline and no memory trace are kept, only the makespan and the peaks (what a
  /// plan search ranks by; the same figures, less time and memory).
  bool record_timeline = true;
};

struct SimResult {
  Timeline timeline;                                // empty unless SimOptions::record_timeline
  std::int64_t makespan_ns = 0;                     // the latest end of any event, recorded or not
  std::vector<std::vector<MemorySample>> memory;   // per rank, a step function over time (when recorded)
  std::vector<std::int64_t> peak_activation_bytes;  // per rank
  std::uint64_t events = 0;                         // events processed (for benchmarks)
};

/// Simulates one iteration of a lowered schedule. Throws ScheduleError on deadlock, naming every
/// stuck rank, its action and what it waits for.
SimResult simulate(const Schedule& lowered, const CostModel& cost, const SimOptions& options = {});

}  // namespace pipelab::sim
