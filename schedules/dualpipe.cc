// DualPipe (DeepSeek-V3 §3.2.1; deepseek-ai/DualPipe dualpipe.py): bidirectional pipeline. Half the
// microbatches enter at rank 0 (chain 0, stages 0..P-1 on ranks 0..P-1), half at rank P-1 (chain 1,
// stages P..2P-1 on ranks P-1..0); each rank holds a stage of both directions (2x parameters).
#include "pipelab/schedules/generators.h"
#include "dualpipe_phases.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_dualpipe(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 2,
                  "dualpipe holds exactly 2 stages per rank (one per direction, vp=2), got vp=" + std::to_string(o.vp));
  const int P = o.pp;
  const int m = o.microbatches;
  detail::require(P % 2 == 0, "dualpipe needs an even number of pipeline ranks, got " + std::to_string(P));
  detail::require(m % 2 == 0, "dualpipe needs an even number of microbatches (half per direction), got " + std::to_string(m));
  detail::require(m >= 2 * P, "dualpipe needs microbatches >= 2*pp = " + std::to_string(2 * P) + ", got " + std::to_string(m));
  PipelineShape shape = make_shape(P, 2 * P, m, Placement::V, /*chains=*/2);
  const int half = P / 2;
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < P; ++r) {
    detail::RankBuilder rb(shape);
    // Chunk 0 is the direction this rank is nearer the start of; chunk 1 the other one.
    const int down = r, up = 2 * P - 1 - r;  // stage of chain 0 and of chain 1 on this rank
    const bool first_half = r < half;
    const int h = std::min(r, P - 1 - r);
    detail::DualPipePhases phases{.s0 = first_half ? down : up,
                                  .s1 = first_half ? up : down,
                                  .depth = h,
                                  .depth_count = half,
                                  .main_steps = m / 2 - P + h + 1,
                                  .no_first_overlap = r == half - 1 || r == half};
    detail::emit_dualpipe_phases(rb, phases);
    ranks.push_back(rb.take());
  }
  return detail::assemble("dualpipe", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
