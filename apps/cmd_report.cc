// `pipelab report RESULT.json [RESULT2.json ...] --out report.html|report.md|report.csv|trace.json`:
// several result files side by side (e.g. the same plan on two GPU types). Format from the
// extension unless --format says otherwise; prints the path written.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "pipelab/reports/write.h"

namespace pipelab::app {
namespace {

struct ReportOptions {
  std::vector<std::string> files;
  std::string out;
  std::string format = "auto";
};

}  // namespace

void add_report_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand(
      "report", "Render result files (from simulate, compare, run, plan) as HTML, Markdown, CSV or a Chrome/Perfetto trace");
  auto o = std::make_shared<ReportOptions>();
  std::vector<std::string> formats = reports::format_names();
  formats.insert(formats.begin(), "auto");
  cmd->add_option("results", o->files, "Result JSON files, compared side by side")->required();
  cmd->add_option("--out,-o", o->out,
                  "Output file: .html, .md, .csv (summary), .timeline.csv (per action), .json (Chrome trace)")
      ->required();
  cmd->add_option("--format", o->format, "auto (from the extension) | html | md | csv | timeline-csv | trace")
      ->check(CLI::IsMember(formats))
      ->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  pipelab report compare.json --out report.html\n"
      "  pipelab report h100.json b200.json --out gpus.md\n"
      "  pipelab report run.json --out trace.json      (open in ui.perfetto.dev or chrome://tracing)");
  cmd->callback([o, &exit_code] {
    reports::write_report_from_files(o->files, o->out, o->format);
    std::cout << o->out << "\n";
    exit_code = 0;
  });
}

}  // namespace pipelab::app
