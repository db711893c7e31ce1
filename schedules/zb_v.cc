// ZB-V (Qi et al., arXiv 2401.10241 §6; PyTorch ScheduleZBVZeroBubble): two chunks per rank in V
// placement, s0 = r going down and s1 = 2P-1-r coming back up, 1F-1I-1W groups in steady state.
// Zero bubble at 1F1B's peak memory when F = I = W and m >= 2P.
#include "pipelab/schedules/generators.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_zb_v(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 2, "zb-v uses exactly 2 chunks per rank (vp=2), got vp=" + std::to_string(o.vp));
  const int P = o.pp;
  const int m = o.microbatches;
  PipelineShape shape = make_shape(P, 2 * P, m, Placement::V);
  // The phases are written for n = max(2P-1, m) microbatches; those beyond m become idle steps.
  const int n = std::max(2 * P - 1, m);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < P; ++r) {
    detail::RankBuilder rb(shape, /*idle_beyond_end=*/true);
    const int s0 = r, s1 = 2 * P - 1 - r;
    rb.idle(r);
    // Step 1: 2(P-r)-1 forwards of chunk 0.
    for (int k = 0; k < 2 * (P - r) - 1; ++k) rb.f(s0);
    // Step 2: r pairs of forwards, chunk 1 then chunk 0.
    for (int k = 0; k < r; ++k) {
      rb.f(s1);
      rb.f(s0);
    }
    // Step 3: P-r groups F-I-W of chunk 1 (the turn of the V).
    for (int k = 0; k < P - r; ++k) {
      rb.f(s1);
      rb.i(s1);
      rb.w(s1);
    }
    // Step 4: steady state, F-I-W of chunk 0 then of chunk 1, until both chunks have run n forwards.
    while (rb.forwards_done(s1) < rb.forwards_done(s0) || rb.forwards_done(s0) < n) {
      if (rb.forwards_done(s0) < n) rb.f(s0);
      rb.i(s0);
      rb.w(s0);
      rb.f(s1);
      rb.i(s1);
      rb.w(s1);
    }
    // Step 5: r pairs of input-grads, chunk 0 then chunk 1 (weight-grads deferred).
    for (int k = 0; k < r; ++k) {
      rb.i(s0);
      rb.i(s1);
    }
    // Step 6: P-r chunk-0 input-grads with their weight-grads.
    for (int k = 0; k < P - r; ++k) {
      rb.i(s0);
      rb.w(s0);
    }
    // Step 7: the deferred weight-grads, chunk 1 then chunk 0.
    while (rb.weight_grads_done(s1) < n) rb.w(s1);
    while (rb.weight_grads_done(s0) < n) rb.w(s0);
    ranks.push_back(rb.take());
  }
  return detail::assemble("zb-v", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
