// write_report: render results and write the file (what `pipelab report` and `--report OUT` do).
#include "pipelab/reports/write.h"

#include <filesystem>
#include <fstream>

#include "pipelab/base/error.h"

namespace pipelab::reports {

void write_report(const std::vector<ReportInput>& inputs, const std::string& out_path, Format format) {
  const std::string text = render(inputs, format);
  const std::filesystem::path path(out_path);
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  if (ec) throw InputError("cannot create the directory of " + out_path + ": " + ec.message());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw InputError("cannot write " + out_path);
  out << text;
  out.flush();
  if (!out) throw InputError("cannot write " + out_path + " (disk full?)");
}

void write_report(const std::vector<nlohmann::json>& results, const std::string& out_path, const std::string& format,
                  const std::vector<std::string>& names) {
  const Format f = format.empty() || format == "auto" ? format_from_path(out_path) : format_from_name(format);
  std::vector<ReportInput> inputs;
  inputs.reserve(results.size());
  for (std::size_t i = 0; i < results.size(); ++i) {
    std::string name = i < names.size() && !names[i].empty() ? names[i]
                       : results.size() == 1                 ? std::string("result")
                                                             : "result " + std::to_string(i + 1);
    inputs.push_back(load_result(results[i], name));
  }
  write_report(inputs, out_path, f);
}

void write_report(const std::vector<nlohmann::json>& results, const std::string& out_path, const std::string& format) {
  write_report(results, out_path, format, {});
}

}  // namespace pipelab::reports
