// 1F1B (PipeDream-Flush), as Megatron's forward_backward_pipelining_without_interleaving.
#include "pipelab/schedules/generators.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_1f1b(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 1, "1f1b runs one stage per rank (vp=1), got vp=" + std::to_string(o.vp) +
                                              "; use interleaved-1f1b for vp > 1");
  PipelineShape shape = make_shape(o.pp, o.pp, o.microbatches, Placement::Loop);
  const int m = o.microbatches;
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(shape);
    const int warmup = std::min(o.pp - r - 1, m);
    // Step 1: warm-up, P-r-1 forwards fill the pipe below this rank.
    for (int k = 0; k < warmup; ++k) rb.f(r);
    // Step 2: steady state, one forward then one backward.
    for (int k = 0; k < m - warmup; ++k) {
      rb.f(r);
      rb.b(r);
    }
    // Step 3: cool-down, the backwards of the warm-up forwards.
    for (int k = 0; k < warmup; ++k) rb.b(r);
    ranks.push_back(rb.take());
  }
  return detail::assemble("1f1b", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
