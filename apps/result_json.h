// Result JSON (docs/formats.md, "Result JSON"): what simulate / compare write and report reads.
#pragma once

#include <nlohmann/json.hpp>

#include "pipelab/sim/simulation.h"

namespace pipelab::app {

inline constexpr int kResultVersion = 1;

/// The resolved configuration every result file echoes.
nlohmann::json config_json(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config,
                           const std::string& cost_model);
/// One entry of a result's "ranks" array (the keys simulate and run share).
nlohmann::json rank_json(std::size_t rank, const RankMetrics& metrics, std::int64_t static_bytes,
                         std::int64_t peak_activation_bytes);

/// The "summary" object of a result (the keys simulate and run share).
nlohmann::json summary_json(const TimelineMetrics& metrics, const Throughput& throughput,
                            const std::vector<std::int64_t>& peak_memory_bytes, std::int64_t memory_capacity_bytes, bool oom,
                            double model_flops, std::int64_t tokens_per_iteration);
/// The "memory" series of a result: per rank, [time_ns, bytes] samples starting with [0, static]
/// and then static + the activation bytes held from each sample's time on.
nlohmann::json memory_json(const std::vector<std::int64_t>& static_bytes,
                           const std::vector<std::vector<sim::MemorySample>>& activation_samples);

/// {"summary", "ranks", "timeline", "memory"} of one simulated schedule.
nlohmann::json outcome_json(const sim::SimulationOutcome& outcome);
/// A complete `kind: simulate` document.
nlohmann::json simulate_result(const nlohmann::json& config, const sim::SimulationOutcome& outcome);

/// Writes JSON to a file (pretty when small); throws InputError if the file cannot be written.
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace pipelab::app
