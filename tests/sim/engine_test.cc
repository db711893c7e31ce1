// Engine semantics: streams, communication on the critical path, determinism, deadlock reports.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/iterations.h"
#include "sim_helpers.h"

namespace pipelab {
namespace {

using testing::run_uniform;

TEST(Engine, EveryComputeActionAppearsOnceInTheTimeline) {
  const Schedule s = add_send_recv(make_schedule("dualpipev", {4, 2, 10, 0}));
  const auto r = sim::simulate(s, sim::UniformCost({}));
  std::size_t compute = 0, sends = 0, recvs = 0;
  for (const auto& rank : r.timeline.ranks) {
    for (const auto& e : rank) {
      compute += e.stream == Stream::Compute;
      sends += e.stream == Stream::Send;
      recvs += e.stream == Stream::Recv;
    }
  }
  EXPECT_EQ(compute, remove_comms(s).action_count());
  EXPECT_EQ(sends, recvs);
  EXPECT_GT(sends, 0u);
}

TEST(Engine, ComputeFollowsListOrderWithoutOverlap) {
  const Schedule s = add_send_recv(make_schedule("zb-v", {4, 2, 8, 0}));
  const auto r = sim::simulate(s, sim::UniformCost({}));
  const Schedule compute = remove_comms(s);
  for (std::size_t rank = 0; rank < s.ranks.size(); ++rank) {
    std::vector<const TimelineEvent*> events;
    for (const auto& e : r.timeline.ranks[rank]) {
      if (e.stream == Stream::Compute) events.push_back(&e);
    }
    ASSERT_EQ(events.size(), compute.ranks[rank].size());
    for (std::size_t k = 0; k < events.size(); ++k) {
      EXPECT_EQ(events[k]->action, *compute.ranks[rank][k]);
      if (k) {
        EXPECT_GE(events[k]->start_ns, events[k - 1]->end_ns);
      }
    }
  }
}

TEST(Engine, CommunicationSitsOnTheCriticalPath) {
  // 1F1B: every stage boundary is crossed once forward and once backward on the critical path.
  for (int P : {2, 4, 8}) {
    for (int m : {1, 2 * P}) {
      sim::UniformTimes t;
      t.f_ns = 100;
      t.i_ns = 100;
      t.w_ns = 100;
      t.comm_ns = 30;
      const auto r = run_uniform("1f1b", P, 1, m, t);
      if (m == 1) {
        EXPECT_EQ(r.timeline.makespan_ns(), P * 300 + 2 * (P - 1) * 30);
      }
      EXPECT_GE(r.timeline.makespan_ns(), (m + P - 1) * 300 + 2 * (P - 1) * 30);
      for (const auto& rank : r.timeline.ranks) {
        for (const auto& e : rank) {
          if (e.stream != Stream::Compute) {
            EXPECT_EQ(e.duration_ns(), 30);
          }
        }
      }
    }
  }
}

TEST(Engine, TransfersSerializeOnTheSendersLink) {
  // GPipe sends m activations back to back; with comm slower than F they queue on the link.
  sim::UniformTimes t;
  t.f_ns = 10;
  t.comm_ns = 100;
  const auto r = run_uniform("gpipe", 2, 1, 4, t);
  std::vector<std::pair<std::int64_t, std::int64_t>> sends;
  for (const auto& e : r.timeline.ranks[0]) {
    if (e.stream == Stream::Send) sends.emplace_back(e.start_ns, e.end_ns);
  }
  ASSERT_EQ(sends.size(), 4u);
  for (std::size_t k = 1; k < sends.size(); ++k) EXPECT_GE(sends[k].first, sends[k - 1].second);
}

// Megatron's merged 1F1B (overlap_forward_backward) costs nothing when a unit is no shorter than
// its halves, and gains when it is: the extra warm-up forward keeps the next rank fed.
TEST(Engine, MergedInterleavedUnitsNeverLengthenTheIteration) {
  for (auto [pp, vp, m] : {std::tuple{4, 2, 8}, {8, 4, 64}, {2, 24, 32}}) {
    const Schedule compute = make_schedule("interleaved-1f1b", {pp, vp, m, 0});
    auto makespan = [&](const Schedule& s, std::int64_t unit) {
      sim::UniformTimes t;
      t.f_ns = 1000;
      t.i_ns = 2000;
      t.w_ns = 0;
      t.fb_ns = unit;
      return compute_metrics(sim::simulate(add_send_recv(s), sim::UniformCost(t)).timeline).makespan_ns;
    };
    const Schedule merged = overlap_forward_backward(compute);
    EXPECT_EQ(makespan(merged, 3000), makespan(compute, 3000)) << pp << " " << vp << " " << m;
    EXPECT_LT(makespan(merged, 2000), makespan(compute, 3000)) << pp << " " << vp << " " << m;
  }
}

// Megatron's merged 1F1B at PP = 1: F0, (F1 & B0), (F2 & B1), ..., B3. A unit run layer by layer
// holds the backward's microbatch plus the forward's largest layer (the backward's layer is freed
// after its phase); one held whole holds both microbatches (DualPipe's accounting).
// F&B units a little shorter than their halves, so they overlap something.
sim::UniformCost merged_unit_cost() {
  sim::UniformTimes t;
  t.f_ns = 100;
  t.i_ns = 200;
  t.fb_ns = 250;
  return sim::UniformCost(t);
}

TEST(Engine, MergedUnitsFreeTheBackwardLayerByLayer) {
  const Schedule merged = add_send_recv(overlap_forward_backward(make_schedule("1f1b", {1, 0, 4, 0})));
  sim::SimOptions options;
  options.activations = {sim::StageActivation{.bytes = 10, .freed_by_input_grad = 8, .allocated_by_input_grad = 0, .largest_layer = 3}};
  auto peak_and_end = [&](bool by_layer) {
    options.overlap_frees_by_layer = by_layer;
    const sim::SimResult r = sim::simulate(merged, merged_unit_cost(), options);
    return std::pair{r.peak_activation_bytes[0], r.memory[0].back().bytes};
  };
  using PeakAndEnd = std::pair<std::int64_t, std::int64_t>;
  EXPECT_EQ(peak_and_end(true), PeakAndEnd(13, 0));
  EXPECT_EQ(peak_and_end(false), PeakAndEnd(20, 0));
}

// Interleaved (pp 2, vp 2), stages of unequal activations: a unit whose forward holds more than its
// backward frees grows by the difference plus the forward's largest layer; one whose forward holds
// less by its largest layer alone; never by more than the forward's whole activation.
TEST(Engine, MergedUnitsOfUnequalStagesHoldTheDifferencePlusALayer) {
  const Schedule merged = add_send_recv(overlap_forward_backward(make_schedule("interleaved-1f1b", {2, 2, 4, 0})));
  sim::SimOptions options;
  // Stage s sits on rank s % 2: rank 0 holds stages 0 and 2, rank 1 stages 1 and 3.
  options.activations = {sim::StageActivation{.bytes = 40, .largest_layer = 10}, sim::StageActivation{.bytes = 8, .largest_layer = 8},
                         sim::StageActivation{.bytes = 12, .largest_layer = 3}, sim::StageActivation{.bytes = 8, .largest_layer = 2}};
  for (auto& a : options.activations) a.freed_by_input_grad = a.bytes;
  const auto held = [&](bool by_layer) {
    options.overlap_frees_by_layer = by_layer;
    return sim::simulate(merged, merged_unit_cost(), options);
  };
  const sim::SimResult whole = held(false), layered = held(true);
  EXPECT_LT(layered.peak_activation_bytes[0], whole.peak_activation_bytes[0]);
  for (int r = 0; r < 2; ++r) {
    EXPECT_LE(layered.peak_activation_bytes[r], whole.peak_activation_bytes[r]) << r;
    EXPECT_EQ(layered.memory[r].back().bytes, 0) << r;
  }
  // Replays rank 0's list by hand with the rule, to check the engine applies it unit by unit.
  std::int64_t now = 0, peak = 0;
  for (const Slot& slot : merged.ranks[0]) {
    if (!slot) continue;
    const Action& a = *slot;
    const auto& act = options.activations;
    if (a.op == Op::F) now += act[a.stage].bytes;
    if (a.op == Op::B) now -= act[a.stage].bytes;
    if (a.op == Op::OverlapFB) {
      const std::int64_t f = act[a.stage].bytes, b = act[a.b_stage].bytes;
      const std::int64_t during = std::min(f, std::max<std::int64_t>(0, f - b) + act[a.stage].largest_layer);
      peak = std::max(peak, now + during);
      now += f - b;
    }
    peak = std::max(peak, now);
  }
  EXPECT_EQ(layered.peak_activation_bytes[0], peak);
}

TEST(Engine, IsDeterministic) {
  for (const char* name : {"interleaved-1f1b", "dualpipe", "zb-h2"}) {
    sim::UniformTimes t;
    t.f_ns = 123;
    t.i_ns = 77;
    t.w_ns = 55;
    t.comm_ns = 9;
    const auto a = run_uniform(name, 4, 0, 16, t, true);
    const auto b = run_uniform(name, 4, 0, 16, t, true);
    EXPECT_EQ(timeline_to_json(a.timeline).dump(), timeline_to_json(b.timeline).dump()) << name;
    EXPECT_EQ(a.memory, b.memory);
  }
}

TEST(Engine, WithoutATimelineTheFiguresAreTheSame) {
  // A plan search ranks by the makespan and the peaks alone: they must not depend on recording.
  sim::UniformTimes t;
  t.f_ns = 120;
  t.i_ns = 70;
  t.w_ns = 50;
  t.comm_ns = 15;
  for (const char* name : {"1f1b", "interleaved-1f1b", "zb-h2", "zb-v", "dualpipev"}) {
    const int vp = std::string(name) == "interleaved-1f1b" ? 2 : 0;
    const Schedule s = add_send_recv(make_schedule(name, {4, vp, 8, 0}));
    sim::SimOptions options;
    for (int stage = 0; stage < s.shape.stages; ++stage) options.activations.push_back({100 + stage, 40});
    const sim::SimResult full = sim::simulate(s, sim::UniformCost(t), options);
    options.record_timeline = false;
    const sim::SimResult lean = sim::simulate(s, sim::UniformCost(t), options);
    EXPECT_EQ(lean.makespan_ns, full.timeline.makespan_ns()) << name;
    EXPECT_EQ(full.makespan_ns, full.timeline.makespan_ns()) << name;
    EXPECT_EQ(lean.peak_activation_bytes, full.peak_activation_bytes) << name;
    EXPECT_EQ(lean.events, full.events) << name;
    for (std::size_t r = 0; r < lean.timeline.ranks.size(); ++r) {
      EXPECT_TRUE(lean.timeline.ranks[r].empty()) << name;
      EXPECT_TRUE(lean.memory[r].empty()) << name;
    }
  }
}

TEST(Engine, ReportsDeadlockWithEveryStuckRank) {
  // Rank 0 waits for stage 1's gradient before sending the activation stage 1 needs.
  Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 1, 0}));
  s.ranks[0] = {Action::make(Op::RecvB, 0, 0), Action::make(Op::B, 0, 0), Action::make(Op::F, 0, 0),
                Action::make(Op::SendF, 0, 0)};
  try {
    sim::simulate(s, sim::UniformCost({}));
    FAIL() << "expected a deadlock";
  } catch (const ScheduleError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank 0 at position 1 (0B0) waits for F(0, mb 0) done"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 1 at position 1 (1F0) waits for SEND_F(0, mb 0) posted"), std::string::npos) << what;
  }
}

TEST(Engine, MemoryTraceReturnsToZero) {
  const auto r = run_uniform("zb-v", 4, 2, 8, {}, true);
  for (const auto& trace : r.memory) {
    ASSERT_FALSE(trace.empty());
    EXPECT_EQ(trace.back().bytes, 0);
    for (std::size_t k = 1; k < trace.size(); ++k) EXPECT_GT(trace[k].time_ns, trace[k - 1].time_ns);
  }
}

TEST(Engine, InputGradAndWeightGradFreeTheirShares) {
  const Schedule s = add_send_recv(make_schedule("zb-h1", {1, 1, 1, 0}));
  sim::SimOptions o;
  o.activations = {{100, 60}};
  const auto r = sim::simulate(s, sim::UniformCost({}), o);
  // F allocates 100, I frees 60, W frees 40.
  ASSERT_EQ(r.memory[0].size(), 3u);
  EXPECT_EQ(r.memory[0][0].bytes, 100);
  EXPECT_EQ(r.memory[0][1].bytes, 40);
  EXPECT_EQ(r.memory[0][2].bytes, 0);
}

TEST(Engine, RejectsAnActivationTableOfTheWrongSize) {
  const Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}));
  sim::SimOptions o;
  o.activations = {{1, 1}};
  EXPECT_THROW(sim::simulate(s, sim::UniformCost({}), o), InputError);
}

class SlowReduceCost : public sim::UniformCost {
 public:
  SlowReduceCost() : sim::UniformCost(sim::UniformTimes{}) {}
  std::int64_t reduce_grad_ns(int, int) const override { return 5000; }
  std::int64_t reduce_grad_bytes(int) const override { return 1 << 20; }
};

TEST(Engine, GradientReductionsOverlapTheCoolDownAndSerializePerRank) {
  // Interleaved: chunk 1's gradients are final before chunk 0's, so its reduction overlaps the
  // remaining backwards; both reductions of a rank share one link.
  const Schedule s = add_reduce_grad(add_send_recv(make_schedule("interleaved-1f1b", {2, 2, 4, 0})));
  const auto r = sim::simulate(s, SlowReduceCost());
  for (const auto& rank : r.timeline.ranks) {
    std::vector<const TimelineEvent*> red;
    std::int64_t last_compute = 0;
    for (const auto& e : rank) {
      if (e.stream == Stream::Collective) red.push_back(&e);
      if (e.stream == Stream::Compute) last_compute = std::max(last_compute, e.end_ns);
    }
    ASSERT_EQ(red.size(), 2u);
    EXPECT_LT(red[0]->start_ns, last_compute);            // overlapped with compute
    EXPECT_GE(red[1]->start_ns, red[0]->end_ns);          // serialized on the link
    EXPECT_EQ(red[0]->bytes, 1 << 20);
  }
  EXPECT_GT(r.timeline.makespan_ns(), 0);
}

// Bucketed reduction (Megatron's overlap_grad_reduce): all but the tail may run from the start of
// the stage's last gradient pass, slowing that pass by the carve-out loss; the tail follows the pass.
class BucketedReduceCost : public sim::UniformCost {
 public:
  BucketedReduceCost(std::int64_t whole, std::int64_t tail) : sim::UniformCost(sim::UniformTimes{}), whole_(whole), tail_(tail) {}
  std::int64_t reduce_grad_ns(int, int) const override { return whole_; }
  std::int64_t reduce_grad_tail_ns(int, int) const override { return tail_; }
  double dp_collective_compute_loss() const override { return 0.1; }

 private:
  std::int64_t whole_, tail_;
};

TEST(Engine, ABucketedReductionStartsWithTheLastGradientPassByHand) {
  // One rank: F0 [0,1000) B0 [1000,3000) F1 [3000,4000) B1 [4000,6000), then the reduction: its body
  // (whole - tail) from B1's start, its tail after B1, which the body slowed by 0.1 x the overlap.
  const Schedule s = add_reduce_grad(add_send_recv(make_schedule("1f1b", {1, 1, 2, 0})));
  using Span = std::pair<std::int64_t, std::int64_t>;
  auto reduction = [&](std::int64_t whole, std::int64_t tail) {
    const auto r = sim::simulate(s, BucketedReduceCost(whole, tail));
    std::vector<Span> spans;
    for (const auto& e : r.timeline.ranks[0]) {
      if (e.stream == Stream::Collective) spans.emplace_back(e.start_ns, e.end_ns);
    }
    EXPECT_EQ(r.makespan_ns, spans.empty() ? 0 : spans.back().second);
    return spans;
  };
  // Body 4000 longer than the pass: [4000, 8000), the pass slowed by 0.1 x 2000 (ends 6200), tail [8000, 9000).
  EXPECT_EQ(reduction(5000, 1000), (std::vector<Span>{{4000, 8000}, {8000, 9000}}));
  // Body 500: [4000, 4500); the pass ends 0.1 x 500 later (6050), then the tail [6050, 7050).
  EXPECT_EQ(reduction(1500, 1000), (std::vector<Span>{{4000, 4500}, {6050, 7050}}));
  // No bucketing (tail = whole): one reduction after the pass.
  EXPECT_EQ(reduction(1500, 1500), (std::vector<Span>{{6000, 7500}}));
}

TEST(Engine, ComputeAfterABucketedReductionWaitsForTheSlowedPassByHand) {
  // One rank, two chunks: ... 1B1 [8000,10000) ends stage 1's gradients. Its reduction (whole 1500, tail
  // 1000): body [8000,8500), which slows 1B1 by 0.1 x 500 (its event ends at 10050), tail [10050,11050).
  // 0B1 waits for 1B1: [10050, 10050 + 2000 + 0.1 x the 1000 ns the tail keeps the link busy = 12150);
  // stage 0's body [11050,11550) slows it by 50 more (12200), then its tail [12200,13200).
  const Schedule s = add_reduce_grad(add_send_recv(make_schedule("interleaved-1f1b", {1, 2, 2, 0})));
  const auto r = sim::simulate(s, BucketedReduceCost(1500, 1000));
  std::vector<std::pair<std::int64_t, std::int64_t>> reductions, backwards;
  for (const auto& e : r.timeline.ranks[0]) {
    if (e.stream == Stream::Collective) reductions.emplace_back(e.start_ns, e.end_ns);
    if (e.stream == Stream::Compute && e.action.op == Op::B && e.action.mb == 1) backwards.emplace_back(e.start_ns, e.end_ns);
  }
  EXPECT_EQ(backwards, (std::vector<std::pair<std::int64_t, std::int64_t>>{{8000, 10050}, {10050, 12200}}));
  EXPECT_EQ(reductions, (std::vector<std::pair<std::int64_t, std::int64_t>>{{8000, 8500}, {10050, 11050}, {11050, 11550}, {12200, 13200}}));
  EXPECT_EQ(r.makespan_ns, 13200);
}

// The next iteration starts after the reduction (sync step): nothing left to owe, its forward runs whole.
TEST(Engine, ANewIterationOwesNothingToTheLastReduction) {
  const sim::RepeatedSchedule repeated = sim::repeat_iterations(add_reduce_grad(add_send_recv(make_schedule("1f1b", {1, 1, 2, 0}))), 2);
  sim::SimOptions o;
  o.iteration_starts = repeated.iteration_starts;
  o.optimizer_step = sim::OptimizerStep::Sync;
  const auto r = sim::simulate(repeated.schedule, BucketedReduceCost(1500, 1000), o);
  std::vector<const TimelineEvent*> forwards;
  for (const auto& e : r.timeline.ranks[0]) {
    if (e.stream == Stream::Compute && e.action.op == Op::F) forwards.push_back(&e);
  }
  ASSERT_EQ(forwards.size(), 4u);
  EXPECT_EQ(forwards[2]->start_ns, 7050);  // after the first iteration's tail [6050, 7050)
  EXPECT_EQ(forwards[2]->duration_ns(), 1000);
}

TEST(Engine, ComputeBesideAReductionIsSlowedByItsCarveOutLoss) {
  const Schedule s = add_reduce_grad(add_send_recv(make_schedule("interleaved-1f1b", {2, 2, 4, 0})));
  const auto r = sim::simulate(s, BucketedReduceCost(5000, 5000));
  int slowed = 0;
  for (const auto& rank : r.timeline.ranks) {
    const TimelineEvent* red = nullptr;
    for (const auto& e : rank) {
      if (e.stream == Stream::Collective && !red) red = &e;
    }
    ASSERT_NE(red, nullptr);
    for (const auto& e : rank) {
      if (e.stream != Stream::Compute || e.start_ns < red->start_ns || e.start_ns >= red->end_ns) continue;
      const std::int64_t base = e.action.op == Op::F ? 1000 : 2000;  // UniformTimes: F 1000, B = I + W
      EXPECT_EQ(e.end_ns - e.start_ns, base + static_cast<std::int64_t>(0.1 * std::min(base, red->end_ns - e.start_ns)));
      ++slowed;
    }
  }
  EXPECT_GT(slowed, 0);
}

// The distributed optimizer's parameter all-gather before each stage's first forward of an iteration
// (Megatron's --overlap-param-gather): the forward's layers wait for their buckets one after another.
class GatherCost : public sim::UniformCost {
 public:
  GatherCost(std::int64_t ns, int buckets, bool aligned) : sim::UniformCost(sim::UniformTimes{}), gather_{ns, 1 << 20, buckets, aligned} {}
  sim::ParamGather param_gather(int, int) const override { return gather_; }

 private:
  sim::ParamGather gather_;
};

using Span = std::pair<std::int64_t, std::int64_t>;
std::vector<Span> spans(const sim::SimResult& r, int rank, Stream stream, Op op = Op::F) {
  std::vector<Span> out;
  for (const auto& e : r.timeline.ranks[static_cast<std::size_t>(rank)]) {
    if (e.stream == stream && (stream != Stream::Compute || e.action.op == op)) out.emplace_back(e.start_ns, e.end_ns);
  }
  return out;
}

TEST(Engine, AForwardWaitsForItsParametersBucketByBucketByHand) {
  // One rank, F 1000, B 2000. One bucket of 3000: F0 ends at 0 + 3000 + 1000, so it starts at 3000; F1
  // does not wait.
  const Schedule s = add_send_recv(make_schedule("1f1b", {1, 1, 2, 0}));
  const auto whole = sim::simulate(s, GatherCost(3000, 1, false));
  EXPECT_EQ(spans(whole, 0, Stream::Collective), (std::vector<Span>{{0, 3000}}));
  EXPECT_EQ(spans(whole, 0, Stream::Compute), (std::vector<Span>{{3000, 4000}, {6000, 7000}}));
  // Four buckets of 500 beside four quarters of the forward (250): the last bucket lands at 2000 and
  // its quarter ends at 2250: F0 starts at 1250.
  EXPECT_EQ(spans(sim::simulate(s, GatherCost(2000, 4, false)), 0, Stream::Compute)[0], (Span{1250, 2250}));
  // A gather faster than the forward leaves its first bucket exposed: 400 / 4 = 100.
  EXPECT_EQ(spans(sim::simulate(s, GatherCost(400, 4, false)), 0, Stream::Compute)[0], (Span{100, 1100}));
  // None: the forward starts at once.
  EXPECT_EQ(spans(sim::simulate(s, GatherCost(0, 1, false)), 0, Stream::Compute)[0], (Span{0, 1000}));
}

TEST(Engine, AlignedGathersStartAheadOfTheirChunksByHand) {
  // One rank, two chunks (at pp 1 the groups are one microbatch: 0F0 1F0 0F1 1F1 ...), a 3000 gather
  // each. Aligned: both at the start, one after the other on the link, [0, 3000) and [3000, 6000): 0F0
  // starts at 3000 (ends 4000); 1F0 would start at 4000 but ends no earlier than 3000 + 3000 + 1000: it
  // starts at 6000. Unaligned, chunk 1's gather starts at 1F0's turn, 4000, and 1F0 at 7000.
  const Schedule s = add_send_recv(make_schedule("interleaved-1f1b", {1, 2, 2, 0}));
  const auto first_forward_of_chunk_1 = [](const sim::SimResult& r) {
    for (const auto& e : r.timeline.ranks[0]) {
      if (e.stream == Stream::Compute && e.action.op == Op::F && e.action.stage == 1) return e.start_ns;
    }
    return std::int64_t{-1};
  };
  const auto aligned = sim::simulate(s, GatherCost(3000, 1, true));
  EXPECT_EQ(spans(aligned, 0, Stream::Collective), (std::vector<Span>{{0, 3000}, {3000, 6000}}));
  EXPECT_EQ(first_forward_of_chunk_1(aligned), 6000);
  const auto unaligned = sim::simulate(s, GatherCost(3000, 1, false));
  EXPECT_EQ(spans(unaligned, 0, Stream::Collective), (std::vector<Span>{{0, 3000}, {4000, 7000}}));
  EXPECT_EQ(first_forward_of_chunk_1(unaligned), 7000);
}

TEST(Engine, EveryIterationGathersAgain) {
  const sim::RepeatedSchedule repeated = sim::repeat_iterations(add_send_recv(make_schedule("1f1b", {1, 1, 2, 0})), 2);
  sim::SimOptions o;
  o.iteration_starts = repeated.iteration_starts;
  o.optimizer_step = sim::OptimizerStep::Sync;
  const auto r = sim::simulate(repeated.schedule, GatherCost(3000, 1, false), o);
  // Iteration 1: gather [0, 3000), F [3000, 4000) B [4000, 6000) F [6000, 7000) B [7000, 9000); iteration 2
  // the same from 9000.
  EXPECT_EQ(spans(r, 0, Stream::Collective), (std::vector<Span>{{0, 3000}, {9000, 12000}}));
  EXPECT_EQ(spans(r, 0, Stream::Compute), (std::vector<Span>{{3000, 4000}, {6000, 7000}, {12000, 13000}, {15000, 16000}}));
  EXPECT_EQ(r.makespan_ns, 18000);
}

// A data-parallel collective's SMs slow the compute beside it, unless the forward is paced by its
// parameters' buckets: F 1000, b = 4, share 0.1. Gather 400 (compute-bound, 100 exposed): 0F0 starts at
// 100 and runs beside the gather's last 300 ns: 1000 + 0.1 x 300. Gather 2000 (gather-bound): 0F0 runs
// [1250, 2250) unslowed.
class SharedSmGatherCost : public GatherCost {
 public:
  explicit SharedSmGatherCost(std::int64_t ns) : GatherCost(ns, 4, false) {}
  double dp_collective_compute_loss() const override { return 0.1; }
};

TEST(Engine, AForwardBesideItsGatherIsSlowedOnlyWhenItsComputeBindsByHand) {
  const Schedule s = add_send_recv(make_schedule("1f1b", {1, 1, 2, 0}));
  EXPECT_EQ(spans(sim::simulate(s, SharedSmGatherCost(400)), 0, Stream::Compute)[0], (Span{100, 1130}));
  EXPECT_EQ(spans(sim::simulate(s, SharedSmGatherCost(2000)), 0, Stream::Compute)[0], (Span{1250, 2250}));
}

TEST(Engine, EveryIterationGathersAgainWithTheOverlappedStep) {
  const sim::RepeatedSchedule repeated = sim::repeat_iterations(add_send_recv(make_schedule("1f1b", {1, 1, 2, 0})), 2);
  sim::SimOptions o;
  o.iteration_starts = repeated.iteration_starts;
  o.optimizer_step = sim::OptimizerStep::Overlap;
  o.optimizer_step_ns = 500;
  const auto r = sim::simulate(repeated.schedule, GatherCost(3000, 1, false), o);
  // Iteration 1 ends at 9000; the rank's own step [9000, 9500); the gather [9500, 12500).
  EXPECT_EQ(spans(r, 0, Stream::Collective), (std::vector<Span>{{0, 3000}, {9500, 12500}}));
  EXPECT_EQ(spans(r, 0, Stream::Compute)[2], (Span{12500, 13500}));
}

// Aligned, chunk k + 1 (k >= 1) is gathered pp_rank forward steps before chunk k's first forward
// (Megatron's param_sync_func): rank 1 of pp 2 with 3 chunks gathers chunk 2 one forward step before
// chunk 1's first; rank 0 at chunk 1's first forward.
TEST(Engine, AlignedGathersOfLaterChunksStartPpRankForwardsAhead) {
  const Schedule s = add_send_recv(make_schedule("interleaved-1f1b", {2, 3, 4, 0}));
  const auto r = sim::simulate(s, GatherCost(100, 1, true));
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<const TimelineEvent*> forwards, gathers;
    for (const auto& e : r.timeline.ranks[static_cast<std::size_t>(rank)]) {
      if (e.stream == Stream::Compute && e.action.op == Op::F) forwards.push_back(&e);
      if (e.stream == Stream::Collective && e.action.op == Op::F) gathers.push_back(&e);
    }
    ASSERT_EQ(gathers.size(), 3u) << rank;
    // The forward steps: chunk 1's first is the pp-th forward (index 2), so chunk 2's gather starts
    // with forward 2 - rank (the link is free by then: the gathers take 100 ns).
    const TimelineEvent* chunk2 = gathers[2];
    EXPECT_EQ(chunk2->action.stage, 2 * 2 + rank);
    EXPECT_EQ(chunk2->start_ns, forwards[static_cast<std::size_t>(2 - rank)]->start_ns) << rank;
  }
}

// Every schedule family, two iterations, aligned or not: each stage a rank runs forwards for gathers
// once per iteration, each gather ending before the forward it precedes; nothing deadlocks.
TEST(Engine, EveryScheduleGathersOncePerChunkAndIteration) {
  for (const bool aligned : {false, true}) {
    for (const ScheduleInfo& info : schedule_registry()) {
      const Schedule lowered = add_send_recv(make_schedule(info.name, {4, 0, 8, 0}));
      const sim::RepeatedSchedule repeated = sim::repeat_iterations(lowered, 2);
      sim::SimOptions o;
      o.iteration_starts = repeated.iteration_starts;
      const auto r = sim::simulate(repeated.schedule, GatherCost(700, 2, aligned), o);
      for (std::size_t rank = 0; rank < r.timeline.ranks.size(); ++rank) {
        std::set<int> forwarded;
        std::vector<const TimelineEvent*> gathers;
        for (const auto& e : r.timeline.ranks[rank]) {
          if (e.stream == Stream::Compute && (e.action.op == Op::F || e.action.op == Op::OverlapFB)) forwarded.insert(e.action.stage);
          if (e.stream == Stream::Collective) gathers.push_back(&e);
        }
        std::set<int> gathered;
        for (const TimelineEvent* g : gathers) gathered.insert(g->action.stage);
        EXPECT_EQ(gathered, forwarded) << info.name << " rank " << rank;
        EXPECT_EQ(gathers.size(), 2 * forwarded.size()) << info.name << " rank " << rank;
        for (const TimelineEvent* g : gathers) {  // the forward it is labelled with ends after it
          for (const auto& e : r.timeline.ranks[rank]) {
            if (e.stream == Stream::Compute && (e.action.op == Op::F || e.action.op == Op::OverlapFB) && e.action.stage == g->action.stage &&
                e.action.mb == g->action.mb) {
              EXPECT_LE(g->end_ns, e.end_ns) << info.name << " rank " << rank;
            }
          }
        }
      }
      EXPECT_GT(r.makespan_ns, 0) << info.name;
    }
  }
}

TEST(Engine, InputGradCanAllocateWhatItsWeightGradNeeds) {
  // Full recompute: F keeps 100 (the input), I frees it and rebuilds a 30-byte stash, W frees that.
  const Schedule s = add_send_recv(make_schedule("zb-h1", {1, 1, 1, 0}));
  sim::SimOptions o;
  o.activations = {{100, 100, 30}};
  const auto r = sim::simulate(s, sim::UniformCost({}), o);
  ASSERT_EQ(r.memory[0].size(), 3u);
  EXPECT_EQ(r.memory[0][0].bytes, 100);
  EXPECT_EQ(r.memory[0][1].bytes, 30);
  EXPECT_EQ(r.memory[0][2].bytes, 0);
}

}  // namespace
}  // namespace pipelab
