// The analytic model's phases (docs/simulator.md, "Phases"): an MoE action's phases add up to its
// duration and their exposed communication to its in-action communication; an F&B unit's four
// overlapped phases are each the longer of a compute and a transfer, by hand; dense stages and the
// other cost models have none; a simulation carries one entry per action kind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/simulation.h"
#include "pipelab/sim/uniform_cost.h"
#include "sim_helpers.h"

namespace pipelab {
namespace {

// Mixtral 8x7B on 32 GPUs: TP2 PP4 DP4 EP4 (TP traffic too), `vp` chunks per rank.
ParallelConfig mixtral_ep4(const ModelSpec& model, int vp) { return testing::moe_layout(model, 2, 4, 4, 4, 64, vp); }

double sum_ns(const std::vector<Phase>& phases) {
  double s = 0;
  for (const Phase& p : phases) s += static_cast<double>(p.ns);
  return s;
}
double sum_exposed(const std::vector<Phase>& phases) {
  double s = 0;
  for (const Phase& p : phases) s += static_cast<double>(p.exposed_comm_ns);
  return s;
}
std::vector<std::string> names(const std::vector<Phase>& phases) {
  std::vector<std::string> out;
  for (const Phase& p : phases) out.push_back(p.name);
  return out;
}

class Phases : public ::testing::Test {
 protected:
  const ModelSpec model_ = model_preset("mixtral-8x7b");
  const Schedule schedule_ = make_schedule("dualpipev", {4, 2, 8, 0});
  const sim::AnalyticCost cost_{model_, gpu_preset("h100-sxm"), mixtral_ep4(model_, 2), schedule_.shape};
};

// Recomputing the MoE layers (selective "moe") re-runs their dispatch, its wait for the host included.
ParallelConfig mixtral_recomputing_moe(const ModelSpec& model) {
  ParallelConfig c = mixtral_ep4(model, 2);
  c.recompute = Recompute::kSelective;
  c.recompute_modules = {"moe"};
  return c;
}

TEST_F(Phases, EachMoeActionSplitsIntoItsDurationAndItsExposedCommunication) {
  const sim::AnalyticCost recomputing(model_, gpu_preset("h100-sxm"), mixtral_recomputing_moe(model_), schedule_.shape);
  ASSERT_GT(recomputing.stage(6).i.ep_host_gap_ns, 0);
  const std::pair<const sim::AnalyticCost*, Action> cases[] = {
      {&cost_, Action::make(Op::F, 1, 0)}, {&cost_, Action::make(Op::B, 6, 0)},       {&cost_, Action::make(Op::I, 6, 0)},
      {&cost_, Action::make(Op::W, 6, 0)}, {&cost_, Action::overlap(1, 0, 6, 0)},     {&recomputing, Action::make(Op::B, 6, 0)},
      {&recomputing, Action::make(Op::I, 6, 0)}};
  for (const auto& [model, a] : cases) {
    const sim::AnalyticCost& cost = *model;
    const std::vector<Phase> phases = cost.phases(0, a);
    ASSERT_FALSE(phases.empty()) << to_string(a);
    // Each phase rounds to the ns on its own.
    EXPECT_NEAR(sum_ns(phases), static_cast<double>(cost.duration_ns(0, a)), static_cast<double>(phases.size())) << to_string(a);
    const sim::InActionComm comm = cost.in_action_comm(0, a);
    EXPECT_NEAR(sum_exposed(phases), comm.tp_ns + comm.ep_ns + comm.cp_ns + comm.fsdp_ns, static_cast<double>(phases.size()))
        << to_string(a);
    for (const Phase& p : phases) {
      EXPECT_GT(p.ns, 0) << p.name;
      EXPECT_LE(p.exposed_comm_ns, p.ns) << p.name;
      EXPECT_GE(p.exposed_comm_ns, 0) << p.name;
    }
  }
  EXPECT_EQ(names(cost_.phases(0, Action::make(Op::F, 1, 0))),
            (std::vector<std::string>{"attention & dense", "dispatch", "experts", "combine", "tp/cp/fsdp comm"}));
  // The backward meets the combine's gradient first.
  EXPECT_EQ(names(cost_.phases(0, Action::make(Op::B, 6, 0))),
            (std::vector<std::string>{"combine", "experts", "dispatch", "attention & dense", "tp/cp/fsdp comm"}));
  // Weight gradients move no tokens and no activations.
  EXPECT_EQ(names(cost_.phases(0, Action::make(Op::W, 6, 0))), (std::vector<std::string>{"experts", "attention & dense"}));
}

// The shared experts beside the transfers (--moe-shared-expert-overlap) shorten the dispatch and combine
// phases to their exposed parts; the phases still add up to the action and its in-action communication.
TEST(PhasesOf, SharedExpertOverlapLeavesTheExposedTransfer) {
  ModelSpec m = model_preset("deepseek-v3");
  m.num_layers = 4;
  m.num_dense_layers = 1;
  m.mtp_num_layers = 0;
  ParallelConfig c = testing::moe_layout(m, 1, 2, 8, 8, 64, 1);
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  c.moe_shared_expert_overlap = true;
  const Schedule schedule = make_schedule("1f1b", {2, 1, 8, 0});
  const sim::AnalyticCost cost(m, gpu_preset("h100-sxm"), c, schedule.shape);
  ASSERT_GT(cost.stage(1).f.ep_hidden_dispatch_ns, 0);
  for (const Action& a : {Action::make(Op::F, 1, 0), Action::make(Op::B, 1, 0)}) {
    const std::vector<Phase> phases = cost.phases(0, a);
    EXPECT_NEAR(sum_ns(phases), static_cast<double>(cost.duration_ns(0, a)), static_cast<double>(phases.size())) << to_string(a);
    const sim::InActionComm comm = cost.in_action_comm(0, a);
    EXPECT_NEAR(sum_exposed(phases), comm.tp_ns + comm.ep_ns + comm.cp_ns + comm.fsdp_ns, static_cast<double>(phases.size()))
        << to_string(a);
  }
  const sim::PassCost& f = cost.stage(1).f;
  const std::vector<Phase> phases = cost.phases(0, Action::make(Op::F, 1, 0));
  const double half = (f.ep_comm_ns - f.ep_host_gap_ns) / 2;
  EXPECT_EQ(phases[1].name, "dispatch");
  EXPECT_NEAR(static_cast<double>(phases[1].ns), half + f.ep_host_gap_ns - f.ep_hidden_dispatch_ns, 1);
  EXPECT_EQ(phases[3].name, "combine");
  EXPECT_NEAR(static_cast<double>(phases[3].ns), half - f.ep_hidden_combine_ns, 1);
}

// With the alltoall dispatcher no SMs go to the transfer: each phase is the longer of its compute
// and the other half's transfer (docs/simulator.md, "F&B units"). F's dispatch also holds the GPU
// idle after its wait for the host (dropless).
TEST_F(Phases, OverlappedPhasesAreTheLongerOfComputeAndTransferByHand) {
  const sim::PassCost& f = cost_.stage(1).f;
  sim::PassCost b = cost_.stage(6).i;
  b += cost_.stage(6).w;
  ASSERT_GT(f.ep_host_gap_ns, 0);
  EXPECT_EQ(b.ep_host_gap_ns, 0);  // the backward reuses the forward's token counts
  const double f_combine = (f.ep_comm_ns - f.ep_host_gap_ns) / 2, f_dispatch = f_combine + f.ep_host_gap_ns;
  const double b_half = b.ep_comm_ns / 2;
  const double f_attention = f.compute_ns() - f.expert_ns, b_attention = b.compute_ns() - b.expert_ns;
  const std::vector<Phase> phases = cost_.phases(0, Action::overlap(1, 0, 6, 0));
  ASSERT_EQ(phases.size(), 5u);
  const double by_hand[] = {std::max(f_attention, b_half), std::max(b.expert_ns, f_dispatch), std::max(f.expert_ns, b_half),
                            std::max(b_attention, f_combine)};
  const double compute[] = {f_attention, b.expert_ns, f.expert_ns, b_attention};
  const double transfer[] = {b_half, f_dispatch, b_half, f_combine};
  for (int k = 0; k < 4; ++k) {
    EXPECT_NEAR(static_cast<double>(phases[k].ns), by_hand[k], 1) << phases[k].name;
    EXPECT_NEAR(static_cast<double>(phases[k].comm_ns), transfer[k], 1) << phases[k].name;
    EXPECT_NEAR(static_cast<double>(phases[k].exposed_comm_ns), by_hand[k] - compute[k], 1) << phases[k].name;
  }
  EXPECT_EQ(phases[4].name, "tp/cp/fsdp comm");
  EXPECT_NEAR(static_cast<double>(phases[4].ns), f.tp_comm_ns + f.cp_comm_ns + f.dp_comm_ns + b.tp_comm_ns + b.cp_comm_ns + b.dp_comm_ns, 1);
}

TEST(PhasesOf, DenseStagesAndOtherCostModelsHaveNone) {
  const ModelSpec llama = model_preset("llama3-8b");
  ParallelConfig c;
  c.tp = 2;
  c.pp = 4;
  c.dp = 1;
  c.gbs = 8;
  c = resolve(c, llama);
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const sim::AnalyticCost dense(llama, gpu_preset("h100-sxm"), c, s.shape);
  EXPECT_TRUE(dense.phases(0, Action::make(Op::F, 0, 0)).empty());
  EXPECT_TRUE(dense.phases(0, Action::make(Op::B, 3, 0)).empty());
  EXPECT_TRUE(sim::UniformCost(sim::UniformTimes{}).phases(0, Action::make(Op::F, 0, 0)).empty());
}

// A simulation lists each action kind once, every MoE compute event finds its kind, and a ranking
// (no timeline) lists none.
TEST(PhasesOf, SimulationCarriesOneEntryPerActionKind) {
  sim::SimulationRequest r;
  r.model = model_preset("mixtral-8x7b");
  r.gpu = gpu_preset("h100-sxm");
  r.config = mixtral_ep4(r.model, 0);
  r.schedule = "dualpipev";
  const sim::SimulationOutcome o = sim::simulate_config(r);
  ASSERT_FALSE(o.phases.empty());
  std::set<std::tuple<Op, int, int>> kinds;
  for (const ActionPhases& k : o.phases) EXPECT_TRUE(kinds.emplace(k.op, k.stage, k.b_stage).second) << "listed twice";
  for (const auto& rank : o.result.timeline.ranks) {
    for (const TimelineEvent& e : rank) {
      if (e.stream == Stream::Compute) {
        EXPECT_NE(find_phases(o.phases, e.action), nullptr) << to_string(e.action);
      }
    }
  }
  r.ranking_only = true;
  EXPECT_TRUE(sim::simulate_config(r).phases.empty());
}

}  // namespace
}  // namespace pipelab
