// The result file of `pipelab run` (kind "run"): the measured iteration and the simulator's
// prediction mapped into the result schema of reports, with their comparison and the gradient
// check; and the terminal lines the command prints from it.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>

#include <nlohmann/json.hpp>

#include "pipelab/reports/result.h"
#include "pipelab/runtime/gradients.h"
#include "pipelab/runtime/run.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/sim/engine.h"

namespace pipelab::app {

/// What a run gathered, as the command holds it.
struct RunRecord {
  nlohmann::json config;                    // the resolved configuration the result echoes
  const runtime::RunResult& measured;       // every measured iteration; the median one is reported
  const sim::SimResult& predicted;          // the same lowered schedule, simulated from the profile
  const FidelityReport& fidelity;           // compare_timelines(predicted, the median iteration)
  std::int64_t tokens_per_iteration = 0;
  std::int64_t memory_capacity_bytes = 0;   // the host's physical memory
  std::optional<runtime::GradientCheck> gradients;
};

/// The `run` result: predicted then measured (counted FLOPs, no peak: MFU 0), the comparison and,
/// when checked, the gradients.
reports::ReportInput run_result(const RunRecord& record);

/// The terminal summary of a run result: predicted beside measured, the errors, the gradient check.
void print_run(std::ostream& os, const reports::ReportInput& result);

}  // namespace pipelab::app
