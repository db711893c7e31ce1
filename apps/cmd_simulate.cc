// `pipelab simulate` and `pipelab compare`: one configuration, one schedule or several side by side.
#include <algorithm>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <set>
#include <sstream>

#include "commands.h"
#include "config_flags.h"
#include "pipelab/base/error.h"
#include "pipelab/reports/write.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/memory_advice.h"
#include "sim_results.h"

namespace pipelab::app {
namespace {

// --iterations and --optimizer-step, the same for simulate and compare.
struct IterationFlags {
  int iterations = 1;
  std::string optimizer_step = "sync";

  void add_to(CLI::App* cmd) {
    cmd->add_option("--iterations", iterations, "Consecutive iterations, with the optimizer step between them")
        ->capture_default_str()
        ->check(CLI::Range(1, 1000));
    cmd->add_option("--optimizer-step", optimizer_step,
                    "sync (all ranks finish, then step) | overlap (each rank steps and goes on, as zero-bubble's post-validation)")
        ->capture_default_str()
        ->check(CLI::IsMember({"sync", "overlap"}));
  }
  void apply(sim::SimulationRequest& request) const {
    request.iterations = iterations;
    request.optimizer_step = optimizer_step == "overlap" ? sim::OptimizerStep::Overlap : sim::OptimizerStep::Sync;
  }
  // The result's config echoes both; the terminal gets a line when more than one iteration is simulated.
  void describe(std::ostream& os, nlohmann::json& config) const {
    config["iterations"] = iterations;
    config["optimizer_step"] = optimizer_step;
    if (iterations == 1) return;
    os << "# " << iterations << " iterations, optimizer step " << optimizer_step
       << ": iteration time, exposed comm and throughput per iteration, (makespan + the last optimizer step) / " << iterations
       << "; idle ratios over all of them\n";
  }
};

struct SimulateOptions {
  ConfigFlags config;
  std::string schedule = "1f1b";
  std::string json_out;
  std::string trace_out;
  std::string report_out;
  IterationFlags iterations;
};

struct CompareOptions {
  ConfigFlags config;
  std::string schedules = "1f1b,interleaved-1f1b,zb-h1,zb-h2,zb-v,dualpipe,dualpipev";
  std::string json_out;
  std::string report_out;
  IterationFlags iterations;
};

void print_config_line(std::ostream& os, const ResolvedConfig& r) {
  const ParallelConfig& c = r.config;
  os << "# " << r.model.name << " on " << c.tp * c.pp * c.cp * c.dp << " x " << r.gpu.name << ": tp=" << c.tp << " pp=" << c.pp
     << " cp=" << c.cp << " ep=" << c.ep << " dp=" << c.dp << " mbs=" << c.mbs << " gbs=" << c.gbs
     << " microbatches=" << c.microbatches() << " seq=" << c.seq_length << " recompute=" << to_string(c.recompute)
     << " precision=" << to_string(c.precision);
  if (c.precision == Precision::kFp8) os << " fp8_recipe=" << to_string(c.fp8_recipe);
  if (c.attention_backend != AttentionBackend::kAuto) os << " attention_backend=" << to_string(c.attention_backend);
  if (c.cuda_graph_impl != CudaGraphImpl::kNone) {
    os << " cuda_graph_impl=" << to_string(c.cuda_graph_impl);
    for (std::size_t i = 0; i < c.cuda_graph_modules.size(); ++i) os << (i == 0 ? " cuda_graph_modules=" : "+") << c.cuda_graph_modules[i];
  }
  os << "\n";
}

// For a configuration that does not fit: the nearest change that does, as the result states it.
std::string advice_if_oom(const sim::SimulationRequest& request, const sim::SimulationOutcome& outcome) {
  if (!outcome.oom || request.cost_model != sim::CostModelKind::Analytic) return "";
  const std::optional<sim::MemoryAdvice> advice = sim::nearest_fitting_change(request);
  return advice ? "nearest change that fits: " + advice->text()
                : "no single change fits (tried recompute, activation offloading, precision-aware optimizer, micro-batch, FSDP, TP, PP, EP)";
}

}  // namespace

void add_simulate_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("simulate", "Simulate one schedule on one configuration");
  auto o = std::make_shared<SimulateOptions>();
  add_config_flags(cmd, o->config);
  CLI::Option* schedule_flag =
      cmd->add_option("--schedule", o->schedule, "Schedule name or alias (" + schedule_names() + "); default 1f1b, or "
                      "interleaved-1f1b when the layout has vp > 1 (as Megatron runs it)")
          ->capture_default_str();
  cmd->add_option("--json", o->json_out, "Write the result JSON here");
  cmd->add_option("--trace", o->trace_out, "Write a Chrome/Perfetto trace here");
  cmd->add_option("--report", o->report_out, "Write a report here (.html, .md, .csv)");
  o->iterations.add_to(cmd);
  cmd->callback([o, schedule_flag, &exit_code] {
    const ResolvedConfig resolved = resolve_flags(o->config);
    // Megatron runs its interleaved schedule whenever vp > 1 (given, or from a layout string).
    if (schedule_flag->count() == 0 && std::max(resolved.config.vp, vp_from_layout(resolved.config)) > 1) o->schedule = "interleaved-1f1b";
    sim::SimulationRequest request = make_request(o->config, resolved, o->schedule);
    o->iterations.apply(request);
    const sim::SimulationOutcome outcome = sim::simulate_config(request);
    print_config_line(std::cout, resolved);
    nlohmann::json config = config_json(resolved.model, resolved.gpu, resolved.config, o->config.cost);
    o->iterations.describe(std::cout, config);
    for (const auto& w : outcome.warnings) std::cerr << "pipelab: warning: " << w << "\n";
    // The timeline goes into the result only when a file will hold it (docs/cli.md, "simulate").
    const bool files = !o->json_out.empty() || !o->trace_out.empty() || !o->report_out.empty();
    const reports::ReportInput result = simulate_result(std::move(config), outcome, advice_if_oom(request, outcome), files);
    std::cout << reports::render_summary_text({result});
    if (!o->json_out.empty()) reports::write_result_file(o->json_out, result);
    if (!o->trace_out.empty()) reports::write_report({result}, o->trace_out, "trace");
    if (!o->report_out.empty()) reports::write_report({result}, o->report_out, "");
    exit_code = 0;
  });
}

void add_compare_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("compare", "Simulate several schedules on one configuration, side by side");
  auto o = std::make_shared<CompareOptions>();
  add_config_flags(cmd, o->config);
  cmd->add_option("--schedules", o->schedules, "Comma-separated schedule names")->capture_default_str();
  cmd->add_option("--json", o->json_out, "Write the result JSON here");
  cmd->add_option("--report", o->report_out, "Write a report here (.html, .md, .csv)");
  o->iterations.add_to(cmd);
  cmd->callback([o, &exit_code] {
    const ResolvedConfig resolved = resolve_flags(o->config);
    print_config_line(std::cout, resolved);
    const std::vector<std::string> names = split_comma_list(o->schedules);
    if (names.empty()) throw InputError("--schedules is empty; valid schedules: " + schedule_names());
    std::map<std::string, std::string> listed;  // canonical name -> the name given
    for (const std::string& name : names) {
      const auto [first, fresh] = listed.emplace(find_schedule(name).name, name);
      if (!fresh) throw InputError("--schedules lists " + first->first + " twice ('" + first->second + "', '" + name + "')");
    }
    reports::ReportInput result{.kind = "compare",
                                .config = config_json(resolved.model, resolved.gpu, resolved.config, o->config.cost)};
    o->iterations.describe(std::cout, result.config);
    result.config["schedules"] = names;
    std::set<std::string> warnings;  // the layout's warnings, once (they do not depend on the schedule)
    // A schedule of the table that ran interleaved (vp > 1) answers "interleave to cut the bubble" already.
    std::string interleave_advice;
    bool shows_interleaving = false;
    for (const std::string& name : names) {
      const ScheduleInfo& info = find_schedule(name);  // an unknown name is bad input
      try {
        sim::SimulationRequest request = make_request(o->config, resolved, name);
        // One --vp is for the schedules that take any; ZB-V, DualPipeV and the vp=1 schedules run with their own.
        if (info.fixed_vp) request.config.vp = 0;
        o->iterations.apply(request);
        const sim::SimulationOutcome outcome = sim::simulate_config(request);
        result.schedules.push_back(simulated_entry(outcome, advice_if_oom(request, outcome)));
        warnings.insert(outcome.warnings.begin(), outcome.warnings.end());
        if (!outcome.interleave_advice.empty()) interleave_advice = outcome.interleave_advice;
        shows_interleaving = shows_interleaving || outcome.config.vp > 1;
      } catch (const InputError& e) {
        result.schedules.push_back(compare_failure(info.name, e.what()));
      }
    }
    if (shows_interleaving) warnings.erase(interleave_advice);
    for (const auto& w : warnings) std::cerr << "pipelab: warning: " << w << "\n";
    std::cout << reports::render_summary_text({result});
    if (!o->json_out.empty()) reports::write_result_file(o->json_out, result);
    if (!o->report_out.empty()) {
      reports::write_report({result}, o->report_out, "");
      std::cout << "# report: " << o->report_out << "\n";
    }
    // A failed check when no schedule both applies and fits (docs/cli.md).
    const bool any_fits = std::any_of(result.schedules.begin(), result.schedules.end(), [](const reports::ScheduleResult& s) {
      return !s.failed() && !s.runs.front().summary.oom;
    });
    exit_code = any_fits ? 0 : 1;
  });
}

}  // namespace pipelab::app
