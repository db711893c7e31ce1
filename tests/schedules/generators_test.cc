// Every generator over a grid of shapes: validates, runs each (stage, microbatch) exactly once,
// per-rank counts match the closed forms, and the published warm-up counts and placements hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/validate.h"
#include "schedule_grid.h"

namespace pipelab {
namespace {

using testing::GridCase;

struct Counts {
  int f = 0, b = 0, i = 0, w = 0, overlap = 0;
};

Counts count_rank(const std::vector<Slot>& list) {
  Counts c;
  for (const Slot& s : list) {
    if (!s) continue;
    switch (s->op) {
      case Op::F: ++c.f; break;
      case Op::B: ++c.b; break;
      case Op::I: ++c.i; break;
      case Op::W: ++c.w; break;
      case Op::OverlapFB: ++c.overlap; ++c.f; ++c.b; break;
      default: break;
    }
  }
  return c;
}

class EveryGenerator : public ::testing::TestWithParam<GridCase> {
 protected:
  Schedule make() const {
    const GridCase& c = GetParam();
    return make_schedule(c.schedule, {c.pp, c.vp, c.microbatches, 0});
  }
};

TEST_P(EveryGenerator, Validates) {
  const Schedule s = make();
  const Validation v = validate(s);
  EXPECT_TRUE(v.ok()) << v.report(s);
}

TEST_P(EveryGenerator, RunsEachStageMicrobatchExactlyOnce) {
  const Schedule s = make();
  // (op kind, stage, mb) -> occurrences, counting overlap halves.
  std::map<std::tuple<char, int, int>, int> seen;
  for (const auto& list : s.ranks) {
    for (const Slot& a : list) {
      if (!a) continue;
      if (a->op == Op::OverlapFB) {
        ++seen[{'F', a->stage, a->mb}];
        ++seen[{'B', a->b_stage, a->b_mb}];
      } else {
        ++seen[{op_name(a->op)[0], a->stage, a->mb}];
      }
    }
  }
  const PipelineShape& sh = s.shape;
  for (int st = 0; st < sh.stages; ++st) {
    for (int mb = 0; mb < sh.microbatches; ++mb) {
      const bool flows = sh.chain_of_microbatch(mb) == sh.chain_of_stage(st);
      const int f = seen[{'F', st, mb}], b = seen[{'B', st, mb}], i = seen[{'I', st, mb}], w = seen[{'W', st, mb}];
      EXPECT_EQ(f, flows ? 1 : 0) << "F stage " << st << " mb " << mb;
      EXPECT_EQ(b + i, flows ? 1 : 0) << "B/I stage " << st << " mb " << mb;
      EXPECT_EQ(w, i) << "W stage " << st << " mb " << mb;
    }
  }
}

TEST_P(EveryGenerator, PerRankCountsMatchClosedForms) {
  const GridCase& c = GetParam();
  const Schedule s = make();
  const ScheduleInfo& info = find_schedule(c.schedule);
  const int per_chain = s.shape.microbatches_per_chain();
  for (int r = 0; r < c.pp; ++r) {
    const Counts n = count_rank(s.ranks[static_cast<std::size_t>(r)]);
    const int stages_here = static_cast<int>(s.shape.stages_of_rank(r).size());
    EXPECT_EQ(stages_here, s.shape.stages / c.pp) << "rank " << r;
    EXPECT_EQ(n.f, stages_here * per_chain) << "rank " << r;
    EXPECT_EQ(n.b + n.i, stages_here * per_chain) << "rank " << r;
    EXPECT_EQ(n.w, n.i) << "rank " << r;
    if (!info.splits_backward) {
      EXPECT_EQ(n.i, 0) << "rank " << r;
    }
    if (c.schedule == "zb-h1" || c.schedule == "zb-h2" || c.schedule == "zb-v") {
      EXPECT_EQ(n.b, 0) << "rank " << r;
    }
    if (c.schedule == "dualpipev") {
      EXPECT_EQ(n.i, 2 * c.pp - r - 1) << "rank " << r;  // backwards split into I + deferred W
      EXPECT_EQ(n.overlap, 2 * (c.microbatches - 2 * c.pp + r + 1) - (r == c.pp - 1 ? 1 : 0) + (c.pp - r - 1));
    }
    if (c.schedule == "dualpipe") {
      const int h = std::min(r, c.pp - 1 - r);
      EXPECT_EQ(n.i, c.pp - h - 1) << "rank " << r;
    }
  }
}

TEST_P(EveryGenerator, LowersToAValidScheduleWithMatchedComms) {
  const Schedule s = make();
  const Schedule lowered = add_send_recv(s);
  const Validation v = validate(lowered);
  EXPECT_TRUE(v.ok()) << v.report(lowered);
  EXPECT_EQ(remove_comms(lowered).action_count(), s.action_count());
  int sends = 0, recvs = 0;
  for (const auto& list : lowered.ranks) {
    for (const Slot& a : list) {
      sends += a && (a->op == Op::SendF || a->op == Op::SendB);
      recvs += a && (a->op == Op::RecvF || a->op == Op::RecvB);
    }
  }
  EXPECT_EQ(sends, recvs);
  // One activation and one gradient per boundary that crosses ranks, per microbatch.
  int crossings = 0;
  for (int st = 0; st + 1 < s.shape.stages; ++st) {
    if (s.shape.chain_of_stage(st) == s.shape.chain_of_stage(st + 1) && s.shape.rank_of(st) != s.shape.rank_of(st + 1)) ++crossings;
  }
  EXPECT_EQ(sends, 2 * crossings * s.shape.microbatches_per_chain());
}

TEST_P(EveryGenerator, ReduceGradFollowsEachStagesLastWeightGrad) {
  const Schedule s = add_reduce_grad(add_send_recv(make()));
  const Validation v = validate(s);
  EXPECT_TRUE(v.ok()) << v.report(s);
  for (const auto& list : s.ranks) {
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (!list[k] || list[k]->op != Op::ReduceGrad) continue;
      ASSERT_GT(k, 0u);
      const Action& prev = *list[k - 1];
      const int stage = prev.op == Op::OverlapFB ? prev.b_stage : prev.stage;
      EXPECT_TRUE(prev.op == Op::W || prev.op == Op::B || prev.op == Op::OverlapFB) << to_string(prev);
      EXPECT_EQ(stage, list[k]->stage);
    }
  }
  int reductions = 0;
  for (const auto& list : s.ranks) {
    for (const Slot& a : list) reductions += a && a->op == Op::ReduceGrad;
  }
  EXPECT_EQ(reductions, s.shape.stages);
}

TEST_P(EveryGenerator, SplitAndMergeOfBackwardsStayValid) {
  const Schedule s = make();
  const Schedule split = split_backward(s);
  EXPECT_TRUE(validate(split).ok()) << validate(split).report(split);
  const Schedule merged = merge_backward(s);
  EXPECT_TRUE(validate(merged).ok()) << validate(merged).report(merged);
  for (const auto& list : merged.ranks) {
    for (const Slot& a : list) EXPECT_TRUE(!a || (a->op != Op::I && a->op != Op::W));
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, EveryGenerator, ::testing::ValuesIn(testing::schedule_grid()),
                         [](const auto& info) { return testing::grid_case_name(info.param); });

TEST(ScheduleGrid, CoversEverySchedule) {
  std::map<std::string, int> per_schedule;
  for (const GridCase& c : testing::schedule_grid()) ++per_schedule[c.schedule];
  for (const ScheduleInfo& info : schedule_registry()) EXPECT_GE(per_schedule[info.name], 10) << info.name;
}

// ---- published warm-up counts and placements -----------------------------------------------

// Forwards (per stage) a rank runs before its first backward of any kind.
std::map<int, int> forwards_before_first_backward(const std::vector<Slot>& list) {
  std::map<int, int> n;
  for (const Slot& a : list) {
    if (!a) continue;
    if (a->op == Op::B || a->op == Op::I || a->op == Op::OverlapFB) break;
    if (a->op == Op::F) ++n[a->stage];
  }
  return n;
}

TEST(WarmUp, OneFOneBRunsPMinusRForwardsFirst) {
  for (int pp : {2, 4, 8}) {
    for (int m : {1, 3, 8, 16}) {
      const Schedule s = make_schedule("1f1b", {pp, 1, m, 0});
      for (int r = 0; r < pp; ++r) EXPECT_EQ(forwards_before_first_backward(s.ranks[r])[r], std::min(pp - r, m));
    }
  }
}

TEST(WarmUp, InterleavedFollowsMegatronFormula) {
  for (int pp : {2, 4}) {
    for (int v : {2, 3}) {
      for (int m : {pp, 2 * pp, 4 * pp}) {
        const Schedule s = make_schedule("interleaved-1f1b", {pp, v, m, 0});
        for (int r = 0; r < pp; ++r) {
          int total = 0;
          for (auto [stage, n] : forwards_before_first_backward(s.ranks[r])) total += n;
          EXPECT_EQ(total, std::min((pp - r - 1) * 2 + (v - 1) * pp + 1, m * v)) << "pp " << pp << " v " << v << " m " << m;
        }
      }
    }
  }
}

TEST(WarmUp, InterleavedPlacesStagesInALoop) {
  const Schedule s = make_schedule("interleaved-1f1b", {4, 2, 8, 0});
  EXPECT_EQ(s.shape.placement, Placement::Loop);
  EXPECT_EQ(s.shape.stages_of_rank(1), (std::vector<int>{1, 5}));  // Megatron: device 1 has chunks 1 and 5
}

TEST(WarmUp, ZbH2RunsTwoPMinusTwoRMinusOneForwardsFirst) {
  for (int pp : {2, 4, 5}) {
    const Schedule s = make_schedule("zb-h2", {pp, 1, 4 * pp, 0});
    for (int r = 0; r < pp; ++r) EXPECT_EQ(forwards_before_first_backward(s.ranks[r])[r], 2 * (pp - r) - 1);
  }
}

TEST(WarmUp, ZbVRunsChunkZeroDownThenTurns) {
  for (int pp : {2, 3, 4}) {
    const Schedule s = make_schedule("zb-v", {pp, 2, 2 * pp, 0});
    EXPECT_EQ(s.shape.placement, Placement::V);
    for (int r = 0; r < pp; ++r) {
      EXPECT_EQ(s.shape.stages_of_rank(r), (std::vector<int>{r, 2 * pp - 1 - r}));
      auto n = forwards_before_first_backward(s.ranks[r]);
      // ZB paper §6 (1-based worker i): 2p-i chunk-0 and i-1 chunk-1 forwards, then the steady 1F-1I-1W
      // starts with one more chunk-1 forward.
      EXPECT_EQ(n[r], 2 * pp - 1 - r);
      EXPECT_EQ(n[2 * pp - 1 - r], r + 1);
    }
  }
}

TEST(WarmUp, DualPipeVFollowsItsPhases) {
  for (int pp : {2, 4, 8}) {
    const Schedule s = make_schedule("dualpipev", {pp, 2, 2 * pp + 2, 0});
    for (int r = 0; r < pp; ++r) {
      auto n = forwards_before_first_backward(s.ranks[r]);
      // Steps 1-2: 2(P-r-1) + (r+1) chunk-0 forwards; the last rank runs step 4's first F0 on its own.
      EXPECT_EQ(n[r], 2 * pp - r - 1 + (r == pp - 1 ? 1 : 0));
      EXPECT_EQ(n[2 * pp - 1 - r], r + 1);
    }
  }
}

TEST(Placement, DualPipeRanksHoldOneStageOfEachDirection) {
  const Schedule s = make_schedule("dualpipe", {4, 2, 8, 0});
  EXPECT_EQ(s.shape.chains, 2);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.shape.stages_of_rank(r), (std::vector<int>{r, 7 - r}));
    // Both stages hold the same model parts as in DualPipe's example: full_modules[r] and [P-1-r].
    EXPECT_EQ(s.shape.part_of_stage(r), r);
    EXPECT_EQ(s.shape.part_of_stage(7 - r), 3 - r);
  }
  // Microbatches 0..3 flow down (rank 0 first), 4..7 flow up (rank 3 first).
  EXPECT_EQ(s.ranks[0][0], Slot(Action::make(Op::F, 0, 0)));
  EXPECT_EQ(s.ranks[3][0], Slot(Action::make(Op::F, 4, 4)));
}

// ZB paper Fig. 3 (p=4, m=8), 0-based.
TEST(PublishedOrder, ZbH1MatchesThePaperFigure) {
  const Schedule s = make_schedule("zb-h1", {4, 1, 8, 0});
  auto text = [&](int r) {
    std::string out;
    for (const Slot& a : s.ranks[r]) out += (out.empty() ? "" : " ") + to_string(*a);
    return out;
  };
  EXPECT_EQ(text(0), "0F0 0F1 0F2 0F3 0I0 0W0 0F4 0I1 0W1 0F5 0I2 0W2 0F6 0I3 0W3 0F7 0I4 0W4 0I5 0W5 0I6 0W6 0I7 0W7");
  EXPECT_EQ(text(1), "1F0 1F1 1F2 1I0 1F3 1I1 1W0 1F4 1I2 1W1 1F5 1I3 1W2 1F6 1I4 1W3 1F7 1I5 1W4 1I6 1W5 1I7 1W6 1W7");
  EXPECT_EQ(text(3), "3F0 3I0 3F1 3I1 3F2 3I2 3F3 3I3 3W0 3F4 3I4 3W1 3F5 3I5 3W2 3F6 3I6 3W3 3F7 3I7 3W4 3W5 3W6 3W7");
}

}  // namespace
}  // namespace pipelab
