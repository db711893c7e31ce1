// Result JSON (docs/formats.md, "Result JSON"), loaded and checked for the renderers. The loader
// never recomputes a metric: it reads the numbers the simulator or runtime wrote, and rejects input
// that is not a result of a version this build reads, naming the offending field.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/schedules/timeline.h"

namespace pipelab::reports {

/// The result format version this build reads (and the only one it accepts).
inline constexpr int kResultVersion = 1;

/// `summary` of a result: the iteration's metrics as the producer computed them (docs/metrics.md).
struct Summary {
  std::int64_t makespan_ns = 0;                 // iteration time of one pipeline
  double bubble_ratio = 0;                      // sum(idle) / (P * makespan), a fraction
  double tflops_per_gpu = 0;                    // model TFLOP/s per GPU
  double mfu = 0;                               // a fraction of the GPU's dense peak
  double tokens_per_s_per_gpu = 0;
  std::vector<std::int64_t> peak_memory_bytes;  // per rank: static + peak activations
  std::int64_t exposed_comm_ns = 0;             // mean over ranks
  std::int64_t memory_capacity_bytes = 0;       // the GPU's usable memory
  bool oom = false;                             // some rank exceeds memory_capacity_bytes
  double model_flops = 0;                       // per iteration, all GPUs
  std::int64_t tokens_per_iteration = 0;

  /// Largest entry of peak_memory_bytes (0 when empty): a selection, not a computation.
  std::int64_t max_peak_memory_bytes() const;
};

/// One entry of `ranks`.
struct RankRow {
  int rank = 0;
  std::int64_t busy_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t comm_ns = 0;
  std::int64_t exposed_comm_ns = 0;
  std::int64_t static_memory_bytes = 0;
  std::int64_t peak_activation_bytes = 0;
  std::int64_t peak_memory_bytes = 0;
};

/// One entry of `memory`: a step function of the rank's total memory over time.
struct MemorySeries {
  int rank = 0;
  std::vector<std::pair<std::int64_t, std::int64_t>> samples;  // (time_ns, bytes), time ascending
};

/// One timeline and its metrics: a simulation, or one side (predicted or measured) of a run.
struct TimelineResult {
  std::string source;  // "simulated" (simulate, compare), "predicted" or "measured" (run)
  Summary summary;
  std::vector<RankRow> ranks;         // empty when the producer wrote none
  Timeline timeline;
  std::vector<MemorySeries> memory;   // empty when the producer wrote none
};

/// One schedule of a result: its timelines, or the error that kept it from running.
struct ScheduleResult {
  std::string schedule;
  std::string error;                  // non-empty: the configuration breaks this schedule
  std::vector<TimelineResult> runs;   // simulate/compare: one; run: predicted, then measured
  nlohmann::json comparison;          // run only: the producer's predicted-vs-measured figures, with
                                      // numeric makespan_error, bubble_predicted, bubble_measured
                                      // (load_result checks them); null for other kinds
  nlohmann::json gradient_check;      // run only, optional (or null)

  bool failed() const { return !error.empty(); }
};

/// One result file, ready to render.
struct ReportInput {
  std::string name;       // label in tables and charts (the file's stem for files)
  std::string kind;       // "simulate", "compare" or "run"
  nlohmann::json config;  // the resolved configuration, as written
  std::vector<ScheduleResult> schedules;
};

/// Checks and converts a parsed result. Throws InputError naming `name` and the field (e.g.
/// `h100.json: results[2].summary: missing field "bubble_ratio"`, or
/// `old.json: unsupported result version 0; this build reads 1`).
ReportInput load_result(const nlohmann::json& j, const std::string& name);

/// Reads and checks a result file; the input's name is the file's stem. Throws InputError.
ReportInput load_result_file(const std::string& path);

}  // namespace pipelab::reports
