// The SM split of single-GPU mode.
#include "pipelab/runtime/sm_partition.h"

#include "pipelab/base/error.h"

namespace pipelab::runtime {

SmPartition plan_sm_partition(int total_sms, int ranks, int granularity) {
  if (total_sms < 1 || ranks < 1 || granularity < 1) {
    throw InputError("plan_sm_partition: total_sms=" + std::to_string(total_sms) + ", ranks=" + std::to_string(ranks) +
                     " and granularity=" + std::to_string(granularity) + " must all be >= 1");
  }
  SmPartition p;
  p.sms_per_rank = total_sms;
  if (ranks == 1) {
    p.note = "one rank: it has all " + std::to_string(total_sms) + " SMs";
    return p;
  }
  const int per_rank = total_sms / ranks / granularity * granularity;
  if (per_rank < granularity) {
    p.note = std::to_string(ranks) + " ranks cannot each get a group of " + std::to_string(granularity) + " of the " +
             std::to_string(total_sms) + " SMs: they share every SM";
    return p;
  }
  p.partitioned = true;
  p.sms_per_rank = per_rank;
  p.unused_sms = total_sms - per_rank * ranks;
  p.note = std::to_string(ranks) + " ranks x " + std::to_string(per_rank) + " SMs" +
           (p.unused_sms > 0 ? " (" + std::to_string(p.unused_sms) + " SMs unused)" : std::string());
  return p;
}

}  // namespace pipelab::runtime
