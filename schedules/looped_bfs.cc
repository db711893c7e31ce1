// Looped BFS (Lamy-Poirier, arXiv 2211.05953; PyTorch ScheduleLoopedBFS): each rank runs all
// microbatches through one chunk before the next, then all backwards in reverse.
#include "pipelab/schedules/generators.h"
#include "rank_builder.h"

namespace pipelab {

Schedule make_looped_bfs(const ScheduleOptions& o) {
  const int v = o.vp > 0 ? o.vp : 2;
  const int m = o.microbatches;
  PipelineShape shape = make_shape(o.pp, o.pp * v, m, Placement::Loop);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(shape);
    // Step 1: for each local chunk ascending, the forwards of every microbatch.
    for (int c = 0; c < v; ++c) {
      for (int mb = 0; mb < m; ++mb) rb.raw(Op::F, c * o.pp + r, mb);
    }
    // Step 2: for each local chunk descending, the backwards of every microbatch, last first.
    for (int c = v - 1; c >= 0; --c) {
      for (int mb = m - 1; mb >= 0; --mb) rb.raw(Op::B, c * o.pp + r, mb);
    }
    ranks.push_back(rb.take());
  }
  return detail::assemble("looped-bfs", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
