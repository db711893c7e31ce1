// End-to-end simulation of one configuration.
#include "pipelab/sim/simulation.h"

#include <algorithm>
#include <optional>
#include <tuple>

#include "pipelab/base/error.h"
#include "pipelab/profiles/flops.h"
#include "pipelab/profiles/pipeline_layout.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/iterations.h"

namespace pipelab::sim {
namespace {

// Mean over ranks of each rank's summed in-action communication.
InActionComm mean_in_action_comm(const Timeline& t, const CostModel& cost) {
  InActionComm sum;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Compute) sum += cost.in_action_comm(static_cast<int>(r), e.action);
    }
  }
  if (t.ranks.empty()) return sum;
  const double n = static_cast<double>(t.ranks.size());
  return {sum.tp_ns / n, sum.ep_ns / n, sum.cp_ns / n, sum.fsdp_ns / n, sum.offload_ns / n, sum.host_ns / n};
}

// The cost model's phases of each compute action kind on the timeline (each asked once), in order
// of first occurrence; kinds the model does not split are left out. A kind's stages belong to one
// rank, and a rank runs a handful of kinds: a short list per rank is the fastest lookup.
std::vector<ActionPhases> timeline_phases(const Timeline& t, const CostModel& cost) {
  std::vector<ActionPhases> out;
  std::vector<std::tuple<Op, int, int>> seen;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    seen.clear();
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream != Stream::Compute) continue;
      const int b_stage = e.action.op == Op::OverlapFB ? e.action.b_stage : -1;
      const std::tuple<Op, int, int> key{e.action.op, e.action.stage, b_stage};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      std::vector<Phase> phases = cost.phases(static_cast<int>(r), e.action);
      if (!phases.empty()) out.push_back({e.action.op, e.action.stage, b_stage, std::move(phases)});
    }
  }
  return out;
}

}  // namespace

bool merges_forward_backward(std::string_view schedule, const ParallelConfig& config, int vp) {
  // Megatron runs it without a pipeline, or interleaved (it refuses pp > 1 without vp: a merged
  // unit would hold back the forward the next rank waits for).
  const bool one_f_one_b = schedule == "1f1b" || schedule == "interleaved-1f1b";
  return config.overlap_moe_expert_parallel_comm && config.ep > 1 && one_f_one_b && (config.pp == 1 || vp > 1);
}

namespace {

// The chunks per rank a schedule runs: its own when fixed; else the vp asked for, a layout string's
// (its stages / pp, as Megatron derives it), or its default.
int chunks_per_rank(const ScheduleInfo& info, const ParallelConfig& config) {
  if (info.fixed_vp) return info.default_vp;
  const int asked = config.vp > 0 ? config.vp : vp_from_layout(config);
  return asked > 0 ? asked : info.default_vp;
}

}  // namespace

SimulationOutcome simulate_config(const SimulationRequest& req) {
  SimulationOutcome out;
  out.warnings = req.warnings;
  const ScheduleInfo& info = find_schedule(req.schedule);
  out.schedule = info.name;
  ParallelConfig config = req.config;
  if (info.fixed_vp && config.vp > 0 && config.vp != info.default_vp) {
    throw ConfigError(info.name + " uses exactly " + std::to_string(info.default_vp) + " chunks per rank, got vp=" +
                      std::to_string(config.vp));
  }
  const int vp = chunks_per_rank(info, config);
  out.lowered = req.lowered ? req.lowered : std::make_shared<const Schedule>(lowered_schedule(req));
  const Schedule& run = *out.lowered;
  const PipelineShape& shape = run.shape;
  // The layer split follows the schedule's model parts (DualPipe: pp parts, each held twice); the
  // cost and memory models see this split, the outcome reports the schedule's chunks per rank.
  ParallelConfig split = config;
  split.vp = shape.stages_per_chain() / config.pp;
  // Uniform costs describe the schedule alone: the model's layers need not split over its stages,
  // and there is no memory model (docs/simulator.md, "uniform").
  const bool uniform = !req.make_cost && req.cost_model == CostModelKind::Uniform;
  ConfigCheck check = pipelab::check(split, req.model, req.gpu);
  if (uniform) {
    std::erase_if(check.errors, [](const ConfigIssue& e) { return e.rule == "layers_split" || e.rule == "recompute_num_layers_within_chunk"; });
    std::erase_if(check.warnings, [](const ConfigIssue& w) { return w.rule == "layers_balanced"; });
  }
  if (!check.ok()) throw ConfigError(join_messages(check.errors, "; "));
  for (const ConfigIssue& w : check.warnings) {
    // Zero-bubble and DualPipe schedules cut the bubble their own way: "interleave" is not their advice.
    if (w.rule == "pp_without_vp") {
      if (info.splits_backward) continue;
      out.interleave_advice = w.message;
    }
    out.warnings.push_back(w.message);
  }
  // The merged 1F1B exists for Megatron's own schedules only (pp > 1 without vp: check() warned already).
  // delay_wgrad_compute: modelled only as the TP reduce-scatter it exposes (analytic_cost.cc, tp_comm_ns).

  if (config.overlap_moe_expert_parallel_comm && config.ep > 1 && info.name != "1f1b" && info.name != "interleaved-1f1b") {
    out.warnings.push_back("overlap_moe_expert_parallel_comm applies to 1f1b and interleaved-1f1b (Megatron's merged F and B "
                           "of adjacent microbatches): " + info.name + " runs without it" +
                           (info.name.starts_with("dualpipe") ? " (its own F&B units already overlap EP traffic)" : ""));
  }
  if (config.cpu_offloading_num_layers > 0 && (info.name != "1f1b" || merges_forward_backward(info.name, config, vp))) {
    // Transformer Engine offloads one microbatch's forward and reloads it for that microbatch's
    // backward, as Megatron's no-pipelining schedule (1f1b at pp=1) runs them.
    throw ConfigError("cpu_offloading_num_layers is modelled with schedule 1f1b at pp=1 (one microbatch's forward, then its "
                      "backward), without overlap_moe_expert_parallel_comm; got " + info.name +
                      (merges_forward_backward(info.name, config, vp) ? " with overlap_moe_expert_parallel_comm" : ""));
  }
  config.vp = vp;
  out.config = config;
  if (!uniform && !req.ranking_only) out.pipeline_layout = resolve_pipeline_layout(split, req.model, shape.stages_per_chain()).layout.to_megatron();

  // One geometry for the cost and the memory model, so they size every tensor alike.
  const auto geometry = std::make_shared<const LayerGeometry>(req.model, split);
  const std::optional<MemoryModel> memory = uniform ? std::nullopt : std::optional<MemoryModel>(std::in_place, geometry, shape, req.memory);
  std::unique_ptr<CostModel> cost;
  if (req.make_cost) {
    cost = req.make_cost(shape);
  } else if (req.cost_model == CostModelKind::Analytic) {
    cost = std::make_unique<AnalyticCost>(geometry, req.gpu, shape, req.memory);
  } else {
    cost = std::make_unique<UniformCost>(req.uniform);
    out.hardware_figures = false;
    out.warnings.push_back("uniform cost model: times are synthetic, so TFLOPS/GPU and MFU are not reported and "
                           "tokens/s says nothing about the hardware");
  }

  SimOptions options;
  options.record_timeline = !req.ranking_only;
  if (memory) {
    options.activations = memory->stage_activations();
    options.overlap_frees_by_layer = merges_forward_backward(info.name, config, vp);
    // Megatron steps every rank after a global sync (the gradient norm for clipping): the rank with
    // the most parameters to update sets the step.
    for (int r = 0; r < shape.ranks; ++r) out.optimizer_step_ns = std::max(out.optimizer_step_ns, cost->optimizer_step_ns(memory->optimizer_params(r)));
    options.optimizer_step_ns = out.optimizer_step_ns;
  }
  if (req.iterations != 1) {
    const RepeatedSchedule repeated = repeat_iterations(run, req.iterations);
    options.iteration_starts = repeated.iteration_starts;
    options.optimizer_step = req.optimizer_step;
    out.result = simulate(repeated.schedule, *cost, options);
  } else {
    out.result = simulate(run, *cost, options);
  }
  if (!req.ranking_only) {
    out.metrics = compute_metrics(out.result.timeline);
    out.in_action_comm = mean_in_action_comm(out.result.timeline, *cost);
    out.phases = timeline_phases(out.result.timeline, *cost);
    out.phase_totals = phase_totals(out.result.timeline, out.phases);
  } else {
    out.metrics.makespan_ns = out.result.makespan_ns;
  }

  const std::int64_t gpus = static_cast<std::int64_t>(config.tp) * config.pp * config.cp * config.dp;
  out.model_flops = megatron_model_flops(req.model, config.gbs, config.seq_length, geometry->vocab_divisor());
  out.tokens_per_iteration = static_cast<std::int64_t>(config.gbs) * config.seq_length;
  out.throughput = compute_throughput((out.metrics.makespan_ns + out.optimizer_step_ns) / req.iterations, out.model_flops, out.tokens_per_iteration, gpus,
                                      req.gpu.peak_bf16_tflops);  // MFU against the BF16 dense peak, as NVIDIA and Megatron report it
  out.memory_capacity_bytes = req.gpu.usable_memory_bytes();
  for (int r = 0; r < config.pp; ++r) {
    out.static_memory.push_back(memory ? memory->static_memory(r) : StaticMemory{});
    const std::int64_t peak = out.static_memory.back().total() + out.result.peak_activation_bytes[static_cast<std::size_t>(r)];
    out.peak_memory_bytes.push_back(peak);
    out.oom = out.oom || peak > out.memory_capacity_bytes;
  }
  return out;
}

Schedule lowered_schedule(const SimulationRequest& req) {
  const ScheduleInfo& info = find_schedule(req.schedule);
  const ParallelConfig& config = req.config;
  const int vp = chunks_per_rank(info, config);
  Schedule compute = make_schedule(info.name, {config.pp, vp, config.microbatches(), 0});
  if (merges_forward_backward(info.name, config, vp)) compute = overlap_forward_backward(compute);
  Schedule lowered = add_send_recv(compute);
  // Gradients to reduce: dense over DP x CP, routed experts over the expert-DP group (tp x cp x dp / (ep x etp)).
  if (config.dp * config.cp > 1 || config.expert_dp() > 1) {
    lowered = add_reduce_grad(std::move(lowered), config.overlap_grad_reduce ? ReduceGradPlacement::AfterLastWeightGrad : ReduceGradPlacement::AtEnd);
  }
  return lowered;
}

}  // namespace pipelab::sim
