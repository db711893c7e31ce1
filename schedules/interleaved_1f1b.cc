// Interleaved 1F1B (Megatron virtual pipeline): v chunks per rank in Loop placement, chunks visited
// in microbatch groups of N (default P), warm-up (P-r-1)*2 + (v-1)*N.
#include "pipelab/schedules/generators.h"
#include "interleaved_table.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_interleaved_1f1b(const ScheduleOptions& o) {
  const detail::InterleavedPlan plan = detail::make_interleaved_plan("interleaved-1f1b", o, 2);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(plan.shape);
    const int warmup = std::min((o.pp - r - 1) * 2 + (plan.v - 1) * plan.group, plan.total);
    // Step 1: warm-up forwards, through the chunks one microbatch group at a time.
    for (int k = 0; k < warmup; ++k) rb.f(plan.forward_stage(k, r));
    // Step 2: steady state, forward k+warmup then backward k.
    for (int k = 0; k < plan.total - warmup; ++k) {
      rb.f(plan.forward_stage(k + warmup, r));
      rb.b(plan.backward_stage(k, r));
    }
    // Step 3: cool-down backwards.
    for (int k = plan.total - warmup; k < plan.total; ++k) rb.b(plan.backward_stage(k, r));
    ranks.push_back(rb.take());
  }
  return detail::assemble("interleaved-1f1b", plan.shape, std::move(ranks));
}

}  // namespace pipelab
