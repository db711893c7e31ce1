// `pipelab report RESULT.json [RESULT2.json ...] --out report.html|report.md|report.csv|trace.json`:
// several result files side by side (e.g. the same plan on two GPU types). Format from the
// extension unless --format says otherwise; prints the path written.
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "pipelab/reports/result.h"
#include "pipelab/reports/write.h"
#include "report_command.h"

namespace pipelab::app {

void add_report_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand(
      "report", "Render result files (from simulate, compare, run) as HTML, Markdown, CSV or a Chrome/Perfetto trace");
  auto files = std::make_shared<std::vector<std::string>>();
  auto out = std::make_shared<std::string>();
  auto format = std::make_shared<std::string>("auto");
  cmd->add_option("results", *files, "Result JSON files, compared side by side")->required();
  cmd->add_option("--out,-o", *out,
                  "Output file: .html, .md, .csv (summary), .timeline.csv (per action), .json (Chrome trace)")
      ->required();
  cmd->add_option("--format", *format, "auto (from the extension) | html | md | csv | timeline-csv | trace")
      ->check(CLI::IsMember({"auto", "html", "md", "markdown", "csv", "timeline-csv", "trace"}))
      ->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  pipelab report compare.json --out report.html\n"
      "  pipelab report h100.json b200.json --out gpus.md\n"
      "  pipelab report run.json --out trace.json      (open in ui.perfetto.dev or chrome://tracing)");
  cmd->callback([files, out, format, &exit_code] {
    const reports::Format f =
        *format == "auto" ? reports::format_from_path(*out) : reports::format_from_name(*format);
    std::vector<reports::ReportInput> inputs;
    inputs.reserve(files->size());
    for (const std::string& path : *files) inputs.push_back(reports::load_result_file(path));
    // Labelled by file stem; files with the same stem (a/result.json, b/result.json) by their paths.
    std::vector<std::string> stems;
    stems.reserve(inputs.size());
    for (const reports::ReportInput& in : inputs) stems.push_back(in.name);
    const std::vector<std::string> labels = reports::input_labels(stems, *files);
    for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].name = labels[i];
    reports::write_report(inputs, *out, f);
    std::cout << *out << "\n";
    exit_code = 0;
  });
}

}  // namespace pipelab::app
