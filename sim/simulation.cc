// End-to-end simulation of one configuration.
#include "pipelab/sim/simulation.h"

#include <algorithm>

#include "pipelab/base/error.h"
#include "pipelab/profiles/flops.h"
#include "pipelab/profiles/pipeline_layout.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"

namespace pipelab::sim {

SimulationOutcome simulate_config(const SimulationRequest& req) {
  SimulationOutcome out;
  const ScheduleInfo& info = find_schedule(req.schedule);
  out.schedule = info.name;
  ParallelConfig config = req.config;
  const int asked_vp = config.vp;
  if (info.fixed_vp && asked_vp > 0 && asked_vp != info.default_vp) {
    throw ConfigError(info.name + " uses exactly " + std::to_string(info.default_vp) + " chunks per rank, got vp=" +
                      std::to_string(asked_vp));
  }
  const int vp = info.fixed_vp || asked_vp <= 0 ? info.default_vp : asked_vp;
  const int microbatches = config.microbatches();
  Schedule schedule = make_schedule(info.name, {config.pp, vp, microbatches, 0});
  // The layer split follows the schedule's model parts (DualPipe: pp parts, each held twice); the
  // cost and memory models see this split, the outcome reports the schedule's chunks per rank.
  ParallelConfig split = config;
  split.vp = schedule.shape.stages_per_chain() / config.pp;
  const ConfigCheck check = pipelab::check(split, req.model, req.gpu);
  if (!check.ok()) throw ConfigError(join_messages(check.errors, "; "));
  for (const ConfigIssue& w : check.warnings) {
    // Zero-bubble and DualPipe schedules cut the bubble their own way: "interleave" is not their advice.
    if (w.rule == "pp_without_vp" && info.splits_backward) continue;
    out.warnings.push_back(w.message);
  }
  config.vp = vp;
  out.config = config;
  out.pipeline_layout = resolve_pipeline_layout(split, req.model, schedule.shape.stages_per_chain()).layout.to_megatron();

  Schedule lowered = add_send_recv(schedule);
  if (config.dp * config.cp > 1) {
    lowered = add_reduce_grad(lowered, config.overlap_grad_reduce ? ReduceGradPlacement::AfterLastWeightGrad : ReduceGradPlacement::AtEnd);
  }

  // One geometry for the cost and the memory model, so they size every tensor alike.
  const auto geometry = std::make_shared<const LayerGeometry>(req.model, split);
  const MemoryModel memory(geometry, schedule.shape, req.memory);
  std::unique_ptr<CostModel> cost;
  if (req.make_cost) {
    cost = req.make_cost(schedule.shape);
  } else if (req.cost_model == CostModelKind::Analytic) {
    cost = std::make_unique<AnalyticCost>(geometry, req.gpu, schedule.shape);
  } else {
    cost = std::make_unique<UniformCost>(req.uniform);
    out.warnings.push_back("uniform cost model: TFLOPS, MFU and tokens/s divide the model's real FLOPs by the given "
                           "synthetic times, so they say nothing about the hardware");
  }

  SimOptions options;
  options.activations = memory.stage_activations();
  out.result = simulate(lowered, *cost, options);
  out.lowered = std::move(lowered);
  out.metrics = compute_metrics(out.result.timeline);

  const std::int64_t gpus = static_cast<std::int64_t>(config.tp) * config.pp * config.cp * config.dp;
  out.model_flops = megatron_model_flops(req.model, config.gbs, config.seq_length, geometry->vocab_divisor());
  out.tokens_per_iteration = static_cast<std::int64_t>(config.gbs) * config.seq_length;
  out.throughput = compute_throughput(out.metrics.makespan_ns, out.model_flops, out.tokens_per_iteration, gpus,
                                      req.gpu.peak_tflops(config.precision));
  out.memory_capacity_bytes = req.gpu.usable_memory_bytes();
  for (int r = 0; r < config.pp; ++r) {
    out.static_memory.push_back(memory.static_memory(r));
    const std::int64_t peak = out.static_memory.back().total() + out.result.peak_activation_bytes[static_cast<std::size_t>(r)];
    out.peak_memory_bytes.push_back(peak);
    out.oom = out.oom || peak > out.memory_capacity_bytes;
  }
  return out;
}

}  // namespace pipelab::sim
