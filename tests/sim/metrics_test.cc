// Timeline metrics: busy/idle, bubble, exposed communication, throughput.
#include <gtest/gtest.h>

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

TEST(Metrics, ThroughputFromIterationTime) {
  // 8 GPUs, 1 s, 8e15 FLOPs -> 1000 TFLOPS/GPU; peak 2000 -> MFU 0.5; 80,000 tokens -> 10,000/s/GPU.
  const Throughput t = compute_throughput(1'000'000'000, 8e15, 80'000, 8, 2000);
  EXPECT_DOUBLE_EQ(t.tflops_per_gpu, 1000);
  EXPECT_DOUBLE_EQ(t.mfu, 0.5);
  EXPECT_DOUBLE_EQ(t.tokens_per_s_per_gpu, 10'000);
}

}  // namespace
}  // namespace pipelab
