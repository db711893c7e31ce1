// Schedule generators: pure functions from options to a compute-only Schedule, one file each in
// schedules/. Each checks its own constraints and throws ScheduleError naming the rule.
#pragma once

#include "pipelab/schedules/schedule.h"

namespace pipelab {

struct ScheduleOptions {
  int pp = 1;            // pipeline ranks
  int vp = 0;            // chunks (virtual stages) per rank; 0 = the generator's default
  int microbatches = 1;  // per iteration
  int group_size = 0;    // interleaved microbatch group (Megatron microbatch_group_size_per_vp_stage); 0 = pp
};

Schedule make_gpipe(const ScheduleOptions& o);
Schedule make_1f1b(const ScheduleOptions& o);
Schedule make_interleaved_1f1b(const ScheduleOptions& o);
Schedule make_looped_bfs(const ScheduleOptions& o);
Schedule make_zb_h1(const ScheduleOptions& o);
Schedule make_zb_h2(const ScheduleOptions& o);
Schedule make_zb_v(const ScheduleOptions& o);
Schedule make_dualpipe(const ScheduleOptions& o);
Schedule make_dualpipev(const ScheduleOptions& o);

}  // namespace pipelab
