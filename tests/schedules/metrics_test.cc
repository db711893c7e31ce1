// Timeline metrics: busy/idle, bubble, exposed communication, throughput; predicted vs measured
// (compare_timelines) and the fidelity thresholds.
#include <gtest/gtest.h>

#include <limits>

#include "pipelab/schedules/metrics.h"

namespace pipelab {
namespace {

TEST(Metrics, EmptyTimelineHasNoDivisionByZero) {
  const TimelineMetrics m = compute_metrics(Timeline{});
  EXPECT_EQ(m.makespan_ns, 0);
  EXPECT_EQ(m.bubble_ratio, 0);
  Timeline t;
  t.ranks.resize(3);
  EXPECT_EQ(compute_metrics(t).bubble_ratio, 0);
  EXPECT_EQ(compute_throughput(0, 1e12, 100, 8, 989).tflops_per_gpu, 0);
}

TEST(Metrics, BubbleIsIdleOverRanksTimesMakespan) {
  Timeline t;
  t.ranks.resize(2);
  t.ranks[0] = {{Action::make(Op::F, 0, 0), Stream::Compute, 0, 100, 0, 5}, {Action::make(Op::B, 0, 0), Stream::Compute, 300, 400, 0, 10}};
  t.ranks[1] = {{Action::make(Op::F, 1, 0), Stream::Compute, 100, 200, 0, 5}, {Action::make(Op::B, 1, 0), Stream::Compute, 200, 300, 0, 10}};
  const TimelineMetrics m = compute_metrics(t);
  EXPECT_EQ(m.makespan_ns, 400);
  EXPECT_EQ(m.ranks[0].busy_ns, 200);
  EXPECT_EQ(m.ranks[1].idle_ns, 200);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 400.0 / 800.0);
  EXPECT_DOUBLE_EQ(m.ranks[0].flops, 15);
}

TEST(Metrics, ExposedCommunicationIsWhatComputeDoesNotCover) {
  Timeline t;
  t.ranks.resize(1);
  t.ranks[0] = {{Action::make(Op::F, 0, 0), Stream::Compute, 0, 100, 0, 0},
                {Action::make(Op::SendF, 0, 0), Stream::Send, 50, 150, 8, 0},   // 50 exposed
                {Action::make(Op::RecvB, 0, 0), Stream::Recv, 120, 180, 8, 0},  // overlaps the send: 30 more
                {Action::make(Op::B, 0, 0), Stream::Compute, 170, 300, 0, 0}};  // covers 170..180
  const TimelineMetrics m = compute_metrics(t);
  EXPECT_EQ(m.ranks[0].comm_ns, 130);
  EXPECT_EQ(m.ranks[0].exposed_comm_ns, 70);
}

// Two ranks, one microbatch, P2P of 50 ns each way, a gradient reduction per rank:
//   rank 0: F [0,100]            ... B [400,500]   REDUCE_GRAD [500,700]
//   rank 1:    recv [100,150] F [150,250] B [250,350] REDUCE_GRAD [350,450]
// rank 0 waits 100..350 for rank 1's B (bubble 250), then 350..400 for the transfer (PP 50);
// rank 1 waits 0..100 for rank 0's F (bubble), 100..150 for the transfer (PP), drains 350..500
// (bubble); after the last compute (500) both wait for rank 0's reduction (DP 200).
Timeline two_rank_with_comm(std::int64_t rank1_b_end = 350) {
  const std::int64_t send_b = rank1_b_end, arrive_b = send_b + 50;
  Timeline t;
  t.ranks.resize(2);
  t.ranks[0] = {{Action::make(Op::F, 0, 0), Stream::Compute, 0, 100, 0, 0},
                {Action::make(Op::SendF, 0, 0), Stream::Send, 100, 150, 8, 0},
                {Action::make(Op::RecvB, 0, 0), Stream::Recv, send_b, arrive_b, 8, 0},
                {Action::make(Op::B, 0, 0), Stream::Compute, arrive_b, arrive_b + 100, 0, 0},
                {Action::make(Op::ReduceGrad, 0, 0), Stream::Collective, arrive_b + 100, arrive_b + 300, 8, 0}};
  t.ranks[1] = {{Action::make(Op::RecvF, 1, 0), Stream::Recv, 100, 150, 8, 0},
                {Action::make(Op::F, 1, 0), Stream::Compute, 150, 250, 0, 0},
                {Action::make(Op::B, 1, 0), Stream::Compute, 250, rank1_b_end, 0, 0},
                {Action::make(Op::SendB, 1, 0), Stream::Send, send_b, arrive_b, 8, 0},
                {Action::make(Op::ReduceGrad, 1, 0), Stream::Collective, rank1_b_end, rank1_b_end + 100, 8, 0}};
  return t;
}

TEST(IdleParts, EachGapByItsCause) {
  const TimelineMetrics m = compute_metrics(two_rank_with_comm());
  ASSERT_EQ(m.makespan_ns, 700);
  EXPECT_EQ(m.ranks[0].idle, (IdleParts{.pipeline_bubble_ns = 250, .exposed_pp_comm_ns = 50, .exposed_dp_comm_ns = 200}));
  EXPECT_EQ(m.ranks[1].idle, (IdleParts{.pipeline_bubble_ns = 100 + 150, .exposed_pp_comm_ns = 50, .exposed_dp_comm_ns = 200}));
  EXPECT_DOUBLE_EQ(m.pipeline_bubble_ratio, 500.0 / 1400.0);
  EXPECT_EQ(m.exposed_pp_comm_ns, 50);
  EXPECT_EQ(m.exposed_dp_comm_ns, 200);
  EXPECT_EQ(m.stage_imbalance, 0);
  EXPECT_DOUBLE_EQ(m.bubble_ratio, 1000.0 / 1400.0);
}

// Rank 1's backward takes 100 ns longer: rank 0 has 100 ns less work, and that much of its waiting
// is stage imbalance.
TEST(IdleParts, LessWorkThanTheBusiestRankIsImbalance) {
  const TimelineMetrics m = compute_metrics(two_rank_with_comm(450));
  ASSERT_EQ(m.ranks[1].busy_ns - m.ranks[0].busy_ns, 100);
  EXPECT_EQ(m.ranks[0].idle, (IdleParts{.pipeline_bubble_ns = 250, .imbalance_ns = 100, .exposed_pp_comm_ns = 50, .exposed_dp_comm_ns = 200}));
  EXPECT_EQ(m.ranks[1].idle.imbalance_ns, 0);
  EXPECT_EQ(m.ranks[1].idle.total(), m.ranks[1].idle_ns);
  EXPECT_DOUBLE_EQ(m.stage_imbalance, 100.0 / (2 * m.makespan_ns));
}

// A gap before an action whose inputs were all on the rank (a measured run's launch delay) is not
// the pipeline's: the timeline does not explain it.
TEST(IdleParts, GapWithoutACrossRankInputIsOther) {
  Timeline t;
  t.ranks.resize(1);
  t.ranks[0] = {{Action::make(Op::F, 0, 0), Stream::Compute, 0, 100, 0, 0}, {Action::make(Op::B, 0, 0), Stream::Compute, 130, 200, 0, 0}};
  const TimelineMetrics m = compute_metrics(t);
  EXPECT_EQ(m.ranks[0].idle, (IdleParts{.other_ns = 30}));
  EXPECT_EQ(m.pipeline_bubble_ratio, 0);
  EXPECT_EQ(m.other_idle_ns, 30);
}

TEST(Metrics, ThroughputFromIterationTime) {
  // 8 GPUs, 1 s, 8e15 FLOPs -> 1000 TFLOPS/GPU; peak 2000 -> MFU 0.5; 80,000 tokens -> 10,000/s/GPU.
  const Throughput t = compute_throughput(1'000'000'000, 8e15, 80'000, 8, 2000);
  EXPECT_DOUBLE_EQ(t.tflops_per_gpu, 1000);
  EXPECT_DOUBLE_EQ(t.mfu, 0.5);
  EXPECT_DOUBLE_EQ(t.tokens_per_s_per_gpu, 10'000);
}

// Two ranks, F then B on each, with the given per-op durations (no communication).
Timeline two_rank_timeline(std::int64_t f_ns, std::int64_t b_ns) {
  Timeline t;
  t.ranks.resize(2);
  t.ranks[0] = {{Action::make(Op::F, 0, 0), Stream::Compute, 0, f_ns, 0, 0},
                {Action::make(Op::B, 0, 0), Stream::Compute, 2 * f_ns + 2 * b_ns - b_ns, 2 * f_ns + 2 * b_ns, 0, 0}};
  t.ranks[1] = {{Action::make(Op::F, 1, 0), Stream::Compute, f_ns, 2 * f_ns, 0, 0},
                {Action::make(Op::B, 1, 0), Stream::Compute, 2 * f_ns, 2 * f_ns + b_ns, 0, 0}};
  return t;
}

TEST(CompareTimelines, IdenticalTimelinesAgree) {
  const Timeline t = two_rank_timeline(100, 200);
  const FidelityReport r = compare_timelines(t, t);
  EXPECT_EQ(r.makespan_predicted_ns, 600);
  EXPECT_EQ(r.makespan_measured_ns, 600);
  EXPECT_EQ(r.makespan_error, 0);
  EXPECT_EQ(r.bubble_predicted, r.bubble_measured);
  EXPECT_EQ(r.actions_compared, 4u);
  EXPECT_EQ(r.action_error_p50, 0);
  EXPECT_EQ(r.compute_time_ratio, (std::vector<double>{1.0, 1.0}));
  EXPECT_TRUE(within_fidelity(r));
  EXPECT_TRUE(ranks_off_profile(r).empty());
}

TEST(CompareTimelines, ErrorsAreSignedPredictedOverMeasured) {
  // Measured: F 125 (predicted 100, error -20%), B 200 (no error). Makespan 650 vs 600.
  const FidelityReport r = compare_timelines(two_rank_timeline(100, 200), two_rank_timeline(125, 200));
  EXPECT_DOUBLE_EQ(r.makespan_error, 600.0 / 650.0 - 1.0);
  EXPECT_DOUBLE_EQ(r.bubble_measured, compute_metrics(two_rank_timeline(125, 200)).bubble_ratio);
  // Errors sorted: -0.2, -0.2, 0, 0. Nearest rank: p50 is the 2nd, p90 the 4th.
  EXPECT_DOUBLE_EQ(r.action_error_p50, -0.2);
  EXPECT_DOUBLE_EQ(r.action_error_p90, 0.0);
  // Per rank, the median of measured / predicted over {1.25, 1.0}: the 1st (nearest rank of 0.5 * 2).
  EXPECT_EQ(r.compute_time_ratio, (std::vector<double>{1.0, 1.0}));
}

TEST(CompareTimelines, UnmatchedActionsAreNotCompared) {
  Timeline measured = two_rank_timeline(100, 200);
  measured.ranks[1][1].action = Action::make(Op::B, 1, 5);  // no such microbatch in the prediction
  const FidelityReport r = compare_timelines(two_rank_timeline(100, 200), measured);
  EXPECT_EQ(r.actions_compared, 3u);
}

TEST(CompareTimelines, EmptyMeasurementHasNoDivisionByZero) {
  const FidelityReport r = compare_timelines(two_rank_timeline(100, 200), Timeline{});
  EXPECT_EQ(r.makespan_error, 0);
  EXPECT_EQ(r.actions_compared, 0u);
  EXPECT_TRUE(r.compute_time_ratio.empty());
}

// The verdict can fail: each figure on its own pushes a report outside the thresholds.
TEST(FidelityThresholds, EachFigureCanFailTheVerdict) {
  EXPECT_TRUE(within_fidelity(0.05, 0.30, 0.315));
  EXPECT_TRUE(within_fidelity(-0.05, 0.30, 0.30));
  EXPECT_FALSE(within_fidelity(0.051, 0.30, 0.30));
  EXPECT_FALSE(within_fidelity(-0.051, 0.30, 0.30));
  EXPECT_FALSE(within_fidelity(0.0, 0.30, 0.325));
  EXPECT_FALSE(within_fidelity(0.0, 0.325, 0.30));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(within_fidelity(nan, 0.30, 0.30));
  EXPECT_FALSE(within_fidelity(0.0, nan, 0.30));
  EXPECT_FALSE(within_fidelity(0.0, 0.30, nan));
  EXPECT_FALSE(within_fidelity(std::numeric_limits<double>::infinity(), 0.30, 0.30));
}

TEST(FidelityThresholds, RanksOffTheirProfileAreNamed) {
  FidelityReport r;
  r.compute_time_ratio = {1.0, 1.02, 0.965, 1.2, 0.0};
  EXPECT_EQ(ranks_off_profile(r), (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_EQ(ranks_off_profile(r, {.compute_time_ratio = 0.5}), (std::vector<std::size_t>{4}));
}

}  // namespace
}  // namespace pipelab
