// `pipelab simulate` and `pipelab compare`: one configuration, one schedule or several side by side.
#include <iostream>
#include <set>
#include <sstream>

#include "commands.h"
#include "config_flags.h"
#include "pipelab/base/error.h"
#include "pipelab/reports/write.h"
#include "pipelab/schedules/registry.h"
#include "result_json.h"
#include "summary_table.h"

namespace pipelab::app {
namespace {

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
  auto flags = add_config_flags(cmd);
  auto schedule = std::make_shared<std::string>("1f1b");
  auto json_out = std::make_shared<std::string>();
  auto trace_out = std::make_shared<std::string>();
  auto report_out = std::make_shared<std::string>();
  cmd->add_option("--schedule", *schedule, "Schedule name or alias (" + schedule_names() + ")")->capture_default_str();
  cmd->add_option("--json", *json_out, "Write the result JSON here");
  cmd->add_option("--trace", *trace_out, "Write a Chrome/Perfetto trace here");
  cmd->add_option("--report", *report_out, "Write a report here (.html, .md, .csv)");
  cmd->callback([flags, schedule, json_out, trace_out, report_out, &exit_code] {
    const ResolvedConfig resolved = resolve_flags(*flags);
    const sim::SimulationOutcome outcome = sim::simulate_config(make_request(*flags, resolved, *schedule));
    print_config_line(std::cout, resolved);
    for (const auto& w : outcome.warnings) std::cerr << "pipelab: warning: " << w << "\n";
    print_summary_table(std::cout, {{outcome.schedule, &outcome, ""}});
    const nlohmann::json result = simulate_result(config_json(resolved.model, resolved.gpu, resolved.config, flags->cost), outcome);
    if (!json_out->empty()) write_json_file(*json_out, result);
    if (!trace_out->empty()) reports::write_report({result}, *trace_out, "trace");
    if (!report_out->empty()) reports::write_report({result}, *report_out, "");
    exit_code = 0;
  });
}

void add_compare_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("compare", "Simulate several schedules on one configuration, side by side");
  auto flags = add_config_flags(cmd);
  auto schedules = std::make_shared<std::string>("1f1b,interleaved-1f1b,zb-h1,zb-h2,zb-v,dualpipe,dualpipev");
  auto json_out = std::make_shared<std::string>();
  auto report_out = std::make_shared<std::string>();
  cmd->add_option("--schedules", *schedules, "Comma-separated schedule names")->capture_default_str();
  cmd->add_option("--json", *json_out, "Write the result JSON here");
  cmd->add_option("--report", *report_out, "Write a report here (.html, .md, .csv)");
  cmd->callback([flags, schedules, json_out, report_out, &exit_code] {
    const ResolvedConfig resolved = resolve_flags(*flags);
    print_config_line(std::cout, resolved);
    nlohmann::json config = config_json(resolved.model, resolved.gpu, resolved.config, flags->cost);
    config["schedules"] = split_names(*schedules);
    nlohmann::json results = nlohmann::json::array();
    std::vector<sim::SimulationOutcome> outcomes;
    std::vector<TableRow> rows;
    std::set<std::string> warnings;  // the layout's warnings, once (they do not depend on the schedule)
    const std::vector<std::string> names = split_names(*schedules);
    if (names.empty()) throw InputError("--schedules is empty; valid schedules: " + schedule_names());
    outcomes.reserve(names.size());
    for (const std::string& name : names) {
      find_schedule(name);  // an unknown name is bad input, not an inapplicable schedule
      try {
        outcomes.push_back(sim::simulate_config(make_request(*flags, resolved, name)));
        results.push_back(outcome_json(outcomes.back()));
        rows.push_back({outcomes.back().schedule, &outcomes.back(), ""});
        for (const auto& w : outcomes.back().warnings) warnings.insert(w);
      } catch (const InputError& e) {
        results.push_back({{"schedule", find_schedule(name).name}, {"error", e.what()}});
        rows.push_back({find_schedule(name).name, nullptr, e.what()});
      }
    }
    for (const auto& w : warnings) std::cerr << "pipelab: warning: " << w << "\n";
    print_summary_table(std::cout, rows);
    nlohmann::json result = {{"format", "pipelab.result"}, {"version", kResultVersion}, {"kind", "compare"}};
    result["config"] = std::move(config);
    result["results"] = std::move(results);
    if (!json_out->empty()) write_json_file(*json_out, result);
    if (!report_out->empty()) {
      reports::write_report({result}, *report_out, "");
      std::cout << "# report: " << *report_out << "\n";
    }
    exit_code = 0;
  });
}

}  // namespace pipelab::app
