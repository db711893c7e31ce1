// write_report: render results and write the file (what `pipelab report` and `--report OUT` do).
#include "pipelab/reports/write.h"

#include <filesystem>
#include <fstream>
#include <map>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"

namespace pipelab::reports {

void write_report(const std::vector<ReportInput>& inputs, const std::string& out_path, Format format) {
  const std::string text = render(inputs, format);
  write_text_file(out_path, text, "report");
}

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

void write_report(const std::vector<nlohmann::json>& results, const std::string& out_path, const std::string& format,
                  const std::vector<std::string>& names) {
  const Format f = format.empty() || format == "auto" ? format_from_path(out_path) : format_from_name(format);
  std::vector<std::string> preferred(results.size());
  for (std::size_t i = 0; i < results.size() && i < names.size(); ++i) preferred[i] = names[i];
  const std::vector<std::string> labels = input_labels(preferred);
  std::vector<ReportInput> inputs;
  inputs.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) inputs.push_back(load_result(results[i], labels[i]));
  write_report(inputs, out_path, f);
}

void write_report(const std::vector<nlohmann::json>& results, const std::string& out_path, const std::string& format) {
  write_report(results, out_path, format, {});
}

}  // namespace pipelab::reports
