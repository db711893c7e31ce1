// Megatron's interleaved schedule table (get_schedule_table): the order in which one rank visits
// its model chunks, in microbatch groups of N. Shared by interleaved-1f1b and interleaved zb-h1.
// Private to schedules/.
#pragma once

#include <string>
#include <vector>

namespace pipelab::detail {

/// Chunk of the k-th forward on every rank, k in [0, m*v). Backward k runs chunk v-1-chunk[k].
std::vector<int> interleaved_chunk_order(int microbatches, int chunks, int group);

/// Checks Megatron's rules for interleaving (only meaningful for chunks > 1); throws ScheduleError
/// prefixed with the schedule's name. Returns the resolved group size.
int check_interleaving(const std::string& name, int pp, int chunks, int microbatches, int group);

}  // namespace pipelab::detail
