// A run as a result file, and its terminal summary.
#include "run_result.h"

#include <iomanip>

#include "pipelab/reports/timeline_result.h"
#include "sim_results.h"

namespace pipelab::app {
namespace {

// One side of the run; `memory` is the simulator's memory trace (the measurement has none).
reports::TimelineResult side(const char* source, const Timeline& timeline, const RunRecord& r,
                             const std::vector<std::int64_t>& peak_activation_bytes,
                             const std::vector<std::vector<sim::MemorySample>>* memory) {
  reports::TimelineFacts facts{.source = source,
                               .timeline = timeline,
                               .static_memory_bytes = r.measured.static_bytes,
                               .peak_activation_bytes = peak_activation_bytes,
                               .memory_capacity_bytes = r.memory_capacity_bytes,
                               .tokens_per_iteration = r.tokens_per_iteration};
  if (memory != nullptr) facts.activation_steps = activation_steps(*memory);
  const TimelineMetrics metrics = compute_metrics(timeline);
  for (const RankMetrics& m : metrics.ranks) facts.model_flops += m.flops;  // the counted GEMM FLOPs
  const Throughput throughput =
      compute_throughput(metrics.makespan_ns, facts.model_flops, r.tokens_per_iteration,
                         static_cast<std::int64_t>(metrics.ranks.size()), /*peak_tflops=*/0.0);
  return reports::make_timeline_result(std::move(facts), metrics, throughput);
}

}  // namespace

reports::ReportInput run_result(const RunRecord& r) {
  const std::size_t median = r.measured.median_iteration();
  reports::ScheduleResult s{.schedule = r.config.at("schedule").get<std::string>()};
  s.runs.push_back(side("predicted", r.predicted.timeline, r, r.predicted.peak_activation_bytes, &r.predicted.memory));
  s.runs.push_back(side("measured", r.measured.iterations[median], r, r.measured.peak_state_bytes, nullptr));
  s.runs.back().device_activity = r.measured.device_activity;
  reports::RunComparison comparison{.fidelity = r.fidelity, .median_iteration = static_cast<std::int64_t>(median)};
  for (const Timeline& t : r.measured.iterations) comparison.measured_makespans_ns.push_back(t.makespan_ns());
  s.comparison = std::move(comparison);
  if (r.gradients) {
    const runtime::GradientCheck& g = *r.gradients;
    s.gradient_check = reports::GradientCheckResult{g.max_rel_error, g.passed, g.tolerance, g.worst};
  }
  return {.name = "", .kind = "run", .config = r.config, .schedules = {std::move(s)}};
}

void print_run(std::ostream& os, const reports::ReportInput& result) {
  const nlohmann::json& c = result.config;
  const reports::ScheduleResult& s = result.schedules.at(0);
  const FidelityReport& f = s.comparison.value().fidelity;
  os << "# run: " << s.schedule << " pp=" << c["parallel"]["pp"] << " stages=" << c["stages"]
     << " microbatches=" << c["parallel"]["microbatches"] << " on " << c["backend"].get<std::string>() << " ("
     << c["transport"].get<std::string>() << "), " << c["iterations"] << " iterations after " << c["warmup"]
     << " warm-up, median shown\n";
  os << std::fixed;
  os << "#          " << std::setw(14) << "makespan" << std::setw(10) << "bubble" << std::setw(12) << "TFLOPS" << std::setw(14)
     << "tokens/s" << "\n";
  os << "#          " << std::setw(14) << "(ms)" << std::setw(10) << "(%)" << std::setw(12) << "(/rank)" << std::setw(14) << "(/rank)"
     << "\n";
  for (const reports::TimelineResult& run : s.runs) {
    const reports::Summary& m = run.summary;
    os << std::left << std::setw(11) << run.source << std::right << std::setprecision(3) << std::setw(14)
       << static_cast<double>(m.makespan_ns) / 1e6 << std::setprecision(2) << std::setw(10) << 100 * m.bubble_ratio
       << std::setprecision(4) << std::setw(12) << m.tflops_per_gpu.value_or(0) << std::setprecision(0) << std::setw(14)
       << m.tokens_per_s_per_gpu << "\n";
  }
  os << std::setprecision(2) << "makespan error " << 100 * f.makespan_error << "%, bubble predicted "
     << 100 * f.bubble_predicted << "% vs measured " << 100 * f.bubble_measured << "%, per-action error p50 "
     << 100 * f.action_error_p50 << "% p90 " << 100 * f.action_error_p90 << "%\n";
  if (s.gradient_check) {
    const reports::GradientCheckResult& g = *s.gradient_check;
    os << std::scientific << std::setprecision(2) << "gradient check: max relative error " << g.max_rel_error
       << " (tolerance " << g.tolerance << ") " << (g.passed ? "OK" : "FAILED") << "\n"
       << std::defaultfloat;
  }
}

}  // namespace pipelab::app
