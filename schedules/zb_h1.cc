// ZB-H1 (Qi et al., arXiv 2401.10241 §2.1): 1F1B with the backward split into I and W; rank r
// defers its first r weight-grads so every rank keeps 1F1B's in-flight count, which cuts the
// bubble to (P-1)(F+I-W). With vp > 1 this is PyTorch's ScheduleInterleavedZeroBubble (ZB1P):
// the interleaved table with a warm-up of (P-1-r) + (v-1)*N.
#include "pipelab/schedules/generators.h"
#include "interleaved_table.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_zb_h1(const ScheduleOptions& o) {
  const detail::InterleavedPlan plan = detail::make_interleaved_plan("zb-h1", o, 1);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(plan.shape);
    // An input-grad, then (after the first r of them) the weight-grad of the oldest pending one.
    auto backward = [&](int j) {
      rb.i(plan.backward_stage(j, r));
      if (j >= r) rb.w();
    };
    const int warmup = std::min((o.pp - 1 - r) + (plan.v - 1) * plan.group, plan.total);
    // Step 1: warm-up forwards.
    for (int k = 0; k < warmup; ++k) rb.f(plan.forward_stage(k, r));
    // Step 2: steady state, F then I (then W once r input-grads are pending).
    for (int k = warmup; k < plan.total; ++k) {
      rb.f(plan.forward_stage(k, r));
      backward(k - warmup);
    }
    // Step 3: cool-down input-grads, each followed by a deferred weight-grad.
    for (int j = plan.total - warmup; j < plan.total; ++j) backward(j);
    // Step 4: the r weight-grads still pending fill the tail.
    rb.drain_weight_grads();
    ranks.push_back(rb.take());
  }
  return detail::assemble("zb-h1", plan.shape, std::move(ranks));
}

}  // namespace pipelab
