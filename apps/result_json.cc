// Result JSON writer.
#include "result_json.h"

#include <filesystem>
#include <fstream>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab::app {

nlohmann::json config_json(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config, const std::string& cost_model) {
  nlohmann::json parallel = to_json(config);
  parallel["microbatches"] = config.microbatches();
  parallel["gpus"] = config.tp * config.pp * config.cp * config.dp;
  return {{"model", to_json(model)}, {"gpu", to_json(gpu)}, {"parallel", parallel}, {"cost_model", cost_model}};
}

nlohmann::json rank_json(std::size_t rank, const RankMetrics& m, std::int64_t static_bytes, std::int64_t peak_activation_bytes) {
  return {{"rank", rank},
          {"busy_ns", m.busy_ns},
          {"idle_ns", m.idle_ns},
          {"comm_ns", m.comm_ns},
          {"exposed_comm_ns", m.exposed_comm_ns},
          {"flops", m.flops},
          {"static_memory_bytes", static_bytes},
          {"peak_activation_bytes", peak_activation_bytes},
          {"peak_memory_bytes", static_bytes + peak_activation_bytes}};
}

nlohmann::json summary_json(const TimelineMetrics& metrics, const Throughput& throughput,
                            const std::vector<std::int64_t>& peak_memory_bytes, std::int64_t memory_capacity_bytes, bool oom,
                            double model_flops, std::int64_t tokens_per_iteration) {
  return {{"makespan_ns", metrics.makespan_ns},
          {"bubble_ratio", metrics.bubble_ratio},
          {"tflops_per_gpu", throughput.tflops_per_gpu},
          {"mfu", throughput.mfu},
          {"tokens_per_s_per_gpu", throughput.tokens_per_s_per_gpu},
          {"peak_memory_bytes", peak_memory_bytes},
          {"exposed_comm_ns", metrics.exposed_comm_ns},
          {"memory_capacity_bytes", memory_capacity_bytes},
          {"oom", oom},
          {"model_flops", model_flops},
          {"tokens_per_iteration", tokens_per_iteration}};
}

nlohmann::json memory_json(const std::vector<std::int64_t>& static_bytes,
                           const std::vector<std::vector<sim::MemorySample>>& activation_samples) {
  nlohmann::json memory = nlohmann::json::array();
  for (std::size_t r = 0; r < activation_samples.size(); ++r) {
    const std::int64_t fixed = r < static_bytes.size() ? static_bytes[r] : 0;
    nlohmann::json samples = nlohmann::json::array({{0, fixed}});
    for (const sim::MemorySample& s : activation_samples[r]) samples.push_back({s.time_ns, fixed + s.bytes});
    memory.push_back({{"rank", r}, {"samples", std::move(samples)}});
  }
  return memory;
}

nlohmann::json outcome_json(const sim::SimulationOutcome& o) {
  nlohmann::json ranks = nlohmann::json::array();
  std::vector<std::int64_t> static_bytes;
  for (std::size_t r = 0; r < o.metrics.ranks.size(); ++r) {
    const std::int64_t fixed = o.static_memory[r].total();
    static_bytes.push_back(fixed);
    nlohmann::json rank = rank_json(r, o.metrics.ranks[r], fixed, o.result.peak_activation_bytes[r]);
    rank["params_bytes"] = o.static_memory[r].params_bytes;
    rank["grads_bytes"] = o.static_memory[r].grads_bytes;
    rank["optimizer_bytes"] = o.static_memory[r].optimizer_bytes;
    ranks.push_back(std::move(rank));
  }
  return {{"schedule", o.schedule},
          {"vp", o.config.vp},
          {"warnings", o.warnings},
          {"summary", summary_json(o.metrics, o.throughput, o.peak_memory_bytes, o.memory_capacity_bytes, o.oom, o.model_flops,
                                   o.tokens_per_iteration)},
          {"ranks", std::move(ranks)},
          {"timeline", timeline_to_json(o.result.timeline)},
          {"memory", memory_json(static_bytes, o.result.memory)}};
}

nlohmann::json simulate_result(const nlohmann::json& config, const sim::SimulationOutcome& outcome) {
  nlohmann::json out = {{"format", "pipelab.result"}, {"version", kResultVersion}, {"kind", "simulate"}};
  out["config"] = config;
  out["config"]["schedule"] = outcome.schedule;
  out["config"]["parallel"]["vp"] = outcome.config.vp;
  out["config"]["warnings"] = outcome.warnings;
  nlohmann::json body = outcome_json(outcome);
  for (const char* key : {"summary", "ranks", "timeline", "memory"}) out[key] = std::move(body[key]);
  return out;
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  write_text_file(path, j.dump(1) + "\n", "result");
}

}  // namespace pipelab::app
