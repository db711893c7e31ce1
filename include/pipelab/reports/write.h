// Writing a report file from results: what `pipelab report` does, and what `simulate`, `compare`
// and `run` call for their `--report OUT` flag with the result JSON they hold in memory.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

/// Checks each result (load_result), renders them side by side and writes `out_path`, creating its
/// parent directories. `format` is a name accepted by format_from_name, or "" / "auto" to take it
/// from the extension of `out_path`. The results are labelled by input_labels with no preferred
/// names: "result" (one) or "result 1", "result 2", ... Throws InputError on bad results, an unknown format, or a path that cannot be
/// written. Its type is `void(const std::vector<nlohmann::json>&, const std::string&, const
/// std::string&)`, so it can be stored in a plain function pointer.
void write_report(const std::vector<nlohmann::json>& results, const std::string& out_path,
                  const std::string& format = "");

/// As above, with a preferred label per result (input_labels: an empty, missing or repeated name
/// falls back to "result N").
void write_report(const std::vector<nlohmann::json>& results, const std::string& out_path,
                  const std::string& format, const std::vector<std::string>& names);

/// Renders loaded inputs in `format` and writes `out_path` (parent directories created).
void write_report(const std::vector<ReportInput>& inputs, const std::string& out_path, Format format);

}  // namespace pipelab::reports
