// pipelab: pipeline-schedule simulator and performance lab. Parses the command line, runs one
// subcommand, and maps errors to exit codes: 0 ok, 1 failed check, 2 bad input (or a device
// failure), 3 an internal error (anything that is not a pipelab error: a bug) (docs/cli.md).
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "heap_pages.h"
#include "pasted_args.h"
#include "pipelab/base/error.h"

namespace {

using pipelab::app::ExpandedArgs;

void print_pasted_notes(const ExpandedArgs& e) {
  auto print = [](const char* what, const std::vector<std::string>& words) {
    if (words.empty()) return;
    std::cerr << "pipelab: pasted arguments: " << what << ":";
    for (const std::string& w : words) std::cerr << " " << w;
    std::cerr << "\n";
  };
  print("ignored (no effect on this command)", e.ignored);
  print("replaced by this command line", e.overridden);
  print("replaced by a later pasted value (argparse keeps the last)", e.superseded);
}

}  // namespace

int main(int argc, char** argv) {
  pipelab::app::prefer_huge_heap_pages();
  CLI::App root{"pipelab: simulate, run and compare pipeline-parallel schedules for LLM training"};
  root.require_subcommand(1);
  root.set_help_all_flag("--help-all", "Print help for every subcommand");
  int exit_code = 0;
  pipelab::app::add_list_command(root, exit_code);
  pipelab::app::add_show_command(root, exit_code);
  pipelab::app::add_validate_command(root, exit_code);
  pipelab::app::add_simulate_command(root, exit_code);
  pipelab::app::add_compare_command(root, exit_code);
  pipelab::app::add_plan_command(root, exit_code);
  pipelab::app::add_report_command(root, exit_code);
  pipelab::app::add_profile_command(root, exit_code);
  pipelab::app::add_run_command(root, exit_code);
  pipelab::app::add_calibrate_command(root, exit_code);
  try {
    const ExpandedArgs expanded =
        pipelab::app::expand_pasted_args(root, std::vector<std::string>(argv + 1, argv + argc));
    print_pasted_notes(expanded);
    std::vector<std::string> reversed(expanded.args.rbegin(), expanded.args.rend());  // CLI11 pops from the back
    root.parse(reversed);
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
