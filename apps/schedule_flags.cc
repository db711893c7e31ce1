// Schedule-selection flags.
#include "schedule_flags.h"

#include "pipelab/schedules/registry.h"

namespace pipelab::app {

void add_schedule_flags(CLI::App* cmd, ScheduleFlags& flags) {
  cmd->add_option("--schedule", flags.schedule, "Schedule name or alias (" + schedule_names() + ")")->capture_default_str();
  cmd->add_option("--pp,--pipeline-model-parallel-size", flags.options.pp, "Pipeline-parallel ranks")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--vp,--virtual-pipeline-model-parallel-size,--num-virtual-stages-per-pipeline-rank", flags.options.vp,
                  "Chunks (virtual stages) per rank; 0 = the schedule's default")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--microbatches,--num-microbatches", flags.options.microbatches, "Microbatches per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--microbatch-group-size,--microbatch-group-size-per-virtual-pipeline-stage,--microbatch-group-size-per-virtual-stage",
                  flags.options.group_size,
                  "Interleaved schedules: microbatches per group; 0 = pp")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
}

}  // namespace pipelab::app
