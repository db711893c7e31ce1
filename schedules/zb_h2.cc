// ZB-H2 (Qi et al., arXiv 2401.10241 §2.2), handcrafted for one chunk per rank: more forwards in
// the warm-up fill the bubble before the first input-grad, and weight-grads are deferred to the
// tail (the trapezoid becomes a parallelogram). The phase counts follow the paper's memory bound
// for worker r (0-based): (2P-2r-1) activations in flight plus at most 2r deferred weight-grads.
#include "pipelab/schedules/generators.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_zb_h2(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 1, "zb-h2 runs one stage per rank (vp=1), got vp=" + std::to_string(o.vp) +
                                              "; use zb-v for two chunks per rank");
  const int m = o.microbatches;
  PipelineShape shape = make_shape(o.pp, o.pp, m, Placement::Loop);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(shape);
    const std::size_t max_deferred = static_cast<std::size_t>(2 * r);
    const int warmup = std::min(2 * (o.pp - r) - 1, m);
    // Step 1: warm-up, 2(P-r)-1 forwards.
    for (int k = 0; k < warmup; ++k) rb.f(r);
    // Step 2: steady state, I then F; a W only once more than 2r weight-grads are pending.
    for (int k = warmup; k < m; ++k) {
      rb.i(r);
      if (rb.pending_weight_grads() > max_deferred) rb.w();
      rb.f(r);
    }
    // Step 3: cool-down input-grads; the gaps between them take up to two weight-grads each.
    for (int k = 0; k < warmup; ++k) {
      rb.i(r);
      for (int n = 0; n < 2 && rb.pending_weight_grads() > 1; ++n) rb.w();
    }
    // Step 4: the remaining weight-grads.
    rb.drain_weight_grads();
    ranks.push_back(rb.take());
  }
  return detail::assemble("zb-h2", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
