// Metrics of a Timeline: the one implementation used for predicted (simulated) and measured
// (runtime) timelines alike, so the two are computed identically. Definitions: docs/metrics.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "pipelab/schedules/idle_parts.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab {

struct RankMetrics {
  std::int64_t busy_ns = 0;          // compute-stream time (union of compute intervals)
  std::int64_t idle_ns = 0;          // makespan - busy_ns
  std::int64_t comm_ns = 0;          // union of send/recv intervals on this rank
  std::int64_t exposed_comm_ns = 0;  // communication time not overlapped by this rank's compute
  std::int64_t span_ns = 0;          // first compute start to last compute end (0 without compute)
  double flops = 0;                  // sum of the rank's compute flops
  IdleParts idle;                    // idle_ns by cause (split_idle); idle.total() == idle_ns
};

struct TimelineMetrics {
  std::int64_t makespan_ns = 0;
  double bubble_ratio = 0;           // sum(idle) / (ranks * makespan): ALL idle time; 0 for an empty timeline
  double pipeline_bubble_ratio = 0;  // sum(idle.pipeline_bubble_ns) / (ranks * makespan); 0 at PP=1
  double stage_imbalance = 0;        // sum(idle.imbalance_ns) / (ranks * makespan)
  /// The zero-bubble paper's bubble rate (Qi et al. 2023, section 5.3): (cost - compute) / cost with
  /// cost = the longest stage span and compute = the busiest rank's compute; 0 without compute.
  double span_bubble_rate = 0;
  std::int64_t exposed_comm_ns = 0;  // mean over ranks of exposed communication
  std::int64_t exposed_pp_comm_ns = 0;  // mean over ranks of idle.exposed_pp_comm_ns
  std::int64_t exposed_dp_comm_ns = 0;  // mean over ranks of idle.exposed_dp_comm_ns
  std::int64_t other_idle_ns = 0;       // mean over ranks of idle.other_ns
  std::vector<RankMetrics> ranks;
};

TimelineMetrics compute_metrics(const Timeline& t);

/// Throughput figures from an iteration time. Zero when the iteration time is zero.
struct Throughput {
  double tflops_per_gpu = 0;        // model_flops / (iteration_s * gpus) / 1e12
  double mfu = 0;                   // tflops_per_gpu / peak_tflops
  double tokens_per_s_per_gpu = 0;  // tokens / (iteration_s * gpus)
};

Throughput compute_throughput(std::int64_t iteration_ns, double model_flops, std::int64_t tokens, std::int64_t gpus,
                              double peak_tflops);

/// How close a prediction must come to a measurement (docs/metrics.md, "Predicted vs measured").
/// The verdict (within_fidelity) judges the makespan error and the bubble difference; the compute
/// time ratio only warns: a rank far from its profile ran on a busier or faster machine.
struct FidelityThresholds {
  double makespan_error = 0.05;      // |predicted / measured - 1|
  double bubble_difference = 0.02;   // |bubble predicted - bubble measured| (fractions)
  double compute_time_ratio = 0.03;  // |a rank's median measured / predicted action time - 1|
};
inline constexpr FidelityThresholds kFidelityThresholds{};

/// Predicted against measured: one iteration of the same lowered schedule, simulated and executed.
struct FidelityReport {
  std::int64_t makespan_predicted_ns = 0;
  std::int64_t makespan_measured_ns = 0;
  double makespan_error = 0;     // predicted / measured - 1, signed; 0 when nothing was measured
  double bubble_predicted = 0;
  double bubble_measured = 0;
  double action_error_p50 = 0;   // over compute actions matched by (rank, action): predicted / measured
  double action_error_p90 = 0;   //   duration - 1, signed; 0 when no action matched
  std::size_t actions_compared = 0;
  std::vector<double> compute_time_ratio;  // per measured rank: median measured / predicted action time

  bool operator==(const FidelityReport&) const = default;
};

/// Compares two timelines of the same schedule; both go through compute_metrics.
FidelityReport compare_timelines(const Timeline& predicted, const Timeline& measured);

/// The fidelity verdict: every figure finite and within the thresholds (a NaN never is).
bool within_fidelity(double makespan_error, double bubble_predicted, double bubble_measured,
                     const FidelityThresholds& thresholds = kFidelityThresholds);
bool within_fidelity(const FidelityReport& report, const FidelityThresholds& thresholds = kFidelityThresholds);

/// Ranks whose compute time ratio is more than thresholds.compute_time_ratio away from 1.
std::vector<std::size_t> ranks_off_profile(const FidelityReport& report,
                                           const FidelityThresholds& thresholds = kFidelityThresholds);

}  // namespace pipelab
