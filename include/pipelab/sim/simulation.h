// One configuration, simulated end to end: build the schedule for the layout, lower it (send/recv,
// and REDUCE_GRAD when there is data parallelism), pick the cost model, run the engine, and
// compute every metric. `simulate`, `compare`, `plan` and the benchmarks all go through here.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/base/names.h"
#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/sim/cost_model.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/memory_model.h"
#include "pipelab/sim/uniform_cost.h"

namespace pipelab::sim {

/// The cost models a request can name; a caller-built one (e.g. profiled) goes through make_cost.
enum class CostModelKind : std::uint8_t { Analytic, Uniform };

inline constexpr std::array<EnumName<CostModelKind>, 2> kCostModelNames = {
    {{CostModelKind::Analytic, "analytic"}, {CostModelKind::Uniform, "uniform"}}};

inline std::string_view cost_model_name(CostModelKind kind) { return name_of(kCostModelNames, kind); }
/// "analytic" | "uniform"; InputError naming the valid names otherwise.
inline CostModelKind parse_cost_model(std::string_view name) { return parse_name(kCostModelNames, "cost model", name); }

struct SimulationRequest {
  ModelSpec model;
  GpuSpec gpu;
  ParallelConfig config;      // resolved; config.vp is the chunks per rank asked for (0 = schedule default)
  std::string schedule;
  CostModelKind cost_model = CostModelKind::Analytic;
  UniformTimes uniform;  // for CostModelKind::Uniform
  MemoryOptions memory;
  /// Optional: a caller-built cost model (e.g. profiled) used instead of cost_model's.
  std::function<std::unique_ptr<CostModel>(const PipelineShape&)> make_cost;
  /// Optional: the schedule already built and lowered for this layout (lowered_schedule()), shared
  /// by the layouts of a plan search instead of being built again for each.
  std::shared_ptr<const Schedule> lowered;
  /// Consecutive iterations simulated as one timeline, with the optimizer step between them
  /// (engine.h, OptimizerStep); throughput divides makespan + the last optimizer step by `iterations`.
  int iterations = 1;
  OptimizerStep optimizer_step = OptimizerStep::Sync;
  /// True: the figures a ranking needs and nothing else. No timeline is kept; the outcome's metrics
  /// hold the makespan alone and its pipeline_layout is empty (throughput and memory are complete;
  /// no idle split, per-rank figures or in-action communication). A plan search ranks thousands of
  /// layouts this way and simulates the few it shows again in full.
  bool ranking_only = false;
  /// What the caller found about the request before simulating (command-line flags that change
  /// nothing): reported first among the outcome's warnings, so they reach the result file too.
  std::vector<std::string> warnings;
};

struct SimulationOutcome {
  std::string schedule;          // canonical name
  ParallelConfig config;         // as simulated (vp = chunks per rank of the schedule)
  std::vector<std::string> warnings;
  /// Of `warnings`, the advice to interleave (rule pp_without_vp), or empty: a caller that shows an
  /// interleaved schedule beside this one (compare) leaves it out.
  std::string interleave_advice;
  std::string pipeline_layout;   // the model-order split as simulated, in Megatron's layout grammar
  std::shared_ptr<const Schedule> lowered;  // the schedule as simulated
  SimResult result;
  TimelineMetrics metrics;
  Throughput throughput;
  /// False under uniform costs: the times are synthetic, so TFLOPS/GPU and MFU say nothing about
  /// hardware and are not reported (null in the result).
  bool hardware_figures = true;
  /// Mean over ranks of the communication inside the rank's compute actions (the cost model's
  /// in_action_comm summed over its timeline).
  InActionComm in_action_comm;
  /// How the cost model splits the timeline's compute actions into phases (MoE stages and F&B units
  /// under analytic costs; empty otherwise), one entry per action kind.
  std::vector<ActionPhases> phases;
  /// Each phase's time per rank (phase_totals of the timeline), empty without phases.
  std::vector<Phase> phase_totals;
  /// The optimizer step after the pipeline (the cost model's, for the rank with the most to update;
  /// 0 under uniform or profiled costs). The throughput's iteration time is makespan + this step
  /// (--iterations N: the N-1 steps between iterations are in the makespan, the last one is added).
  std::int64_t optimizer_step_ns = 0;
  double model_flops = 0;
  std::int64_t tokens_per_iteration = 0;
  std::vector<StaticMemory> static_memory;      // per rank
  std::vector<std::int64_t> peak_memory_bytes;  // per rank: static + peak activations
  std::int64_t memory_capacity_bytes = 0;
  bool oom = false;
};

/// Throws InputError/ConfigError/ScheduleError naming the rule when the configuration or the
/// schedule's constraints are broken.
SimulationOutcome simulate_config(const SimulationRequest& request);

/// True when `schedule` with `vp` chunks per rank runs with Megatron's 1F1B all-to-all overlap under
/// `config` (overlap_moe_expert_parallel_comm, ep > 1; 1f1b or interleaved-1f1b, with pp = 1 or
/// vp > 1): its B and F of adjacent microbatches are merged into F&B units (overlap_forward_backward).
bool merges_forward_backward(std::string_view schedule, const ParallelConfig& config, int vp);

/// The schedule `request` simulates, built and lowered (send/recv, and REDUCE_GRAD with data
/// parallelism): what simulate_config runs, for a caller that shares it between requests.
/// Throws ScheduleError when the schedule's own constraints are broken.
Schedule lowered_schedule(const SimulationRequest& request);

}  // namespace pipelab::sim
