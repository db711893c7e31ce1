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
  const int v = o.vp > 0 ? o.vp : 1;
  const int m = o.microbatches;
  const int n = detail::check_interleaving("zb-h1", o.pp, v, m, o.group_size);
  PipelineShape shape = make_shape(o.pp, o.pp * v, m, Placement::Loop);
  const std::vector<int> chunk = detail::interleaved_chunk_order(m, v, n);
  const int total = m * v;
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(shape);
    auto stage = [&](int c) { return c * o.pp + r; };
    // An input-grad, then (after the first r of them) the weight-grad of the oldest pending one.
    auto backward = [&](int j) {
      rb.i(stage(v - 1 - chunk[static_cast<std::size_t>(j)]));
      if (j >= r) rb.w();
    };
    const int warmup = std::min((o.pp - 1 - r) + (v - 1) * n, total);
    // Step 1: warm-up forwards.
    for (int k = 0; k < warmup; ++k) rb.f(stage(chunk[static_cast<std::size_t>(k)]));
    // Step 2: steady state, F then I (then W once r input-grads are pending).
    for (int k = warmup; k < total; ++k) {
      rb.f(stage(chunk[static_cast<std::size_t>(k)]));
      backward(k - warmup);
    }
    // Step 3: cool-down input-grads, each followed by a deferred weight-grad.
    for (int j = total - warmup; j < total; ++j) backward(j);
    // Step 4: the r weight-grads still pending fill the tail.
    rb.drain_weight_grads();
    ranks.push_back(rb.take());
  }
  return detail::assemble("zb-h1", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
