// The pipelab subcommands. Each add_*_command registers one subcommand on the root app; its
// callback stores the command's exit code in `exit_code` (0 ok, 1 failed check, 2 bad input).
// Errors are thrown (pipelab::InputError and kin) and mapped to exit codes in main() only.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

namespace pipelab::app {

void add_list_command(CLI::App& root, int& exit_code);
void add_show_command(CLI::App& root, int& exit_code);
void add_validate_command(CLI::App& root, int& exit_code);
void add_simulate_command(CLI::App& root, int& exit_code);
void add_compare_command(CLI::App& root, int& exit_code);

/// Renders result documents to a file (format from the extension when empty). Provided by the
/// reports integration; simulate/compare/run call it for --report and --trace.
using ReportWriter = void (*)(const std::vector<nlohmann::json>& results, const std::string& path, const std::string& format);
extern ReportWriter g_report_writer;

}  // namespace pipelab::app
