// Consecutive iterations with the optimizer step between them (repeat_iterations and the engine's
// SimOptions::iteration_starts): ZB-H2's gain shows only across iterations, when the next
// iteration's forwards may start before other ranks finish the previous one.
#include <gtest/gtest.h>

#include "pipelab/base/error.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/iterations.h"
#include "pipelab/sim/uniform_cost.h"

namespace pipelab {
namespace {

struct IterationsRun {
  std::int64_t makespan_ns;
  std::int64_t pipeline_bubble_ns;  // summed over ranks
};

IterationsRun run(const std::string& schedule, int pp, int m, int iterations, sim::OptimizerStep step, std::int64_t step_ns = 0) {
  const Schedule lowered = add_send_recv(make_schedule(schedule, {pp, 0, m, 0}));
  const sim::RepeatedSchedule repeated = sim::repeat_iterations(lowered, iterations);
  sim::SimOptions options;
  options.iteration_starts = repeated.iteration_starts;
  options.optimizer_step = step;
  options.optimizer_step_ns = step_ns;
  sim::UniformTimes t;  // F = I = W = 1000 ns, free P2P
  const TimelineMetrics metrics = compute_metrics(sim::simulate(repeated.schedule, sim::UniformCost(t), options).timeline);
  IterationsRun out{metrics.makespan_ns, 0};
  for (const RankMetrics& r : metrics.ranks) out.pipeline_bubble_ns += r.idle.pipeline_bubble_ns;
  return out;
}

// Each further iteration adds exactly m (F + I + W) and no pipeline bubble when the optimizer step
// overlaps; with a synchronous step every iteration pays its warm-up and cool-down again.
TEST(Iterations, ZbH2HasZeroBubbleAcrossIterationsOnlyWithTheOverlappedStep) {
  const int pp = 4, m = 8;
  const std::int64_t work = m * 3000;
  const IterationsRun o3 = run("zb-h2", pp, m, 3, sim::OptimizerStep::Overlap), o4 = run("zb-h2", pp, m, 4, sim::OptimizerStep::Overlap);
  EXPECT_EQ(o4.makespan_ns - o3.makespan_ns, work);
  EXPECT_EQ(o4.pipeline_bubble_ns, o3.pipeline_bubble_ns);
  const IterationsRun s3 = run("zb-h2", pp, m, 3, sim::OptimizerStep::Sync), s4 = run("zb-h2", pp, m, 4, sim::OptimizerStep::Sync);
  EXPECT_GT(s4.makespan_ns - s3.makespan_ns, work);
  EXPECT_GT(s4.pipeline_bubble_ns, s3.pipeline_bubble_ns);
  // One iteration is the same either way.
  EXPECT_EQ(run("zb-h2", pp, m, 1, sim::OptimizerStep::Sync).makespan_ns, run("zb-h2", pp, m, 1, sim::OptimizerStep::Overlap).makespan_ns);
}

// With a synchronous step of s ns, each iteration is the single iteration's makespan plus s.
TEST(Iterations, SyncStepRepeatsTheSingleIteration) {
  const int pp = 4, m = 8;
  const std::int64_t one = run("1f1b", pp, m, 1, sim::OptimizerStep::Sync).makespan_ns;
  EXPECT_EQ(run("1f1b", pp, m, 3, sim::OptimizerStep::Sync, 500).makespan_ns, 3 * one + 2 * 500);
}

TEST(Iterations, RenumbersMicrobatchesPerIterationAndChain) {
  const Schedule lowered = add_send_recv(make_schedule("dualpipev", {4, 0, 8, 0}));
  const sim::RepeatedSchedule r = sim::repeat_iterations(lowered, 2);
  EXPECT_EQ(r.schedule.shape.microbatches, 16);
  ASSERT_EQ(r.iteration_starts.size(), lowered.ranks.size());
  for (std::size_t rank = 0; rank < lowered.ranks.size(); ++rank) {
    ASSERT_EQ(r.iteration_starts[rank], (std::vector<std::size_t>{lowered.ranks[rank].size()}));
  }
  EXPECT_THROW(sim::repeat_iterations(lowered, 0), InputError);
}

}  // namespace
}  // namespace pipelab
