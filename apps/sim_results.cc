// Simulation outcomes as result files.
#include "sim_results.h"

#include <cmath>

#include "pipelab/reports/timeline_result.h"

namespace pipelab::app {
namespace {

reports::TimelineResult simulated_timeline(const sim::SimulationOutcome& o, bool detailed) {
  reports::TimelineFacts facts{.source = "simulated",
                               .timeline = detailed ? o.result.timeline : Timeline{},
                               .peak_activation_bytes = o.result.peak_activation_bytes,
                               .memory_capacity_bytes = o.memory_capacity_bytes,
                               .model_flops = o.model_flops,
                               .tokens_per_iteration = o.tokens_per_iteration,
                               .hardware_figures = o.hardware_figures,
                               .exposed_tp_comm_ns = std::llround(o.in_action_comm.tp_ns),
                               .exposed_ep_comm_ns = std::llround(o.in_action_comm.ep_ns),
                               .exposed_cp_comm_ns = std::llround(o.in_action_comm.cp_ns),
                               .exposed_fsdp_comm_ns = std::llround(o.in_action_comm.fsdp_ns),
                               .exposed_offload_ns = std::llround(o.in_action_comm.offload_ns),
                               .host_wait_ns = std::llround(o.in_action_comm.host_ns),
                               .optimizer_step_ns = o.optimizer_step_ns,
                               .phases = detailed ? o.phases : std::vector<ActionPhases>{},
                               .phase_totals = o.phase_totals};
  for (const sim::StaticMemory& m : o.static_memory) {
    facts.static_memory_bytes.push_back(m.total());
    facts.static_parts.push_back({m.params_bytes, m.grads_bytes, m.optimizer_bytes, m.comm_buffers_bytes});
  }
  if (detailed) facts.activation_steps = activation_steps(o.result.memory);
  return reports::make_timeline_result(std::move(facts), o.metrics, o.throughput);
}

}  // namespace

std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> activation_steps(
    const std::vector<std::vector<sim::MemorySample>>& memory) {
  std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> out;
  for (const std::vector<sim::MemorySample>& rank : memory) {
    auto& steps = out.emplace_back();
    for (const sim::MemorySample& s : rank) steps.emplace_back(s.time_ns, s.bytes);
  }
  return out;
}

nlohmann::json config_json(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config,
                           const std::string& cost_model) {
  nlohmann::json parallel = to_json(config);
  parallel["microbatches"] = config.microbatches();
  parallel["gpus"] = config.tp * config.pp * config.cp * config.dp;
  return {{"model", to_json(model)}, {"gpu", to_json(gpu)}, {"parallel", parallel}, {"cost_model", cost_model}};
}

reports::ReportInput simulate_result(nlohmann::json config, const sim::SimulationOutcome& o,
                                     const std::string& memory_advice, bool detailed) {
  config["schedule"] = o.schedule;
  config["parallel"]["vp"] = o.config.vp;
  config["warnings"] = o.warnings;
  reports::ScheduleResult s = simulated_entry(o, memory_advice, detailed);
  s.vp = 0;  // written in config.parallel.vp
  s.warnings.clear();  // written in config.warnings
  return {.name = "", .kind = "simulate", .config = std::move(config), .schedules = {std::move(s)}};
}

reports::ScheduleResult simulated_entry(const sim::SimulationOutcome& o, const std::string& memory_advice, bool detailed) {
  reports::ScheduleResult s{.schedule = o.schedule,
                            .vp = o.config.vp,
                            .warnings = o.warnings,
                            .pipeline_layout = o.pipeline_layout,
                            .memory_advice = memory_advice};
  s.runs.push_back(simulated_timeline(o, detailed));
  return s;
}

reports::ScheduleResult compare_failure(const std::string& schedule, const std::string& error) {
  return {.schedule = schedule, .error = error};
}

}  // namespace pipelab::app
