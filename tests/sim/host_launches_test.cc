// The host's launches per layer by hand, what CUDA graphs leave of them, and the GPU waiting for
// the host when they take longer than its kernels.
#include <gtest/gtest.h>

#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/host_launches.h"

namespace pipelab {
namespace {

// Qwen3-30B-A3B (128 experts) at EP 16: 8 local experts; one stage of every layer.
ParallelConfig qwen3_ep16(Precision precision = Precision::kBf16) {
  ParallelConfig c{.tp = 1, .pp = 1, .ep = 16, .etp = 1, .dp = 16, .mbs = 1, .gbs = 16, .seq_length = 4096};
  c.precision = precision;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  return resolve(c, model_preset("qwen3-30b-a3b"));
}

// BF16, alltoall, eager. Forward: attention block 11, norm and router 10, preprocess 16, dispatch and
// combine 10, experts 2 x 8 GEMMs + 2 = 18: 65. Backward: 22 + 15 + 4 + 16 + (4 x 8 + 2 = 34) = 91, of
// which W holds the wgrad GEMMs, 2 + 2 x 8 = 18.
TEST(HostLaunches, MoeLayerByHand) {
  const sim::LayerLaunches l = sim::layer_launches(model_preset("qwen3-30b-a3b"), qwen3_ep16(), 0, false);
  EXPECT_DOUBLE_EQ(l.forward, 65);
  EXPECT_DOUBLE_EQ(l.input_grad, 73);
  EXPECT_DOUBLE_EQ(l.weight_grad, 18);
}

// FP8 current scaling quantizes each expert's inputs on their own (zero amax, amax, scale, cast):
// 10 launches per expert forward, 12 backward.
TEST(HostLaunches, CurrentScalingLaunchesPerExpert) {
  ParallelConfig c = qwen3_ep16(Precision::kFp8);
  c.fp8_recipe = Fp8Recipe::kTensorwise;
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  const sim::LayerLaunches eight = sim::layer_launches(m, c, 0, false);
  c.ep = 8;  // 16 local experts
  c = resolve(c, m);
  const sim::LayerLaunches sixteen = sim::layer_launches(m, c, 0, false);
  EXPECT_DOUBLE_EQ(sixteen.forward - eight.forward, 10 * 8);
  EXPECT_DOUBLE_EQ(sixteen.input_grad + sixteen.weight_grad - eight.input_grad - eight.weight_grad, 12 * 8);
}

// Graphing attention, the router and its preprocessing leaves one launch each: 65 - 10 - 9 - 15 = 31.
TEST(HostLaunches, GraphedRegionsLaunchOnce) {
  ParallelConfig c = qwen3_ep16();
  c.cuda_graph_impl = CudaGraphImpl::kTransformerEngine;
  c.cuda_graph_modules = {"attn", "moe_router", "moe_preprocess"};
  const sim::LayerLaunches l = sim::layer_launches(model_preset("qwen3-30b-a3b"), c, 0, false);
  EXPECT_DOUBLE_EQ(l.forward, 1 + 1 + 1 + 10 + 18);
  c.cuda_graph_modules = {"moe_router"};  // the preprocessing stays eager
  EXPECT_DOUBLE_EQ(sim::layer_launches(model_preset("qwen3-30b-a3b"), c, 0, false).forward, 11 + 1 + 16 + 10 + 18);
  c.cuda_graph_impl = CudaGraphImpl::kNone;  // modules without an impl graph nothing
  EXPECT_DOUBLE_EQ(sim::layer_launches(model_preset("qwen3-30b-a3b"), c, 0, false).forward, 65);
}

TEST(HostLaunches, WholeLayerAndIterationGraphs) {
  ParallelConfig c = qwen3_ep16();
  c.moe_expert_capacity_factor = 1;
  c.moe_pad_expert_input_to_capacity = true;
  c.cuda_graph_impl = CudaGraphImpl::kLocal;  // no modules: the whole layer
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  const sim::LayerLaunches layer = sim::layer_launches(m, c, 0, false);
  EXPECT_DOUBLE_EQ(layer.forward, 1);
  EXPECT_DOUBLE_EQ(layer.input_grad + layer.weight_grad, 1);
  c.cuda_graph_impl = CudaGraphImpl::kFullIteration;
  const sim::LayerLaunches none = sim::layer_launches(m, c, 0, false);
  EXPECT_DOUBLE_EQ(none.forward + none.input_grad + none.weight_grad, 0);
}

// HybridEP's per-rank budget comes with TE's grouped-tensor path: the experts launch 9 and 10 whatever N.
TEST(HostLaunches, RankBudgetGroupsTheExperts) {
  ParallelConfig c = qwen3_ep16();
  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  c.moe_flex_dispatcher_backend = "hybridep";
  c.moe_expert_rank_capacity_factor = 1.5;
  const sim::LayerLaunches l = sim::layer_launches(model_preset("qwen3-30b-a3b"), c, 0, false);
  EXPECT_DOUBLE_EQ(l.forward, 11 + 10 + 3 + 15 + 9);
  EXPECT_DOUBLE_EQ(l.input_grad + l.weight_grad, 22 + 15 + 0 + 14 + 10);
}

// A dense layer: attention 11 + MLP 5 forward; TP adds a gather and a scatter around each block.
TEST(HostLaunches, DenseLayerByHand) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c{.tp = 1, .pp = 1, .dp = 1, .mbs = 1, .gbs = 1};
  EXPECT_DOUBLE_EQ(sim::layer_launches(m, resolve(c, m), 0, false).forward, 16);
  c.tp = 2;
  EXPECT_DOUBLE_EQ(sim::layer_launches(m, resolve(c, m), 0, false).forward, 20);
  // Full recompute runs the forward's launches again in I.
  const sim::LayerLaunches once = sim::layer_launches(m, resolve(c, m), 0, false), twice = sim::layer_launches(m, resolve(c, m), 0, true);
  EXPECT_DOUBLE_EQ(twice.input_grad - once.input_grad, 20);
}

std::int64_t pass_ns(const ModelSpec& m, const ParallelConfig& c, double host_launch_ns, Op op) {
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.host_launch_ns = host_launch_ns;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  return sim::AnalyticCost(m, gpu, c, shape).duration_ns(0, Action::make(op, 0, 0));
}

// Once the host binds, each MoE layer's forward is its own stretch (the dispatch waits for the host):
// one more ns per launch adds 65 ns per layer to F, and 91 to B over the stage; a host far faster
// than the kernels changes nothing.
TEST(HostLaunches, TheGpuWaitsForASlowHostByHand) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  const ParallelConfig c = qwen3_ep16();
  const double slow = 1e6;  // 1 ms per launch: every pass host-bound
  EXPECT_EQ(pass_ns(m, c, slow + 1000, Op::F) - pass_ns(m, c, slow, Op::F), 1000 * 65 * m.num_layers);
  EXPECT_EQ(pass_ns(m, c, slow + 1000, Op::B) - pass_ns(m, c, slow, Op::B), 1000 * 91 * m.num_layers);
  EXPECT_EQ(pass_ns(m, c, 1, Op::F), pass_ns(m, c, 0, Op::F));
  EXPECT_EQ(pass_ns(m, c, 1, Op::B), pass_ns(m, c, 0, Op::B));
}

// What the actions report as the wait for the host is what it adds to their durations.
TEST(HostLaunches, TheWaitIsReportedAsItIsCharged) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  const ParallelConfig c = qwen3_ep16();
  GpuSpec gpu = gpu_preset("h100-sxm");
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  gpu.host_launch_ns = 100e3;
  const sim::AnalyticCost slow(m, gpu, c, shape);
  gpu.host_launch_ns = 0;
  const sim::AnalyticCost none(m, gpu, c, shape);
  for (Op op : {Op::F, Op::B, Op::I, Op::W}) {
    const Action a = Action::make(op, 0, 0);
    const double wait = slow.in_action_comm(0, a).host_ns;
    EXPECT_GT(wait, 0);
    EXPECT_NEAR(wait, static_cast<double>(slow.duration_ns(0, a) - none.duration_ns(0, a)), 1.0);
    EXPECT_EQ(none.in_action_comm(0, a).host_ns, 0);
  }
}

// An F&B unit (EP overlap) cannot end before the host has launched both halves.
TEST(HostLaunches, AnOverlappedUnitWaitsForBothHalvesLaunches) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  const ParallelConfig c = qwen3_ep16();
  GpuSpec gpu = gpu_preset("h100-sxm");
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  gpu.host_launch_ns = 1e6;  // every unit host-bound
  const sim::AnalyticCost slow(m, gpu, c, shape);
  const double launches = (65.0 + 91.0) * m.num_layers;
  EXPECT_DOUBLE_EQ(slow.overlap_ns(0, 0), launches * 1e6);
  const Action unit = Action::overlap(0, 0, 0, 0);
  EXPECT_NEAR(slow.in_action_comm(0, unit).host_ns, launches * 1e6 - slow.overlap_gpu_ns(0, 0), 1.0);
  gpu.host_launch_ns = 0;
  const sim::AnalyticCost none(m, gpu, c, shape);
  EXPECT_DOUBLE_EQ(none.overlap_ns(0, 0), none.overlap_gpu_ns(0, 0));
  EXPECT_EQ(none.in_action_comm(0, unit).host_ns, 0);
}

// A dense model has no wait for the host: it runs ahead across the layers, and the stage's pass waits
// only for what its launches (16 per layer forward) need beyond the GPU's time.
TEST(HostLaunches, DenseStageWaitsOverThePass) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c{.tp = 1, .pp = 1, .dp = 1, .mbs = 1, .gbs = 1};
  c = resolve(c, m);
  const std::int64_t gpu_f = pass_ns(m, c, 0, Op::F);
  const double launches = 16.0 * m.num_layers;
  const double binding = 2.0 * static_cast<double>(gpu_f) / launches;  // the host takes twice the GPU's time
  EXPECT_EQ(pass_ns(m, c, binding + 1000, Op::F) - pass_ns(m, c, binding, Op::F), static_cast<std::int64_t>(1000 * launches));
  EXPECT_EQ(pass_ns(m, c, 0.5 * static_cast<double>(gpu_f) / launches, Op::F), gpu_f);
}

}  // namespace
}  // namespace pipelab
