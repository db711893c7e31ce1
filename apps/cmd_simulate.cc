// `pipelab simulate` and `pipelab compare`: one configuration, one schedule or several side by side.
#include <iostream>
#include <set>
#include <sstream>

#include "commands.h"
#include "config_flags.h"
#include "pipelab/base/error.h"
#include "pipelab/reports/write.h"
#include "pipelab/schedules/registry.h"
#include "sim_results.h"

namespace pipelab::app {
namespace {

struct SimulateOptions {
  ConfigFlags config;
  std::string schedule = "1f1b";
  std::string json_out;
  std::string trace_out;
  std::string report_out;
};

struct CompareOptions {
  ConfigFlags config;
  std::string schedules = "1f1b,interleaved-1f1b,zb-h1,zb-h2,zb-v,dualpipe,dualpipev";
  std::string json_out;
  std::string report_out;
};

std::vector<std::string> split_names(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

void print_config_line(std::ostream& os, const ResolvedConfig& r) {
  const ParallelConfig& c = r.config;
  os << "# " << r.model.name << " on " << c.tp * c.pp * c.cp * c.dp << " x " << r.gpu.name << ": tp=" << c.tp << " pp=" << c.pp
     << " cp=" << c.cp << " ep=" << c.ep << " dp=" << c.dp << " mbs=" << c.mbs << " gbs=" << c.gbs
     << " microbatches=" << c.microbatches() << " seq=" << c.seq_length << " recompute=" << to_string(c.recompute) << "\n";
}

}  // namespace

void add_simulate_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("simulate", "Simulate one schedule on one configuration");
  auto o = std::make_shared<SimulateOptions>();
  add_config_flags(cmd, o->config);
  cmd->add_option("--schedule", o->schedule, "Schedule name or alias (" + schedule_names() + ")")->capture_default_str();
  cmd->add_option("--json", o->json_out, "Write the result JSON here");
  cmd->add_option("--trace", o->trace_out, "Write a Chrome/Perfetto trace here");
  cmd->add_option("--report", o->report_out, "Write a report here (.html, .md, .csv)");
  cmd->callback([o, &exit_code] {
    const ResolvedConfig resolved = resolve_flags(o->config);
    const sim::SimulationOutcome outcome = sim::simulate_config(make_request(o->config, resolved, o->schedule));
    print_config_line(std::cout, resolved);
    for (const auto& w : outcome.warnings) std::cerr << "pipelab: warning: " << w << "\n";
    const reports::ReportInput result =
        simulate_result(config_json(resolved.model, resolved.gpu, resolved.config, o->config.cost), outcome);
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
  cmd->callback([o, &exit_code] {
    const ResolvedConfig resolved = resolve_flags(o->config);
    print_config_line(std::cout, resolved);
    const std::vector<std::string> names = split_names(o->schedules);
    if (names.empty()) throw InputError("--schedules is empty; valid schedules: " + schedule_names());
    reports::ReportInput result{.kind = "compare",
                                .config = config_json(resolved.model, resolved.gpu, resolved.config, o->config.cost)};
    result.config["schedules"] = names;
    std::set<std::string> warnings;  // the layout's warnings, once (they do not depend on the schedule)
    for (const std::string& name : names) {
      const std::string canonical = find_schedule(name).name;  // an unknown name is bad input
      try {
        const sim::SimulationOutcome outcome = sim::simulate_config(make_request(o->config, resolved, name));
        result.schedules.push_back(compare_entry(outcome));
        warnings.insert(outcome.warnings.begin(), outcome.warnings.end());
      } catch (const InputError& e) {
        result.schedules.push_back(compare_failure(canonical, e.what()));
      }
    }
    for (const auto& w : warnings) std::cerr << "pipelab: warning: " << w << "\n";
    std::cout << reports::render_summary_text({result});
    if (!o->json_out.empty()) reports::write_result_file(o->json_out, result);
    if (!o->report_out.empty()) {
      reports::write_report({result}, o->report_out, "");
      std::cout << "# report: " << o->report_out << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace pipelab::app
