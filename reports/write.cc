// write_report: render results and write the file (what `pipelab report` and `--report OUT` do).
#include "pipelab/reports/write.h"

#include <map>
#include <optional>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/base/json_reader.h"
#include "pipelab/reports/plan_result.h"

namespace pipelab::reports {
namespace {

Format format_for(const std::string& format, const std::string& out_path) {
  return format.empty() || format == "auto" ? format_from_path(out_path) : format_from_name(format);
}

// Relabels the inputs by input_labels of their names, with per-input fallbacks.
void label(std::vector<ReportInput>& inputs, const std::vector<std::string>& fallback) {
  std::vector<std::string> names;
  names.reserve(inputs.size());
  for (const ReportInput& in : inputs) names.push_back(in.name);
  const std::vector<std::string> labels = input_labels(names, fallback);
  for (std::size_t i = 0; i < inputs.size(); ++i) inputs[i].name = labels[i];
}

}  // namespace

std::vector<std::string> input_labels(const std::vector<std::string>& preferred,
                                      const std::vector<std::string>& fallback) {
  std::map<std::string, std::size_t> count;
  for (const std::string& name : preferred) ++count[name];
  std::vector<std::string> labels;
  labels.reserve(preferred.size());
  for (std::size_t i = 0; i < preferred.size(); ++i) {
    if (!preferred[i].empty() && count[preferred[i]] == 1) {
      labels.push_back(preferred[i]);
    } else if (i < fallback.size() && !fallback[i].empty()) {
      labels.push_back(fallback[i]);
    } else {
      labels.push_back(preferred.size() == 1 ? std::string("result") : "result " + std::to_string(i + 1));
    }
  }
  return labels;
}

void write_report(const std::vector<ReportInput>& inputs, const std::string& out_path, Format format) {
  if (format == Format::Trace) {  // one event per action: written as it is made
    return write_file_streamed(out_path, "trace", [&](std::ostream& os) { write_chrome_trace(os, inputs); });
  }
  write_text_file(out_path, render(inputs, format), "report");
}

void write_report(std::vector<ReportInput> inputs, const std::string& out_path, const std::string& format) {
  const Format f = format_for(format, out_path);
  label(inputs, {});
  write_report(inputs, out_path, f);
}

// A plan result (kind "plan") renders on its own: its tables, exclusions and recipes. It holds no
// timeline; `pipelab plan --report` simulates the winner again to draw one.
std::optional<PlanResult> plan_result_file(const std::string& path) {
  const Result<nlohmann::json> document = parse_json_document(read_text_file(path, "result"), DuplicateKeys::kKeepLast);
  // Anything else (not JSON, no kind, a kind that is not a string) is for load_result_file to name.
  if (!document || !document.value().is_object()) return std::nullopt;
  const auto kind = document.value().find("kind");
  if (kind == document.value().end() || !kind->is_string() || *kind != "plan") return std::nullopt;
  return load_plan_result(document.value(), path);
}

void write_report_from_files(const std::vector<std::string>& paths, const std::string& out_path,
                             const std::string& format) {
  const Format f = format_for(format, out_path);
  for (const std::string& path : paths) {
    const std::optional<PlanResult> plan = plan_result_file(path);
    if (!plan) continue;
    if (paths.size() > 1) throw InputError(path + ": a plan result renders on its own, not beside other results");
    switch (f) {
      case Format::Html: return write_text_file(out_path, render_plan_html(*plan, nullptr), "report");
      case Format::Markdown: return write_text_file(out_path, render_plan_markdown(*plan), "report");
      case Format::SummaryCsv: return write_text_file(out_path, render_plan_csv(*plan), "report");
      default: throw InputError(path + ": a plan result has no timeline (report it as .html, .md or .csv)");
    }
  }
  std::vector<ReportInput> inputs;
  inputs.reserve(paths.size());
  for (const std::string& path : paths) inputs.push_back(load_result_file(path));
  label(inputs, paths);
  write_report(inputs, out_path, f);
}

}  // namespace pipelab::reports
