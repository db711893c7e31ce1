// Biased experts' FC2 bias, added per expert in eager PyTorch: its HBM bytes and launches by hand, and
// what it adds to a gpt-oss layer's passes.
#include <gtest/gtest.h>

#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/expert_bias.h"
#include "pipelab/sim/host_launches.h"

namespace pipelab {
namespace {

// gpt-oss-120b (128 experts, top-4, hidden 2880) at EP 8: 16 local experts, one stage.
ParallelConfig gpt_oss_ep8(MoeDispatcher dispatcher = MoeDispatcher::kAlltoall) {
  ParallelConfig c{.tp = 1, .pp = 1, .ep = 8, .etp = 1, .dp = 8, .mbs = 1, .gbs = 8, .seq_length = 4096};
  c.moe_token_dispatcher_type = dispatcher;
  if (dispatcher == MoeDispatcher::kFlex) c.moe_flex_dispatcher_backend = "hybridep";
  return resolve(c, model_preset("gpt-oss-120b"));
}

// BF16 probabilities (alltoall): forward b*p 2, the add 2 + 2 + 2, the cat 2 + 2 = 12 bytes per element;
// backward b's and p's gradients 3 x 2 each and the split's cat 2 + 2 = 16. Launches 2 per expert + the
// cat; backward 4 per expert + 2 cats, and 2 per expert accumulating the FC1 and FC2 bias gradients.
TEST(ExpertBias, Bf16ProbabilitiesByHand) {
  const sim::ExpertBiasWork w = sim::expert_bias_work(model_preset("gpt-oss-120b"), gpt_oss_ep8(), 0, 16);
  EXPECT_DOUBLE_EQ(w.forward_bytes_per_element, 12);
  EXPECT_DOUBLE_EQ(w.input_grad_bytes_per_element, 16);
  EXPECT_DOUBLE_EQ(w.forward_launches, 2 * 16 + 1);
  EXPECT_DOUBLE_EQ(w.input_grad_launches, 6 * 16 + 2);
}

// Flex takes FP32 probabilities: the product and sum are FP32 and cast back. Forward 4 + (2 + 8) + 8 +
// (4 + 2) = 28; backward the two casts 6 + 6, the gradients 2 x 3 x 4, the split's cat 4 = 40. Launches
// add the output's cast forward; backward t's and b's gradients' casts per expert and the output's.
TEST(ExpertBias, Fp32ProbabilitiesByHand) {
  const sim::ExpertBiasWork w = sim::expert_bias_work(model_preset("gpt-oss-120b"), gpt_oss_ep8(MoeDispatcher::kFlex), 0, 16);
  EXPECT_DOUBLE_EQ(w.forward_bytes_per_element, 28);
  EXPECT_DOUBLE_EQ(w.input_grad_bytes_per_element, 40);
  EXPECT_DOUBLE_EQ(w.forward_launches, 2 * 16 + 2);
  EXPECT_DOUBLE_EQ(w.input_grad_launches, 8 * 16 + 3);
}

TEST(ExpertBias, NoneWithoutBiasesOrWithTheCountsOnTheDevice) {
  ModelSpec m = model_preset("gpt-oss-120b");
  ParallelConfig c = gpt_oss_ep8(MoeDispatcher::kFlex);
  c.moe_expert_rank_capacity_factor = 1.5;  // HybridEP's budget: TE's grouped MLP takes the bias
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(m, c, 0, 16).forward_bytes_per_element, 0);
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(m, c, 0, 16).forward_launches, 0);
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(m, c, 0, 16).input_grad_launches, 2 * 16);  // the gradients' accumulation
  c = gpt_oss_ep8();
  c.moe_expert_capacity_factor = 1;
  c.moe_pad_expert_input_to_capacity = true;
  c.cuda_graph_impl = CudaGraphImpl::kFullIteration;
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(m, c, 0, 16).input_grad_bytes_per_element, 0);
  EXPECT_DOUBLE_EQ(sim::layer_launches(m, c, 0, false).input_grad, 0);  // the graph holds them
  m.add_bias_linear = false;
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(m, gpt_oss_ep8(), 0, 16).forward_launches, 0);
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(model_preset("llama3-8b"), ParallelConfig{}, 0, 1).forward_bytes_per_element, 0);
  const ModelSpec dense = model_preset("gpt3-5b");  // biases, but no experts
  ASSERT_TRUE(dense.add_bias_linear);
  EXPECT_DOUBLE_EQ(sim::expert_bias_work(dense, ParallelConfig{}, 0, 1).input_grad_bytes_per_element, 0);
}

// The work lands on each MoE layer's routed rows: 4096 tokens x top-4 x hidden 2880 per layer, read at
// the HBM's efficient bandwidth; the launches join the layer's eager count.
TEST(ExpertBias, AddsItsBytesAndLaunchesToTheLayer) {
  const ModelSpec biased = model_preset("gpt-oss-120b");
  ModelSpec plain = biased;
  plain.add_bias_linear = false;
  const ParallelConfig c = gpt_oss_ep8();
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const sim::StageCost with = sim::AnalyticCost(biased, gpu, c, shape).stage(0), without = sim::AnalyticCost(plain, gpu, c, shape).stage(0);
  const double elements = 4096.0 * 4 * 2880 * biased.num_layers;
  const double bytes_per_ns = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;
  EXPECT_NEAR(with.f.elementwise_ns - without.f.elementwise_ns, elements * 12 / bytes_per_ns, 1e-6 * with.f.elementwise_ns);
  EXPECT_NEAR(with.f.expert_ns - without.f.expert_ns, elements * 12 / bytes_per_ns, 1e-6 * with.f.expert_ns);
  EXPECT_NEAR(with.i.elementwise_ns - without.i.elementwise_ns, elements * 16 / bytes_per_ns, 1e-6 * with.i.elementwise_ns);
  EXPECT_DOUBLE_EQ(sim::layer_launches(biased, c, 0, false).forward - sim::layer_launches(plain, c, 0, false).forward, 2 * 16 + 1);
}

}  // namespace
}  // namespace pipelab
