// Writing a report file from results: what `pipelab report` does with result files, and what
// `simulate`, `compare` and `run` do for their `--report OUT` flag with the result they hold.
#pragma once

#include <string>
#include <vector>

#include "pipelab/reports/render.h"
#include "pipelab/reports/result.h"

namespace pipelab::reports {

/// Labels of report inputs, the one scheme of `pipelab report` and write_report: input i is labelled
/// `preferred[i]` when that is non-empty and no other input prefers the same label; otherwise
/// `fallback[i]` when given and non-empty (`pipelab report` passes the file paths, so a/result.json
/// and b/result.json are told apart); otherwise "result" (a single input) or "result N" (1-based).
/// Returns one label per entry of `preferred`.
std::vector<std::string> input_labels(const std::vector<std::string>& preferred,
                                      const std::vector<std::string>& fallback = {});

/// Renders results side by side and writes `out_path`, creating its parent directories. `format` is
/// a name accepted by format_from_name, or "" / "auto" to take it from the extension of `out_path`.
/// Each input is labelled by input_labels of the inputs' names (an empty or repeated name becomes
/// "result", or "result 1", "result 2", ...). Throws InputError on an unknown format or a path that
/// cannot be written.
void write_report(std::vector<ReportInput> inputs, const std::string& out_path, const std::string& format = "");

/// Renders inputs, labelled as they are, in `format` and writes `out_path` (parent directories
/// created).
void write_report(const std::vector<ReportInput>& inputs, const std::string& out_path, Format format);

/// `pipelab report`: loads result files (load_result_file), labels them by file stem, or by path
/// where stems repeat (a/result.json, b/result.json), and writes the report as write_report does.
/// Throws InputError naming the file for an unreadable or invalid result.
void write_report_from_files(const std::vector<std::string>& paths, const std::string& out_path,
                             const std::string& format = "");

}  // namespace pipelab::reports
