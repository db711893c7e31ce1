// Each validation rule fires with its own diagnostic on a schedule that breaks exactly that rule.
#include <gtest/gtest.h>

#include <algorithm>

#include "pipelab/base/error.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/replay.h"
#include "pipelab/schedules/validate.h"

namespace pipelab {
namespace {

Schedule from_csv(const std::string& csv) {
  auto s = parse_schedule(csv, "test");
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return s.value();
}

bool has_rule(const Validation& v, const std::string& rule, const std::string& text) {
  for (const Diagnostic& d : v.diagnostics) {
    if (d.rule == rule && d.message.find(text) != std::string::npos) return true;
  }
  return false;
}

std::string dump(const Validation& v, const Schedule& s) { return v.report(s); }

TEST(Validate, AcceptsAMinimalSchedule) {
  const Schedule s = from_csv("0F0,0B0\n");
  EXPECT_TRUE(validate(s).ok());
}

TEST(Validate, ReportsADuplicateAction) {
  const Schedule s = from_csv("0F0,1F0,0F0,1B0,0B0\n");  // stages 0,1 both on rank 0
  const Validation v = validate(s);
  EXPECT_TRUE(has_rule(v, "exactly-once", "duplicate forward 0F0")) << dump(v, s);
  EXPECT_EQ(v.diagnostics.front().position, 2);
}

TEST(Validate, ReportsAMissingAction) {
  const Schedule s = from_csv("0F0,0F1,0B0\n");
  const Validation v = validate(s);
  EXPECT_TRUE(has_rule(v, "exactly-once", "missing backward 0B1")) << dump(v, s);
}

TEST(Validate, ReportsBackwardBeforeForward) {
  const Schedule s = from_csv("0B0,0F0\n");
  EXPECT_TRUE(has_rule(validate(s), "order", "0B0 runs before its forward 0F0"));
}

TEST(Validate, ReportsWeightGradBeforeInputGrad) {
  const Schedule s = from_csv("0F0,0W0,0I0\n");
  EXPECT_TRUE(has_rule(validate(s), "order", "0W0 runs before its input-grad 0I0"));
}

TEST(Validate, ReportsBothFullBackwardAndWeightGrad) {
  const Schedule s = from_csv("0F0,0B0,0W0\n");
  const Validation v = validate(s);
  EXPECT_FALSE(v.ok());
  EXPECT_TRUE(has_rule(v, "exactly-once", "both a full B and a W") || has_rule(v, "order", "0W0")) << dump(v, s);
}

TEST(Validate, DetectsDeadlockAndNamesWhatEachRankWaitsFor) {
  // Rank 0 waits for stage 1's backward before running the forward rank 1 needs.
  const Schedule s = from_csv("0F0,0F1,0B1,0B0\n1F0,1B0,1F1,1B1\n");
  Schedule bad = s;
  bad.ranks[0] = {Action::make(Op::F, 0, 0), Action::make(Op::B, 0, 0), Action::make(Op::F, 0, 1), Action::make(Op::B, 0, 1)};
  bad.ranks[1] = {Action::make(Op::F, 1, 1), Action::make(Op::B, 1, 1), Action::make(Op::F, 1, 0), Action::make(Op::B, 1, 0)};
  const Validation v = validate(bad);
  ASSERT_FALSE(v.ok());
  EXPECT_TRUE(has_rule(v, "deadlock", "rank 0 is stuck at 0B0 waiting for I/B(1, mb 0) done")) << dump(v, bad);
  EXPECT_TRUE(has_rule(v, "deadlock", "rank 1 is stuck at 1F1 waiting for F(0, mb 1) done")) << dump(v, bad);
  // The report marks the stuck cells in the grid.
  const std::string report = v.report(bad);
  EXPECT_NE(report.find(">0B0<"), std::string::npos) << report;
  EXPECT_NE(report.find(">1F1<"), std::string::npos) << report;
}

TEST(Validate, ReportsAnActionOnTheWrongRank) {
  Schedule s = make_schedule("1f1b", {2, 1, 2, 0});
  s.ranks[0].push_back(Action::make(Op::W, 1, 0));
  EXPECT_TRUE(has_rule(validate(s), "placement", "stage 1 is placed on rank 1"));
}

TEST(Validate, ReportsOutOfRangeIndices) {
  Schedule s = make_schedule("1f1b", {2, 1, 2, 0});
  s.ranks[0].push_back(Action::make(Op::F, 0, 5));
  EXPECT_TRUE(has_rule(validate(s), "range", "microbatch 5 outside [0, 2)"));
  s = make_schedule("1f1b", {2, 1, 2, 0});
  s.ranks[1].push_back(Action::make(Op::F, 9, 0));
  EXPECT_TRUE(has_rule(validate(s), "range", "stage 9 outside [0, 2)"));
}

TEST(Validate, ReportsMismatchedPlacement) {
  Schedule s = make_schedule("interleaved-1f1b", {2, 2, 4, 0});
  std::swap(s.shape.stage_to_rank[1], s.shape.stage_to_rank[2]);
  EXPECT_TRUE(has_rule(validate(s), "placement", "does not match the declared loop placement"));
}

TEST(Validate, ReportsWrongNumberOfRankLists) {
  Schedule s = make_schedule("1f1b", {2, 1, 2, 0});
  s.ranks.pop_back();
  EXPECT_TRUE(has_rule(validate(s), "shape", "1 rank lists but pp=2"));
}

TEST(Validate, ReportsASendWithoutItsReceive) {
  Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}));
  auto& r1 = s.ranks[1];
  r1.erase(std::find(r1.begin(), r1.end(), Slot(Action::make(Op::RecvF, 1, 0))));
  const Validation v = validate(s);
  EXPECT_TRUE(has_rule(v, "comm", "0SEND_F0 has no matching 1RECV_F0 on rank 1")) << dump(v, s);
  EXPECT_TRUE(has_rule(v, "comm", "1F0 needs 1RECV_F0 earlier on rank 1")) << dump(v, s);
}

TEST(Validate, ReportsAReceivePostedAfterItsConsumer) {
  Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}));
  auto& r1 = s.ranks[1];
  auto recv = std::find(r1.begin(), r1.end(), Slot(Action::make(Op::RecvF, 1, 0)));
  std::rotate(recv, recv + 1, r1.end());  // move the receive to the end
  EXPECT_TRUE(has_rule(validate(s), "comm", "1F0 needs 1RECV_F0 earlier on rank 1"));
}

TEST(Validate, ReportsABackwardWithoutItsGradientReceive) {
  Schedule s = add_send_recv(make_schedule("dualpipev", {2, 2, 4, 0}));  // F&B units consume both ways
  for (auto& list : s.ranks) {
    list.erase(std::remove_if(list.begin(), list.end(), [](const Slot& a) { return a && a->op == Op::RecvB; }), list.end());
  }
  const Validation v = validate(s);
  EXPECT_TRUE(has_rule(v, "comm", "0I2 needs 0RECV_B2 earlier on rank 0")) << dump(v, s);
  EXPECT_TRUE(has_rule(v, "comm", "(3F3;0B1)OVERLAP_F_B needs 0RECV_B1 earlier on rank 0")) << dump(v, s);
  EXPECT_TRUE(has_rule(v, "comm", "1SEND_B0 has no matching 0RECV_B0 on rank 0")) << dump(v, s);
}

TEST(Validate, RejectsSendsBetweenStagesOnTheSameRank) {
  Schedule s = add_send_recv(make_schedule("zb-v", {2, 2, 4, 0}));
  s.ranks[1].insert(s.ranks[1].begin() + 3, Action::make(Op::SendF, 1, 0));
  EXPECT_TRUE(has_rule(validate(s), "comm", "stages 1 and 2 are both on rank 1"));
}

TEST(Validate, RejectsSendsPastTheEndOfAChain) {
  Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}));
  s.ranks[1].push_back(Action::make(Op::SendF, 1, 0));
  EXPECT_TRUE(has_rule(validate(s), "comm", "stage 1 has no next stage"));
}

TEST(Validate, ReportsReduceGradBeforeTheLastWeightGrad) {
  Schedule s = add_reduce_grad(make_schedule("zb-h1", {2, 1, 3, 0}));
  auto& r0 = s.ranks[0];
  auto red = std::find(r0.begin(), r0.end(), Slot(Action::make(Op::ReduceGrad, 0, 0)));
  ASSERT_NE(red, r0.end());
  std::rotate(r0.begin() + 2, red, red + 1);  // move it early
  EXPECT_TRUE(has_rule(validate(s), "order", "0REDUCE_GRAD runs after only 0 of stage 0's 3 weight-grads"));
  s = add_reduce_grad(make_schedule("1f1b", {1, 1, 2, 0}));
  s.ranks[0].push_back(Action::make(Op::ReduceGrad, 0, 0));
  EXPECT_TRUE(has_rule(validate(s), "exactly-once", "duplicate 0REDUCE_GRAD"));
}

TEST(Validate, EveryRankHoldsAStage) {
  auto s = parse_csv("0F0,0B0\n\n1F0,1B0\n", CsvFormat::ComputeOnly);  // a blank middle row is a rank
  ASSERT_TRUE(s.ok());
  const Validation v = validate(s.value());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.diagnostics.front().rule, "placement");
  EXPECT_NE(v.diagnostics.front().message.find("rank 1 holds no stage"), std::string::npos);
}

TEST(Validate, RequireValidThrowsWithTheReport) {
  const Schedule s = from_csv("0B0,0F0\n");
  try {
    require_valid(s);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("[order]"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find(">0B0<"), std::string::npos);
  }
}

TEST(Replay, GivesTheLockStepGrid) {
  const Schedule s = make_schedule("1f1b", {2, 1, 2, 0});
  const Replay r = replay_lockstep(s);
  ASSERT_TRUE(r.completed);
  // rank0: F0 F1 . B0 . B1 ; rank1: . F0 B0 F1 B1
  const auto g = r.grid(s);
  EXPECT_EQ(r.steps, 6);
  EXPECT_EQ(g[0][0], Slot(Action::make(Op::F, 0, 0)));
  EXPECT_EQ(g[1][1], Slot(Action::make(Op::F, 1, 0)));
  EXPECT_EQ(g[1][2], Slot(Action::make(Op::B, 1, 0)));
  EXPECT_EQ(g[0][3], Slot(Action::make(Op::B, 0, 0)));
}

TEST(Replay, LoweredAndComputeOnlySchedulesTakeTheSameSteps) {
  for (const char* name : {"1f1b", "zb-v", "dualpipev", "interleaved-1f1b"}) {
    const Schedule s = make_schedule(name, {4, 0, 8, 0});
    EXPECT_EQ(replay_lockstep(s).steps, replay_lockstep(add_send_recv(s)).steps) << name;
  }
}

// Fuzz finding (fuzz/regressions/schedule_csv/microbatch_299999_slow_report): one microbatch index
// of 299999 in a 200-byte file made 2.4 million "missing" diagnostics and a report of hundreds of
// MB. The first Validation::kMaxListed are listed; the rest are counted.
TEST(Validate, ListsAtMostKMaxListedProblemsAndCountsTheRest) {
  const Result<Schedule> s = parse_csv("0F0,0B0,0F299999\n1F0,1B0\n", CsvFormat::ComputeOnly);
  ASSERT_TRUE(s.ok()) << s.error().message;
  const Validation v = validate(s.value());
  EXPECT_EQ(v.diagnostics.size(), Validation::kMaxListed);
  EXPECT_GT(v.problems(), 500'000u);
  const std::string report = v.report(s.value());
  EXPECT_LT(report.size(), 200'000u);
  EXPECT_NE(report.find("more problems (the first 1000 are listed)"), std::string::npos);
}

// The event-driven replay gives the lock-step grid of the golden vectors on long chains too, in
// time linear in the actions (a 20,000-rank chain took 20 s as steps x ranks).
TEST(Replay, ALongChainReplaysInLinearTime) {
  std::string text;
  for (int r = 0; r < 20000; ++r) text += std::to_string(r) + "F0," + std::to_string(r) + "B0\n";
  const Result<Schedule> s = parse_csv(text, CsvFormat::ComputeOnly);
  ASSERT_TRUE(s.ok());
  const Replay r = replay_lockstep(s.value());
  ASSERT_TRUE(r.completed);
  EXPECT_EQ(r.steps, 40000);  // the forward down the chain, then the backward back up
  EXPECT_EQ(r.step_of[19999][0], 19999);
  EXPECT_EQ(r.step_of[0][1], 39999);
}

}  // namespace
}  // namespace pipelab
