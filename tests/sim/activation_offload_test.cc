// Activation CPU offloading: the copy waits by hand, and what the cost and memory models make of them.
#include <gtest/gtest.h>

#include <vector>

#include "pipelab/base/error.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/activation_offload.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/memory_model.h"
#include "pipelab/sim/simulation.h"

namespace pipelab {
namespace {

TEST(ActivationOffload, CopiesShorterThanALayerAreHidden) {
  const std::vector<sim::OffloadLayer> layers = {{10, 20, 5}, {10, 20, 5}, {10, 20, 0}, {10, 20, 0}};
  const sim::OffloadStall stall = sim::activation_offload_stall(layers);
  EXPECT_EQ(stall.forward_ns, 0);
  EXPECT_EQ(stall.backward_ns, 0);
}

// 4 layers, the first 2 offloaded, so the GPU holds at most K = 2 sets; each copy takes 30.
// Forward: layer 0 [0,10], its offload [0,30]; layer 1 [10,20], offload [30,60]; layer 2 waits for
// offload 0 (K behind): [30,40]; layer 3 waits for offload 1: [60,70]. 40 of work in 70: 30 waiting.
// Backward (b = 20): layer 3 [0,20] frees a slot, reload 1 [20,50]; layer 2 [20,40], reload 0
// [50,80]; layer 1 waits for reload 1: [50,70]; layer 0 for reload 0: [80,100]. 80 in 100: 20 waiting.
TEST(ActivationOffload, ComputeWaitsForTheCopiesByHand) {
  const std::vector<sim::OffloadLayer> layers = {{10, 20, 30}, {10, 20, 30}, {10, 20, 0}, {10, 20, 0}};
  const sim::OffloadStall stall = sim::activation_offload_stall(layers);
  EXPECT_DOUBLE_EQ(stall.forward_ns, 30);
  EXPECT_DOUBLE_EQ(stall.backward_ns, 20);
}

TEST(ActivationOffload, NothingOffloadedWaitsForNothing) {
  const std::vector<sim::OffloadLayer> layers = {{10, 20, 0}, {10, 20, 0}};
  const sim::OffloadStall stall = sim::activation_offload_stall(layers);
  EXPECT_EQ(stall.forward_ns, 0);
  EXPECT_EQ(stall.backward_ns, 0);
}

ParallelConfig one_stage(const ModelSpec& m, int offloaded) {
  ParallelConfig c{.tp = 1, .pp = 1, .dp = 1, .mbs = 1, .gbs = 1, .seq_length = 8192};
  c.cpu_offloading_num_layers = offloaded;
  return resolve(c, m);
}

// The memory model drops the offloaded layers' activations; the cost model adds the waits, which the
// recurrence gives from the per-layer times and the copies' bytes over the host link.
TEST(ActivationOffload, CostAndMemoryModelsByHand) {
  const ModelSpec m = model_preset("llama3-8b");  // 32 equal layers
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.host_link_bandwidth_gbps = 1;  // slow enough that the copies show: 1 byte/ns
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const ParallelConfig none = one_stage(m, 0), offload = one_stage(m, 24);
  const sim::MemoryModel kept(m, none, shape), dropped(m, offload, shape);
  const std::int64_t layer = kept.layer_activation_bytes(0);
  EXPECT_EQ(kept.stage_activations()[0].bytes - dropped.stage_activations()[0].bytes, 24 * layer);

  const sim::AnalyticCost base(m, gpu, none, shape), slow(m, gpu, offload, shape);
  const sim::StageCost b = base.stage(0), s = slow.stage(0);
  // One layer's times as the cost model gives them: the stage of a model one layer longer, less this one.
  ModelSpec longer = m;
  longer.num_layers += 1;
  const sim::StageCost b1 = sim::AnalyticCost(longer, gpu, resolve(none, longer), shape).stage(0);
  const double f = b1.f.total_ns() - b.f.total_ns();
  const double back = b1.i.total_ns() + b1.w.total_ns() - b.i.total_ns() - b.w.total_ns();
  std::vector<sim::OffloadLayer> layers;
  for (int l = 0; l < m.num_layers; ++l) layers.push_back({f, back, l < 24 ? static_cast<double>(layer) : 0});
  const sim::OffloadStall stall = sim::activation_offload_stall(layers);
  EXPECT_GT(stall.forward_ns, 0);
  EXPECT_GT(stall.backward_ns, 0);
  EXPECT_NEAR(s.f.offload_ns, stall.forward_ns, 1e-6 * stall.forward_ns);
  EXPECT_NEAR(s.i.offload_ns, stall.backward_ns, 1e-6 * stall.backward_ns);
  EXPECT_NEAR(s.f.total_ns(), b.f.total_ns() + stall.forward_ns, 1e-6 * b.f.total_ns());
  const Action forward = Action::make(Op::F, 0, 0);
  EXPECT_DOUBLE_EQ(slow.in_action_comm(0, forward).offload_ns, s.f.offload_ns);
  EXPECT_EQ(base.in_action_comm(0, forward).offload_ns, 0);
}

// At most K = L - N layer sets on the GPU, but any K consecutive ones: with larger early layers (here
// the first 8 kept in BF16 under FP8) the window of the first K layers is the peak, not the last K.
TEST(ActivationOffload, TheGpuHoldsTheLargestWindowOfKLayers) {
  const ModelSpec m = model_preset("llama3-8b");  // 32 layers
  ParallelConfig c = one_stage(m, 8);             // K = 24
  c.precision = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kTensorwise;
  c.first_last_layers_bf16 = true;
  c.num_layers_at_start_in_bf16 = 8;
  c.num_layers_at_end_in_bf16 = 0;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const sim::MemoryModel memory(m, c, shape);
  const std::int64_t bf16 = memory.layer_activation_bytes(0), fp8 = memory.layer_activation_bytes(20);
  ASSERT_GT(bf16, fp8);
  ParallelConfig kept_all = c;
  kept_all.cpu_offloading_num_layers = 0;
  const std::int64_t others = sim::MemoryModel(m, kept_all, shape).stage_activations()[0].bytes - 8 * bf16 - 24 * fp8;  // embedding side, loss
  EXPECT_EQ(memory.stage_activations()[0].bytes, others + 8 * bf16 + 16 * fp8);  // layers 0..23, not 8..31
}

TEST(ActivationOffload, ModelledOnlyWithOneFOneB) {
  const ModelSpec m = model_preset("llama3-8b");
  sim::SimulationRequest r;
  r.model = m;
  r.gpu = gpu_preset("h100-sxm");
  r.config = one_stage(m, 8);
  r.config.gbs = 4;
  r.schedule = "1f1b";
  const std::int64_t offloaded = sim::simulate_config(r).result.peak_activation_bytes[0];
  r.config.cpu_offloading_num_layers = 0;
  const std::int64_t kept = sim::simulate_config(r).result.peak_activation_bytes[0];
  EXPECT_EQ(kept - offloaded, 8 * sim::MemoryModel(m, r.config, make_schedule("1f1b", {1, 1, 4, 0}).shape).layer_activation_bytes(0));
  r.config.cpu_offloading_num_layers = 8;
  r.schedule = "gpipe";  // every microbatch's forward before any backward: not how TE offloads
  EXPECT_THROW(sim::simulate_config(r), ConfigError);
}

}  // namespace
}  // namespace pipelab
