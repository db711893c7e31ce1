// Schedule-selection flags.
#include "schedule_flags.h"

#include "pipelab/schedules/registry.h"

namespace pipelab::app {

std::shared_ptr<ScheduleFlags> add_schedule_flags(CLI::App* cmd, const std::string& default_schedule) {
  auto f = std::make_shared<ScheduleFlags>();
  f->schedule = default_schedule;
  cmd->add_option("--schedule", f->schedule, "Schedule name or alias (" + schedule_names() + ")")->capture_default_str();
  cmd->add_option("--pp,--pipeline-model-parallel-size", f->options.pp, "Pipeline-parallel ranks")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--vp,--virtual-pipeline-model-parallel-size,--num-virtual-stages-per-pipeline-rank", f->options.vp,
                  "Chunks (virtual stages) per rank; 0 = the schedule's default")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--microbatches,--num-microbatches", f->options.microbatches, "Microbatches per iteration")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--microbatch-group-size,--microbatch-group-size-per-virtual-stage", f->options.group_size,
                  "Interleaved schedules: microbatches per group; 0 = pp")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 20));
  return f;
}

}  // namespace pipelab::app
