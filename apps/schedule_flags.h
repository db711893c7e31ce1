// The flags that pick a schedule (--schedule --pp --vp --microbatches ...), with the Megatron
// spellings as aliases. Shared by every subcommand that builds a schedule.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "pipelab/schedules/generators.h"

namespace pipelab::app {

struct ScheduleFlags {
  std::string schedule = "1f1b";
  ScheduleOptions options{.pp = 4, .vp = 0, .microbatches = 8, .group_size = 0};
};

/// Registers the flags on `cmd` with the defaults `flags` holds; `flags` is filled when the command
/// line is parsed (it must outlive the parse).
void add_schedule_flags(CLI::App* cmd, ScheduleFlags& flags);

}  // namespace pipelab::app
