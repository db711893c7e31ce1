// The memory model by part: weights, gradients and optimizer state by sharding strategy and
// precision, FSDP's layer buffers, and activations by recompute option and precision — each
// against the per-parameter and per-token byte counts written out by hand.
#include <gtest/gtest.h>

#include <algorithm>

#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/layer_geometry.h"
#include "pipelab/sim/memory_model.h"
#include "pipelab/sim/stage_layers.h"

namespace pipelab {
namespace {

ParallelConfig dense_dp8(const ModelSpec& m) {
  ParallelConfig c;
  c.tp = 1;
  c.pp = 1;
  c.dp = 8;
  c.mbs = 1;
  c.gbs = 8;
  return resolve(c, m);
}

struct Params {
  double dense = 0, experts = 0, largest_layer = 0;
  double decoder = 0;  // the decoder layers' (the rest: embedding and output layer)
};

// The parameters one GPU holds on pipeline rank 0 (pp = 1: the whole model's shard).
Params params_of(const ModelSpec& m, const ParallelConfig& c) {
  const sim::LayerGeometry g(m, c);
  const PipelineShape shape = make_schedule("1f1b", {c.pp, 1, c.microbatches(), 0}).shape;
  Params p;
  for (const sim::LayerRange& r : sim::stage_layers(m, c, shape)) {
    const sim::GpuParams gp = g.stage_params(r);
    p.dense += static_cast<double>(gp.total - gp.experts);
    p.experts += static_cast<double>(gp.experts);
  }
  for (int l = 0; l < m.num_layers; ++l) {
    p.largest_layer = std::max(p.largest_layer, static_cast<double>(g.layer_params(l).total));
    p.decoder += static_cast<double>(g.layer_params(l).total);
  }
  return p;
}

sim::StaticMemory static_of(const ModelSpec& m, const ParallelConfig& c) {
  const PipelineShape shape = make_schedule("1f1b", {c.pp, 1, c.microbatches(), 0}).shape;
  return sim::MemoryModel(m, c, shape).static_memory(0);
}

void expect_bytes(std::int64_t actual, double expected, const char* what) {
  EXPECT_NEAR(static_cast<double>(actual), expected, 8.0) << what;  // rounding of each part to bytes
}

TEST(StaticMemory, DistributedOptimizerShardsOnlyTheOptimizerState) {
  const ModelSpec m = model_preset("gpt-1.5b");
  const ParallelConfig c = dense_dp8(m);
  const Params p = params_of(m, c);
  const sim::StaticMemory s = static_of(m, c);
  expect_bytes(s.params_bytes, 2 * p.dense, "bf16 weights");
  expect_bytes(s.grads_bytes, 2 * p.dense, "bf16 main gradients (Megatron-Bridge default)");
  expect_bytes(s.optimizer_bytes, 12 * p.dense / 8, "fp32 main weights + two fp32 moments over dp=8");
  EXPECT_EQ(s.comm_buffers_bytes, 0);

  ParallelConfig replicated = c;
  replicated.distributed_optimizer = false;
  expect_bytes(static_of(m, replicated).optimizer_bytes, 12 * p.dense, "no distributed optimizer");
}

TEST(StaticMemory, FsdpShardsWeightsAndGradsAndHoldsLayerBuffers) {
  const ModelSpec m = model_preset("gpt-1.5b");
  ParallelConfig c = dense_dp8(m);
  c.fsdp = Fsdp::kMegatron;
  c.data_parallel_sharding_strategy = Sharding::kOptimGradsParams;
  const Params p = params_of(m, c);
  const sim::StaticMemory s = static_of(m, c);
  expect_bytes(s.params_bytes, 2 * p.dense / 8, "weights");
  expect_bytes(s.grads_bytes, 2 * p.dense / 8, "gradients");
  expect_bytes(s.optimizer_bytes, 12 * p.dense / 8, "optimizer");
  // Two layers gathered (this one and the prefetched next), one layer's gradients before its reduce-scatter.
  expect_bytes(s.comm_buffers_bytes, 2 * 2 * p.largest_layer + 2 * p.largest_layer, "layer buffers");

  c.data_parallel_sharding_strategy = Sharding::kOptimGrads;  // ZeRO-2: weights whole again
  const sim::StaticMemory zero2 = static_of(m, c);
  expect_bytes(zero2.params_bytes, 2 * p.dense, "ZeRO-2 weights");
  expect_bytes(zero2.comm_buffers_bytes, 2 * p.largest_layer, "ZeRO-2 gradient buffer");
}

TEST(StaticMemory, PrecisionOptionsChangeBytesPerParameter) {
  const ModelSpec m = model_preset("gpt-1.5b");
  const ParallelConfig base = dense_dp8(m);
  const Params p = params_of(m, base);

  ParallelConfig c = base;
  c.use_precision_aware_optimizer = true;  // bf16 moments: 4 + 2 + 2 bytes
  expect_bytes(static_of(m, c).optimizer_bytes, 8 * p.dense / 8, "precision-aware optimizer");

  c = base;
  c.grad_reduce_in_fp32 = true;
  expect_bytes(static_of(m, c).grads_bytes, 4 * p.dense, "fp32 main gradients");

  // The quantized layers' weights at their gathered size; the embedding and output layer stay BF16.
  const double vocab = p.dense - p.decoder;
  ASSERT_GT(vocab, 0);
  c = base;
  c.precision = Precision::kFp8;
  c.fp8_param_gather = true;
  expect_bytes(static_of(m, c).params_bytes, 1 * p.decoder + 2 * vocab, "FP8 weights");

  c.fp8_recipe = Fp8Recipe::kTensorwise;
  c.first_last_layers_bf16 = true;  // one layer at each end (Megatron's default counts)
  ASSERT_TRUE(check(c, m, gpu_preset("h100-sxm")).ok());
  const double layer = p.decoder / m.num_layers;
  expect_bytes(static_of(m, c).params_bytes, 1 * (p.decoder - 2 * layer) + 2 * (2 * layer + vocab), "layers kept in BF16");

  c = base;
  c.precision = Precision::kNvfp4;
  c.fp4_param_gather = true;
  expect_bytes(static_of(m, c).params_bytes, 0.5625 * p.decoder + 2 * vocab, "NVFP4 weights: 4 bits and an E4M3 scale per 16");

  c = base;
  c.num_distributed_optimizer_instances = 2;  // HSDP: shards over 4 ranks, two replicas
  expect_bytes(static_of(m, c).optimizer_bytes, 12 * p.dense / 4, "two optimizer instances");

  c = base;
  c.optimizer_offload_fraction = 0.25;
  expect_bytes(static_of(m, c).optimizer_bytes, 0.75 * 12 * p.dense / 8, "a quarter offloaded");
}

TEST(StaticMemory, ExpertsShardOverTheExpertDataParallelGroup) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  ParallelConfig c = dense_dp8(m);
  c.ep = 8;  // expert dp = tp*cp*dp / (ep*etp) = 1: each rank holds its experts' only optimizer copy
  c = resolve(c, m);
  ASSERT_EQ(c.expert_dp(), 1);
  const Params p = params_of(m, c);
  ASSERT_GT(p.experts, 0);
  expect_bytes(static_of(m, c).optimizer_bytes, 12 * (p.dense / 8 + p.experts / 1), "dense over 8, experts over 1");
}

class Activations : public ::testing::Test {
 protected:
  sim::MemoryModel model(const ModelSpec& m, const ParallelConfig& c) const {
    return sim::MemoryModel(m, c, make_schedule("1f1b", {c.pp, 1, c.microbatches(), 0}).shape);
  }
};

TEST_F(Activations, SelectiveModulesDropWhatTheyRebuild) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = dense_dp8(m);
  const sim::LayerActivation none = model(m, c).layer_activation(0);
  c.recompute = Recompute::kSelective;
  c.recompute_modules = {"mlp"};
  const sim::LayerActivation mlp = model(m, c).layer_activation(0);
  EXPECT_EQ(mlp.mlp_up_out, 0);
  EXPECT_EQ(mlp.mlp_act, 0);
  EXPECT_EQ(mlp.qkv, none.qkv);
  c.recompute_modules = {"layernorm"};
  const sim::LayerActivation norm = model(m, c).layer_activation(0);
  EXPECT_EQ(norm.attn_in, 0);
  EXPECT_EQ(norm.mlp_in, 0);
  EXPECT_EQ(norm.mlp_act, none.mlp_act);
}

// FP8 keeps its 1-byte GEMM inputs for the backward, NVFP4 4 bits and an E4M3 scale per 16 values; the
// residual stream and the activation function's input stay bf16.
TEST_F(Activations, QuantizedGemmInputsKeepTheirPrecisionsBytes) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = dense_dp8(m);
  const sim::LayerActivation bf16 = model(m, c).layer_activation(0);
  for (const auto& [precision, bytes] : {std::pair{Precision::kFp8, 1.0}, std::pair{Precision::kNvfp4, 0.5625}}) {
    c.precision = precision;
    c.first_last_layers_bf16 = false;
    const sim::LayerActivation q = model(m, c).layer_activation(0);
    EXPECT_DOUBLE_EQ(q.attn_in, bf16.attn_in * bytes / 2) << to_string(precision);
    EXPECT_DOUBLE_EQ(q.mlp_act, bf16.mlp_act * bytes / 2) << to_string(precision);
    EXPECT_DOUBLE_EQ(q.norm_inputs, bf16.norm_inputs) << to_string(precision);
    EXPECT_DOUBLE_EQ(q.mlp_up_out, bf16.mlp_up_out) << to_string(precision);
    c.first_last_layers_bf16 = true;  // layer 0 kept in BF16 keeps BF16 inputs; layer 1 does not
    EXPECT_DOUBLE_EQ(model(m, c).layer_activation(0).attn_in, bf16.attn_in) << to_string(precision);
    EXPECT_DOUBLE_EQ(model(m, c).layer_activation(1).attn_in, q.attn_in) << to_string(precision);
  }
}

TEST_F(Activations, DropoutMasksOnlyWithDropout) {
  ModelSpec m = model_preset("gpt-1.5b");
  ParallelConfig c = dense_dp8(m);
  EXPECT_DOUBLE_EQ(model(m, c).layer_activation(0).masks, 2.0 * m.hidden_size);  // Megatron's default 0.1
  m.hidden_dropout = 0;
  EXPECT_EQ(model(m, c).layer_activation(0).masks, 0);
}

TEST_F(Activations, MoeKeepsTopKDispatchedCopies) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  ParallelConfig c = dense_dp8(m);
  c.ep = 8;
  c = resolve(c, m);
  EXPECT_DOUBLE_EQ(model(m, c).layer_activation(0).moe_dispatched, 2.0 * m.moe_router_topk * m.hidden_size);
}

// The busiest rank's routed experts hold its share of the tokens: padded to a capacity of 1.25, every
// expert keeps 1.25 x the mean; DeepSeek-V3's shared expert still sees each token once.
TEST_F(Activations, MoeActivationsFollowTheBusiestRanksLoad) {
  const ModelSpec qwen = model_preset("qwen3-30b-a3b");
  ParallelConfig c = dense_dp8(qwen);
  c.ep = 8;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  c = resolve(c, qwen);
  const sim::LayerActivation balanced = model(qwen, c).layer_activation(0);
  c.moe_expert_capacity_factor = 1.25;
  c.moe_pad_expert_input_to_capacity = true;
  const sim::LayerActivation padded = model(qwen, c).layer_activation(0);
  EXPECT_DOUBLE_EQ(padded.moe_dispatched, 1.25 * balanced.moe_dispatched);
  EXPECT_DOUBLE_EQ(padded.mlp_act, 1.25 * balanced.mlp_act);
  EXPECT_DOUBLE_EQ(padded.mlp_up_out, 1.25 * balanced.mlp_up_out);
  EXPECT_DOUBLE_EQ(padded.qkv, balanced.qkv);

  const ModelSpec dsv3 = model_preset("deepseek-v3");
  ASSERT_GT(dsv3.moe_shared_expert_intermediate_size, 0);
  ParallelConfig d = dense_dp8(dsv3);
  d.ep = 8;
  d = resolve(d, dsv3);
  const int layer = dsv3.num_layers - 1;  // past the dense first layers
  ASSERT_TRUE(dsv3.is_moe_layer(layer));
  const sim::LayerActivation even = model(dsv3, d).layer_activation(layer);
  d.moe_load_imbalance = 2;
  const sim::LayerActivation skewed = model(dsv3, d).layer_activation(layer);
  const double routed = static_cast<double>(dsv3.moe_router_topk) * dsv3.moe_ffn_hidden_size;
  const double shared = dsv3.moe_shared_expert_intermediate_size;
  EXPECT_DOUBLE_EQ(skewed.mlp_act, even.mlp_act * (shared + 2 * routed) / (shared + routed));
}

TEST_F(Activations, FullRecomputeKeepsOneInputPerGroup) {
  ModelSpec m = model_preset("llama3-8b");
  apply_override(m, "num_layers", "8");
  ParallelConfig c = dense_dp8(m);
  c.recompute = Recompute::kFull;
  c.recompute_method = RecomputeMethod::kUniform;
  c.recompute_num_layers = 4;  // two groups of four layers: two kept inputs
  const sim::LayerGeometry g(m, c);
  ParallelConfig plain = c;
  plain.recompute = Recompute::kNone;
  const std::int64_t full_layer = model(m, plain).layer_activation_bytes(5);
  // The stage also keeps the loss's logits, the same under every option: compare the layers' part.
  const std::int64_t logits = model(m, plain).stage_activations()[0].bytes - 8 * full_layer;
  EXPECT_EQ(model(m, c).stage_activations()[0].bytes - logits, static_cast<std::int64_t>(2 * g.hidden_state_bytes()));

  c.recompute_method = RecomputeMethod::kBlock;
  c.recompute_num_layers = 3;  // three layers recomputed (their inputs kept), five keep everything
  EXPECT_EQ(model(m, c).stage_activations()[0].bytes - logits, static_cast<std::int64_t>(3 * g.hidden_state_bytes()) + 5 * full_layer);
}


// The loss keeps its implementation's bytes per logit for the backward (sim/cross_entropy.cc): an
// fp32 tensor (unfused, native, te), or the BF16 logits the gradient is written over (te_inplace).
TEST_F(Activations, TheLossKeepsItsImplementationsBytesPerLogit) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = resolve({.pp = 4, .dp = 2, .gbs = 8}, m);
  const double logits = sim::LayerGeometry(m, c).logits();
  auto last_stage = [&](bool fusion, CrossEntropyFusionImpl impl) {
    c.cross_entropy_loss_fusion = fusion;
    c.cross_entropy_fusion_impl = impl;
    return model(m, c).stage_activations()[3].bytes;
  };
  const std::int64_t fp32 = last_stage(true, CrossEntropyFusionImpl::kNative);
  EXPECT_EQ(last_stage(false, CrossEntropyFusionImpl::kNative), fp32);
  EXPECT_EQ(last_stage(true, CrossEntropyFusionImpl::kTe), fp32);
  EXPECT_EQ(fp32 - last_stage(true, CrossEntropyFusionImpl::kTeInplace), static_cast<std::int64_t>(logits * 2));
}

}  // namespace
}  // namespace pipelab
