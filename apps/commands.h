// The pipelab subcommands. Each add_*_command registers one subcommand on the root app; its
// callback stores the command's exit code in `exit_code` (0 ok, 1 failed check). Errors are thrown
// (pipelab::InputError and kin) and mapped to exit codes in main() only (docs/cli.md).
#pragma once

#include <CLI/CLI.hpp>

namespace pipelab::app {

void add_list_command(CLI::App& root, int& exit_code);
void add_show_command(CLI::App& root, int& exit_code);
void add_validate_command(CLI::App& root, int& exit_code);
void add_simulate_command(CLI::App& root, int& exit_code);
void add_compare_command(CLI::App& root, int& exit_code);
/// `pipelab plan --model M --gpu G --gpus N --gbs B ...` (docs/cli.md, "plan").
void add_plan_command(CLI::App& root, int& exit_code);
/// `pipelab report RESULT.json [RESULT2.json ...] --out FILE [--format html|md|csv|timeline-csv|trace]`.
void add_report_command(CLI::App& root, int& exit_code);
void add_profile_command(CLI::App& root, int& exit_code);
void add_run_command(CLI::App& root, int& exit_code);
/// `pipelab calibrate --runs FILE.csv --gpu PRESET|FILE [--fit p1,p2] [--loo] [--out F] [--json F]`.
void add_calibrate_command(CLI::App& root, int& exit_code);

}  // namespace pipelab::app
