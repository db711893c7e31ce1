// `pipelab list [schedules]`: what pipelab knows about.
#include <iomanip>
#include <iostream>

#include "commands.h"
#include "pipelab/base/error.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::app {
namespace {

void print_schedules(std::ostream& os) {
  os << std::left << std::setw(18) << "# schedule" << std::setw(70) << "description" << "constraints\n";
  for (const ScheduleInfo& info : schedule_registry()) {
    os << std::left << std::setw(18) << info.name << std::setw(70) << info.summary << info.constraints << "\n";
    std::string aliases;
    for (const auto& a : info.aliases) aliases += (aliases.empty() ? "" : ", ") + a;
    os << std::setw(18) << "" << "aliases: " << aliases << "\n";
  }
}

}  // namespace

void add_list_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("list", "List the schedules (and, with later modules, models and GPUs)");
  auto what = std::make_shared<std::string>("schedules");
  cmd->add_option("what", *what, "What to list")->check(CLI::IsMember({"schedules"}));
  cmd->callback([what, &exit_code] {
    print_schedules(std::cout);
    exit_code = 0;
  });
}

}  // namespace pipelab::app
