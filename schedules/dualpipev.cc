// DualPipeV (deepseek-ai/DualPipe dualpipev.py; PyTorch ScheduleDualPipeV): DualPipe cut in half.
// Two chunks per rank in V placement, chunk 0 = stage r, chunk 1 = stage 2P-1-r; the steady state
// overlaps a forward of one chunk with a full backward of the other (F&B units).
#include "pipelab/schedules/generators.h"
#include "dualpipe_phases.h"
#include "rank_builder.h"

namespace pipelab {

Schedule make_dualpipev(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 2, "dualpipev uses exactly 2 chunks per rank (vp=2), got vp=" + std::to_string(o.vp));
  const int P = o.pp;
  const int m = o.microbatches;
  detail::require(m >= 2 * P, "dualpipev needs microbatches >= 2*pp = " + std::to_string(2 * P) + ", got " + std::to_string(m));
  PipelineShape shape = make_shape(P, 2 * P, m, Placement::V);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < P; ++r) {
    detail::RankBuilder rb(shape);
    detail::DualPipePhases phases{.s0 = r,
                                  .s1 = 2 * P - 1 - r,
                                  .depth = r,
                                  .depth_count = P,
                                  .main_steps = m - 2 * P + r + 1,
                                  .no_first_overlap = r == P - 1};
    detail::emit_dualpipe_phases(rb, phases);
    ranks.push_back(rb.take());
  }
  return detail::assemble("dualpipev", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
