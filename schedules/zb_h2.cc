// ZB-H2 (Qi et al., arXiv 2401.10241 §2.2): more forwards in the warm-up fill the bubble before the
// first input-grad, and weight-grads are deferred to fill the tail, so each rank runs without a
// gap from its first forward to its last weight-grad (the trapezoid becomes a parallelogram) when
// F = I = W. The paper builds it as a unit-time list schedule under its memory bound; so does this
// generator. For worker r (0-based) the bound is (2P-2r-1) activations in flight and at most 2r
// deferred weight-grads. Phases per rank:
//   Step 1: warm-up, min(2(P-r)-1, m) forwards back to back;
//   Step 2: each unit step, in priority order: a weight-grad if more than 2r are deferred; the next
//           forward if its input has arrived and fewer than 2(P-r)-1 are in flight; the next
//           input-grad if its gradient has arrived; a deferred weight-grad; else wait.
#include "pipelab/schedules/generators.h"
#include "rank_builder.h"

#include <algorithm>
#include <climits>

namespace pipelab {

Schedule make_zb_h2(const ScheduleOptions& o) {
  detail::require(o.vp == 0 || o.vp == 1, "zb-h2 runs one stage per rank (vp=1), got vp=" + std::to_string(o.vp) +
                                              "; use zb-v for two chunks per rank");
  const int P = o.pp;
  const int m = o.microbatches;
  PipelineShape shape = make_shape(P, P, m, Placement::Loop);

  struct RankState {
    int f = 0, i = 0, deferred = 0;                // next forward, next input-grad, weight-grads owed
    std::vector<int> f_done, i_done;               // unit step at which each finished (INT_MAX: not yet)
  };
  std::vector<RankState> st(static_cast<std::size_t>(P));
  for (auto& s : st) {
    s.f_done.assign(static_cast<std::size_t>(m), INT_MAX);
    s.i_done.assign(static_cast<std::size_t>(m), INT_MAX);
  }
  std::vector<detail::RankBuilder> rb;
  for (int r = 0; r < P; ++r) rb.emplace_back(shape);

  auto finished = [&] {
    for (const auto& s : st) {
      if (s.i < m || s.deferred > 0) return false;
    }
    return true;
  };
  // Lock-step: what a rank may start at step t depends on what completed before t.
  for (int t = 0; !finished(); ++t) {
    for (int r = 0; r < P; ++r) {
      RankState& s = st[static_cast<std::size_t>(r)];
      const int in_flight_limit = 2 * (P - r) - 1;
      const bool must_w = s.deferred > 2 * r;
      const bool can_i = s.i < s.f && s.f_done[static_cast<std::size_t>(s.i)] < t + 1 &&
                         (r == P - 1 || st[static_cast<std::size_t>(r + 1)].i_done[static_cast<std::size_t>(s.i)] <= t);
      const bool can_f = s.f < m && s.f - s.i < in_flight_limit &&
                         (r == 0 || st[static_cast<std::size_t>(r - 1)].f_done[static_cast<std::size_t>(s.f)] <= t);
      auto& b = rb[static_cast<std::size_t>(r)];
      if (must_w || (!can_i && !can_f && s.deferred > 0)) {
        b.w();
        --s.deferred;
      } else if (can_f) {
        b.f(r);
        s.f_done[static_cast<std::size_t>(s.f++)] = t + 1;
      } else if (can_i) {
        b.i(r);
        s.i_done[static_cast<std::size_t>(s.i++)] = t + 1;
        ++s.deferred;
      }
    }
  }
  std::vector<std::vector<Slot>> ranks;
  for (auto& b : rb) ranks.push_back(b.take());
  return detail::assemble("zb-h2", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
