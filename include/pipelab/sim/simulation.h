// One configuration, simulated end to end: build the schedule for the layout, lower it (send/recv,
// and REDUCE_GRAD when there is data parallelism), pick the cost model, run the engine, and
// compute every metric. `simulate`, `compare`, `plan` and the benchmarks all go through here.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

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

struct SimulationRequest {
  ModelSpec model;
  GpuSpec gpu;
  ParallelConfig config;      // resolved; config.vp is the chunks per rank asked for (0 = schedule default)
  std::string schedule;
  std::string cost_model = "analytic";  // analytic | uniform (| profiled, through make_cost)
  UniformTimes uniform;                 // for cost_model == "uniform"
  MemoryOptions memory;
  /// Optional: a caller-built cost model (e.g. profiled) used instead of cost_model's.
  std::function<std::unique_ptr<CostModel>(const PipelineShape&)> make_cost;
};

struct SimulationOutcome {
  std::string schedule;          // canonical name
  ParallelConfig config;         // as simulated (vp = chunks per rank of the schedule)
  std::vector<std::string> warnings;
  Schedule lowered;
  SimResult result;
  TimelineMetrics metrics;
  Throughput throughput;
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

}  // namespace pipelab::sim
