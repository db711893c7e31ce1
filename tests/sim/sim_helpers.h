// Small helpers shared by the simulator tests.
#pragma once

#include <algorithm>

#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/uniform_cost.h"

namespace pipelab::testing {

/// A resolved MoE layout with mbs 1: tp, pp, dp, ep, the global batch and `vp` chunks per rank (0: the
/// schedule's own).
inline ParallelConfig moe_layout(const ModelSpec& model, int tp, int pp, int dp, int ep, int gbs, int vp) {
  ParallelConfig c;
  c.tp = tp;
  c.pp = pp;
  c.dp = dp;
  c.ep = ep;
  c.mbs = 1;
  c.gbs = gbs;
  c.vp = vp;
  return resolve(c, model);
}

inline sim::SimResult run_uniform(const std::string& name, int pp, int vp, int m, const sim::UniformTimes& t,
                                  bool track_activations = false) {
  const Schedule s = add_send_recv(make_schedule(name, {pp, vp, m, 0}));
  sim::SimOptions options;
  // One unit of activation per (stage, microbatch), released entirely by the input-grad.
  if (track_activations) options.activations.assign(static_cast<std::size_t>(s.shape.stages), {1, 1});
  return sim::simulate(s, sim::UniformCost(t), options);
}

/// Idle time inside a rank's own window (first compute start to last compute end): the ZB
/// paper's per-stage bubble, which ignores the staggered start and end of a parallelogram.
inline std::int64_t window_idle_ns(const Timeline& t, std::size_t rank) {
  std::int64_t first = -1, last = 0, busy = 0;
  for (const TimelineEvent& e : t.ranks[rank]) {
    if (e.stream != Stream::Compute) continue;
    if (first < 0) first = e.start_ns;
    last = std::max(last, e.end_ns);
    busy += e.duration_ns();
  }
  return first < 0 ? 0 : last - first - busy;
}

inline std::int64_t max_window_idle_ns(const Timeline& t) {
  std::int64_t worst = 0;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) worst = std::max(worst, window_idle_ns(t, r));
  return worst;
}

}  // namespace pipelab::testing
