// Megatron's interleaved schedule table (get_schedule_table): the order in which one rank visits
// its model chunks, in microbatch groups of N. Shared by interleaved-1f1b and interleaved zb-h1.
// Private to schedules/.
#pragma once

#include <string>
#include <vector>

#include "pipelab/schedules/generators.h"

namespace pipelab::detail {

/// Chunk of the k-th forward on every rank, k in [0, m*v). Backward k runs chunk v-1-chunk[k].
std::vector<int> interleaved_chunk_order(int microbatches, int chunks, int group);

/// Checks Megatron's rules for interleaving (only meaningful for chunks > 1); throws ScheduleError
/// prefixed with the schedule's name. Returns the resolved group size.
int check_interleaving(const std::string& name, int pp, int chunks, int microbatches, int group);

/// The shared set-up of the interleaved schedules: Loop placement of pp*v stages and the order in
/// which every rank visits its chunks.
struct InterleavedPlan {
  PipelineShape shape;
  int v = 1;      // chunks per rank
  int group = 1;  // microbatch group size N
  int total = 0;  // forwards (and backwards) per rank: m * v
  std::vector<int> chunk;  // chunk of the k-th forward

  /// Stage of the k-th forward / backward on rank r.
  int forward_stage(int k, int r) const { return chunk[static_cast<std::size_t>(k)] * shape.ranks + r; }
  int backward_stage(int k, int r) const { return (v - 1 - chunk[static_cast<std::size_t>(k)]) * shape.ranks + r; }
};

InterleavedPlan make_interleaved_plan(const std::string& name, const ScheduleOptions& o, int default_vp);

}  // namespace pipelab::detail
