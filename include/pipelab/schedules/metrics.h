// Metrics of a Timeline: the one implementation used for predicted (simulated) and measured
// (runtime) timelines alike, so the two are computed identically. Definitions: docs/metrics.md.
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/schedules/timeline.h"

namespace pipelab {

struct RankMetrics {
  std::int64_t busy_ns = 0;          // compute-stream time (union of compute intervals)
  std::int64_t idle_ns = 0;          // makespan - busy_ns
  std::int64_t comm_ns = 0;          // union of send/recv intervals on this rank
  std::int64_t exposed_comm_ns = 0;  // communication time not overlapped by this rank's compute
  double flops = 0;                  // sum of the rank's compute flops
};

struct TimelineMetrics {
  std::int64_t makespan_ns = 0;
  double bubble_ratio = 0;           // sum(idle) / (ranks * makespan); 0 for an empty timeline
  std::int64_t exposed_comm_ns = 0;  // mean over ranks of exposed communication
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

}  // namespace pipelab
