// Tests of plan/plan.cc: best layouts known by construction, exclusion counters on a hand-countable
// space, no rule-breaking layout simulated, bad input, the time budget, rule normalisation.
#include "pipelab/plan/plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "pipelab/base/error.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::plan {
namespace {

constexpr std::int64_t kGiB = 1024LL * 1024 * 1024;

// A small space: one schedule choice per pipeline depth, no memory savings, one micro-batch size.
PlanRequest small_request(const std::string& model, int gpus, int gbs, int seq) {
  PlanRequest r;
  r.model = model_preset(model);
  r.gpu = gpu_preset("h100-sxm");
  r.gpus = gpus;
  r.gbs = gbs;
  r.seq_length = seq;
  r.schedules = {"1f1b"};
  r.mbs = {1};
  r.recompute = {Recompute::kNone};
  r.fsdp = {Fsdp::kNone};
  r.embedding_loss_aware = false;
  r.threads = 2;
  return r;
}

TEST(Plan, PureDataParallelWinsWhenOneGpuHoldsTheModel) {
  // Long sequences: a microbatch's compute dwarfs the data-parallel gradient reduction.
  PlanRequest r = small_request("gpt-1.5b", 8, 64, 8192);
  r.schedules = {"1f1b", "interleaved-1f1b", "zb-h1"};
  const PlanOutcome out = run_plan(r);
  ASSERT_FALSE(out.top.empty());
  const ParallelConfig& best = out.top.front().config;
  EXPECT_EQ(best.tp, 1);
  EXPECT_EQ(best.pp, 1);
  EXPECT_EQ(best.cp, 1);
  EXPECT_EQ(best.dp, 8);
  EXPECT_TRUE(out.complete);
  ASSERT_TRUE(out.why.has_value());
  EXPECT_GE(out.why->lines.size(), 4u);
}

TEST(Plan, AModelThatOnlyFitsWithFourStagesGetsThem) {
  // One GPU per node keeps TP at 1; the memory sits between what PP=2 and PP=4 need.
  PlanRequest r = small_request("llama3-8b", 8, 32, 2048);
  r.gpu.gpus_per_node = 1;
  r.max_cp = 1;
  auto peak = [&](int pp) {
    sim::SimulationRequest q;
    q.model = r.model;
    q.gpu = r.gpu;
    q.gpu.hbm_bytes = 1000 * kGiB;
    q.config.pp = pp;
    q.config.world = 8;
    q.config.gbs = 32;
    q.config.seq_length = 2048;
    q.config = resolve(q.config, q.model);
    q.schedule = "1f1b";
    const sim::SimulationOutcome o = sim::simulate_config(q);
    return *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end());
  };
  const std::int64_t pp2 = peak(2), pp4 = peak(4);
  ASSERT_LT(pp4, pp2);
  r.gpu.hbm_bytes = r.gpu.reserved_memory_bytes + (pp2 + pp4) / 2;
  const PlanOutcome out = run_plan(r);
  ASSERT_FALSE(out.top.empty());
  EXPECT_GE(out.top.front().config.pp, 4);
  for (const PlanPoint& p : out.points) {
    if (p.fits) {
      EXPECT_GE(p.config.pp, 4) << "pp=" << p.config.pp << " fits";
    }
  }
}

// At PP = 1 the layout runs as Megatron runs it (each microbatch's forward, then its backward):
// 1F1B, whatever the order of --schedules, not GPipe with every microbatch's activations held.
TEST(Plan, OnePipelineRankRunsAsOneFOneBWhateverTheScheduleOrder) {
  PlanRequest r = small_request("llama3-8b", 8, 64, 8192);
  r.schedules = {"gpipe", "dualpipe", "1f1b"};
  r.fsdp = {Fsdp::kMegatron};
  r.max_cp = 1;
  const PlanOutcome out = run_plan(r);
  bool seen_pp1 = false;
  for (const PlanPoint& p : out.points) {
    if (p.config.pp != 1) continue;
    seen_pp1 = true;
    EXPECT_EQ(p.schedule, "1f1b");
  }
  EXPECT_TRUE(seen_pp1);
  ASSERT_FALSE(out.top.empty());
  EXPECT_EQ(out.top.front().config.pp, 1);  // as simulate finds: 8B fits on one GPU per replica with FSDP
}

// The memory-saving ladder is cheapest first whatever order --recompute gives: a layout that fits
// without recompute is not lost to full recompute listed first.
TEST(Plan, RecomputeChoicesAreTriedCheapestFirstWhateverTheirOrder) {
  PlanRequest r = small_request("llama3-8b", 8, 64, 8192);
  r.fsdp = {Fsdp::kNone, Fsdp::kMegatron};
  r.max_cp = 1;
  r.recompute = {Recompute::kNone, Recompute::kFull};
  const PlanOutcome ordered = run_plan(r);
  r.recompute = {Recompute::kFull, Recompute::kNone, Recompute::kFull};
  const PlanOutcome reversed = run_plan(r);
  ASSERT_FALSE(ordered.top.empty());
  ASSERT_EQ(ordered.top.size(), reversed.top.size());
  EXPECT_EQ(reversed.top.front().config.recompute, ordered.top.front().config.recompute);
  EXPECT_DOUBLE_EQ(reversed.top.front().throughput.tokens_per_s_per_gpu, ordered.top.front().throughput.tokens_per_s_per_gpu);
}

// The embedding/loss-aware split is simulated only where it moves a layer: where it equals the
// balanced split the layout would appear twice in the top K.
TEST(Plan, AnAwareSplitEqualToTheBalancedOneIsSimulatedOnce) {
  PlanRequest r = small_request("llama3-8b", 8, 64, 4096);
  r.schedules = {"dualpipe"};
  r.embedding_loss_aware = true;
  r.max_cp = 1;
  const PlanOutcome out = run_plan(r);
  EXPECT_GT(out.excluded.count("the embedding- and loss-aware split equals the balanced one: simulated once, as balanced"), 0u);
  for (std::size_t i = 0; i < out.top.size(); ++i) {
    for (std::size_t j = i + 1; j < out.top.size(); ++j) {
      const ParallelConfig& a = out.top[i].config;
      const ParallelConfig& b = out.top[j].config;
      const bool same = a.tp == b.tp && a.pp == b.pp && a.vp == b.vp && a.dp == b.dp && a.mbs == b.mbs && a.recompute == b.recompute &&
                        a.fsdp == b.fsdp && out.top[i].stage_layers == out.top[j].stage_layers;
      EXPECT_FALSE(same) << "#" << i + 1 << " and #" << j + 1 << " are one layout";
    }
  }
}

TEST(Plan, ExclusionCountersOnAHandCountableSpace) {
  // 4 GPUs, TP within a 4-GPU node, no CP: (tp, pp) in {(1,1), (1,2), (1,4), (2,1), (2,2), (4,1)},
  // one schedule, split, micro-batch size and memory choice each: 6 layouts. With gbs 2:
  //   (1,1): dp=4 does not divide gbs=2                    -> gbs rule
  //   (1,2): dp=2, 1 microbatch < pp=2                     -> pipeline never fills
  //   (1,4): dp=1, 2 microbatches < pp=4                   -> pipeline never fills
  //   (4,1): tp=4 does not divide the 2 query groups       -> TP rule
  //   (2,1) and (2,2): simulated.
  PlanRequest r = small_request("llama3-8b", 4, 2, 2048);
  r.model.num_query_groups = 2;
  r.gpu.gpus_per_node = 4;
  r.gpu.hbm_bytes = 10000 * kGiB;
  r.max_cp = 1;
  const PlanOutcome out = run_plan(r);
  EXPECT_EQ(out.candidates, 6);
  EXPECT_EQ(out.evaluated, 2);
  EXPECT_EQ(out.searched, 6);
  const std::map<std::string, std::int64_t> expected = {
      {"gbs=2 must be a multiple of mbs*dp=N", 1},
      {"microbatches=N < pp=N: the pipeline never fills; raise gbs or lower mbs or dp", 2},
      {"tp=N must divide num_query_groups=2", 1},
  };
  EXPECT_EQ(out.excluded, expected);
  ASSERT_EQ(out.top.size(), 2u);
  for (const PlanPoint& p : out.top) EXPECT_EQ(p.config.tp, 2);
}

TEST(Plan, NoLayoutThatBreaksARuleIsSimulated) {
  PlanRequest r = small_request("mixtral-8x7b", 16, 64, 4096);
  r.schedules = {};  // every schedule
  r.mbs = {1, 2};
  r.recompute = {Recompute::kNone, Recompute::kFull};
  r.fsdp = {Fsdp::kNone, Fsdp::kMegatron};
  r.embedding_loss_aware = true;
  const PlanOutcome out = run_plan(r);
  ASSERT_GT(out.evaluated, 0);
  std::int64_t excluded = 0;
  for (const auto& [rule, count] : out.excluded) excluded += count;
  std::int64_t oom = 0;
  for (const PlanPoint& p : out.points) {
    oom += !p.fits;
    // The schedule's own constraints hold, and so does every rule of check() on the split it ran.
    const ScheduleInfo& info = find_schedule(p.schedule);
    const Schedule schedule = make_schedule(info.name, {p.config.pp, p.config.vp, p.config.microbatches(), 0});
    ParallelConfig split = p.config;
    split.vp = schedule.shape.stages_per_chain() / p.config.pp;
    const ConfigCheck check = pipelab::check(split, r.model, r.gpu);
    EXPECT_TRUE(check.ok()) << join_messages(check.errors, "; ");
  }
  // Every layout is counted once: simulated and fitting, or excluded (an OOM simulation is both).
  EXPECT_EQ(out.evaluated - oom + excluded, out.candidates);
  // The ranking: fitting layouts by tokens/s/GPU, best first.
  for (std::size_t i = 1; i < out.top.size(); ++i) {
    EXPECT_GE(out.top[i - 1].throughput.tokens_per_s_per_gpu, out.top[i].throughput.tokens_per_s_per_gpu);
  }
}

TEST(Plan, SameOutcomeOnOneThreadAndTwo) {
  PlanRequest r = small_request("llama3-8b", 8, 32, 4096);
  r.schedules = {"1f1b", "interleaved-1f1b", "zb-v"};
  r.threads = 1;
  const PlanOutcome one = run_plan(r);
  r.threads = 2;
  const PlanOutcome two = run_plan(r);
  EXPECT_EQ(one.excluded, two.excluded);
  ASSERT_EQ(one.top.size(), two.top.size());
  for (std::size_t i = 0; i < one.top.size(); ++i) {
    EXPECT_EQ(one.top[i].config, two.top[i].config);
    EXPECT_EQ(one.top[i].makespan_ns, two.top[i].makespan_ns);
  }
}

// Costs shared between layouts (and the simulations that record no timeline) change nothing: the
// same layouts are simulated, excluded and ranked, with identical figures.
TEST(Plan, SharedCostsGiveTheSameTopK) {
  PlanRequest r = small_request("llama3-8b", 16, 64, 4096);
  r.schedules = {"1f1b", "gpipe", "zb-h1", "zb-h2", "interleaved-1f1b", "zb-v", "dualpipev"};
  r.mbs = {1, 2};
  r.recompute = {Recompute::kNone, Recompute::kSelective};
  r.fsdp = {Fsdp::kNone, Fsdp::kMegatron};
  r.top_k = 10;
  r.share_costs = false;
  const PlanOutcome fresh = run_plan(r);
  r.share_costs = true;
  const PlanOutcome shared = run_plan(r);
  EXPECT_EQ(fresh.evaluated, shared.evaluated);
  EXPECT_EQ(fresh.excluded, shared.excluded);
  ASSERT_EQ(fresh.top.size(), shared.top.size());
  ASSERT_GE(fresh.top.size(), 5u);
  for (std::size_t i = 0; i < fresh.top.size(); ++i) {
    EXPECT_EQ(fresh.top[i].config, shared.top[i].config);
    EXPECT_EQ(fresh.top[i].schedule, shared.top[i].schedule);
    EXPECT_EQ(fresh.top[i].makespan_ns, shared.top[i].makespan_ns);
    EXPECT_EQ(fresh.top[i].bubble_ratio, shared.top[i].bubble_ratio);
    EXPECT_EQ(fresh.top[i].exposed_comm_ns, shared.top[i].exposed_comm_ns);
    EXPECT_EQ(fresh.top[i].peak_memory_bytes, shared.top[i].peak_memory_bytes);
    EXPECT_EQ(fresh.top[i].throughput.tokens_per_s_per_gpu, shared.top[i].throughput.tokens_per_s_per_gpu);
  }
  ASSERT_EQ(fresh.points.size(), shared.points.size());
  for (std::size_t i = 0; i < fresh.points.size(); ++i) EXPECT_EQ(fresh.points[i].makespan_ns, shared.points[i].makespan_ns);
}

TEST(Plan, TopLayoutsCarryTheFiguresSimulateGives) {
  // The search ranks without timelines and simulates the top again for the idle split: those
  // figures must be what `simulate` gives for the same layout.
  PlanRequest r = small_request("llama3-8b", 16, 64, 4096);
  r.schedules = {"1f1b", "zb-h1", "interleaved-1f1b"};
  r.top_k = 4;
  const PlanOutcome out = run_plan(r);
  ASSERT_EQ(out.top.size(), 4u);
  for (const PlanPoint& p : out.top) {
    const sim::SimulationOutcome o = sim::simulate_config(point_request(r, p));
    EXPECT_EQ(p.makespan_ns, o.metrics.makespan_ns);
    EXPECT_EQ(p.bubble_ratio, o.metrics.bubble_ratio);
    EXPECT_EQ(p.exposed_comm_ns, o.metrics.exposed_comm_ns);
    EXPECT_EQ(p.idle.pipeline_bubble_ratio, o.metrics.pipeline_bubble_ratio);
    EXPECT_EQ(p.idle.stage_imbalance, o.metrics.stage_imbalance);
    EXPECT_EQ(p.idle.other_idle_ns, o.metrics.other_idle_ns);
    EXPECT_EQ(p.in_action_comm.tp_ns, o.in_action_comm.tp_ns);
    EXPECT_EQ(p.peak_memory_bytes, o.peak_memory_bytes);
  }
  EXPECT_GT(out.top.front().bubble_ratio, 0);  // PP > 1 wins here: there is idle time to report
}

// The FP8 recipe asked for is the one every layout is simulated with (and the one its recipes export);
// a recipe the GPU cannot run is bad input.
TEST(Plan, EveryLayoutRunsTheFp8RecipeAskedFor) {
  PlanRequest r = small_request("llama3-8b", 8, 64, 4096);
  r.precision = Precision::kFp8;
  r.fp8_recipe = Fp8Recipe::kTensorwise;
  const PlanOutcome out = run_plan(r);
  ASSERT_FALSE(out.top.empty());
  for (const PlanPoint& p : out.top) {
    EXPECT_EQ(p.config.fp8_recipe, Fp8Recipe::kTensorwise);
    EXPECT_EQ(p.makespan_ns, sim::simulate_config(point_request(r, p)).metrics.makespan_ns);
  }
  PlanRequest delayed = r;
  delayed.fp8_recipe = Fp8Recipe::kDelayed;
  EXPECT_NE(run_plan(delayed).top.front().makespan_ns, out.top.front().makespan_ns);  // current scaling quantizes more
  r.fp8_recipe = Fp8Recipe::kMxfp8;
  EXPECT_THROW(run_plan(r), InputError);  // MXFP8 needs Blackwell's block-scaled tensor cores
}

// Megatron's MoE communication options reach every layout the plan simulates: the flex dispatcher's
// backend, the 1F1B EP overlap with its delayed wgrad (1f1b at pp > 1 left out, as Megatron refuses it;
// ep = 1 breaks the overlap's rule) and the shared experts' stream. Asked of a model without those
// experts, each is bad input.
TEST(Plan, MoeCommunicationOptionsReachEveryLayout) {
  PlanRequest r = small_request("qwen3-30b-a3b", 16, 64, 4096);
  r.schedules = {"1f1b", "interleaved-1f1b", "zb-h1"};  // zb-h1 shares 1f1b's cached verdicts, not its exclusion
  r.moe_dispatcher = MoeDispatcher::kFlex;
  r.moe_flex_dispatcher_backend = "hybridep";
  r.overlap_moe_expert_parallel_comm = true;
  r.delay_wgrad_compute = true;
  r.top_k = 5;
  const PlanOutcome out = run_plan(r);
  ASSERT_FALSE(out.top.empty());
  for (const PlanPoint& p : out.top) {
    EXPECT_EQ(p.config.moe_token_dispatcher_type, MoeDispatcher::kFlex);
    EXPECT_EQ(p.config.moe_flex_dispatcher_backend, "hybridep");
    EXPECT_TRUE(p.config.overlap_moe_expert_parallel_comm);
    EXPECT_TRUE(p.config.delay_wgrad_compute);
    EXPECT_GT(p.config.ep, 1);
    EXPECT_FALSE(p.schedule == "1f1b" && p.config.pp > 1) << "pp=" << p.config.pp;
    EXPECT_EQ(p.makespan_ns, sim::simulate_config(point_request(r, p)).metrics.makespan_ns);
  }
  const auto excluded = [](const PlanOutcome& o, const std::string& text) {
    std::int64_t n = 0;
    for (const auto& [rule, count] : o.excluded) n += rule.find(text) != std::string::npos ? count : 0;
    return n;
  };
  EXPECT_GT(excluded(out, "1f1b left out"), 0);
  EXPECT_GT(excluded(out, "needs ep > 1"), 0);
  const auto zb = std::find_if(out.points.begin(), out.points.end(), [](const PlanPoint& p) { return p.schedule == "zb-h1" && p.config.pp > 1; });
  ASSERT_NE(zb, out.points.end()) << "zb-h1 at pp > 1 runs without the overlap, not left out";
  PlanRequest plain = r;
  plain.overlap_moe_expert_parallel_comm = plain.delay_wgrad_compute = false;
  const PlanOutcome without = run_plan(plain);
  EXPECT_EQ(excluded(without, "1f1b left out"), 0);
  EXPECT_NE(without.top.front().makespan_ns, out.top.front().makespan_ns);

  PlanRequest shared = plain;
  shared.moe_shared_expert_overlap = true;
  try {
    run_plan(shared);
    FAIL() << "--moe-shared-expert-overlap was accepted for a model without shared experts";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--moe-shared-expert-overlap needs shared experts"), std::string::npos) << e.what();
  }
  shared.model.moe_shared_expert_intermediate_size = 768;
  const PlanOutcome with_shared = run_plan(shared);
  ASSERT_FALSE(with_shared.top.empty());
  for (const PlanPoint& p : with_shared.top) {
    EXPECT_TRUE(p.config.moe_shared_expert_overlap);
    EXPECT_EQ(p.makespan_ns, sim::simulate_config(point_request(shared, p)).metrics.makespan_ns);
  }
  PlanRequest dense = small_request("llama3-8b", 8, 64, 4096);
  dense.overlap_moe_expert_parallel_comm = true;
  EXPECT_THROW(run_plan(dense), InputError);
  // Conflicts in every layout: bad input, not a search where nothing is left.
  const auto refused = [](PlanRequest q, const std::string& text) {
    try {
      run_plan(q);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
    }
  };
  PlanRequest both = shared;
  both.overlap_moe_expert_parallel_comm = true;
  refused(both, "--moe-shared-expert-overlap excludes --overlap-moe-expert-parallel-comm");
  PlanRequest lone = plain;
  lone.delay_wgrad_compute = true;
  refused(lone, "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm");
  PlanRequest gathered = r;
  gathered.moe_dispatcher = MoeDispatcher::kAllgather;
  refused(gathered, "--overlap-moe-expert-parallel-comm needs --moe-token-dispatcher-type alltoall or flex, got allgather");
}

TEST(Plan, BadInputIsAClearErrorOrAnHonestEmptyResult) {
  PlanRequest r = small_request("llama3-70b", 64, 128, 8192);
  r.gpus = 0;
  EXPECT_THROW(run_plan(r), InputError);
  r.gpus = 64;
  r.memory_headroom_bytes = r.gpu.usable_memory_bytes();
  try {
    run_plan(r);
    FAIL() << "a headroom of the whole memory was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("--memory-headroom"), std::string::npos) << e.what();
  }
  // 7 GPUs: TP 7 breaks the heads, PP 7 leaves nothing that fits 70B: an empty, complete result.
  r.memory_headroom_bytes = 0;
  r.gpus = 7;
  r.gbs = 7;
  const PlanOutcome out = run_plan(r);
  EXPECT_TRUE(out.top.empty());
  EXPECT_TRUE(out.complete);
  EXPECT_FALSE(out.excluded.empty());
  r.schedules = {"chimera"};
  EXPECT_THROW(run_plan(r), InputError);
  // A precision the GPU cannot run is bad input, not a search in which nothing fits.
  r.schedules = {"1f1b"};
  r.gpu = gpu_preset("a100-80g");
  r.precision = Precision::kFp8;
  try {
    run_plan(r);
    FAIL() << "fp8 on an A100 was searched";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "precision=fp8 needs FP8 tensor cores; 'a100-80g' has peak_fp8_tflops=0");
  }
}

TEST(Plan, ATimeBudgetStopsTheSearchAndSaysSo) {
  PlanRequest r = small_request("llama3-70b", 64, 128, 8192);
  r.schedules = {};
  r.time_budget_s = 1e-6;
  const PlanOutcome out = run_plan(r);
  EXPECT_FALSE(out.complete);
  EXPECT_LT(out.searched, out.candidates);
}

TEST(Plan, RuleTextsGroupOverLayouts) {
  EXPECT_EQ(normalize_rule("tp=16 must divide num_query_groups=8"), "tp=N must divide num_query_groups=8");
  EXPECT_EQ(normalize_rule("dualpipe needs microbatches >= 2*pp = 8, got 6"), "dualpipe needs microbatches >= 2*pp = N, got N");
  EXPECT_EQ(normalize_rule("ep*etp=8*1=8 must divide tp*cp*dp=1*1*4=4 (MoE parallel folding)"),
            "ep*etp=N*N=N must divide tp*cp*dp=N*N*N=N (MoE parallel folding)");
  EXPECT_EQ(normalize_rule("cp=8 leaves seq_length/cp=1024 tokens per rank (>= 2048 tokens per rank)"),
            "cp=N leaves seq_length/cp=N tokens per rank (>= 2048 tokens per rank)");
  EXPECT_EQ(normalize_rule("zb-h1 with vp=2"), "zb-h1 with vp=N");
}

}  // namespace
}  // namespace pipelab::plan
