// pipelab: pipeline-schedule simulator and performance lab. Parses the command line, runs one
// subcommand, and maps errors to exit codes: 0 ok, 1 failed check, 2 bad input (or a device
// failure), 3 an internal error (anything that is not a pipelab error: a bug) (docs/cli.md).
#include <iostream>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "pipelab/base/error.h"

int main(int argc, char** argv) {
  CLI::App root{"pipelab: simulate, run and compare pipeline-parallel schedules for LLM training"};
  root.require_subcommand(1);
  root.set_help_all_flag("--help-all", "Print help for every subcommand");
  int exit_code = 0;
  pipelab::app::add_list_command(root, exit_code);
  pipelab::app::add_show_command(root, exit_code);
  pipelab::app::add_validate_command(root, exit_code);
  pipelab::app::add_simulate_command(root, exit_code);
  pipelab::app::add_compare_command(root, exit_code);
  pipelab::app::add_report_command(root, exit_code);
  pipelab::app::add_profile_command(root, exit_code);
  pipelab::app::add_run_command(root, exit_code);
  try {
    root.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return root.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return root.exit(e);
  } catch (const CLI::ParseError& e) {
    root.exit(e);
    return 2;
  } catch (const pipelab::InputError& e) {
    std::cerr << "pipelab: error: " << e.what() << "\n";
    return 2;
  } catch (const pipelab::DeviceError& e) {
    std::cerr << "pipelab: device error: " << e.what() << "\n";
    return 2;
  } catch (const pipelab::Error& e) {
    std::cerr << "pipelab: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "pipelab: internal error: " << e.what() << "\n";
    return 3;
  } catch (...) {
    std::cerr << "pipelab: internal error: an exception that is not a std::exception\n";
    return 3;
  }
  return exit_code;
}
