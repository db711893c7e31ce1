// The result files of `simulate` and `compare`: simulation outcomes mapped into the result schema
// of reports (pipelab/reports/result.h), which writes them.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/reports/result.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::app {

/// The resolved configuration every result file echoes: model, GPU, parallel layout (with its
/// microbatches and GPU count) and the cost model.
nlohmann::json config_json(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config,
                           const std::string& cost_model);

/// The simulator's memory trace (per rank, activation bytes held from each time on) as the steps
/// reports::TimelineFacts takes.
std::vector<std::vector<std::pair<std::int64_t, std::int64_t>>> activation_steps(
    const std::vector<std::vector<sim::MemorySample>>& memory);

/// A `simulate` result: `config` plus the schedule, its chunks per rank and the layout's warnings;
/// `memory_advice` says what fits instead when the outcome is out of memory ("" otherwise).
reports::ReportInput simulate_result(nlohmann::json config, const sim::SimulationOutcome& outcome,
                                     const std::string& memory_advice);

/// One simulated schedule (of a `compare` result): outcome, layout, chunks per rank, advice.
reports::ScheduleResult simulated_entry(const sim::SimulationOutcome& outcome, const std::string& memory_advice);
reports::ScheduleResult compare_failure(const std::string& schedule, const std::string& error);

}  // namespace pipelab::app
