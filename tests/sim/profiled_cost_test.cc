// sim::ProfiledCost: a measured profile (tests/data/profiles/sample_profile.json) turned into
// per-(stage, op) durations, used per stage or scaled from per-layer times, and able to drive the
// simulator through every schedule.
#include <gtest/gtest.h>

#include "pipelab/base/error.h"
#include "pipelab/profiles/measured_profile.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/profiled_cost.h"

namespace pipelab {
namespace {

MeasuredProfile sample_profile() {
  return load_measured_profile(std::string(PIPELAB_TEST_DATA_DIR) + "/profiles/sample_profile.json");
}

TEST(ProfiledCost, UsesStageValuesWhenTheStageSizeMatches) {
  const PipelineShape shape = make_shape(2, 4, 4, Placement::V);
  const sim::ProfiledCost cost(sample_profile(), shape, 2);
  EXPECT_TRUE(cost.uses_stage_values());
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::F, 0, 0)), 2100);
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::F, 3, 0)), 2150);  // last stage: + loss
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::I, 1, 0)), 2500);
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::W, 1, 0)), 1700);
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::B, 1, 0)), 4300);
  EXPECT_EQ(cost.duration_ns(0, Action::overlap(0, 2, 3, 0)), 6500);
  EXPECT_EQ(cost.duration_ns(0, Action::overlap(3, 2, 2, 0)), 6550);  // F half at the last stage
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::SendF, 0, 0)), 0);
  EXPECT_EQ(cost.p2p_ns(128, 0, 1), 2000 + 128);
  EXPECT_EQ(cost.p2p_ns(128, 1, 1), 0);
  EXPECT_EQ(cost.boundary_bytes(2), 128);
  EXPECT_EQ(cost.flops(Action::make(Op::F, 0, 0)), 200);
  EXPECT_EQ(cost.flops(Action::make(Op::B, 0, 0)), 400);
}

TEST(ProfiledCost, ScalesPerLayerTimesOtherwise) {
  const PipelineShape shape = make_shape(2, 2, 4, Placement::Loop);
  const sim::ProfiledCost cost(sample_profile(), shape, 3);
  EXPECT_FALSE(cost.uses_stage_values());
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::F, 0, 0)), 3000);
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::W, 0, 0)), 2400);
  EXPECT_EQ(cost.duration_ns(0, Action::overlap(0, 1, 1, 0)), 9000);
  MeasuredProfile empty;
  EXPECT_THROW(sim::ProfiledCost(empty, shape, 1), ConfigError);
  EXPECT_THROW(sim::ProfiledCost(sample_profile(), shape, 0), ConfigError);
}

TEST(ProfiledCost, DrivesTheSimulatorOverEverySchedule) {
  for (const ScheduleInfo& info : schedule_registry()) {
    for (int pp : {2, 4}) {
      SCOPED_TRACE(info.name + " pp=" + std::to_string(pp));
      const Schedule s = add_send_recv(make_schedule(info.name, {pp, 0, 4 * pp, 0}));
      const sim::ProfiledCost cost(sample_profile(), s.shape, 2);
      const sim::SimResult r = sim::simulate(s, cost);
      const TimelineMetrics m = compute_metrics(r.timeline);
      EXPECT_GT(m.makespan_ns, 0);
      EXPECT_GE(m.bubble_ratio, 0.0);
      EXPECT_LT(m.bubble_ratio, 1.0);
    }
  }
}

}  // namespace
}  // namespace pipelab
