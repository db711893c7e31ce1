// `pipelab report`: renders result files (simulate / compare / run JSON) as HTML, Markdown, CSV or a
// Chrome trace. Registered by main(); the renderers live in reports/ (pipelab/reports/write.h).
#pragma once

#include <CLI/CLI.hpp>

namespace pipelab::app {

/// `pipelab report RESULT.json [RESULT2.json ...] --out FILE [--format html|md|csv|timeline-csv|trace]`.
/// Exit code 0 when written; bad input (unreadable, not a result, unsupported version) throws
/// InputError, which main() maps to 2.
void add_report_command(CLI::App& root, int& exit_code);

}  // namespace pipelab::app
