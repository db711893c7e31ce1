// Tests for profiles/parallel_config.cc: derivation, every legality rule's message, stage split, JSON.
#include <pipelab/profiles/parallel_config.h>

#include <algorithm>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pipelab/profiles/presets.h>

#include "error_message.h"

namespace pipelab {
namespace {

using ::pipelab::testing::error_message;
using ::testing::HasSubstr;

// Llama 3 70B on 64 H100s: tp 8, pp 4, vp 5 (80 layers = 4*5*4), dp 2, 64 microbatches.
ParallelConfig good_config() {
  ParallelConfig c;
  c.tp = 8;
  c.pp = 4;
  c.vp = 5;
  c.world = 64;
  c.gbs = 128;
  return c;
}

std::string all_messages(const std::vector<ConfigIssue>& issues) {
  std::string out;
  for (const auto& issue : issues) out += issue.message + "\n";
  return out;
}

bool has_rule(const std::vector<ConfigIssue>& issues, std::string_view field, std::string_view rule) {
  return std::any_of(issues.begin(), issues.end(),
                     [&](const ConfigIssue& i) { return i.field == field && i.rule == rule; });
}

class ParallelRules : public ::testing::Test {
 protected:
  std::string errors(const ParallelConfig& c, const char* model = "llama3-70b", const char* gpu = "h100-sxm") {
    return all_messages(check(c, model_preset(model), gpu_preset(gpu)).errors);
  }
  std::string warnings(const ParallelConfig& c, const char* model = "llama3-70b") {
    return all_messages(check(c, model_preset(model), gpu_preset("h100-sxm")).warnings);
  }
};

TEST_F(ParallelRules, GoodConfigIsClean) {
  const ConfigCheck result = check(good_config(), model_preset("llama3-70b"), gpu_preset("h100-sxm"));
  EXPECT_TRUE(result.ok()) << all_messages(result.errors);
  EXPECT_TRUE(result.warnings.empty()) << all_messages(result.warnings);
  EXPECT_NO_THROW(require_valid(good_config(), model_preset("llama3-70b"), gpu_preset("h100-sxm")));
}

TEST_F(ParallelRules, WorldMustEqualProduct) {
  ParallelConfig c = good_config();
  c.tp = 4;
  c.vp = 1;
  c.dp = 4;
  c.world = 60;
  EXPECT_THAT(errors(c), HasSubstr("world=60 must equal tp*pp*cp*dp = 4*4*1*4 = 64"));
  const ConfigCheck result = check(c, model_preset("llama3-70b"), gpu_preset("h100-sxm"));
  EXPECT_TRUE(has_rule(result.errors, "world", "world_size"));

  c.dp = 0;
  EXPECT_THAT(errors(c), HasSubstr("world=60 must be a multiple of tp*pp*cp = 4*4*1 = 16 to derive dp"));
  c.world = 0;
  EXPECT_THAT(errors(c), HasSubstr("give dp or world"));
}

TEST_F(ParallelRules, TensorParallelDividesHeadsGroupsAndFfn) {
  ParallelConfig c = good_config();
  c.tp = 16;
  c.world = 128;
  EXPECT_THAT(errors(c), HasSubstr("tp=16 must divide num_query_groups=8"));
  EXPECT_THAT(errors(c, "gpt-1.5b"), HasSubstr("tp=16 must divide num_attention_heads=24"));
  ModelSpec odd_ffn = model_preset("gpt-1.5b");
  apply_override(odd_ffn, "ffn_hidden_size", "9004");
  c.world = 0;
  c.dp = 1;
  c.tp = 8;
  c.vp = 1;
  c.stage_layers = {5, 6, 6, 5};
  EXPECT_THAT(all_messages(check(c, odd_ffn, gpu_preset("h100-sxm")).errors),
              HasSubstr("tp=8 must divide ffn_hidden_size=9004"));
}

TEST_F(ParallelRules, LayersSplitOverVirtualStages) {
  ParallelConfig c = good_config();
  c.vp = 3;
  // Megatron runs an uneven split given as a layout: pipelab never refuses one; it balances by cost
  // and says which layout string reproduces its choice.
  EXPECT_EQ(errors(c), "");
  EXPECT_THAT(warnings(c), HasSubstr("num_layers=80 does not divide over pp*vp=12 stages: using a cost-balanced split"));
  EXPECT_THAT(warnings(c), HasSubstr("--pipeline-model-parallel-layout \"E"));
  c.vp = 2;
  c.stage_layers = {10, 10, 10, 10, 10, 10, 10};
  EXPECT_THAT(errors(c), HasSubstr("stage_layers has 7 entries, need pp*vp=8"));
  c.stage_layers = {9, 10, 10, 10, 10, 10, 10, 10};
  EXPECT_THAT(errors(c), HasSubstr("stage_layers sums to 79, need num_layers=80"));
  c.stage_layers = {-1, 11, 10, 10, 10, 10, 10, 20};
  EXPECT_THAT(errors(c), HasSubstr("stage_layers[0]=-1 must be >= 0"));
  c.stage_layers = {9, 10, 10, 10, 10, 10, 10, 11};
  EXPECT_EQ(errors(c), "");
}

TEST_F(ParallelRules, GlobalBatchIsWholeMicrobatches) {
  ParallelConfig c = good_config();
  c.tp = 4;
  c.vp = 1;
  c.world = 4 * 4 * 4;
  c.mbs = 2;
  c.gbs = 100;
  EXPECT_THAT(errors(c), HasSubstr("gbs=100 must be a multiple of mbs*dp=8"));
}

TEST_F(ParallelRules, SequenceSplitsOverCpAndSequenceParallel) {
  ParallelConfig c = good_config();
  c.cp = 4;
  c.world = 256;
  c.seq_length = 8196;
  const std::string e = errors(c);
  EXPECT_THAT(e, HasSubstr("seq_length=8196 must be divisible by 2*cp=8 (load-balanced causal context parallel)"));
  EXPECT_THAT(e, HasSubstr("seq_length/cp=2049 must be divisible by tp=8 with sequence_parallel"));

  c = good_config();
  c.seq_length = 8196;
  EXPECT_THAT(errors(c), HasSubstr("seq_length=8196 must be divisible by tp=8 with sequence_parallel"));
  c.sequence_parallel = false;
  EXPECT_EQ(errors(c), "");
}

TEST_F(ParallelRules, ExpertParallel) {
  ParallelConfig c;
  c.tp = 1;
  c.pp = 4;
  c.vp = 2;
  c.ep = 3;
  c.world = 16;  // dp = 4
  c.gbs = 64;
  const std::string e = errors(c, "mixtral-8x7b");
  EXPECT_THAT(e, HasSubstr("ep*etp=3*1=3 must divide tp*cp*dp=1*1*4=4 (MoE parallel folding)"));
  EXPECT_THAT(e, HasSubstr("ep=3 must divide num_experts=8"));
  c.ep = 2;
  EXPECT_THAT(errors(c), HasSubstr("ep=2 requires an MoE model ('llama3-70b' has num_experts=0)"));
  EXPECT_EQ(errors(c, "mixtral-8x7b"), "");
}

TEST_F(ParallelRules, OtherErrors) {
  ParallelConfig c = good_config();
  c.precision = Precision::kFp8;
  EXPECT_THAT(errors(c, "llama3-70b", "a100-80g"),
              HasSubstr("precision=fp8 needs FP8 tensor cores; 'a100-80g' has peak_fp8_tflops=0"));
  EXPECT_EQ(errors(c, "llama3-70b", "h100-sxm"), "");

  c = good_config();
  c.pp = 1;
  c.vp = 2;
  c.world = 16;
  EXPECT_THAT(errors(c), HasSubstr("vp=2 requires pp > 1"));

  c = good_config();
  c.tp = 0;
  c.mbs = -1;
  const std::string e = errors(c);
  EXPECT_THAT(e, HasSubstr("tp=0 must be positive"));
  EXPECT_THAT(e, HasSubstr("mbs=-1 must be positive"));
}

TEST_F(ParallelRules, RiskyButLegalChoicesWarn) {
  ParallelConfig c;
  c.tp = 16;
  c.pp = 4;
  c.world = 64;
  c.gbs = 2;
  c.stage_layers = {15, 16, 16, 15};  // 62 layers
  const ConfigCheck result = check(c, model_preset("gpt-28.3b"), gpu_preset("h100-sxm"));
  const std::string w = all_messages(result.warnings);
  EXPECT_THAT(w, HasSubstr("tp=16 exceeds gpus_per_node=8 of 'h100-sxm'"));
  EXPECT_THAT(w, HasSubstr("pp=4 with vp=1: interleaving (vp>1)"));
  EXPECT_THAT(w, HasSubstr("microbatches=2 < pp=4: the pipeline never fills"));
  EXPECT_TRUE(has_rule(result.warnings, "tp", "tp_within_node"));
  EXPECT_TRUE(result.ok()) << all_messages(result.errors);

  ParallelConfig small;
  small.cp = 8;
  small.world = 8;
  small.gbs = 4;
  small.sequence_parallel = true;
  const std::string w2 = warnings(small);
  EXPECT_THAT(w2, HasSubstr("cp=8 leaves seq_length/cp=1024 tokens per rank"));
  EXPECT_THAT(w2, HasSubstr("sequence_parallel has no effect with tp=1"));
}

// Settings that do nothing in this layout are said, not dropped silently.
TEST_F(ParallelRules, SettingsWithoutEffectWarn) {
  ParallelConfig c = good_config();
  EXPECT_EQ(warnings(c), "");
  c.tp = 1;
  c.world = c.pp * c.cp * 8;
  c.tp_comm_overlap = true;
  EXPECT_THAT(warnings(c), HasSubstr("tp_comm_overlap has no effect with tp=1"));
  c = good_config();
  c.etp = 1;  // tp is not 1: a different split, but the model has no experts
  EXPECT_THAT(warnings(c), HasSubstr("etp=1 splits expert layers: no effect on 'llama3-70b', which has none"));
  c = good_config();
  c.data_parallel_sharding_strategy = Sharding::kOptim;
  EXPECT_THAT(warnings(c), HasSubstr("data_parallel_sharding_strategy=optim is Megatron-FSDP's"));
  c.fsdp = Fsdp::kMegatron;
  EXPECT_THAT(warnings(c), ::testing::Not(HasSubstr("data_parallel_sharding_strategy")));
}

// --moe-shared-expert-overlap as Megatron's TransformerConfig checks it: the dispatcher and the
// shared_experts recompute only for a model with shared experts; the 1F1B EP overlap always.
TEST_F(ParallelRules, SharedExpertOverlapRulesFollowMegatron) {
  ModelSpec dsv3 = model_preset("deepseek-v3");
  dsv3.num_layers = 8;
  dsv3.mtp_num_layers = 0;
  const ModelSpec qwen = model_preset("qwen3-30b-a3b");  // no shared experts
  ParallelConfig c;  // one node, EP 8
  c.tp = c.pp = 1;
  c.ep = c.world = c.gbs = 8;
  c.moe_shared_expert_overlap = true;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  EXPECT_TRUE(has_rule(check(c, dsv3, gpu).errors, "moe_token_dispatcher_type", "shared_expert_overlap_needs_alltoall_or_flex"));
  EXPECT_FALSE(has_rule(check(c, qwen, gpu).errors, "moe_token_dispatcher_type", "shared_expert_overlap_needs_alltoall_or_flex"));
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  EXPECT_TRUE(check(c, dsv3, gpu).ok());
  c.recompute = Recompute::kSelective;
  c.recompute_modules = {"shared_experts"};
  EXPECT_TRUE(has_rule(check(c, dsv3, gpu).errors, "recompute_modules", "shared_expert_overlap_excludes_shared_recompute"));
  EXPECT_FALSE(has_rule(check(c, qwen, gpu).errors, "recompute_modules", "shared_expert_overlap_excludes_shared_recompute"));
  c.recompute = Recompute::kNone;
  c.recompute_modules.clear();
  c.overlap_moe_expert_parallel_comm = true;
  EXPECT_TRUE(has_rule(check(c, dsv3, gpu).errors, "moe_shared_expert_overlap", "shared_expert_overlap_excludes_ep_overlap"));
  EXPECT_TRUE(has_rule(check(c, qwen, gpu).errors, "moe_shared_expert_overlap", "shared_expert_overlap_excludes_ep_overlap"));
}

// --overlap-moe-expert-parallel-comm's other rules and --delay-wgrad-compute's, as Megatron's
// TransformerConfig checks them: at most one MTP layer, no TE graphs of moe or mlp, and no delayed wgrad
// without the overlap.
TEST_F(ParallelRules, EpOverlapRulesFollowMegatron) {
  ModelSpec dsv3 = model_preset("deepseek-v3");
  dsv3.num_layers = 8;
  ParallelConfig c;  // one node, EP 8
  c.tp = c.pp = 1;
  c.ep = c.world = c.gbs = 8;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  c.delay_wgrad_compute = true;
  EXPECT_TRUE(has_rule(check(c, dsv3, gpu).errors, "delay_wgrad_compute", "delay_wgrad_needs_ep_overlap"));
  c.overlap_moe_expert_parallel_comm = true;
  EXPECT_TRUE(check(c, dsv3, gpu).ok());
  dsv3.mtp_num_layers = 2;
  EXPECT_TRUE(has_rule(check(c, dsv3, gpu).errors, "overlap_moe_expert_parallel_comm", "ep_overlap_mtp_at_most_one"));
  dsv3.mtp_num_layers = 1;
  c.cuda_graph_impl = CudaGraphImpl::kTransformerEngine;
  c.cuda_graph_modules = {"attn", "moe_router"};
  EXPECT_FALSE(has_rule(check(c, dsv3, gpu).errors, "cuda_graph_modules", "ep_overlap_excludes_moe_mlp_graphs"));
  c.cuda_graph_modules = {"attn", "mlp"};
  EXPECT_TRUE(has_rule(check(c, dsv3, gpu).errors, "cuda_graph_modules", "ep_overlap_excludes_moe_mlp_graphs"));
  c.cuda_graph_impl = CudaGraphImpl::kLocal;
  EXPECT_FALSE(has_rule(check(c, dsv3, gpu).errors, "cuda_graph_modules", "ep_overlap_excludes_moe_mlp_graphs"));
}

// Megatron's default dispatcher all-gathers every token over the EP x ETP group: across nodes that
// is a warning; inside a node, or with alltoall, it is not.
TEST_F(ParallelRules, AllgatherDispatcherAcrossNodesWarns) {
  const ModelSpec mixtral = model_preset("mixtral-8x7b");
  ParallelConfig c;
  c.tp = 1;
  c.pp = 4;
  c.ep = 8;
  c.etp = 2;
  c.world = 64;
  c.gbs = 64;
  const ConfigCheck across = check(c, mixtral, gpu_preset("h100-sxm"));
  EXPECT_TRUE(has_rule(across.warnings, "moe_token_dispatcher_type", "allgather_across_nodes"));
  EXPECT_THAT(all_messages(across.warnings), HasSubstr("allgather (Megatron's default) with ep*etp=16 beyond one node of 8 GPUs"));
  c.etp = 1;
  EXPECT_FALSE(has_rule(check(c, mixtral, gpu_preset("h100-sxm")).warnings, "moe_token_dispatcher_type", "allgather_across_nodes"));
  c.etp = 2;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  EXPECT_FALSE(has_rule(check(c, mixtral, gpu_preset("h100-sxm")).warnings, "moe_token_dispatcher_type", "allgather_across_nodes"));
}

// CUDA graphs as Megatron allows them: a graph needs static shapes, so a dropless MoE layer is graphed
// in parts (attention, router, preprocessing), whole only when dropped and padded.
TEST_F(ParallelRules, CudaGraphsNeedStaticShapes) {
  const ModelSpec qwen = model_preset("qwen3-30b-a3b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ParallelConfig c{.tp = 1, .pp = 1, .ep = 8, .world = 8, .gbs = 8};
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  c.cuda_graph_impl = CudaGraphImpl::kTransformerEngine;
  c.cuda_graph_modules = {"attn", "moe_router", "moe_preprocess"};
  EXPECT_TRUE(check(c, qwen, gpu).ok());
  EXPECT_TRUE(c.cuda_graphed("attn"));
  EXPECT_FALSE(c.cuda_graphed("moe"));

  c.cuda_graph_modules = {};  // whole layers: the dispatch waits for the host mid-layer
  const ConfigCheck whole = check(c, qwen, gpu);
  EXPECT_TRUE(has_rule(whole.errors, "cuda_graph_modules", "moe_graph_needs_drop_and_pad"));
  EXPECT_THAT(all_messages(whole.errors), HasSubstr("needs static MoE shapes: set moe_expert_capacity_factor and moe_pad_expert_input_to_capacity"));
  c.moe_expert_capacity_factor = 1;
  c.moe_pad_expert_input_to_capacity = true;
  EXPECT_TRUE(check(c, qwen, gpu).ok());
  EXPECT_TRUE(c.cuda_graphed("moe"));

  c.cuda_graph_modules = {"moe_preprocess"};
  EXPECT_TRUE(has_rule(check(c, qwen, gpu).errors, "cuda_graph_modules", "moe_preprocess_needs_moe_router"));
  c.cuda_graph_modules = {"moe", "moe_router"};
  EXPECT_TRUE(has_rule(check(c, qwen, gpu).errors, "cuda_graph_modules", "moe_excludes_moe_router"));
  c.cuda_graph_modules = {"attention"};
  EXPECT_THAT(all_messages(check(c, qwen, gpu).errors), HasSubstr("cuda_graph_modules: 'attention' is not one of attn, mlp, moe, moe_router, moe_preprocess"));
  c.cuda_graph_modules = {"mlp"};
  EXPECT_TRUE(has_rule(check(c, qwen, gpu).errors, "cuda_graph_modules", "mlp_graph_needs_dense_layers"));
  c.cuda_graph_impl = CudaGraphImpl::kFullIteration;
  EXPECT_TRUE(has_rule(check(c, qwen, gpu).errors, "cuda_graph_modules", "full_iteration_takes_no_modules"));
  c.cuda_graph_impl = CudaGraphImpl::kNone;
  const ConfigCheck unused = check(c, qwen, gpu);
  EXPECT_TRUE(unused.ok());
  EXPECT_TRUE(has_rule(unused.warnings, "cuda_graph_modules", "cuda_graph_modules_need_impl"));

  const ModelSpec llama = model_preset("llama3-8b");
  ParallelConfig dense{.tp = 1, .pp = 1, .world = 8, .gbs = 8};
  dense.cuda_graph_impl = CudaGraphImpl::kLocal;
  dense.cuda_graph_modules = {"moe_router"};
  EXPECT_TRUE(has_rule(check(dense, llama, gpu).errors, "cuda_graph_modules", "moe_graph_needs_moe"));
  dense.cuda_graph_modules = {};
  EXPECT_TRUE(check(dense, llama, gpu).ok());
  dense.recompute = Recompute::kFull;
  EXPECT_TRUE(has_rule(check(dense, llama, gpu).errors, "recompute", "full_recompute_needs_full_iteration"));

  // Megatron's local impl graphs the router and its preprocessing together.
  c.moe_expert_capacity_factor = 0;
  c.moe_pad_expert_input_to_capacity = false;
  c.cuda_graph_impl = CudaGraphImpl::kLocal;
  c.cuda_graph_modules = {"moe_preprocess"};
  EXPECT_TRUE(check(c, qwen, gpu).ok());
  EXPECT_TRUE(c.cuda_graphed("moe_router"));
  // HybridEP's per-rank budget makes the shapes static for a whole iteration, not for per-layer graphs
  // of the MoE layer (Megatron asks those for drop-and-pad).
  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  c.moe_flex_dispatcher_backend = "hybridep";
  c.moe_expert_rank_capacity_factor = 1.5;
  c.cuda_graph_modules = {};
  EXPECT_TRUE(has_rule(check(c, qwen, gpu).errors, "cuda_graph_modules", "moe_graph_needs_drop_and_pad"));
  c.cuda_graph_impl = CudaGraphImpl::kFullIteration;
  EXPECT_TRUE(check(c, qwen, gpu).ok());
}

// Megatron's token drop: an expert computes at most capacity_factor x the mean tokens, exactly that
// when padded; padding needs the factor, and DeepEP is dropless only.

TEST_F(ParallelRules, CapacityFactorCapsOrPadsTheBusiestExperts) {
  const ModelSpec qwen = model_preset("qwen3-30b-a3b");
  ParallelConfig c;
  c.tp = 1;
  c.pp = 1;
  c.ep = 8;
  c.world = 8;
  c.gbs = 8;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  c.moe_load_imbalance = 1.5;
  EXPECT_EQ(c.moe_busiest_load(), 1.5);
  EXPECT_TRUE(c.moe_dispatch_waits_for_host());
  c.moe_expert_capacity_factor = 1.25;
  EXPECT_EQ(c.moe_busiest_load(), 1.25);  // the rest dropped
  c.moe_load_imbalance = 1;
  EXPECT_EQ(c.moe_busiest_load(), 1);
  c.moe_pad_expert_input_to_capacity = true;
  EXPECT_EQ(c.moe_busiest_load(), 1.25);  // padded up to the capacity
  EXPECT_FALSE(c.moe_dispatch_waits_for_host());
  EXPECT_TRUE(check(c, qwen, gpu_preset("h100-sxm")).ok());
  c.moe_token_dispatcher_type = MoeDispatcher::kAllgather;
  EXPECT_TRUE(c.moe_dispatch_waits_for_host());  // Megatron's allgather dispatcher copies its counts regardless

  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  c.moe_flex_dispatcher_backend = "deepep";
  EXPECT_TRUE(has_rule(check(c, qwen, gpu_preset("h100-sxm")).errors, "moe_pad_expert_input_to_capacity", "deepep_cannot_pad"));
  c.moe_flex_dispatcher_backend = "hybridep";
  EXPECT_TRUE(check(c, qwen, gpu_preset("h100-sxm")).ok());
  c.moe_expert_capacity_factor = 0;
  const ConfigCheck unpadded = check(c, qwen, gpu_preset("h100-sxm"));
  EXPECT_TRUE(has_rule(unpadded.errors, "moe_pad_expert_input_to_capacity", "needs_capacity_factor"));
  EXPECT_THAT(all_messages(unpadded.errors), HasSubstr("moe_pad_expert_input_to_capacity needs moe_expert_capacity_factor > 0"));
  c.moe_expert_capacity_factor = -1;
  EXPECT_TRUE(has_rule(check(c, qwen, gpu_preset("h100-sxm")).errors, "moe_expert_capacity_factor", "range"));

  // HybridEP's per-rank budget: static buffers, no wait for the host; beyond it tokens are dropped.
  c.moe_expert_capacity_factor = 0;
  c.moe_pad_expert_input_to_capacity = false;
  c.moe_load_imbalance = 2;
  c.moe_expert_rank_capacity_factor = 1.5;
  EXPECT_TRUE(check(c, qwen, gpu_preset("h100-sxm")).ok());
  EXPECT_FALSE(c.moe_dispatch_waits_for_host());
  EXPECT_EQ(c.moe_busiest_load(), 1.5);
  c.moe_flex_dispatcher_backend = "deepep";
  EXPECT_TRUE(has_rule(check(c, qwen, gpu_preset("h100-sxm")).errors, "moe_expert_rank_capacity_factor", "rank_capacity_needs_hybridep"));
}

// Megatron's rules for activation CPU offloading, and the host link pipelab times it on.
TEST_F(ParallelRules, CpuOffloadingFollowsMegatronsRules) {
  const ModelSpec llama = model_preset("llama3-8b");  // 32 layers
  ParallelConfig c{.tp = 1, .pp = 1, .dp = 8, .mbs = 1, .gbs = 8, .seq_length = 8192};
  c.cpu_offloading_num_layers = 16;
  c = resolve(c, llama);
  GpuSpec gpu = gpu_preset("h100-sxm");
  EXPECT_TRUE(check(c, llama, gpu).ok()) << all_messages(check(c, llama, gpu).errors);
  c.cpu_offloading_num_layers = 31;
  EXPECT_TRUE(has_rule(check(c, llama, gpu).warnings, "cpu_offloading_num_layers", "offload_leaves_one_layer"));
  c.cpu_offloading_num_layers = 32;
  EXPECT_THAT(all_messages(check(c, llama, gpu).errors), HasSubstr("cpu_offloading_num_layers=32 must be less than num_layers=32"));
  c.cpu_offloading_num_layers = -1;
  EXPECT_TRUE(has_rule(check(c, llama, gpu).errors, "cpu_offloading_num_layers", "non_negative"));
  c.cpu_offloading_num_layers = 16;
  c.recompute = Recompute::kSelective;
  EXPECT_TRUE(has_rule(check(c, llama, gpu).errors, "cpu_offloading_num_layers", "offload_excludes_recompute"));
  c.recompute = Recompute::kNone;
  gpu.host_link_bandwidth_gbps = 0;
  EXPECT_THAT(all_messages(check(c, llama, gpu).errors), HasSubstr("'h100-sxm' has no host_link_bandwidth_gbps"));
  gpu = gpu_preset("h100-sxm");
  c.pp = 2;
  c.dp = 4;
  EXPECT_THAT(all_messages(check(c, llama, gpu).errors), HasSubstr("cpu_offloading_num_layers needs pp=1, got pp=2"));
}

TEST_F(ParallelRules, RequireValidJoinsEveryError) {
  ParallelConfig c = good_config();
  c.stage_layers = {80};
  c.gbs = 101;
  const std::string message = error_message<ConfigError>(
      [&] { require_valid(c, model_preset("llama3-70b"), gpu_preset("h100-sxm")); });
  EXPECT_THAT(message, HasSubstr("stage_layers has 1 entries, need pp*vp=20"));
  EXPECT_THAT(message, HasSubstr("\ngbs=101 must be a multiple of mbs*dp=2"));
}

TEST(ParallelResolve, DerivesDpWorldSeqAndSequenceParallel) {
  const ModelSpec model = model_preset("llama3-70b");
  const ParallelConfig r = resolve(good_config(), model);
  EXPECT_EQ(r.dp, 2);
  EXPECT_EQ(r.world, 64);
  EXPECT_EQ(r.seq_length, 8192);
  EXPECT_EQ(r.sequence_parallel, true);
  EXPECT_EQ(r.microbatches(), 64);

  ParallelConfig by_dp;
  by_dp.tp = 2;
  by_dp.dp = 3;
  by_dp.gbs = 12;
  by_dp.seq_length = 4096;
  const ParallelConfig r2 = resolve(by_dp, model);
  EXPECT_EQ(r2.world, 6);
  EXPECT_EQ(r2.seq_length, 4096);
  EXPECT_EQ(r2.microbatches(), 4);

  ParallelConfig no_tp;
  no_tp.world = 8;
  no_tp.gbs = 8;
  EXPECT_EQ(resolve(no_tp, model).sequence_parallel, false);
}

TEST(ParallelResolve, ErrorsWhenDpCannotBeDerived) {
  const ModelSpec model = model_preset("llama3-70b");
  ParallelConfig c = good_config();
  c.world = 60;
  EXPECT_THAT(error_message<ConfigError>([&] { resolve(c, model); }),
              HasSubstr("world=60 must be a multiple of tp*pp*cp = 8*4*1 = 32 to derive dp"));
  c.world = 0;
  EXPECT_THAT(error_message<ConfigError>([&] { resolve(c, model); }), HasSubstr("give dp or world"));
  EXPECT_THAT(error_message<ConfigError>([&] { good_config().microbatches(); }),
              HasSubstr("call resolve() first"));
}

TEST(ParallelStages, EvenOrExplicitSplit) {
  const ModelSpec model = model_preset("llama3-70b");
  ParallelConfig c = good_config();
  EXPECT_EQ(layers_per_stage(c, model), std::vector<int>(20, 4));
  c.vp = 1;
  c.stage_layers = {19, 21, 21, 19};
  EXPECT_EQ(layers_per_stage(c, model), (std::vector<int>{19, 21, 21, 19}));
  c.stage_layers = {20, 20, 20};
  EXPECT_THAT(error_message<ConfigError>([&] { layers_per_stage(c, model); }),
              HasSubstr("stage_layers has 3 entries, need pp*vp=4"));
}

TEST(ParallelJson, RoundTripAndStrictKeys) {
  ParallelConfig c = good_config();
  c.stage_layers = std::vector<int>(20, 4);
  c.recompute = Recompute::kSelective;
  c.precision = Precision::kFp8;
  c.sequence_parallel = true;
  EXPECT_EQ(parallel_config_from_json(to_json(c), "p.json"), c);
  EXPECT_EQ(parallel_config_from_json(to_json(ParallelConfig{.gbs = 8}), "p.json"), ParallelConfig{.gbs = 8});

  const ParallelConfig parsed =
      parse_parallel_config(R"({"tp": 2, "pp": 2, "world": 8, "gbs": 16, "recompute": "full"})", "p.json");
  EXPECT_EQ(parsed.tp, 2);
  EXPECT_EQ(parsed.recompute, Recompute::kFull);
  EXPECT_FALSE(parsed.sequence_parallel.has_value());

  EXPECT_THAT(error_message<InputError>([] { parse_parallel_config(R"({"tp": 2})", "p.json"); }),
              HasSubstr("p.json: missing required parallel key 'gbs'"));
  EXPECT_THAT(error_message<InputError>([] { parse_parallel_config(R"({"gbs": 8, "tpp": 2})", "p.json"); }),
              HasSubstr("p.json: unknown parallel key 'tpp' (did you mean 'tp'?)"));
  EXPECT_THAT(error_message<InputError>([] { parse_parallel_config(R"({"gbs": 8, "recompute": "most"})", "p.json"); }),
              HasSubstr("recompute='most' must be one of: none, selective, full"));
  EXPECT_THAT(error_message<InputError>([] { parse_parallel_config(R"({"gbs": 8, "stage_layers": [1, "2"]})", "p.json"); }),
              HasSubstr("parallel key 'stage_layers' must be an array of integers"));
}

TEST(ParallelOverride, AcceptsOurAndMegatronNames) {
  ParallelConfig c;
  apply_override(c, "--tensor-model-parallel-size", "8");
  apply_override(c, "pipeline_model_parallel_size", "4");
  apply_override(c, "--virtual-pipeline-model-parallel-size", "2");
  apply_override(c, "global-batch-size", "256");
  apply_override(c, "micro_batch_size", "2");
  apply_override(c, "recompute-granularity", "selective");
  apply_override(c, "use-distributed-optimizer", "false");
  apply_override(c, "stage_layers", "9,10,10,11,10,10,10,10");
  apply_override(c, "precision", "fp8");
  apply_override(c, "world", "64");
  EXPECT_EQ(c.tp, 8);
  EXPECT_EQ(c.pp, 4);
  EXPECT_EQ(c.vp, 2);
  EXPECT_EQ(c.gbs, 256);
  EXPECT_EQ(c.mbs, 2);
  EXPECT_EQ(c.recompute, Recompute::kSelective);
  EXPECT_FALSE(c.distributed_optimizer);
  EXPECT_EQ(c.stage_layers, (std::vector<int>{9, 10, 10, 11, 10, 10, 10, 10}));
  EXPECT_EQ(c.precision, Precision::kFp8);
  EXPECT_EQ(c.world, 64);

  EXPECT_THAT(error_message<InputError>([&] { apply_override(c, "pipline", "2"); }),
              HasSubstr("unknown parallel field 'pipline'"));
  EXPECT_THAT(error_message<InputError>([&] { apply_override(c, "tp", "eight"); }),
              HasSubstr("tp=eight: expected an integer"));
  EXPECT_THAT(error_message<InputError>([&] { apply_override(c, "stage_layers", "1,,2"); }),
              HasSubstr("stage_layers=: expected an integer"));
  EXPECT_EQ(c.tp, 8);
}

TEST(ParallelOverride, IntListsNameTheBadItem) {
  EXPECT_EQ(parse_int_list("--stage-layers", "19,21,21,19"), (std::vector<int>{19, 21, 21, 19}));
  EXPECT_THAT(error_message<InputError>([] { parse_int_list("--stage-layers", "19,2x,19"); }),
              HasSubstr("--stage-layers=2x: expected an integer"));
  EXPECT_THAT(error_message<InputError>([] { parse_int_list("--stage-layers", "19,21,"); }),
              HasSubstr("--stage-layers=: expected an integer"));
}

}  // namespace
}  // namespace pipelab
