// Idle time by cause (split_idle, docs/metrics.md "Idle time by cause") on simulated timelines:
// the parts account for all idle time on every schedule, the pipeline bubble vanishes at PP=1 and
// matches the textbook 1F1B/GPipe form, and the analytic model's in-action communication.
#include <gtest/gtest.h>

#include <cmath>

#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/simulation.h"
#include "pipelab/sim/uniform_cost.h"
#include "sim_helpers.h"

namespace pipelab {
namespace {

// Uniform costs plus a data-parallel gradient reduction per stage, so REDUCE_GRAD takes time.
class UniformWithReduce final : public sim::UniformCost {
 public:
  UniformWithReduce(sim::UniformTimes t, std::int64_t reduce_ns) : UniformCost(t), reduce_ns_(reduce_ns) {}
  std::int64_t reduce_grad_ns(int, int) const override { return reduce_ns_; }

 private:
  std::int64_t reduce_ns_;
};

sim::UniformTimes times(std::int64_t f, std::int64_t i, std::int64_t w, std::int64_t comm) {
  sim::UniformTimes t;
  t.f_ns = f;
  t.i_ns = i;
  t.w_ns = w;
  t.comm_ns = comm;
  return t;
}

TimelineMetrics uniform_metrics(const std::string& schedule, int pp, int m, const sim::UniformTimes& t, std::int64_t reduce_ns,
                                ReduceGradPlacement placement = ReduceGradPlacement::AfterLastWeightGrad) {
  Schedule s = add_send_recv(make_schedule(schedule, {pp, 0, m, 0}));
  if (reduce_ns > 0) s = add_reduce_grad(s, placement);
  return compute_metrics(sim::simulate(s, UniformWithReduce(t, reduce_ns)).timeline);
}

sim::SimulationOutcome analytic(const std::string& schedule, int pp, int dp, int gbs) {
  sim::SimulationRequest r;
  r.model = model_preset("llama3-8b");
  r.gpu = gpu_preset("h100-sxm");
  ParallelConfig c;
  c.tp = 2;
  c.pp = pp;
  c.dp = dp;
  c.mbs = 1;
  c.gbs = gbs;
  c.vp = 0;
  r.config = resolve(c, r.model);
  r.schedule = schedule;
  return sim::simulate_config(r);
}

// Every part is non-negative, they sum to the rank's idle time, and the simulator leaves nothing
// unexplained.
void expect_accounted(const TimelineMetrics& m, const std::string& what) {
  for (std::size_t r = 0; r < m.ranks.size(); ++r) {
    const IdleParts& p = m.ranks[r].idle;
    EXPECT_EQ(p.total(), m.ranks[r].idle_ns) << what << " rank " << r;
    EXPECT_EQ(p.other_ns, 0) << what << " rank " << r;
    for (std::int64_t part : {p.pipeline_bubble_ns, p.imbalance_ns, p.exposed_pp_comm_ns, p.exposed_dp_comm_ns}) {
      EXPECT_GE(part, 0) << what << " rank " << r;
    }
  }
}

TEST(IdleParts, SumToIdleForEveryScheduleUniform) {
  for (const ScheduleInfo& info : schedule_registry()) {
    // F, I, W unequal and P2P not free, so every part can be non-zero.
    const TimelineMetrics m = uniform_metrics(info.name, 4, 8, times(1000, 1300, 700, 150), 2500);
    expect_accounted(m, info.name);
    std::int64_t dp = 0, pp = 0;
    for (const RankMetrics& r : m.ranks) {
      dp += r.idle.exposed_dp_comm_ns;
      pp += r.idle.exposed_pp_comm_ns;
    }
    EXPECT_GT(dp, 0) << info.name << ": the last reduction ends after the last compute";
    EXPECT_GT(pp, 0) << info.name;
    EXPECT_GT(m.pipeline_bubble_ratio, 0) << info.name;
  }
}

TEST(IdleParts, SumToIdleForEveryScheduleAnalytic) {
  for (const ScheduleInfo& info : schedule_registry()) {
    // pp=4, dp=2, 8 microbatches; llama3-8b's 32 layers split over 4 and 8 parts.
    const sim::SimulationOutcome o = analytic(info.name, 4, 2, 16);
    ASSERT_EQ(o.config.microbatches(), 8);
    expect_accounted(o.metrics, info.name);
    EXPECT_GT(o.metrics.exposed_dp_comm_ns, 0) << info.name;
    // The first stage (embedding) and the last (LM head) differ: some rank has less work.
    EXPECT_GT(o.metrics.stage_imbalance, 0) << info.name;
  }
}

TEST(IdleParts, NoPipelineBubbleAtPpOne) {
  const sim::SimulationOutcome o = analytic("1f1b", 1, 8, 64);
  EXPECT_GT(o.metrics.bubble_ratio, 0) << "the gradient reduction after the last backward is idle time";
  EXPECT_EQ(o.metrics.pipeline_bubble_ratio, 0);
  EXPECT_EQ(o.metrics.stage_imbalance, 0);
  EXPECT_GT(o.metrics.exposed_dp_comm_ns, 0);
  expect_accounted(o.metrics, "analytic pp=1");
  for (const char* schedule : {"1f1b", "gpipe", "zb-h1"}) {
    const TimelineMetrics m = uniform_metrics(schedule, 1, 8, times(1000, 1000, 1000, 100), 4000, ReduceGradPlacement::AtEnd);
    EXPECT_GT(m.bubble_ratio, 0) << schedule;
    EXPECT_EQ(m.pipeline_bubble_ratio, 0) << schedule;
    EXPECT_EQ(m.ranks[0].idle.exposed_dp_comm_ns, m.ranks[0].idle_ns) << schedule;
  }
}

// A forward waiting for its parameters' all-gather idles beside the rank's own collective: DP
// communication, before the pipeline's waits are told apart. At PP = 1, the whole wait; at PP = 4,
// each rank's first forward waits for its inputs, then for the part of its gather still running.
class UniformWithGather final : public sim::UniformCost {
 public:
  explicit UniformWithGather(std::int64_t gather_ns) : UniformCost(::pipelab::times(1000, 1000, 1000, 0)), gather_ns_(gather_ns) {}
  sim::ParamGather param_gather(int, int) const override { return {gather_ns_, 1, 1, false}; }

 private:
  std::int64_t gather_ns_;
};

TEST(IdleParts, AForwardWaitingForItsParametersIsDpComm) {
  const TimelineMetrics one = compute_metrics(sim::simulate(add_send_recv(make_schedule("1f1b", {1, 0, 4, 0})), UniformWithGather(2500)).timeline);
  EXPECT_EQ(one.ranks[0].idle.exposed_dp_comm_ns, 2500);  // F0 starts at 2500: its gather [0, 2500)
  EXPECT_EQ(one.ranks[0].idle.other_ns, 0);
  expect_accounted(one, "gather at pp=1");
  const TimelineMetrics four = compute_metrics(sim::simulate(add_send_recv(make_schedule("1f1b", {4, 0, 8, 0})), UniformWithGather(2500)).timeline);
  expect_accounted(four, "gather at pp=4");
  for (const RankMetrics& r : four.ranks) {
    EXPECT_EQ(r.idle.exposed_dp_comm_ns, 2500) << "the gather starts with the rank's first forward";
    EXPECT_EQ(r.idle.other_ns, 0);
  }
}

// Megatron's (p-1)(F+B) per rank over an iteration of m(F+B) + (p-1)(F+B), with F = 1, B = 2
// (reference/schedules.md §3; the ZB README's (p-1)/(m+p-1)).
TEST(IdleParts, OneFOneBPipelineBubbleIsTheTextbookForm) {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    for (int p : {2, 4, 8}) {
      for (int m : {p, 8, 3 * p + 1}) {
        const std::int64_t F = 1000, B = 2000;
        const TimelineMetrics metrics = uniform_metrics(schedule, p, m, times(F, B / 2, B / 2, 0), 0);
        const double textbook = static_cast<double>((p - 1) * (F + B)) / static_cast<double>(m * (F + B) + (p - 1) * (F + B));
        EXPECT_DOUBLE_EQ(metrics.pipeline_bubble_ratio, textbook) << schedule << " p" << p << " m" << m;
        EXPECT_DOUBLE_EQ(metrics.bubble_ratio, textbook);
        EXPECT_EQ(metrics.stage_imbalance, 0);
        EXPECT_EQ(metrics.exposed_pp_comm_ns, 0);
      }
    }
  }
}

// With P2P time c, a rank's exposed PP communication is the transfer of its own inputs only: a
// hop further up the pipeline delays the neighbour, which the rank sees as waiting on it. Equal
// stages leave no imbalance, and without gradient reduction nothing else is idle.
TEST(IdleParts, OneFOneBTransfersAreExposedPpComm) {
  const int p = 4, m = 8;
  const std::int64_t F = 1000, B = 2000, c = 100;
  const TimelineMetrics metrics = uniform_metrics("1f1b", p, m, times(F, B / 2, B / 2, c), 0);
  expect_accounted(metrics, "1f1b with comm");
  for (const RankMetrics& r : metrics.ranks) {
    EXPECT_EQ(r.idle.pipeline_bubble_ns + r.idle.exposed_pp_comm_ns, r.idle_ns);
    EXPECT_GT(r.idle.exposed_pp_comm_ns, 0);
    EXPECT_GE(r.idle.pipeline_bubble_ns, (p - 1) * (F + B)) << "at least the bubble without communication";
  }
}

// Mixtral 8x7B on 32 GPUs: TP1 PP4 DP8 EP8, `vp` chunks per rank (0: the schedule's own).
ParallelConfig mixtral_ep8(const ModelSpec& model, int vp) { return testing::moe_layout(model, 1, 4, 8, 8, 128, vp); }

// The analytic model's communication inside compute actions: TP with tp > 1, none at tp = 1,
// and the units' parts never exceed their durations.
TEST(InActionComm, AnalyticTpAndEpInsideActions) {
  const sim::SimulationOutcome tp2 = analytic("1f1b", 4, 2, 16);
  EXPECT_GT(tp2.in_action_comm.tp_ns, 0);
  EXPECT_EQ(tp2.in_action_comm.ep_ns, 0);
  EXPECT_EQ(tp2.in_action_comm.cp_ns, 0);

  sim::SimulationRequest r;
  r.model = model_preset("mixtral-8x7b");
  r.gpu = gpu_preset("h100-sxm");
  r.config = mixtral_ep8(r.model, 0);
  for (const char* schedule : {"1f1b", "dualpipev"}) {
    r.schedule = schedule;
    const sim::SimulationOutcome o = sim::simulate_config(r);
    EXPECT_GT(o.in_action_comm.ep_ns, 0) << schedule;
    EXPECT_EQ(o.in_action_comm.tp_ns, 0) << schedule;
    double busy = 0;
    for (const RankMetrics& rm : o.metrics.ranks) busy += static_cast<double>(rm.busy_ns);
    EXPECT_LT(o.in_action_comm.ep_ns, busy / static_cast<double>(o.metrics.ranks.size())) << schedule;
  }
}

// An F&B unit counts as EP only what its other half's compute cannot hide: the parts plus the
// halves' compute are the unit's duration.
TEST(InActionComm, OverlappedUnitCountsOnlyExposedEp) {
  const ModelSpec model = model_preset("mixtral-8x7b");
  const ParallelConfig c = mixtral_ep8(model, 2);
  const Schedule s = make_schedule("dualpipev", {4, 2, 8, 0});
  const sim::AnalyticCost cost(model, gpu_preset("h100-sxm"), c, s.shape);
  const Action unit = Action::overlap(1, 0, 6, 0);
  const sim::InActionComm fb = cost.in_action_comm(0, unit);
  const sim::InActionComm f = cost.in_action_comm(0, Action::make(Op::F, 1, 0));
  const sim::InActionComm b = cost.in_action_comm(0, Action::make(Op::B, 6, 0));
  EXPECT_LT(fb.ep_ns, f.ep_ns + b.ep_ns) << "the overlap hides part of the all-to-all";
  const double compute = cost.stage(1).f.compute_ns() + cost.stage(6).i.compute_ns() + cost.stage(6).w.compute_ns();
  EXPECT_NEAR(compute + fb.tp_ns + fb.ep_ns + fb.cp_ns + fb.fsdp_ns, cost.overlap_ns(1, 6), 1e-6 * cost.overlap_ns(1, 6));
  EXPECT_EQ(sim::UniformCost(sim::UniformTimes{}).in_action_comm(0, unit), sim::InActionComm{});
}

// Under uniform costs the times are synthetic: no hardware figures.
TEST(HardwareFigures, UniformCostsHaveNone) {
  sim::SimulationRequest r;
  r.model = model_preset("gpt-1.5b");
  r.gpu = gpu_preset("h100-sxm");
  ParallelConfig c;
  c.pp = 2;
  c.dp = 1;
  c.mbs = 1;
  c.gbs = 4;
  r.config = resolve(c, r.model);
  r.schedule = "1f1b";
  r.cost_model = sim::CostModelKind::Uniform;
  EXPECT_FALSE(sim::simulate_config(r).hardware_figures);
  r.cost_model = sim::CostModelKind::Analytic;
  EXPECT_TRUE(sim::simulate_config(r).hardware_figures);
}

}  // namespace
}  // namespace pipelab
