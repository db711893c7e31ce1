// Result JSON (docs/formats.md, "Result JSON"): the one home of its schema. The typed structs below
// describe every key; to_json writes a result file and load_result reads one back, so a producer
// (simulate, compare, run) and the renderers cannot disagree. The loader never recomputes a
// metric: it checks the numbers the simulator or runtime wrote and rejects input that is not a
// result of a version this build reads, naming the offending field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab::reports {

/// The `format` of every result file.
inline constexpr std::string_view kResultFormat = "pipelab.result";
/// The result format version this build writes and reads (the only one it accepts).
inline constexpr int kResultVersion = 1;

/// `summary` of a result: the iteration's metrics as the producer computed them (docs/metrics.md).
struct Summary {
  std::int64_t makespan_ns = 0;                 // iteration time of one pipeline
  double bubble_ratio = 0;                      // sum(idle) / (P * makespan), a fraction: all idle time
  // Hardware figures: null (nullopt) when the times are synthetic (uniform costs).
  std::optional<double> tflops_per_gpu = 0;     // model TFLOP/s per GPU
  std::optional<double> mfu = 0;                // a fraction of the GPU's dense BF16 peak
  double tokens_per_s_per_gpu = 0;
  std::vector<std::int64_t> peak_memory_bytes;  // per rank: static + peak activations
  std::int64_t exposed_comm_ns = 0;             // mean over ranks
  std::int64_t memory_capacity_bytes = 0;       // the GPU's usable memory
  bool oom = false;                             // some rank exceeds memory_capacity_bytes
  double model_flops = 0;                       // per iteration, all GPUs
  std::int64_t tokens_per_iteration = 0;
  // Idle time by cause (docs/metrics.md, "Idle time by cause"): ratios of P * makespan, times
  // means over ranks.
  double pipeline_bubble_ratio = 0;
  double stage_imbalance = 0;
  double span_bubble_rate = 0;  // the zero-bubble paper's bubble rate, from the stages' spans
  std::int64_t exposed_pp_comm_ns = 0;
  std::int64_t exposed_dp_comm_ns = 0;
  std::int64_t other_idle_ns = 0;
  // Communication inside compute actions (analytic costs; 0 otherwise), means over ranks.
  std::int64_t exposed_tp_comm_ns = 0;
  std::int64_t exposed_ep_comm_ns = 0;
  std::int64_t exposed_cp_comm_ns = 0;
  std::int64_t exposed_fsdp_comm_ns = 0;
  std::int64_t exposed_offload_ns = 0;  // waits for activation CPU offloading's host copies
  std::int64_t host_wait_ns = 0;        // the GPU waiting for the host's kernel launches (inside compute)
  // The optimizer step after the pipeline (0 when not modelled); the iteration is makespan + step.
  std::int64_t optimizer_step_ns = 0;

  /// Largest entry of peak_memory_bytes (0 when empty): a selection, not a computation.
  std::int64_t max_peak_memory_bytes() const;
  bool operator==(const Summary&) const = default;
};

/// The parts of a rank's static memory (simulated results; the memory model's split).
struct StaticMemoryParts {
  std::int64_t params_bytes = 0;
  std::int64_t grads_bytes = 0;
  std::int64_t optimizer_bytes = 0;
  std::int64_t comm_buffers_bytes = 0;  // FSDP's gathered weights and unreduced gradients in flight
  bool operator==(const StaticMemoryParts&) const = default;
};

/// One entry of `ranks`.
struct RankRow {
  int rank = 0;
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t comm_ns = 0;
  std::int64_t exposed_comm_ns = 0;
  IdleParts idle;                          // idle_ns by cause (zeros when the file has none)
  double flops = 0;                        // the rank's compute FLOPs (0 when the file has none)
  std::int64_t static_memory_bytes = 0;    // the memory columns are 0 when the file has none
  std::int64_t peak_activation_bytes = 0;
  std::int64_t peak_memory_bytes = 0;
  std::optional<StaticMemoryParts> static_parts;  // simulated results only
  bool operator==(const RankRow&) const = default;
};

/// One entry of `memory`: a step function of the rank's total memory over time.
struct MemorySeries {
  int rank = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> samples;  // (time_ns, bytes), time ascending
  bool operator==(const MemorySeries&) const = default;
};

/// One timeline and its metrics: a simulation, or one side (predicted or measured) of a run.
struct TimelineResult {
  std::string source;  // "simulated" (simulate, compare), "predicted" or "measured" (run)
  Summary summary;
  std::vector<RankRow> ranks;         // empty when the producer wrote none
  Timeline timeline;
  std::vector<MemorySeries> memory;   // empty when the producer wrote none (written only when not)
  /// Measured GPU runs with --cupti: the kernels and copies of each action (written only when any).
  std::vector<DeviceActivity> device_activity;
  /// Simulated results of MoE stages and F&B units: how each action kind splits into phases
  /// (written only when any).
  std::vector<ActionPhases> phases;
  /// Each phase's time per rank over the timeline (the producer's phase_totals; written only when
  /// any, also when the timeline itself is not written).
  std::vector<Phase> phase_totals;
  bool operator==(const TimelineResult&) const = default;
};

/// `comparison` of a run result: the predicted-vs-measured figures (compare_timelines) and the
/// measured iterations the reported one was picked from. The verdict's three figures are required;
/// a percentile the file does not state reads as NaN and is not written back.
struct RunComparison {
  FidelityReport fidelity;
  std::vector<std::int64_t> measured_makespans_ns;  // every measured iteration
  std::int64_t median_iteration = 0;                // index of the reported (median) one
  bool operator==(const RunComparison&) const = default;
};

/// `gradient_check` of a run result (with --check-gradients).
struct GradientCheckResult {
  double max_rel_error = 0;  // infinity (JSON null) when a part or tensor was missing
  bool passed = false;
  double tolerance = 0;
  std::string worst;         // the tensor with the largest error
  bool operator==(const GradientCheckResult&) const = default;
};

/// One schedule of a result: its timelines, or the error that kept it from running.
struct ScheduleResult {
  std::string schedule;
  std::string error;                  // non-empty: the configuration breaks this schedule
  int vp = 0;                         // compare entries: chunks per rank as simulated
  std::vector<std::string> warnings;  // compare entries: the layout's warnings
  std::string pipeline_layout;        // simulated: the stages' layers in Megatron's layout grammar
  std::string memory_advice;          // simulated and out of memory: "nearest change that fits: ..." or why none
  std::vector<TimelineResult> runs;   // simulate/compare: one; run: predicted, then measured
  std::optional<RunComparison> comparison;            // run only
  std::optional<GradientCheckResult> gradient_check;  // run only, optional

  bool failed() const { return !error.empty(); }
  bool operator==(const ScheduleResult&) const = default;
};

/// One result file, ready to render.
struct ReportInput {
  std::string name;       // label in tables and charts (the file's stem for files); not written
  std::string kind;       // "simulate", "compare" or "run"
  nlohmann::json config;  // the resolved configuration, as written; config.schedule names the
                          // schedule of simulate and run results
  std::vector<ScheduleResult> schedules;
  bool operator==(const ReportInput&) const = default;
};

/// The result file of `result` (every key of the schema; the name is not part of it). Keys come
/// out sorted, numbers as nlohmann::json prints them. Throws InputError for an unknown kind, or a
/// simulate/run result without exactly one schedule.
nlohmann::json to_json(const ReportInput& result);

/// Writes to_json(result) to `path` (one space of indent, a final newline), creating its parent
/// directories. Throws InputError when it cannot.
void write_result_file(const std::string& path, const ReportInput& result);

/// Checks and converts a parsed result: the inverse of to_json. Throws InputError naming `name`
/// and the field (e.g. `h100.json: results[2].summary: missing field "bubble_ratio"`, or
/// `old.json: unsupported result version 0; this build reads 1`).
ReportInput load_result(const nlohmann::json& j, const std::string& name);

/// Reads and checks a result file; the input's name is the file's stem. Throws InputError.
ReportInput load_result_file(const std::string& path);

}  // namespace pipelab::reports
