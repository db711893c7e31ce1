// How ranks that share one GPU split its SMs (single-GPU mode). With green contexts (CUDA >= 12.4)
// each rank gets a disjoint SM group, so P ranks on one device behave like P smaller GPUs; the
// simulator then predicts with the matching slice of the GPU. Pure arithmetic, tested on the CPU;
// runtime/cuda/green_context.cc applies it.
#pragma once

#include <string>

namespace pipelab::runtime {

struct SmPartition {
  bool partitioned = false;  // false: the ranks share every SM
  int sms_per_rank = 0;      // partitioned: SMs of each rank's group; otherwise all SMs
  int unused_sms = 0;        // partitioned: SMs left out by rounding to the granularity
  std::string note;          // why it is not partitioned, or the split in words
};

/// The split of `total_sms` among `ranks` ranks in groups that are multiples of `granularity` (the
/// device reports it: the SM resource's co-scheduling alignment, 8 on an H100): as many SMs per
/// rank as fit, every rank the same. Not partitioned when there is one rank or a rank
/// would get no group.
SmPartition plan_sm_partition(int total_sms, int ranks, int granularity);

}  // namespace pipelab::runtime
