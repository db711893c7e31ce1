// GPipe: every forward, then every backward (PyTorch ScheduleGPipe). Holds m activations per rank.
#include "pipelab/schedules/generators.h"
#include "rank_builder.h"

namespace pipelab {

Schedule make_gpipe(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 1, "gpipe runs one stage per rank (vp=1), got vp=" + std::to_string(o.vp));
  PipelineShape shape = make_shape(o.pp, o.pp, o.microbatches, Placement::Loop);
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(shape);
    // Step 1: all m forwards.
    for (int k = 0; k < o.microbatches; ++k) rb.f(r);
    // Step 2: all m backwards, in microbatch order.
    for (int k = 0; k < o.microbatches; ++k) rb.b(r);
    ranks.push_back(rb.take());
  }
  return detail::assemble("gpipe", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
