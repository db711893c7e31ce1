// Analytic cost model and memory model against hand-computed formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/profiles/flops.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/cluster_layout.h"
#include "pipelab/sim/memory_model.h"
#include "pipelab/sim/simulation.h"
#include "pipelab/sim/unfused_attention.h"
#include "pipelab/sim/host_launches.h"

namespace pipelab {
namespace {

ParallelConfig layout(const ModelSpec& m, int tp, int pp, int dp, int mbs, int gbs, int seq = 0) {
  ParallelConfig c;
  c.tp = tp;
  c.pp = pp;
  c.dp = dp;
  c.mbs = mbs;
  c.gbs = gbs;
  c.seq_length = seq;
  c.vp = 0;  // each schedule's own chunks per rank
  return resolve(c, m);
}

sim::SimulationOutcome run(const std::string& model, const std::string& schedule, const ParallelConfig& c,
                           const std::string& gpu = "h100-sxm") {
  sim::SimulationRequest r;
  r.model = model_preset(model);
  r.gpu = gpu_preset(gpu);
  r.config = c;
  r.schedule = schedule;
  return sim::simulate_config(r);
}

// The FLOPs the simulator puts on the timeline, summed over ranks and scaled by the GPUs sharing
// each stage's work (TP x CP) and the DP replicas, are Megatron's model FLOPs to rounding.
TEST(AnalyticCost, TimelineFlopsEqualMegatronsFormula) {
  // pp chosen so the layers split over pp (1F1B) and 2*pp (ZB-V, DualPipeV) parts.
  for (const auto& [model, pp] : {std::pair{"llama3-70b", 4}, std::pair{"gpt-6.2b", 3}, std::pair{"gpt-1.5b", 11}}) {
    const ModelSpec m = model_preset(model);
    const ParallelConfig c = layout(m, 2, pp, 2, 1, 4 * pp * 2);
    for (const char* schedule : {"1f1b", "zb-v", "dualpipev"}) {
      const auto o = run(model, schedule, c);
      double flops = 0;
      for (const auto& r : o.metrics.ranks) flops += r.flops;
      flops *= c.tp * c.cp * c.dp;
      const double megatron = megatron_model_flops(m, c.gbs, c.seq_length, 128 * c.tp);
      EXPECT_NEAR(flops / megatron, 1.0, 1e-9) << model << " " << schedule;
      EXPECT_DOUBLE_EQ(o.model_flops, megatron);
    }
  }
}

TEST(AnalyticCost, SplitsBackwardIntoInputAndWeightGrads) {
  const ModelSpec m = model_preset("llama3-8b");
  const ParallelConfig c = layout(m, 1, 4, 1, 1, 8);
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const sim::AnalyticCost cost(m, gpu_preset("h100-sxm"), c, s.shape);
  const auto& st = cost.stage(1);
  // dgrad and wgrad GEMMs match the forward's; the attention backward is all input-grad.
  EXPECT_DOUBLE_EQ(st.i.gemm_ns, st.f.gemm_ns);
  EXPECT_DOUBLE_EQ(st.w.gemm_ns, st.f.gemm_ns);
  EXPECT_GT(st.i.attention_ns, st.f.attention_ns);
  EXPECT_EQ(st.w.attention_ns, 0);
  EXPECT_GT(st.i.total_ns(), st.w.total_ns());
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::B, 1, 0)),
            std::llround(st.i.total_ns() + st.w.total_ns()));
}

// --overlap-grad-reduce: Megatron buckets only the first stage (pp rank 0, chunk 0); there only the last
// bucket follows the backward, and the word embedding (525 M parameters for Llama 3 8B at TP1), which no
// bucket splits, is larger than the default bucket. The reduce-scatter by hand: 7 ring steps of the NVLink
// latency plus 7/8 of the bytes over 450 GB/s x 0.8.
TEST(AnalyticCost, OnlyTheFirstStagesLastBucketFollowsItsBackward) {
  const ModelSpec m = model_preset("llama3-8b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const Schedule s = make_schedule("1f1b", {2, 1, 8, 0});
  const ParallelConfig c = layout(m, 1, 2, 8, 1, 64);
  const sim::AnalyticCost cost(m, gpu, c, s.shape);
  const double embedding = 128256.0 * 4096;  // 128,256 is a multiple of Megatron's 128 padding
  const double tail_ns = 7 * gpu.nvlink_latency_ns + embedding * 2 * 7 / 8 / (gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency);
  EXPECT_NEAR(static_cast<double>(cost.reduce_grad_tail_ns(0, 0)), tail_ns, 1);
  EXPECT_LT(cost.reduce_grad_tail_ns(0, 0), cost.reduce_grad_ns(0, 0));
  EXPECT_EQ(cost.reduce_grad_tail_ns(1, 1), cost.reduce_grad_ns(1, 1));  // one bucket after the pass
  ParallelConfig off = c;
  off.overlap_grad_reduce = false;
  const sim::AnalyticCost no_overlap(m, gpu, off, s.shape);
  EXPECT_EQ(no_overlap.reduce_grad_tail_ns(0, 0), no_overlap.reduce_grad_ns(0, 0));
  EXPECT_DOUBLE_EQ(cost.dp_collective_compute_loss(), 0.16);  // 16 SMs of an H100's: 1 % each, as for DeepEP's 20 (sm_carve_out.h)
  EXPECT_EQ(cost.reduce_grad_tail_bytes(0), static_cast<std::int64_t>(embedding * 2));
  // The default bucket grows with the DP x CP group (training.py resolve_ddp_bucket_size): 1 M x 128
  // parameters beat TP8's 66 M-parameter embedding shard.
  ParallelConfig wide{.tp = 8, .pp = 2, .cp = 4, .dp = 32, .mbs = 1, .gbs = 256, .seq_length = 8192};
  wide = resolve(wide, m);
  const sim::AnalyticCost cp_cost(m, gpu, wide, s.shape);
  EXPECT_EQ(cp_cost.reduce_grad_tail_bytes(0), static_cast<std::int64_t>(128e6 * 2));
  EXPECT_EQ(cp_cost.reduce_grad_tail_bytes(1), cp_cost.reduce_grad_bytes(1));
}

// Routed experts' gradients are reduced over the expert-DP group (tp x cp x dp / (ep x etp)), dense ones
// over DP x CP (Megatron's MoE parallel folding). Mixtral at TP2 DP2 EP4 ETP1: the expert-DP group is one
// rank, so only the dense gradients move: over the two DP ranks, 2 apart inside a node (by hand).
TEST(AnalyticCost, ExpertGradientsAreReducedOverTheExpertDataParallelGroup) {
  const ModelSpec m = model_preset("mixtral-8x7b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const Schedule s = make_schedule("1f1b", {1, 1, 4, 0});
  ParallelConfig c{.tp = 2, .pp = 1, .ep = 4, .etp = 1, .dp = 2, .mbs = 1, .gbs = 8, .seq_length = 4096};
  c.overlap_grad_reduce = false;  // one bucket, after the pass
  c = resolve(c, m);
  ASSERT_EQ(c.expert_dp(), 1);
  const sim::AnalyticCost cost(m, gpu, c, s.shape);
  const sim::LayerGeometry g(m, c);
  sim::GpuParams params;
  for (int l = 0; l < m.num_layers; ++l) params.experts += g.layer_params(l).experts;
  const double dense = static_cast<double>(cost.reduce_grad_bytes(0)) - 2.0 * static_cast<double>(params.experts);
  const double by_hand = gpu.nvlink_latency_ns + dense / 2 / (gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency);
  EXPECT_NEAR(static_cast<double>(cost.reduce_grad_ns(0, 0)), by_hand, 2);
  EXPECT_EQ(cost.reduce_grad_tail_ns(0, 0), cost.reduce_grad_ns(0, 0));  // one bucket: the tail is all of it
  // Expert data parallelism of 2 (EP2): the experts' gradients move too, after the dense ones.
  ParallelConfig ep2 = c;
  ep2.ep = 2;
  const sim::AnalyticCost replicated(m, gpu, ep2, s.shape);
  EXPECT_GT(replicated.reduce_grad_ns(0, 0), cost.reduce_grad_ns(0, 0));
}

// The distributed optimizer's parameter all-gather with --overlap-param-gather: the same gather the
// reduction carries without it, received bytes (g - 1) / g of the stage's weights; bucketed as the
// gradients are (the first stage only, into max(40M, 1M x DP, the word embedding) parameters);
// aligned across stages with virtual pipelining; none under FSDP (it gathers per layer).
TEST(AnalyticCost, ParameterGatherIsTheReductionsGatherMovedBeforeTheForward) {
  const ModelSpec m = model_preset("llama3-8b");  // 32 layers: 16 per stage at pp = 2
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const PipelineShape shape = make_schedule("1f1b", {2, 1, 8, 0}).shape;
  ParallelConfig c = layout(m, 1, 2, 4, 1, 32, 8192);
  const sim::AnalyticCost overlapped(m, gpu, c, shape);
  c.overlap_param_gather = false;
  const sim::AnalyticCost after_step(m, gpu, c, shape);
  const sim::ParamGather last = overlapped.param_gather(1, 1);
  EXPECT_GT(last.ns, 0);
  EXPECT_NEAR(last.ns, after_step.reduce_grad_ns(1, 1) - overlapped.reduce_grad_ns(1, 1), 1);  // ns rounding
  EXPECT_EQ(after_step.param_gather(1, 1).ns, 0);
  EXPECT_EQ(last.buckets, 1);
  EXPECT_FALSE(last.aligned);
  // Stage 1: 16 layers and the (untied) output layer.
  const double bf16 = 2;
  const double stage1_params = 16.0 * static_cast<double>(m.layer_params(0)) + 128256.0 * 4096;
  EXPECT_NEAR(static_cast<double>(last.bytes), stage1_params * bf16 * 3 / 4, 1e-6 * static_cast<double>(last.bytes));
  // Stage 0: 16 layers and the embedding, in buckets of the embedding's 525M parameters.
  const double stage0_params = 16.0 * static_cast<double>(m.layer_params(0)) + 128256.0 * 4096;
  EXPECT_EQ(overlapped.param_gather(0, 0).buckets, static_cast<int>(std::ceil(stage0_params / (128256.0 * 4096))));
  // Interleaved stages gather aligned; FSDP not at all.
  ParallelConfig v = layout(m, 1, 2, 4, 1, 32, 8192);
  v.vp = 2;
  EXPECT_TRUE(sim::AnalyticCost(m, gpu, v, make_schedule("interleaved-1f1b", {2, 2, 8, 0}).shape).param_gather(0, 1).aligned);
  ParallelConfig f = layout(m, 1, 2, 4, 1, 32, 8192);
  f.fsdp = Fsdp::kMegatron;
  f = resolve(f, m);
  EXPECT_EQ(sim::AnalyticCost(m, gpu, f, shape).param_gather(0, 1).ns, 0);
}

// Fused attention: the forward at the curve's forward efficiency for the keys each query attends in
// one kernel call, the backward 2.5x the forward's FLOPs at the backward efficiency (by hand).
TEST(AnalyticCost, AttentionIsOneFusedKernelReadAtItsKeysPerQuery) {
  const ModelSpec m = model_preset("llama3-8b");  // 32 layers: 8 per stage at pp = 4
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.attention_efficiency_curve = {{1024, 0.3, 0.2}, {4096, 0.6, 0.4}};
  const PipelineShape shape = make_schedule("1f1b", {4, 1, 8, 0}).shape;
  const double peak = gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio;  // FLOP/ns held at the power limit
  ParallelConfig c = layout(m, 1, 4, 1, 1, 8, 8192);
  const double flops = layer_forward_flops(m, 1, 1, 8192).attention_core;
  const sim::StageCost causal = sim::AnalyticCost(m, gpu, c, shape).stage(1);  // 4096 keys per query
  EXPECT_NEAR(causal.f.attention_ns, 8 * flops / (peak * 0.6), 1e-9 * causal.f.attention_ns);
  EXPECT_NEAR(causal.i.attention_ns, 8 * 2.5 * flops / (peak * 0.4), 1e-9 * causal.i.attention_ns);

  // CP's p2p ring: a kernel per step on half the keys (2048: halfway in log between the points).
  c.cp = 2;
  const double cp_flops = layer_forward_flops(m, 1, 1, 8192, 1, 2).attention_core;
  const sim::StageCost ring = sim::AnalyticCost(m, gpu, c, shape).stage(1);
  EXPECT_NEAR(ring.f.attention_ns, 8 * cp_flops / (peak * 0.45), 1e-9 * ring.f.attention_ns);
  EXPECT_NEAR(ring.i.attention_ns, 8 * 2.5 * cp_flops / (peak * 0.3), 1e-9 * ring.i.attention_ns);
  // Ulysses (a2a) gathers the sequence: each query attends all its 4096 keys in one call.
  c.cp_comm_type = CpCommType::kA2a;
  const double a2a = sim::AnalyticCost(m, gpu, c, shape).stage(1).f.attention_ns;
  EXPECT_NEAR(a2a, 8 * cp_flops / (peak * 0.6), 1e-9 * a2a);
  // a2a+p2p at cp = 4 as 2 x 2: the ring over the P = 2 groups splits the keys in two, not in four.
  c.cp = 4;
  c.cp_comm_type = CpCommType::kA2aP2p;
  c.hierarchical_context_parallel_sizes = {2, 2};
  const double cp4_flops = layer_forward_flops(m, 1, 1, 8192, 1, 4).attention_core;
  const double hierarchical = sim::AnalyticCost(m, gpu, c, shape).stage(1).f.attention_ns;
  EXPECT_NEAR(hierarchical, 8 * cp4_flops / (peak * 0.45), 1e-9 * hierarchical);
  // cp = 1 with a2a+p2p named (and no sizes): no ring, the whole 4096 keys.
  c.cp = 1;
  c.hierarchical_context_parallel_sizes.clear();
  const double single = sim::AnalyticCost(m, gpu, c, shape).stage(1).f.attention_ns;
  EXPECT_NEAR(single, causal.f.attention_ns, 1e-9 * single);

  // Head dim 64 (64 heads of 64 instead of 32 of 128: the same FLOPs) at cuDNN's 0.73 / 0.81 of the curve.
  ModelSpec narrow = m;
  narrow.num_attention_heads = 64;
  narrow.kv_channels = 64;
  const sim::StageCost d64 = sim::AnalyticCost(narrow, gpu, resolve(c, narrow), shape).stage(1);
  EXPECT_NEAR(layer_forward_flops(narrow, 1, 1, 8192).attention_core, flops, 1e-9 * flops);
  EXPECT_NEAR(d64.f.attention_ns, 8 * flops / (peak * 0.6 * 0.73), 1e-9 * d64.f.attention_ns);
  EXPECT_NEAR(d64.i.attention_ns, 8 * 2.5 * flops / (peak * 0.4 * 0.81), 1e-9 * d64.i.attention_ns);

  // Without a curve: one BF16 GEMM per (sequence, local head), the backward 2.5x its work.
  gpu.attention_efficiency_curve.clear();
  c.cp = 1;
  c.cp_comm_type = CpCommType::kP2p;
  const sim::StageCost gemm = sim::AnalyticCost(m, gpu, c, shape).stage(1);
  EXPECT_NEAR(gemm.f.attention_ns, 8 * flops / (peak * gpu.gemm_efficiency(flops / 32)), 1e-9 * gemm.f.attention_ns);
  EXPECT_NEAR(gemm.i.attention_ns, 2.5 * gemm.f.attention_ns, 1e-9 * gemm.i.attention_ns);
}

// The GPU's sustained compute ratio slows the tensor-core work (GEMMs, FP8 GEMMs, attention) by its
// inverse and nothing else: memory-bound kernels and communication keep their times.
TEST(AnalyticCost, AttentionCurveNeedsPositiveKeys) {
  const GpuSpec gpu = gpu_preset("h100-sxm");
  EXPECT_THROW(gpu.attention_efficiency(0), InputError);
  EXPECT_THROW(gpu.attention_efficiency(-1), InputError);
}

TEST(AnalyticCost, SustainedComputeRatioSlowsOnlyTensorCoreWork) {
  const ModelSpec m = model_preset("llama3-70b");
  const PipelineShape shape = make_schedule("1f1b", {4, 1, 8, 0}).shape;
  GpuSpec full = gpu_preset("h100-sxm");
  full.sustained_compute_ratio = 1;
  GpuSpec held = full;
  held.sustained_compute_ratio = 0.8;
  for (const Precision precision : {Precision::kBf16, Precision::kFp8}) {
    ParallelConfig c = layout(m, 4, 4, 1, 1, 8);
    c.precision = precision;
    const sim::PassCost a = sim::AnalyticCost(m, full, c, shape).stage(1).f;
    const sim::PassCost b = sim::AnalyticCost(m, held, c, shape).stage(1).f;
    EXPECT_NEAR(b.gemm_ns, a.gemm_ns / 0.8, 1e-9 * b.gemm_ns) << to_string(precision);
    EXPECT_NEAR(b.attention_ns, a.attention_ns / 0.8, 1e-9 * b.attention_ns) << to_string(precision);
    EXPECT_DOUBLE_EQ(b.elementwise_ns, a.elementwise_ns) << to_string(precision);
    EXPECT_DOUBLE_EQ(b.tp_comm_ns, a.tp_comm_ns) << to_string(precision);
    EXPECT_DOUBLE_EQ(b.flops, a.flops) << to_string(precision);  // model FLOPs, MFU's numerator
  }
}

// A sliding-window layer's kernel is read at the window's mean keys per query, not s/2.
TEST(AnalyticCost, WindowedAttentionReadsTheCurveAtTheWindow) {
  const ModelSpec m = model_preset("gpt-oss-120b");  // layers 0, 2, ... windowed (128 + 1 keys)
  ASSERT_TRUE(m.is_window_attention_layer(0));
  ASSERT_FALSE(m.is_window_attention_layer(1));
  const double s = 4096;
  EXPECT_NEAR(attended_keys_per_query(m, 0, 4096), 129 - 129.0 * 128 / (2 * s), 1e-9);
  EXPECT_DOUBLE_EQ(attended_keys_per_query(m, 1, 4096), s / 2);

  // Transformer Engine runs CP over a sliding window only as a2a or all_gather, never on the p2p ring.
  ParallelConfig c = layout(m, 1, 1, 1, 1, 8, 4096);
  c.cp = 2;
  c.vp = 1;
  c.world = 2;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  for (const CpCommType type : {CpCommType::kP2p, CpCommType::kA2aP2p}) {
    c.cp_comm_type = type;
    c.hierarchical_context_parallel_sizes = type == CpCommType::kA2aP2p ? std::vector<int>{1, 2} : std::vector<int>{};
    const ConfigCheck checked = check(c, m, gpu);
    ASSERT_EQ(checked.errors.size(), 1u) << to_string(type) << ": " << checked.errors.at(0).message;
    EXPECT_EQ(checked.errors[0].rule, "window_needs_gathered_cp") << to_string(type);
    EXPECT_EQ(checked.errors[0].message,
              "cp_comm_type=" + std::string(to_string(type)) +
                  " at cp=2 cannot run sliding-window attention (window_size=128): Transformer Engine supports CP with a "
                  "sliding window only as a2a or all_gather");
  }
  c.hierarchical_context_parallel_sizes.clear();
  c.cp_comm_type = CpCommType::kA2a;
  EXPECT_TRUE(check(c, m, gpu).ok()) << check(c, m, gpu).errors.at(0).message;
}

TEST(AnalyticCost, TensorParallelismShrinksComputeAndAddsCollectives) {
  const ModelSpec m = model_preset("llama3-70b");
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const auto gpu = gpu_preset("h100-sxm");
  const sim::AnalyticCost tp1(m, gpu, layout(m, 1, 4, 1, 1, 8), s.shape);
  const sim::AnalyticCost tp4(m, gpu, layout(m, 4, 4, 1, 1, 8), s.shape);
  EXPECT_LT(tp4.stage(1).f.gemm_ns, tp1.stage(1).f.gemm_ns / 3);
  EXPECT_EQ(tp1.stage(1).f.tp_comm_ns, 0);
  EXPECT_GT(tp4.stage(1).f.tp_comm_ns, 0);
}

// FP8 as Transformer Engine runs it: only the linear layers' GEMMs move to the FP8 peak and curve,
// each FP8 GEMM input is quantized (memory traffic, more for current scaling than delayed), the
// attention core stays BF16, and MFU is still against the BF16 peak.
TEST(AnalyticCost, Fp8SpeedsUpOnlyTheLinearLayersAndPaysForQuantization) {
  const ModelSpec m = model_preset("llama3-70b");
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const auto gpu = gpu_preset("h100-sxm");
  ParallelConfig bf16 = layout(m, 4, 4, 1, 1, 8);
  ParallelConfig delayed = bf16;
  delayed.precision = Precision::kFp8;
  ParallelConfig current = delayed;
  current.fp8_recipe = Fp8Recipe::kTensorwise;
  ParallelConfig blockwise = delayed;
  blockwise.fp8_recipe = Fp8Recipe::kBlockwise;
  const sim::AnalyticCost b(m, gpu, bf16, s.shape), d(m, gpu, delayed, s.shape), t(m, gpu, current, s.shape),
      k(m, gpu, blockwise, s.shape);
  const sim::PassCost& bf = b.stage(1).f;
  const sim::PassCost& df = d.stage(1).f;
  EXPECT_DOUBLE_EQ(df.attention_ns, bf.attention_ns);
  // Large projections: FP8 kernels about 1.8x BF16 on H100 (measured curves), never the 2x of the peaks.
  EXPECT_GT(bf.gemm_ns / df.gemm_ns, 1.6);
  EXPECT_LT(bf.gemm_ns / df.gemm_ns, 2.0);
  EXPECT_GT(df.elementwise_ns, bf.elementwise_ns);                      // quantization traffic
  EXPECT_GT(t.stage(1).f.elementwise_ns, df.elementwise_ns);            // current scaling reads twice
  EXPECT_GT(t.stage(1).i.elementwise_ns, d.stage(1).i.elementwise_ns);  // and so do the gradients
  EXPECT_GT(k.stage(1).f.gemm_ns, t.stage(1).f.gemm_ns);                // block-scaled GEMMs are slower
  ParallelConfig mx = delayed;
  mx.fp8_recipe = Fp8Recipe::kMxfp8;
  // Dense middle stage: every GEMM of F is a linear layer's, so MXFP8's factor shows exactly (TE, B300).
  EXPECT_NEAR(sim::AnalyticCost(m, gpu, mx, s.shape).stage(1).f.gemm_ns / t.stage(1).f.gemm_ns, 7.161 / 6.812, 1e-9);
  // End to end well under the 2x of the peaks: Megatron-Bridge's guide says 1.2-1.5x.
  const double speedup = b.stage(1).f.total_ns() / df.total_ns();
  EXPECT_GT(speedup, 1.2);
  EXPECT_LT(speedup, 1.7);
  const auto o = run("llama3-70b", "1f1b", delayed);
  EXPECT_NEAR(o.throughput.mfu, o.throughput.tflops_per_gpu / gpu.peak_bf16_tflops, 1e-12);
}

// The gated MLP's activation is Megatron's SwiGLU kernel, timed at the fractions of peak HBM bandwidth
// measured on H100: forward (3 x the per-rank FFN width read and written) at 0.55, backward (5 x) at
// 0.196. By hand from a model one 1024-wide FFN step wider (only the activation's traffic depends on it in BF16).
TEST(AnalyticCost, MegatronSwigluIsTimedAsMeasuredByHand) {
  const ModelSpec m = model_preset("llama3-8b");
  ModelSpec wider = m;
  wider.ffn_hidden_size += 1024;
  const auto gpu = gpu_preset("h100-sxm");
  const Schedule s = make_schedule("1f1b", {1, 1, 1, 0});
  const ParallelConfig c = layout(m, 1, 1, 1, 1, 1, 8192);
  const sim::StageCost a = sim::AnalyticCost(m, gpu, c, s.shape).stage(0), b = sim::AnalyticCost(wider, gpu, resolve(c, wider), s.shape).stage(0);
  const double bytes_per_ns = gpu.hbm_bandwidth_gbps, tokens = 8192, layers = m.num_layers;
  EXPECT_NEAR(b.f.elementwise_ns - a.f.elementwise_ns, layers * tokens * 3 * 1024 * 2 / (bytes_per_ns * 0.55), 1e-6 * a.f.elementwise_ns);
  EXPECT_NEAR(b.i.elementwise_ns - a.i.elementwise_ns, layers * tokens * 5 * 1024 * 2 / (bytes_per_ns * 0.196), 1e-6 * a.i.elementwise_ns);
}

// FP8 casts per recipe, by hand (TP1, one stage): after TE's norm (QKV's and FC1's inputs) delayed
// scaling writes the two copies in the norm kernel (2 B), current scaling casts the norm's BF16 output
// with its amax known (2 + 2 B), MXFP8 quantizes on its own (6 B); the out-projection's and FC2's
// inputs are cast on their own (4 B delayed, 6 B otherwise): Megatron's activation writes BF16.
TEST(AnalyticCost, Fp8CastsAroundTheNormAndTheActivationByRecipeByHand) {
  const ModelSpec m = model_preset("llama3-8b");
  const GpuSpec gpu = gpu_preset("b200");  // MXFP8 needs Blackwell
  const Schedule s = make_schedule("1f1b", {1, 1, 1, 0});
  ParallelConfig c = layout(m, 1, 1, 1, 1, 1, 8192);
  const double bf16 = sim::AnalyticCost(m, gpu, c, s.shape).stage(0).f.elementwise_ns;
  const double t = 8192, h = m.hidden_size, q = m.num_attention_heads * m.kv_channels, f = m.ffn_hidden_size;
  const double rate = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;
  c.precision = Precision::kFp8;
  for (const auto& [recipe, after_norm, own] : {std::tuple{Fp8Recipe::kDelayed, 2.0, 4.0}, std::tuple{Fp8Recipe::kTensorwise, 4.0, 6.0},
                                                std::tuple{Fp8Recipe::kMxfp8, 6.0, 6.0}}) {
    c.fp8_recipe = recipe;
    const double fp8 = sim::AnalyticCost(m, gpu, c, s.shape).stage(0).f.elementwise_ns;
    const double by_hand = m.num_layers * (2 * t * h * after_norm + t * (q + f) * own) / rate;
    EXPECT_NEAR(fp8 - bf16, by_hand, 1e-6 * by_hand) << to_string(recipe);
  }
}

// NVFP4 (TE's NVFP4BlockScaling): the linear layers' GEMMs at the FP4 peak on the FP4 curve, the
// attention core in BF16, quantization at 1.152x current scaling's traffic, 4-bit weights gathered, and
// refused on a GPU without FP4 tensor cores.
TEST(AnalyticCost, Nvfp4MovesTheLinearLayersToTheFp4CurveByHand) {
  const ModelSpec m = model_preset("llama3-70b");
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const GpuSpec gpu = gpu_preset("gb200");
  ParallelConfig current = layout(m, 1, 4, 1, 1, 8);
  current.vp = 1;
  current.precision = Precision::kFp8;
  current.fp8_recipe = Fp8Recipe::kTensorwise;
  ParallelConfig fp4 = current;
  fp4.precision = Precision::kNvfp4;
  const sim::AnalyticCost t(m, gpu, current, s.shape), n(m, gpu, fp4, s.shape);
  const sim::PassCost& tf = t.stage(1).f;
  const sim::PassCost& nf = n.stage(1).f;
  EXPECT_DOUBLE_EQ(nf.attention_ns, tf.attention_ns);
  // By hand: each of the dense layer's four linear GEMMs at its own FLOPs on the FP4 curve.
  const LayerFlops lf = layer_forward_flops(m, 0, 1, m.seq_length, 1, 1);
  const double per_ns = gpu.peak_fp4_tflops * 1e3 * gpu.sustained_compute_ratio;
  const auto linear = [&](double flops, double calls) {
    return flops / (per_ns * gpu.gemm_efficiency(flops / calls, Precision::kNvfp4));
  };
  const double layer_gemm = linear(lf.qkv, 1) + linear(lf.attn_out, 1) + linear(lf.mlp, 2);
  const double layers = static_cast<double>(m.num_layers) / 4;
  EXPECT_NEAR(nf.gemm_ns, layers * layer_gemm, 1e-9 * nf.gemm_ns);
  // On GB200's curves the FP4 GEMMs of a 70B layer run about 1.9x the tensorwise FP8 ones.
  EXPECT_GT(tf.gemm_ns / nf.gemm_ns, 1.7);
  EXPECT_LT(tf.gemm_ns / nf.gemm_ns, 2.0);
  // Quantization traffic by hand (tp = 1, a dense layer's F): every input quantized on its own at
  // 1.152x current scaling's 6 bytes ((6.453 - 3.764) / (9.147 - 6.812)), the norm's and activation's
  // outputs too, as TE does not fuse NVFP4's Hadamard quantization into those kernels (their BF16 writes
  // are the BF16 layer's own).
  ParallelConfig bf16 = current;
  bf16.precision = Precision::kBf16;
  const sim::AnalyticCost b(m, gpu, bf16, s.shape);
  const sim::PassCost& bf = b.stage(1).f;
  const double tokens = m.seq_length, h = m.hidden_size;
  const double query = static_cast<double>(m.num_attention_heads) * m.kv_channels;
  const double unfused = 6 * (6.453 - 3.764) / (9.147 - 6.812), fused = unfused;
  const double bytes = tokens * (2 * h * fused + query * unfused + m.ffn_hidden_size * fused);
  EXPECT_NEAR(nf.elementwise_ns - bf.elementwise_ns, layers * bytes / (gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency),
              1e-6 * nf.elementwise_ns);

  // Weights kept and gathered as NVFP4: 4 bits and an E4M3 scale per 16 values.
  EXPECT_DOUBLE_EQ(fp4.param_gather_bytes(), 0.5625);
  EXPECT_DOUBLE_EQ(current.param_gather_bytes(), 1.0);
  fp4.fp4_param_gather = false;
  EXPECT_DOUBLE_EQ(fp4.param_gather_bytes(), 2.0);

  const ConfigCheck on_hopper = check(fp4, m, gpu_preset("h100-sxm"));
  ASSERT_EQ(on_hopper.errors.size(), 1u);
  EXPECT_EQ(on_hopper.errors[0].rule, "nvfp4_supported");
  EXPECT_EQ(on_hopper.errors[0].message, "precision=nvfp4 needs FP4 tensor cores (Blackwell); 'h100-sxm' has peak_fp4_tflops=0");

  // MXFP8's block scales need Blackwell's tensor cores as NVFP4's do (Transformer Engine:
  // check_mxfp8_support); Hopper runs the other FP8 recipes.
  ParallelConfig mx = fp4;
  mx.precision = Precision::kFp8;
  mx.fp8_recipe = Fp8Recipe::kMxfp8;
  const ConfigCheck mx_on_hopper = check(mx, m, gpu_preset("h100-sxm"));
  ASSERT_EQ(mx_on_hopper.errors.size(), 1u);
  EXPECT_EQ(mx_on_hopper.errors[0].rule, "mxfp8_supported");
  EXPECT_TRUE(check(mx, m, gpu_preset("b200")).ok());
  mx.fp8_recipe = Fp8Recipe::kBlockwise;
  EXPECT_TRUE(check(mx, m, gpu_preset("h100-sxm")).ok());
}

// --first-last-layers-bf16: the first and last decoder layers' GEMMs (global, 0-based layer numbers, as
// Megatron's get_fp4_context counts them) run in BF16 with no quantization; the others stay NVFP4.
TEST(AnalyticCost, FirstAndLastLayersKeptInBf16CostAsBf16Layers) {
  const ModelSpec m = model_preset("llama3-70b");  // 80 layers: 20 per stage at pp = 4
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const GpuSpec gpu = gpu_preset("gb200");
  ParallelConfig fp4 = layout(m, 1, 4, 1, 1, 8);
  fp4.vp = 1;
  fp4.precision = Precision::kNvfp4;
  ParallelConfig bf16 = fp4;
  bf16.precision = Precision::kBf16;
  ParallelConfig kept = fp4;
  kept.first_last_layers_bf16 = true;
  kept.num_layers_at_start_in_bf16 = 2;
  kept.num_layers_at_end_in_bf16 = 3;
  EXPECT_EQ(kept.layer_precision(1, 80), Precision::kBf16);
  EXPECT_EQ(kept.layer_precision(2, 80), Precision::kNvfp4);
  EXPECT_EQ(kept.layer_precision(76, 80), Precision::kNvfp4);
  EXPECT_EQ(kept.layer_precision(77, 80), Precision::kBf16);
  const sim::AnalyticCost q(m, gpu, fp4, s.shape), b(m, gpu, bf16, s.shape), k(m, gpu, kept, s.shape);
  // Per-layer figures from the middle stages, where every layer is alike.
  const double q_layer = q.stage(1).f.gemm_ns / 20, b_layer = b.stage(1).f.gemm_ns / 20;
  EXPECT_NEAR(k.stage(0).f.gemm_ns, 18 * q_layer + 2 * b_layer, 1e-9 * k.stage(0).f.gemm_ns);
  EXPECT_NEAR(k.stage(3).f.gemm_ns - q.stage(3).f.gemm_ns, 3 * (b_layer - q_layer), 1e-6 * k.stage(3).f.gemm_ns);
  EXPECT_DOUBLE_EQ(k.stage(1).f.total_ns(), q.stage(1).f.total_ns());
  // A kept layer quantizes nothing: its elementwise work is the BF16 layer's.
  const double q_elem = q.stage(1).f.elementwise_ns / 20, b_elem = b.stage(1).f.elementwise_ns / 20;
  EXPECT_NEAR(k.stage(3).f.elementwise_ns - q.stage(3).f.elementwise_ns, 3 * (b_elem - q_elem), 1e-6 * k.stage(3).f.elementwise_ns);

  // Megatron's rules: not with delayed FP8 scaling; each count within one stage's layers.
  ParallelConfig delayed = kept;
  delayed.precision = Precision::kFp8;
  ConfigCheck checked = check(delayed, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_EQ(checked.errors[0].rule, "bf16_layers_need_current_scaling");
  kept.num_layers_at_end_in_bf16 = 21;
  EXPECT_TRUE(check(kept, m, gpu).ok());  // Megatron's FP4 path takes any count
  kept.precision = Precision::kFp8;
  kept.fp8_recipe = Fp8Recipe::kTensorwise;
  checked = check(kept, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_EQ(checked.errors[0].message, "num_layers_at_end_in_bf16=21 must be between 0 and the layers per pipeline stage, num_layers/pp=20");
}

// SP all-gathers of quantized inputs: per-tensor FP8 gathers its 1-byte row-wise copy; MXFP8 and NVFP4
// gather both copies (TE supports_only_rowwise_all_gather), which for MXFP8 is the BF16 tensor's size.
TEST(AnalyticCost, SequenceParallelGathersMoveWhatTransformerEngineGathers) {
  const ModelSpec m = model_preset("llama3-70b");
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  const GpuSpec gpu = gpu_preset("gb200");
  ParallelConfig c = layout(m, 4, 4, 1, 1, 8);
  const auto tp_comm = [&](Precision p, Fp8Recipe r) {
    ParallelConfig q = c;
    q.precision = p;
    q.fp8_recipe = r;
    return sim::AnalyticCost(m, gpu, q, s.shape).stage(1).f.tp_comm_ns;
  };
  const double bf16 = tp_comm(Precision::kBf16, Fp8Recipe::kDelayed);
  const double tensorwise = tp_comm(Precision::kFp8, Fp8Recipe::kTensorwise);
  const double mxfp8 = tp_comm(Precision::kFp8, Fp8Recipe::kMxfp8);
  const double nvfp4 = tp_comm(Precision::kNvfp4, Fp8Recipe::kDelayed);
  const double delayed = tp_comm(Precision::kFp8, Fp8Recipe::kDelayed);
  EXPECT_DOUBLE_EQ(mxfp8, bf16);
  EXPECT_GT(tensorwise, delayed);  // the same bytes, and its amax all-reduces (CurrentScalingAllReducesTheAmaxOverTp)
  EXPECT_LT(delayed, nvfp4);       // 1 byte against 2 x 0.5625
  EXPECT_LT(nvfp4, bf16);
}

// Megatron: a param-gather flag needs its own precision ("--fp4-param-gather must be used together with
// --fp4-format"), and something that gathers (the distributed optimizer or FSDP).
TEST(AnalyticCost, ParamGatherFlagsNeedTheirPrecisionAndSharding) {
  const ModelSpec m = model_preset("llama3-70b");
  const GpuSpec gpu = gpu_preset("gb200");
  ParallelConfig c = layout(m, 1, 4, 1, 1, 8);
  c.vp = 1;
  c.fp8_param_gather = true;
  ConfigCheck checked = check(c, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_EQ(checked.errors[0].message, "fp8_param_gather needs precision=fp8, got precision=bf16");
  c.fp8_param_gather.reset();
  c.precision = Precision::kFp8;
  c.fp4_param_gather = true;
  checked = check(c, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_EQ(checked.errors[0].message, "fp4_param_gather needs precision=nvfp4, got precision=fp8");
  c.precision = Precision::kNvfp4;
  c.distributed_optimizer = false;
  checked = check(c, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u);
  EXPECT_EQ(checked.errors[0].rule, "fp4_param_gather_needs_sharding");
  c.distributed_optimizer = true;
  EXPECT_TRUE(check(c, m, gpu).ok());
}

namespace {

// Qwen3-30B-A3B cut to three layers over four stages: 0 the embedding, 1 one layer, 2 two layers, 3 the
// loss; DeepEP's flex dispatcher.
std::pair<ModelSpec, ParallelConfig> qwen3_moe_stages() {
  ModelSpec m = model_preset("qwen3-30b-a3b");
  m.num_layers = 3;
  ParallelConfig c{.pp = 4, .ep = 16, .dp = 16, .mbs = 1, .gbs = 64, .pipeline_layout = "E|t|tt|L"};
  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  return {m, resolve(c, m)};
}

}  // namespace

// An F&B unit's duration is its critical path over four phases (F attention | B combine, B experts
// | F dispatch, F experts | B dispatch, B attention | F combine), each the longer of its compute,
// slowed by the 20 % of its speed DeepEP's 20 SMs cost it on an H100 (the report's figure), and its transfer. F's dispatch also holds the GPU idle
// after its wait for the host, when DeepEP holds no SMs. One layer beside one layer, by hand.
TEST(AnalyticCost, OverlappedUnitIsItsPhasesCriticalPathByHand) {
  const auto [m, c] = qwen3_moe_stages();
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const PipelineShape shape = make_schedule("1f1b", {4, 1, 8, 0}).shape;
  const sim::AnalyticCost cost(m, gpu, c, shape);
  const sim::PassCost& f = cost.stage(1).f;
  sim::PassCost b = cost.stage(1).i;
  b += cost.stage(1).w;
  ASSERT_GT(f.ep_comm_ns, 0);
  ASSERT_GT(f.expert_ns, 0);
  const double loss = 0.20;
  auto phase = [&](double compute, double transfer, double idle) { return std::max(transfer, compute + loss * (transfer - idle)); };
  const double gap = f.ep_host_gap_ns, f_half = (f.ep_comm_ns - gap) / 2;
  ASSERT_EQ(gap, gpu.moe_sync_gap_ns);
  const double expected = f.tp_comm_ns + f.cp_comm_ns + f.dp_comm_ns + b.tp_comm_ns + b.cp_comm_ns + b.dp_comm_ns +
                          phase(f.compute_ns() - f.expert_ns, b.ep_comm_ns / 2, 0) + phase(b.expert_ns, f_half + gap, gap) +
                          phase(f.expert_ns, b.ep_comm_ns / 2, 0) + phase(b.compute_ns() - b.expert_ns, f_half, 0);
  EXPECT_NEAR(cost.overlap_gpu_ns(1, 1), expected, 1e-6 * expected);
  // Never longer than running the two halves one after the other, never shorter than either stream.
  EXPECT_LT(cost.overlap_gpu_ns(1, 1), f.total_ns() + b.total_ns());
  EXPECT_GT(cost.overlap_gpu_ns(1, 1), std::max(f.compute_ns() + b.compute_ns(), f.ep_comm_ns + b.ep_comm_ns));
}

// Megatron's merged 1F1B runs a pair of model chunks layer by layer (model_chunk_schedule_plan.py):
// F's layer i beside B's layer n - 1 - i, the layers one chunk has beyond the other alone, and the
// embedding and the loss alone. A chunk of two layers beside one of one layer overlaps one pair; a
// chunk without layers overlaps nothing.
TEST(AnalyticCost, OverlappedUnitPairsTheChunksLayerByLayer) {
  const auto [m, c] = qwen3_moe_stages();
  const PipelineShape shape = make_schedule("1f1b", {4, 1, 8, 0}).shape;
  const sim::AnalyticCost cost(m, gpu_preset("h100-sxm"), c, shape);
  const auto b_total = [&](int s) { return cost.stage(s).i.total_ns() + cost.stage(s).w.total_ns(); };
  const double pair = cost.overlap_gpu_ns(1, 1);
  ASSERT_LT(pair, cost.stage(1).f.total_ns() + b_total(1));  // one layer beside another overlaps
  // Two F layers beside one B layer: one pair, and F's second layer alone; and the other way round.
  EXPECT_NEAR(cost.overlap_gpu_ns(2, 1), pair + cost.stage(1).f.total_ns(), 1e-6 * pair);
  EXPECT_NEAR(cost.overlap_gpu_ns(1, 2), pair + b_total(1), 1e-6 * pair);
  // The loss or the embedding beside layers: nothing overlaps.
  EXPECT_NEAR(cost.overlap_gpu_ns(3, 1), cost.stage(3).f.total_ns() + b_total(1), 1e-6 * pair);
  EXPECT_NEAR(cost.overlap_gpu_ns(0, 2), cost.stage(0).f.total_ns() + b_total(2), 1e-6 * pair);
  EXPECT_NEAR(cost.overlap_gpu_ns(1, 3), cost.stage(1).f.total_ns() + b_total(3), 1e-6 * pair);
  // The phases account for the whole unit.
  Action unit;
  unit.op = Op::OverlapFB;
  unit.stage = 2;
  unit.b_stage = 1;
  double sum = 0;
  for (const Phase& p : cost.phases(0, unit)) sum += static_cast<double>(p.ns);
  EXPECT_NEAR(sum, cost.overlap_ns(2, 1), 8);
}

// An unfused attention backend (Megatron's local DotProductAttention, TE's unfused) materialises the
// scores: QK^T and PV as batched GEMMs over all s keys (the causal mask applied after), one GEMM per
// (sequence, head) on the BF16 curve, then softmax and dropout over the s x s matrix: Megatron's causal
// softmax kernel reads the lower triangle and writes it all (3 bytes per score; backward 4), dropout 5
// and 5. The backward runs four GEMMs. GPT-3 5B on A100, one layer by hand.
TEST(AnalyticCost, UnfusedAttentionMaterialisesTheScoresByHand) {
  const ModelSpec m = model_preset("gpt3-5b");
  ASSERT_GT(m.attention_dropout, 0);
  const GpuSpec gpu = gpu_preset("a100-80g");
  ParallelConfig c = layout(m, 1, 1, 1, 1, 8);
  c.mbs = 2;
  c.gbs = 16;
  c.attention_backend = AttentionBackend::kLocal;
  c = resolve(c, m);
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const sim::AnalyticCost cost(m, gpu, c, shape);
  const double s = 2048, heads = m.num_attention_heads, d = m.kv_channels, calls = 2 * heads;
  const double rate = gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio;  // FLOP/ns
  const auto gemm = [&](double flops, double n) { return flops / (rate * gpu.gemm_efficiency(flops / n)); };
  const auto memory = [&](double bytes) { return bytes / (gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency); };
  const double full = 2 * calls * 2 * s * s * d;  // QK^T and PV over every key
  const double scores = calls * s * s;
  const double forward = gemm(full, 2 * calls) + memory((3 + 5) * scores);
  const double backward = gemm(2 * full, 4 * calls) + memory((4 + 5) * scores);
  EXPECT_NEAR(cost.stage(0).f.attention_ns / m.num_layers, forward, 1e-6 * forward);
  EXPECT_NEAR(cost.stage(0).i.attention_ns / m.num_layers, backward, 1e-6 * backward);
  // Five kernels where a fused backend launches one (two GEMMs, softmax, dropout), backward seven for one.
  ParallelConfig fused_config = c;
  fused_config.attention_backend = AttentionBackend::kAuto;
  const sim::AnalyticCost fused(m, gpu, fused_config, shape);
  EXPECT_NEAR(cost.stage(0).f.launch_ns - fused.stage(0).f.launch_ns, 3.0 * m.num_layers * gpu.kernel_launch_overhead_ns, 1e-6);
  EXPECT_NEAR(cost.stage(0).i.launch_ns - fused.stage(0).i.launch_ns, 5.0 * m.num_layers * gpu.kernel_launch_overhead_ns, 1e-6);
  EXPECT_EQ(sim::layer_launches(m, c, 0, false).forward, sim::layer_launches(m, fused_config, 0, false).forward + 3);
  EXPECT_LT(fused.stage(0).f.attention_ns, cost.stage(0).f.attention_ns);
  // It keeps the softmax output, the dropout mask and the dropout's output (5 bytes a score), as
  // --softmax-stored keeps under a fused backend.
  sim::MemoryOptions stored;
  stored.softmax_stored = true;
  const sim::MemoryModel kept_unfused(m, c, shape), kept_fused(m, fused_config, shape), kept_option(m, fused_config, shape, stored);
  EXPECT_EQ(kept_unfused.stage_activations()[0].bytes, kept_option.stage_activations()[0].bytes);
  EXPECT_EQ(kept_unfused.layer_activation_bytes(0) - kept_fused.layer_activation_bytes(0), static_cast<std::int64_t>(5 * scores));
}

// Without dropout the scores kept are the softmax output alone (2 bytes); grouped K and V are widened to
// the query heads. Past Megatron's fused softmax's 4096 keys the local backend runs PyTorch's FP32 softmax
// (37 bytes per score forward, 41 backward, 6 kept), where Transformer Engine's kernel still runs (to 16383).
TEST(AnalyticCost, UnfusedAttentionByBackendAndSequence) {
  const ModelSpec m = model_preset("llama3-8b");
  ASSERT_EQ(m.attention_dropout, 0);
  ASSERT_LT(m.num_query_groups, m.num_attention_heads);
  ParallelConfig c = layout(m, 2, 1, 1, 1, 8, 4096);
  c.attention_backend = AttentionBackend::kUnfused;
  // {fused softmax kernel, forward, backward, kept bytes per score} of a causal layer.
  const auto work = [&] {
    const sim::UnfusedAttentionWork w = sim::unfused_attention_work(m, c, false);
    return std::tuple{w.fused_softmax, w.forward_bytes, w.backward_bytes, w.kept_bytes};
  };
  EXPECT_EQ(work(), std::tuple(true, 3.0, 4.0, 2.0));
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  ParallelConfig fused = c;
  fused.attention_backend = AttentionBackend::kAuto;
  const double scores_per_token = 4096.0 * m.num_attention_heads / 2;  // per TP rank
  const double widened = 2.0 * (2 * m.num_attention_heads - 2 * m.num_query_groups) * m.kv_channels / 2;
  const double tokens = 4096;
  EXPECT_NEAR(static_cast<double>(sim::MemoryModel(m, c, shape).layer_activation_bytes(0) - sim::MemoryModel(m, fused, shape).layer_activation_bytes(0)),
              tokens * (2 * scores_per_token + widened), 1);
  c.seq_length = 8192;
  EXPECT_EQ(work(), std::tuple(true, 3.0, 4.0, 2.0));  // Transformer Engine's kernel to 16383 keys
  c.attention_backend = AttentionBackend::kLocal;
  EXPECT_EQ(work(), std::tuple(false, 37.0, 41.0, 6.0));  // Megatron's to 4096, then PyTorch's FP32 softmax
}

// Megatron's CP runs through TE's fused attention only; its local backend runs without Transformer Engine.
TEST(AnalyticCost, UnfusedAttentionRulesAreMegatrons) {
  const ModelSpec m = model_preset("gpt3-5b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ParallelConfig c = layout(m, 1, 1, 4, 1, 8);
  c.vp = 1;
  c.attention_backend = AttentionBackend::kLocal;
  ASSERT_TRUE(check(c, m, gpu).ok());
  ParallelConfig ring = c;
  ring.cp = 2;
  ring.world = 8;
  auto checked = check(ring, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u) << checked.errors.at(0).message;
  EXPECT_EQ(checked.errors[0].rule, "unfused_attention_without_cp");
  EXPECT_EQ(checked.errors[0].field, "attention_backend");
  ParallelConfig fp8 = c;
  fp8.precision = Precision::kFp8;
  checked = check(fp8, m, gpu);
  ASSERT_EQ(checked.errors.size(), 1u) << checked.errors.at(0).message;
  EXPECT_EQ(checked.errors[0].rule, "local_attention_without_te");
  EXPECT_EQ(checked.errors[0].field, "precision");
  fp8.attention_backend = AttentionBackend::kUnfused;  // TE's unfused attention runs beside FP8 GEMMs
  EXPECT_TRUE(check(fp8, m, gpu).ok());
}

// TE userbuffers (BF16, tp = 4), one layer's forward by hand: the all-gathers ring-exchanged into 4
// chunk GEMMs (the first chunk local), the reduce-scatters pipelined over 4 chunk GEMMs at the 84 % of
// their speed the 16 communication SMs leave them (1 % per SM on an H100), the last chunk exposed. Each part is its wall time minus the whole GEMM.
TEST(AnalyticCost, TpCommOverlapByHand) {
  const ModelSpec m = model_preset("llama3-70b");
  ParallelConfig c = layout(m, 4, 1, 2, 1, 8, 8192);
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const sim::AnalyticCost plain(m, gpu, c, shape);
  c.tp_comm_overlap = true;
  const sim::AnalyticCost overlapped(m, gpu, c, shape);
  const LayerFlops lf = layer_forward_flops(m, 0, 1, 8192, 4, 1);
  const double rate = gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio;  // FLOP/ns
  const auto gemm = [&](double flops) { return flops / (rate * gpu.gemm_efficiency(flops)); };
  const double comm = 3 * gpu.nvlink_latency_ns + 8192.0 * 8192 * 2 * 0.75 / (gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency);
  const double launch = gpu.kernel_launch_overhead_ns;
  const auto ring_gather = [&](double flops) {
    const double chunk = gemm(flops / 4);
    return chunk + 3 * (std::max(chunk, comm / 3) + launch) - gemm(flops);
  };
  const auto pipelined_scatter = [&](double flops) {
    const double chunk = gemm(flops / 4) / (1 - 0.16);
    return chunk + 3 * (std::max(chunk, comm / 4) + launch) + comm / 4 - gemm(flops);
  };
  const double fc1 = lf.mlp * 2 / 3;  // SwiGLU: the up projection is twice the down projection
  const double expected = ring_gather(lf.qkv) + pipelined_scatter(lf.attn_out) + ring_gather(fc1) + pipelined_scatter(lf.mlp - fc1);
  const double per_layer = overlapped.stage(0).f.tp_comm_ns / m.num_layers;
  EXPECT_NEAR(per_layer, expected, 1e-6 * expected);
  EXPECT_GT(per_layer, 0);
  for (auto pass : {&sim::StageCost::f, &sim::StageCost::i}) {
    EXPECT_LT((overlapped.stage(0).*pass).tp_comm_ns, (plain.stage(0).*pass).tp_comm_ns);
    EXPECT_EQ((plain.stage(0).*pass).gemm_ns, (overlapped.stage(0).*pass).gemm_ns);
  }
  c.sequence_parallel = false;
  EXPECT_FALSE(check(c, m, gpu).ok());  // userbuffers need sequence parallelism
}

// A MoE layer's routed experts move their tokens through the dispatcher: without shared experts
// (Qwen3-235B-A22B) only the attention side's all-gather and reduce-scatter remain in F. Deferring
// the wgrad (--delay-wgrad-compute) exposes the input-gradient reduce-scatter it used to hide.
TEST(AnalyticCost, MoeLayersKeepOnlyTheirAttentionSideTpCollectives) {
  const ModelSpec m = model_preset("qwen3-235b-a22b");
  ASSERT_EQ(m.moe_shared_expert_intermediate_size, 0);
  ParallelConfig c = layout(m, 2, 1, 4, 1, 8, 4096);
  c.ep = 4;
  c.etp = 1;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const double ring = gpu.nvlink_latency_ns + 4096.0 * m.hidden_size * 2 * 0.5 / (gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency);
  const sim::AnalyticCost cost(m, gpu, c, shape);
  EXPECT_NEAR(cost.stage(0).f.tp_comm_ns / m.num_layers, 2 * ring, 1e-6 * ring);
  c.delay_wgrad_compute = true;
  EXPECT_GT(sim::AnalyticCost(m, gpu, c, shape).stage(0).i.tp_comm_ns, cost.stage(0).i.tp_comm_ns);
}

// Zero-bubble schedules run I on its own and W later: the input-gradient reduce-scatters TE runs beside
// the wgrad GEMMs have nothing to hide behind, exactly as with --delay-wgrad-compute. B (I with its W
// right after) still hides them, and W itself carries no TP traffic.
TEST(AnalyticCost, SplitBackwardExposesWhatTheWgradWouldHide) {
  const ModelSpec m = model_preset("llama3-70b");
  ParallelConfig c = layout(m, 4, 2, 2, 1, 8, 8192);
  const Schedule zb = make_schedule("zb-h1", {2, 1, 4, 0});
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const sim::AnalyticCost cost(m, gpu, c, zb.shape);
  c.delay_wgrad_compute = true;
  const sim::AnalyticCost deferred(m, gpu, c, zb.shape);
  const auto duration = [](const sim::AnalyticCost& model, Op op) { return model.duration_ns(0, Action::make(op, 0, 0)); };
  const sim::PassCost& i = cost.stage(0).i;
  ASSERT_GT(i.tp_comm_hidden_by_wgrad_ns, 0);
  EXPECT_EQ(duration(cost, Op::I), duration(deferred, Op::I));
  EXPECT_NEAR(duration(cost, Op::I) + duration(cost, Op::W) - duration(cost, Op::B), i.tp_comm_hidden_by_wgrad_ns, 2);
  EXPECT_EQ(cost.stage(0).w.tp_comm_ns, 0);
  const double exposed_tp = deferred.in_action_comm(0, Action::make(Op::I, 0, 0)).tp_ns;
  EXPECT_NEAR(cost.in_action_comm(0, Action::make(Op::I, 0, 0)).tp_ns, exposed_tp, 1e-9 * exposed_tp);
}

// CP's p2p ring (cp = 2) around the attention kernels, by hand from TE's AttnFuncWithCPAndKVP2P.
// Rank 1, the busier: F packs K and V (read + write), copies the diagonal step's output and merges its
// lower step into it (read out, read step, write out), with 2 LSE corrections: 5 kernels; I copies K/V
// into the ring buffer, copies dQ then adds the lower step's, and copies half of dK/dV then adds the
// diagonal step's: 1 + 2 + 4 kernels (rank 0 moves fewer bytes in 11). All BF16. The Ulysses
// all-to-all (a2a) runs no ring: the difference is the ring's work alone.
TEST(AnalyticCost, CpRingMergesByHand) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = layout(m, 1, 1, 2, 1, 8, 8192);
  c.cp = 2;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const sim::AnalyticCost ring(m, gpu, c, shape);
  c.cp_comm_type = CpCommType::kA2a;
  const sim::AnalyticCost ulysses(m, gpu, c, shape);
  const double tokens = 8192 / 2, q = tokens * m.num_attention_heads * m.kv_channels, kv = 2 * tokens * m.num_query_groups * m.kv_channels;
  const double rate = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;  // bytes/ns
  const double forward = (4 * kv + 4 * q + 6 * q) / rate, backward = (4 * kv + 4 * q + 6 * q + (2 + 6) * kv) / rate;
  const sim::StageCost& a = ring.stage(0);
  const sim::StageCost& b = ulysses.stage(0);
  EXPECT_NEAR((a.f.elementwise_ns - b.f.elementwise_ns) / m.num_layers, forward, 1e-6 * forward);
  EXPECT_NEAR((a.i.elementwise_ns - b.i.elementwise_ns) / m.num_layers, backward, 1e-6 * backward);
  EXPECT_NEAR((a.f.launch_ns - b.f.launch_ns) / m.num_layers, 5 * gpu.kernel_launch_overhead_ns, 1e-6);
  EXPECT_NEAR((a.i.launch_ns - b.i.launch_ns) / m.num_layers, 7 * gpu.kernel_launch_overhead_ns, 1e-6);
  EXPECT_EQ(a.w.elementwise_ns, b.w.elementwise_ns);
  EXPECT_EQ(a.w.launch_ns, b.w.launch_ns);
}

// Per-tensor current scaling (tensorwise) and NVFP4 scale an all-gathered tensor by its whole amax:
// TE all-reduces the amax (one FP32) over TP before the cast, for QKV's and FC1's inputs in F and
// out-proj's and FC2's output gradients in I, with or without userbuffers. Delayed scaling and MXFP8
// do not (SequenceParallelGathersMoveWhatTransformerEngineGathers). tp = 4 over NVLink: 6 latency hops
// each, a few bytes.
TEST(AnalyticCost, CurrentScalingAllReducesTheAmaxOverTp) {
  const ModelSpec m = model_preset("llama3-70b");
  ParallelConfig c = layout(m, 4, 1, 2, 1, 8, 8192);
  c.precision = Precision::kFp8;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("b200");
  const auto stage = [&](Fp8Recipe recipe) {
    c.fp8_recipe = recipe;
    return sim::AnalyticCost(m, gpu, c, shape).stage(0);
  };
  const sim::StageCost delayed = stage(Fp8Recipe::kDelayed), tensorwise = stage(Fp8Recipe::kTensorwise);
  const double amax = 6 * gpu.nvlink_latency_ns + 2 * 4 * 0.75 / (gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency);
  EXPECT_NEAR((tensorwise.f.tp_comm_ns - delayed.f.tp_comm_ns) / m.num_layers, 2 * amax, 1e-6 * amax);
  EXPECT_NEAR((tensorwise.i.tp_comm_ns - delayed.i.tp_comm_ns) / m.num_layers, 2 * amax, 1e-6 * amax);
  // NVFP4 by hand: 2 all-gathers of both quantized copies (2 x 0.5625 B per element), 2 BF16
  // reduce-scatters and 2 amax all-reduces.
  c.precision = Precision::kNvfp4;
  const sim::StageCost nvfp4 = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  const double bw = gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency, full = 8192.0 * m.hidden_size * 2;
  const double scatter = 3 * gpu.nvlink_latency_ns + full * 0.75 / bw, gather = 3 * gpu.nvlink_latency_ns + full * 0.75 * 1.125 / 2 / bw;
  const double nvfp4_forward = 2 * (gather + scatter + amax);
  EXPECT_NEAR(nvfp4.f.tp_comm_ns / m.num_layers, nvfp4_forward, 1e-6 * nvfp4_forward);
  // Userbuffers gather the quantized tensor too: the amax is still reduced first.
  c.tp_comm_overlap = true;
  c.precision = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kDelayed;
  const sim::StageCost delayed_overlapped = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  c.fp8_recipe = Fp8Recipe::kTensorwise;
  const sim::StageCost tensorwise_overlapped = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  EXPECT_NEAR((tensorwise_overlapped.f.tp_comm_ns - delayed_overlapped.f.tp_comm_ns) / m.num_layers, 2 * amax, 1e-6 * amax);
}

// FP8 quantization traffic of a MoE layer by hand (delayed scaling: 4 B per element unfused, 2 fused
// into the norm or activation): the experts' FC1 input and FC2 output gradient are quantized per routed
// copy (tokens x top-k rows), the attention side's per token.
TEST(AnalyticCost, MoeQuantizationCountsTheRoutedCopies) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  ParallelConfig c = layout(m, 1, 1, 8, 1, 8, 4096);
  c.ep = 8;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const sim::StageCost bf16 = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  c.precision = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kDelayed;
  const sim::StageCost fp8 = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  for (int l = 0; l < m.num_layers; ++l) ASSERT_TRUE(m.is_moe_layer(l));
  const double t = 4096, h = m.hidden_size, k = m.moe_router_topk;
  const double q = m.num_attention_heads * m.kv_channels, kv = 2.0 * m.num_query_groups * m.kv_channels;
  const double mlp = k * m.moe_ffn_hidden_size;
  const double rate = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;
  // FC2's input and FC1's output gradient come out of Megatron's activation in BF16: quantized on their own.
  const double forward = (t * h * 2 + t * q * 4 + t * k * h * 4 + t * mlp * 4) / rate;
  const double backward = (t * (h + q + kv) * 4 + t * k * h * 4 + t * 2 * mlp * 4) / rate;
  EXPECT_NEAR((fp8.f.elementwise_ns - bf16.f.elementwise_ns) / m.num_layers, forward, 1e-6 * forward);
  EXPECT_NEAR((fp8.i.elementwise_ns - bf16.i.elementwise_ns) / m.num_layers, backward, 1e-6 * backward);
  // The busiest rank, at twice the mean load, quantizes twice the experts' rows: FC1's input and FC2's
  // output gradient, and the quantizations around the activation (FC2's input, FC1's output gradient).
  c.moe_load_imbalance = 2;
  const sim::StageCost skewed_fp8 = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  c.precision = Precision::kBf16;
  const sim::StageCost skewed_bf16 = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  const double routed_f = (t * k * h * 4 + t * mlp * 4) / rate, routed_i = (t * k * h * 4 + t * 2 * mlp * 4) / rate;
  EXPECT_NEAR((skewed_fp8.f.elementwise_ns - skewed_bf16.f.elementwise_ns) / m.num_layers, forward + routed_f, 1e-6 * forward);
  EXPECT_NEAR((skewed_fp8.i.elementwise_ns - skewed_bf16.i.elementwise_ns) / m.num_layers, backward + routed_i, 1e-6 * backward);
}

// A dropless dispatch waits for the host once per MoE layer forward (the token counts copied to it):
// the GPU idles moe_sync_gap_ns. Padded to capacity (token drop) it does not; the backward never does.
// With a balanced router and capacity 1 the transfers and expert GEMMs are the same either way.
TEST(AnalyticCost, DroplessDispatchWaitsForTheHostOncePerLayerForward) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  ParallelConfig c = layout(m, 1, 1, 8, 1, 8, 4096);
  c.ep = 8;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.moe_sync_gap_ns = 500e3;
  const sim::StageCost dropless = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  c.moe_expert_capacity_factor = 1;
  c.moe_pad_expert_input_to_capacity = true;
  const sim::StageCost padded = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  EXPECT_NEAR(dropless.f.ep_host_gap_ns, 500e3 * m.num_layers, 1e-3);
  EXPECT_NEAR(dropless.f.ep_comm_ns - padded.f.ep_comm_ns, 500e3 * m.num_layers, 1e-3);
  EXPECT_EQ(padded.f.ep_host_gap_ns, 0);
  EXPECT_EQ(dropless.i.ep_comm_ns, padded.i.ep_comm_ns);
  EXPECT_EQ(dropless.f.gemm_ns, padded.f.gemm_ns);
  // Capacity 1.25, padded: every expert computes and receives 1.25 x the mean.
  c.moe_expert_capacity_factor = 1.25;
  const sim::StageCost wide = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  EXPECT_GT(wide.f.expert_ns, padded.f.expert_ns);
  EXPECT_NEAR(wide.i.ep_comm_ns - 1.25 * padded.i.ep_comm_ns, 0, 0.01 * padded.i.ep_comm_ns);
}

// --moe-shared-expert-overlap: the shared experts' FC1 (2/3 of their GEMM time under SwiGLU) beside the
// dispatch and FC2 beside the combine, in F and again in I, each hiding at most its own transfer; the
// host wait before the all-to-all stays exposed, and nothing else moves. A recomputed MoE forward (selective
// "moe", or full) runs them beside its transfers again.
TEST(AnalyticCost, SharedExpertsHideTheDispatchAndCombineBesideThemByHand) {
  // DeepSeek-V3's shape cut to one dense and two MoE layers, no MTP.
  ModelSpec m = model_preset("deepseek-v3");
  m.num_layers = 3;
  m.num_dense_layers = 1;
  m.mtp_num_layers = 0;
  ASSERT_GT(m.moe_shared_expert_intermediate_size, 0);
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  // EP16 across two nodes: each transfer outlasts the shared GEMMs. EP8 in one node with 8x the shared
  // width: the GEMMs outlast it, so the transfer caps what they hide.
  for (const auto& [ep, widen] : {std::pair{16, 1}, std::pair{8, 8}}) {
    ModelSpec mm = m;
    mm.moe_shared_expert_intermediate_size *= widen;
    ParallelConfig c = layout(mm, 1, 1, ep, 1, ep, 4096);
    c.ep = ep;
    c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
    const sim::StageCost before = sim::AnalyticCost(mm, gpu, c, shape).stage(0);
    c.moe_shared_expert_overlap = true;
    const sim::StageCost after = sim::AnalyticCost(mm, gpu, c, shape).stage(0);
    // The shared expert's two BF16 GEMMs, as gemm_ns times them.
    const LayerFlops lf = layer_forward_flops(mm, 1, 1, 4096, 1, 1);
    const double per_token = mm.moe_router_topk * mm.moe_ffn_hidden_size + mm.moe_shared_expert_intermediate_size;
    const double shared_flops = lf.mlp * mm.moe_shared_expert_intermediate_size / per_token;
    const double shared_ns =
        shared_flops / (gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio * gpu.gemm_efficiency(shared_flops / 2));
    const double transfer = before.i.ep_comm_ns / 4;  // per MoE layer, one dispatch or one combine
    const double dispatch_hidden = 2 * std::min(transfer, shared_ns * 2 / 3), combine_hidden = 2 * std::min(transfer, shared_ns / 3);
    if (widen > 1) {
      ASSERT_GT(shared_ns / 3, transfer) << "the transfer must cap both halves";
    } else {
      ASSERT_LT(shared_ns * 2 / 3, transfer) << "the GEMMs must cap both halves";
    }
    for (const auto& [b, a] : {std::pair{&before.f, &after.f}, std::pair{&before.i, &after.i}}) {
      EXPECT_NEAR(a->ep_hidden_dispatch_ns, dispatch_hidden, 1e-6 * dispatch_hidden) << "ep" << ep;
      EXPECT_NEAR(a->ep_hidden_combine_ns, combine_hidden, 1e-6 * combine_hidden) << "ep" << ep;
      EXPECT_EQ(a->ep_comm_ns, b->ep_comm_ns);  // the transfer itself is unchanged
      EXPECT_NEAR(b->total_ns() - a->total_ns(), dispatch_hidden + combine_hidden, 1e-6 * b->total_ns()) << "ep" << ep;
    }
    EXPECT_GT(after.f.ep_host_gap_ns, 0);
    EXPECT_GE(after.f.ep_exposed_ns(), after.f.ep_host_gap_ns);
    // Recomputed forwards hide their transfers again: I holds two rounds.
    for (const Recompute r : {Recompute::kSelective, Recompute::kFull}) {
      c.recompute = r;
      c.recompute_modules = {"moe"};
      const sim::StageCost recomputing = sim::AnalyticCost(mm, gpu, c, shape).stage(0);
      EXPECT_NEAR(recomputing.i.ep_hidden_dispatch_ns, 2 * dispatch_hidden, 1e-6 * dispatch_hidden) << to_string(r);
      EXPECT_NEAR(recomputing.i.ep_hidden_combine_ns, 2 * combine_hidden, 1e-6 * combine_hidden) << to_string(r);
    }
  }
}

// Under TP (sequence parallel), the shared experts' collectives go to their stream too: F gathers FC1's
// input beside the dispatch and reduce-scatters FC2's output beside the combine; I re-gathers FC1's input
// and reduce-scatters its gradient beside the dispatch, and gathers FC2's output gradient beside the combine.
TEST(AnalyticCost, SharedExpertsTakeTheirTpCollectivesBesideTheTransfers) {
  ModelSpec m = model_preset("deepseek-v3");
  m.num_layers = 3;
  m.num_dense_layers = 1;
  m.mtp_num_layers = 0;
  ParallelConfig c = layout(m, 2, 1, 16, 1, 16, 4096);
  c.ep = 16;
  c.etp = 1;
  c.moe_token_dispatcher_type = MoeDispatcher::kAlltoall;
  c.moe_shared_expert_overlap = true;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 1, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const sim::StageCost s = sim::AnalyticCost(m, gpu, c, shape).stage(0);
  // One BF16 gather or reduce-scatter of a layer's hidden states over TP2 inside a node.
  const double bytes = 4096.0 * m.hidden_size * 2;
  const double collective = gpu.nvlink_latency_ns + bytes / 2 / (gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency);
  const LayerFlops lf = layer_forward_flops(m, 1, 1, 4096, 2, 1);
  const double per_token = m.moe_router_topk * m.moe_ffn_hidden_size + m.moe_shared_expert_intermediate_size;
  const double shared_flops = lf.mlp * m.moe_shared_expert_intermediate_size / per_token;
  const double shared_ns =
      shared_flops / (gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio * gpu.gemm_efficiency(shared_flops / 2));
  ASSERT_LT(shared_ns + 2 * collective, s.f.ep_comm_ns / 4) << "no transfer may cap this case";
  // Two MoE layers.
  EXPECT_NEAR(s.f.ep_hidden_dispatch_ns, 2 * (shared_ns * 2 / 3 + collective), 1e-6 * s.f.ep_hidden_dispatch_ns);
  EXPECT_NEAR(s.f.ep_hidden_combine_ns, 2 * (shared_ns / 3 + collective), 1e-6 * s.f.ep_hidden_combine_ns);
  EXPECT_NEAR(s.i.ep_hidden_dispatch_ns, 2 * (shared_ns * 2 / 3 + 2 * collective), 1e-6 * s.i.ep_hidden_dispatch_ns);
  EXPECT_NEAR(s.i.ep_hidden_combine_ns, 2 * (shared_ns / 3 + collective), 1e-6 * s.i.ep_hidden_combine_ns);
}

// FP8 (delayed scaling, tp = 4), one layer's forward by hand: the all-gathers move the 1-byte row-wise
// copy into 4 ring-exchange chunk GEMMs; the reduce-scatters ring-exchange too (Megatron-Bridge's FP8
// configs), on all but 1 SM, then sum the 4 partial BF16 chunks (read 4 + write 1 chunk of HBM).
TEST(AnalyticCost, TpCommOverlapFp8RingExchangeByHand) {
  const ModelSpec m = model_preset("llama3-70b");
  ParallelConfig c = layout(m, 4, 1, 2, 1, 8, 8192);
  c.precision = Precision::kFp8;
  c.tp_comm_overlap = true;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const LayerFlops lf = layer_forward_flops(m, 0, 1, 8192, 4, 1);
  const double rate = gpu.peak_fp8_tflops * 1e3 * gpu.sustained_compute_ratio;
  const auto gemm = [&](double flops) { return flops / (rate * gpu.gemm_efficiency(flops, Precision::kFp8)); };
  const double bw = gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency, bytes = 8192.0 * 8192 * 2;
  const double gather = 3 * gpu.nvlink_latency_ns + bytes / 2 * 0.75 / bw, scatter = 3 * gpu.nvlink_latency_ns + bytes * 0.75 / bw;
  const double partials = bytes * 5 / 4 / (gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency);
  const double launch = gpu.kernel_launch_overhead_ns;
  const auto ring = [&](double flops, double comm, double tail, double share) {
    const double chunk = gemm(flops / 4) / share;
    return chunk + 3 * (std::max(chunk, comm / 3) + launch) + tail - gemm(flops);
  };
  const double sm = 1 - 0.01;  // the 1-SM margin: 1 % of an H100's speed
  const double fc1 = lf.mlp * 2 / 3;
  const double expected = ring(lf.qkv, gather, 0, 1) + ring(lf.attn_out, scatter, partials, sm) + ring(fc1, gather, 0, 1) +
                          ring(lf.mlp - fc1, scatter, partials, sm);
  const double per_layer = sim::AnalyticCost(m, gpu, c, shape).stage(0).f.tp_comm_ns / m.num_layers;
  EXPECT_NEAR(per_layer, expected, 1e-6 * expected);
}

// Without userbuffers (BF16, tp = 4), one layer's I by hand: the out-proj and FC2 output gradients are
// gathered synchronously; QKV's and FC1's inputs are re-gathered beside their dgrad GEMMs and their input
// gradients reduce-scattered beside their wgrad GEMMs, NCCL on a side stream (TE's backward,
// async_op=True). Without SP the two input-gradient all-reduces hide the same way.
TEST(AnalyticCost, TpBackwardHidesTheColumnParallelCollectivesByHand) {
  const ModelSpec m = model_preset("llama3-70b");
  ParallelConfig c = layout(m, 4, 1, 2, 1, 8, 8192);
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const LayerFlops lf = layer_forward_flops(m, 0, 1, 8192, 4, 1);
  const double rate = gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio;  // FLOP/ns
  const auto gemm = [&](double flops) { return flops / (rate * gpu.gemm_efficiency(flops)); };
  const double bw = gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency, bytes = 8192.0 * 8192 * 2;
  const double loss = 0.16;  // NCCL's kernels taken as 16 SMs: 1 % each on an H100
  const auto hidden = [&](double gemm_ns, double comm) { return std::max(comm, gemm_ns + loss * comm) - gemm_ns; };
  const double qkv = gemm(lf.qkv), fc1 = gemm(lf.mlp * 2 / 3);
  const double ring = 3 * gpu.nvlink_latency_ns + bytes * 0.75 / bw;
  const double with_sp = 2 * ring + hidden(qkv, ring) + hidden(qkv, ring) + hidden(fc1, ring) + hidden(fc1, ring);
  EXPECT_NEAR(sim::AnalyticCost(m, gpu, c, shape).stage(0).i.tp_comm_ns / m.num_layers, with_sp, 1e-6 * with_sp);
  EXPECT_LT(with_sp, 6 * ring);  // something hides
  c.sequence_parallel = false;
  const double all_reduce = 6 * gpu.nvlink_latency_ns + 2 * bytes * 0.75 / bw;
  const double without_sp = hidden(qkv, all_reduce) + hidden(fc1, all_reduce);
  EXPECT_NEAR(sim::AnalyticCost(m, gpu, c, shape).stage(0).i.tp_comm_ns / m.num_layers, without_sp, 1e-6 * without_sp);
}

// FP8 (Megatron-Bridge's configs ring-exchange every forward collective): even over a link that costs
// nothing, the overlap is not free. The tp chunk GEMMs run below the whole GEMM's efficiency, more so
// the finer tp splits them, and the reduce-scatters' partial chunks are summed after.
TEST(AnalyticCost, TpCommOverlapChargesTheChunkGemms) {
  const ModelSpec m = model_preset("llama3-70b");
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.nvlink_bandwidth_gbps = 1e12;
  gpu.nvlink_latency_ns = 0;
  gpu.kernel_launch_overhead_ns = 0;
  auto exposed_share = [&](int tp) {
    ParallelConfig c = layout(m, tp, 1, 2, 1, 8, 8192);
    c.precision = Precision::kFp8;
    c.tp_comm_overlap = true;
    const sim::PassCost f = sim::AnalyticCost(m, gpu, c, shape).stage(0).f;
    return f.tp_comm_ns / f.gemm_ns;
  };
  EXPECT_GT(exposed_share(2), 0.001);
  EXPECT_GT(exposed_share(8), exposed_share(2));
}

// CP communication types: p2p hides its ring behind attention, all_gather does not, a2a moves
// Q, K, V and the output once each: (2q + k + v) x tokens x 2 B x (cp-1)/cp, four latencies, at NCCL's
// all-to-all share of NVLink.
TEST(AnalyticCost, ContextParallelCommTypesByHand) {
  const ModelSpec m = model_preset("llama3-8b");  // 32 heads, 8 groups, 128 channels
  ParallelConfig c = layout(m, 1, 1, 4, 1, 8, 8192);
  c.cp = 2;
  c.dp = 2;
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  auto cp_ns = [&](CpCommType type) {
    c.cp_comm_type = type;
    return sim::AnalyticCost(m, gpu, c, shape).stage(0).f.cp_comm_ns / m.num_layers;
  };
  const double p2p = cp_ns(CpCommType::kP2p), gather = cp_ns(CpCommType::kAllGather), a2a = cp_ns(CpCommType::kA2a);
  const double tokens = 8192 / 2, bw = gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency;
  EXPECT_NEAR(gather, gpu.nvlink_latency_ns + tokens * 2048 * 2 / bw, 1e-6 * gather);
  EXPECT_LE(p2p, gather);
  const double a2a_bw = gpu.nvlink_bandwidth_gbps * gpu.nvlink_alltoall_efficiency();
  EXPECT_NEAR(a2a, 4 * gpu.nvlink_latency_ns + tokens * (2 * 4096 + 2048) * 2 * 0.5 / a2a_bw, 1e-6 * a2a);
  c.cp = 3;  // 32 heads do not split over 3 CP ranks
  c.cp_comm_type = CpCommType::kA2a;
  EXPECT_FALSE(check(c, m, gpu).ok());
}

TEST(AnalyticCost, HierarchicalContextParallelIsAnA2aThenARingByHand) {
  // cp = 4 as a2a over 2 adjacent ranks, then the p2p ring over the 2 pairs; all inside one node.
  const ModelSpec m = model_preset("llama3-8b");  // 32 heads, 8 groups, 128 channels
  ParallelConfig c = layout(m, 1, 1, 2, 1, 8, 16384);
  c.cp = 4;
  c.dp = 2;
  c.cp_comm_type = CpCommType::kA2aP2p;
  c.hierarchical_context_parallel_sizes = {2, 2};
  c.vp = 1;
  c.world = 8;
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ASSERT_TRUE(check(c, m, gpu).ok());
  const PipelineShape shape = make_schedule("1f1b", {1, 1, 4, 0}).shape;
  const sim::PassCost f = sim::AnalyticCost(m, gpu, c, shape).stage(0).f;
  const double tokens = 16384 / 4, bw = gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency;
  const double a2a_bw = gpu.nvlink_bandwidth_gbps * gpu.nvlink_alltoall_efficiency();
  const double a2a = 4 * gpu.nvlink_latency_ns + tokens * (2 * 4096 + 2048) * 2 * 0.5 / a2a_bw;
  const double ring = std::max(0.0, gpu.nvlink_latency_ns + tokens * 2048 * 2 / bw - f.attention_ns / m.num_layers);
  EXPECT_NEAR(f.cp_comm_ns / m.num_layers, a2a + ring, 1e-6 * (a2a + ring));
  // The sizes must multiply to cp, and the a2a size divide the heads per TP rank.
  c.hierarchical_context_parallel_sizes = {2, 3};
  EXPECT_EQ(check(c, m, gpu).errors.at(0).rule, "hierarchical_cp_sizes");
  c.hierarchical_context_parallel_sizes = {};
  EXPECT_EQ(check(c, m, gpu).errors.at(0).rule, "hierarchical_cp_sizes");
  c.cp_comm_type = CpCommType::kP2p;
  c.hierarchical_context_parallel_sizes = {2, 2};
  ASSERT_TRUE(check(c, m, gpu).ok());
  EXPECT_EQ(check(c, m, gpu).warnings.back().rule, "hierarchical_cp_unused");
}

TEST(AnalyticCost, PipelineNeighboursAcrossNodesUseTheNic) {
  const ModelSpec m = model_preset("llama3-8b");
  const auto gpu = gpu_preset("h100-sxm");
  const Schedule s = make_schedule("1f1b", {4, 1, 8, 0});
  // tp=2: pp ranks 0..3 sit on global ranks 0, 2, 4, 6 -> one node, NVLink.
  const sim::AnalyticCost in_node(m, gpu, layout(m, 2, 4, 1, 1, 8), s.shape);
  // tp=8: every pipeline rank is its own node -> NIC.
  const sim::AnalyticCost across(m, gpu, layout(m, 8, 4, 1, 1, 8), s.shape);
  const std::int64_t bytes = 64 << 20;
  EXPECT_EQ(in_node.p2p_ns(bytes, 0, 1), std::llround(gpu.nvlink_latency_ns + bytes / gpu.nvlink_bandwidth_gbps));
  EXPECT_EQ(across.p2p_ns(bytes, 0, 1), std::llround(gpu.nic_latency_ns + bytes / gpu.nic_bandwidth_gbps));
}

// A ring collective across nodes runs one ring per NIC (NCCL): a node's members of the group cross
// at their NICs' summed bandwidth, at most NVLink's. tp=2, dp=8 on two 8-GPU nodes: the DP group has 4
// members per node, so its reduce-scatter runs at 4 x the NIC; at tp=8 one member per node, the NIC.
TEST(AnalyticCost, RingsAcrossNodesUseEveryMembersNicByHand) {
  const ModelSpec m = model_preset("llama3-8b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const Schedule s = make_schedule("1f1b", {1, 1, 8, 0});
  for (const auto& [tp, per_node] : {std::pair{2, 4}, std::pair{8, 1}}) {
    ParallelConfig c = layout(m, tp, 1, 8, 1, 8);
    c.overlap_grad_reduce = false;  // one bucket: the reduction by itself
    const sim::AnalyticCost cost(m, gpu, c, s.shape);
    const double bytes = static_cast<double>(cost.reduce_grad_bytes(0));
    const double bandwidth = std::min(gpu.nvlink_bandwidth_gbps, per_node * gpu.nic_bandwidth_gbps) * gpu.collective_efficiency;
    EXPECT_NEAR(static_cast<double>(cost.reduce_grad_ns(0, 0)), 7 * gpu.nic_latency_ns + bytes * 7 / 8 / bandwidth, 2) << tp;
  }
  // Point-to-point neighbours across nodes keep one NIC (PipelineNeighboursAcrossNodesUseTheNic).
  // The node with the fewest members sets the pace: ranks 0, 2, .., 10 put 4 on the first node and 2
  // on the second; ranks 0, 3, .., 15 three on each; 16 apart, one per node; within a node, NVLink.
  const sim::ClusterLayout nodes(layout(m, 1, 1, 64, 1, 64), gpu);
  EXPECT_EQ(nodes.ring_link(2, 6).bandwidth_gbps, 2 * gpu.nic_bandwidth_gbps);
  EXPECT_EQ(nodes.ring_link(3, 6).bandwidth_gbps, 3 * gpu.nic_bandwidth_gbps);
  EXPECT_EQ(nodes.ring_link(16, 4).bandwidth_gbps, gpu.nic_bandwidth_gbps);
  EXPECT_TRUE(nodes.ring_link(2, 4).nvlink);
  EXPECT_EQ(nodes.ring_link(1, 64).bandwidth_gbps, 8 * gpu.nic_bandwidth_gbps);  // 400 GB/s, under NVLink's 450
  // Two GB200 racks: 36 and 28 members of a stride-2 group of 64, 28 x 50 GB/s above NVLink's 900: NVLink.
  const GpuSpec gb200 = gpu_preset("gb200");
  const sim::ClusterLayout racks(layout(m, 2, 1, 64, 1, 64), gb200);
  EXPECT_EQ(racks.ring_link(2, 64).bandwidth_gbps, gb200.nvlink_bandwidth_gbps);
  EXPECT_FALSE(racks.ring_link(2, 64).nvlink);  // the NIC's latency
}

TEST(AnalyticCost, RecomputeMakesTheInputGradSlower) {
  const ModelSpec m = model_preset("llama3-8b");
  const Schedule s = make_schedule("1f1b", {2, 1, 4, 0});
  const auto gpu = gpu_preset("h100-sxm");
  ParallelConfig c = layout(m, 1, 2, 1, 1, 4);
  const double none = sim::AnalyticCost(m, gpu, c, s.shape).stage(0).i.total_ns();
  c.recompute = Recompute::kSelective;
  const double selective = sim::AnalyticCost(m, gpu, c, s.shape).stage(0).i.total_ns();
  c.recompute = Recompute::kFull;
  const double full = sim::AnalyticCost(m, gpu, c, s.shape).stage(0).i.total_ns();
  EXPECT_LT(none, selective);
  EXPECT_LT(selective, full);
}

TEST(AnalyticCost, DataParallelReductionAppearsWhenDpIsAboveOne) {
  const ModelSpec m = model_preset("llama3-8b");
  const auto one = run("llama3-8b", "1f1b", layout(m, 1, 2, 1, 1, 8));
  const auto four = run("llama3-8b", "1f1b", layout(m, 1, 2, 4, 1, 32));
  auto reductions = [](const sim::SimulationOutcome& o) {
    std::set<std::pair<std::size_t, int>> actions;  // a bucketed reduction is two events (body, last bucket)
    for (std::size_t r = 0; r < o.result.timeline.ranks.size(); ++r) {
      for (const auto& e : o.result.timeline.ranks[r]) {
        if (e.stream == Stream::Collective) actions.insert({r, e.action.stage});
      }
    }
    return actions.size();
  };
  EXPECT_EQ(reductions(one), 0u);
  EXPECT_EQ(reductions(four), 2u);  // one REDUCE_GRAD per stage
}

TEST(AnalyticCost, OptimizerStepIsItsBytesOverMemoryBandwidthByHand) {
  // Per parameter: grad-norm read g, Adam g + 2x4 (fp32 weight) + 2x(4+4) (moments), copy to bf16
  // 4 + 2, zeroing g: 3g + 30 bytes; bf16 moments (precision-aware optimizer) save 8.
  const ModelSpec m = model_preset("llama3-8b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ParallelConfig c = layout(m, 1, 2, 1, 1, 8);
  const PipelineShape shape = make_schedule("1f1b", {2, 1, 8, 0}).shape;
  const double bytes_per_ns = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;
  auto step = [&](const ParallelConfig& cfg) { return sim::AnalyticCost(m, gpu, cfg, shape).optimizer_step_ns(1e9); };
  c.grad_reduce_in_fp32 = true;
  EXPECT_NEAR(static_cast<double>(step(c)), 1e9 * 42 / bytes_per_ns, 1.0);
  c.grad_reduce_in_fp32 = false;
  EXPECT_NEAR(static_cast<double>(step(c)), 1e9 * 36 / bytes_per_ns, 1.0);
  c.use_precision_aware_optimizer = true;
  EXPECT_NEAR(static_cast<double>(step(c)), 1e9 * 28 / bytes_per_ns, 1.0);
}

// The loss's cross-entropy is HBM-bound, its bytes per logit by implementation (sim/cross_entropy.cc):
// unfused F 38, I 14; Megatron's fused (native) F 22, I 10; Transformer Engine 2.18 on (te) F 8, I 14;
// TE before it (te_inplace) F 6, I 4. The last stage differs from the one before it (the same 8 layers)
// by the loss alone: its LM head GEMM and this.
TEST(AnalyticCost, CrossEntropyBytesPerLogitByImplementationByHand) {
  const ModelSpec m = model_preset("llama3-8b");  // vocabulary 128256: a multiple of 128 x tp for tp 1 and 2
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const PipelineShape shape = make_schedule("1f1b", {4, 1, 8, 0}).shape;
  const double rate = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;  // bytes/ns
  struct Case {
    bool fusion;
    CrossEntropyFusionImpl impl;
    double forward, input_grad;
  };
  const Case cases[] = {{false, CrossEntropyFusionImpl::kNative, 38, 14},
                        {false, CrossEntropyFusionImpl::kTe, 38, 14},  // without the fusion the kernel is not read
                        {true, CrossEntropyFusionImpl::kNative, 22, 10},
                        {true, CrossEntropyFusionImpl::kTe, 8, 14},
                        {true, CrossEntropyFusionImpl::kTeInplace, 6, 4}};
  for (const int tp : {1, 2}) {
    ParallelConfig c = layout(m, tp, 4, 1, 1, 8);
    const double logits = 8192.0 * 128256 / tp;  // every token, the GPU's share of the vocabulary
    for (const Case& k : cases) {
      c.cross_entropy_loss_fusion = k.fusion;
      c.cross_entropy_fusion_impl = k.impl;
      const sim::AnalyticCost cost(m, gpu, c, shape);
      const double f = cost.stage(3).f.elementwise_ns - cost.stage(2).f.elementwise_ns;
      const double i = cost.stage(3).i.elementwise_ns - cost.stage(2).i.elementwise_ns;
      EXPECT_NEAR(f, logits * k.forward / rate, 1e-6 * f) << "tp " << tp << " " << to_string(k.impl) << " fusion " << k.fusion;
      EXPECT_NEAR(i, logits * k.input_grad / rate, 1e-6 * i) << "tp " << tp << " " << to_string(k.impl) << " fusion " << k.fusion;
    }
  }
  // Megatron-Bridge's GPT provider default: fused, native.
  EXPECT_TRUE(ParallelConfig{}.cross_entropy_loss_fusion);
  EXPECT_EQ(ParallelConfig{}.cross_entropy_fusion_impl, CrossEntropyFusionImpl::kNative);
}

// An MTP module's loss runs the same implementation: the last stage of DeepSeek-V3 (loss and one MTP
// module) moves twice the loss's bytes per logit.
TEST(AnalyticCost, CrossEntropyCountsEachMtpModulesLoss) {
  const ModelSpec m = model_preset("deepseek-v3");
  ASSERT_EQ(m.mtp_num_layers, 1);
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ParallelConfig c = resolve({.tp = 2, .pp = 16, .ep = 64, .dp = 64, .gbs = 1024, .pipeline_layout = "Et*4|(t*4|)*14tmL"}, m);
  const PipelineShape shape = make_schedule("1f1b", {16, 1, c.microbatches(), 0}).shape;
  const sim::LayerGeometry g(m, c);
  const double rate = gpu.hbm_bandwidth_gbps * gpu.memory_bandwidth_efficiency;
  auto last_stage_f = [&](bool fusion) {
    c.cross_entropy_loss_fusion = fusion;
    return sim::AnalyticCost(m, gpu, c, shape).stage(15).f.elementwise_ns;
  };
  const double unfused = last_stage_f(false), native = last_stage_f(true);
  EXPECT_NEAR(unfused - native, 2 * g.logits() * (38 - 22) / rate, 1e-6 * unfused);
}

// An MTP module's transformer layer is costed as the model's last layer: DeepSeek-V3's MTP stage ("m")
// dispatches and combines as a MoE decoder stage of one layer does ("t"), its attention and experts take
// that layer's time, and its head (norms, 2h -> h projection, logits) adds GEMM time on top.
TEST(AnalyticCost, MtpModuleRunsItsLayerAsTheLastLayer) {
  const ModelSpec m = model_preset("deepseek-v3");
  ASSERT_EQ(m.mtp_num_layers, 1);
  ASSERT_TRUE(m.is_moe_layer(m.num_layers - 1));
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ParallelConfig c{.tp = 2, .pp = 18, .ep = 64, .dp = 64, .gbs = 1152, .pipeline_layout = "Et*3|(t*4|)*14tt|m|L"};
  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  c = resolve(c, m);
  const PipelineShape shape = make_schedule("1f1b", {18, 1, c.microbatches(), 0}).shape;
  const sim::AnalyticCost cost(m, gpu, c, shape);
  const sim::StageCost& layer2 = cost.stage(15);  // "tt": the last two decoder layers
  const sim::StageCost& mtp = cost.stage(16);
  for (auto pass : {&sim::StageCost::f, &sim::StageCost::i}) {
    EXPECT_DOUBLE_EQ((mtp.*pass).ep_comm_ns, (layer2.*pass).ep_comm_ns / 2);
    EXPECT_DOUBLE_EQ((mtp.*pass).attention_ns, (layer2.*pass).attention_ns / 2);
    EXPECT_DOUBLE_EQ((mtp.*pass).expert_ns, (layer2.*pass).expert_ns / 2);
  }
  // The head on top of the layer, once: the glue (one GEMM call) and the MTP logits (one).
  const double rate = gpu.peak_bf16_tflops * 1e3 * gpu.sustained_compute_ratio;
  const auto gemm = [&](double flops) { return flops / (rate * gpu.gemm_efficiency(flops)); };
  const double head = gemm(mtp_glue_forward_flops(m, c.mbs, c.seq_length, c.tp, c.cp)) +
                      gemm(logits_forward_flops(m, c.mbs, c.seq_length, c.tp, c.cp, sim::LayerGeometry(m, c).vocab_divisor()));
  EXPECT_NEAR(mtp.f.gemm_ns - layer2.f.gemm_ns / 2, head, 1e-6 * head);
}

namespace {

// DeepSeek-V3 with stages that mix dense and MoE layers: 0 "E", 1 layer 0 (dense), 2 layers 1-3 (dense,
// dense, MoE), 3 layers 4-5 (MoE), 4-30 two MoE layers each, 31 layer 60 (MoE), 32 the MTP module and loss.
ParallelConfig deepseek_mixed_stages(Recompute recompute = Recompute::kNone, RecomputeMethod method = RecomputeMethod::kUniform,
                                     int recompute_layers = 0) {
  ParallelConfig c{.tp = 1, .pp = 33, .ep = 64, .dp = 64, .gbs = 64 * 33, .pipeline_layout = "E|t|ttt|tt|(tt|)*27t|mL"};
  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  c.recompute = recompute;
  c.recompute_method = method;
  c.recompute_num_layers = recompute_layers;
  return resolve(c, model_preset("deepseek-v3"));
}

}  // namespace

// A chunk of several layer kinds pairs layer by layer: F's (dense, dense, MoE) beside B's (MoE, MoE) is
// two dense-beside-MoE pairs and F's MoE layer alone; F's (MoE, MoE) beside B's (dense, dense, MoE)
// meets B's layers last first: MoE beside MoE, MoE beside dense, and B's first dense layer alone.
TEST(AnalyticCost, OverlappedUnitWalksMixedLayerKinds) {
  const ModelSpec m = model_preset("deepseek-v3");
  const ParallelConfig c = deepseek_mixed_stages();
  const sim::AnalyticCost cost(m, gpu_preset("h100-sxm"), c, make_schedule("1f1b", {33, 1, c.microbatches(), 0}).shape);
  const auto f_alone = [&](int s) { return cost.stage(s).f.total_ns() - cost.stage(s).f.host_wait_ns; };
  const auto b_alone = [&](int s) {
    const sim::StageCost& st = cost.stage(s);
    return st.i.total_ns() + st.w.total_ns() - st.i.host_wait_ns - st.w.host_wait_ns;
  };
  const double dense_beside_moe = cost.overlap_gpu_ns(1, 31), moe_beside_moe = cost.overlap_gpu_ns(31, 31),
               moe_beside_dense = cost.overlap_gpu_ns(31, 1);
  ASSERT_GT(cost.stage(31).f.ep_comm_ns, 0);
  ASSERT_EQ(cost.stage(1).f.ep_comm_ns, 0);
  EXPECT_NEAR(cost.overlap_gpu_ns(2, 3), 2 * dense_beside_moe + f_alone(31), 1e-6 * dense_beside_moe);
  EXPECT_NEAR(cost.overlap_gpu_ns(3, 2), moe_beside_moe + moe_beside_dense + b_alone(1), 1e-6 * moe_beside_moe);
}

// Megatron recomputes an MTP module under full recompute with the uniform method only, in groups of one
// layer (MultiTokenPredictionLayer._checkpointed_forward); under block it keeps the module whole.
TEST(AnalyticCost, MtpModuleRecomputesOnlyUnderUniform) {
  const ModelSpec m = model_preset("deepseek-v3");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  const ParallelConfig uniform = deepseek_mixed_stages(Recompute::kFull, RecomputeMethod::kUniform, 1);
  const ParallelConfig block = deepseek_mixed_stages(Recompute::kFull, RecomputeMethod::kBlock, 1);
  const PipelineShape shape = make_schedule("1f1b", {33, 1, uniform.microbatches(), 0}).shape;
  const sim::AnalyticCost u(m, gpu, uniform, shape), b(m, gpu, block, shape);
  // The MTP stage's forward is the same; its backward re-runs the module's layer and glue under uniform.
  EXPECT_DOUBLE_EQ(u.stage(32).f.compute_ns(), b.stage(32).f.compute_ns());
  EXPECT_GT(u.stage(32).i.compute_ns() - b.stage(32).i.compute_ns(), 0.9 * (u.stage(31).f.compute_ns()));
  const auto kept = [&](const ParallelConfig& c) { return sim::MemoryModel(m, c, shape).stage_activations()[32].bytes; };
  EXPECT_LT(kept(uniform), kept(block));
  // Megatron asserts groups of one layer for MTP recompute under uniform.
  ParallelConfig wide = uniform;
  wide.recompute_num_layers = 2;
  const auto checked = check(wide, m, gpu);
  ASSERT_FALSE(checked.ok());
  EXPECT_EQ(checked.errors.back().rule, "mtp_uniform_recompute_one_layer");
}

// Full recompute re-runs the decoder layers, not the loss: the LM head's input-gradient GEMM is its
// forward GEMM's time once, with or without it.
TEST(AnalyticCost, FullRecomputeLeavesTheLmHeadOnce) {
  const ModelSpec m = model_preset("llama3-8b");
  const GpuSpec gpu = gpu_preset("h100-sxm");
  ParallelConfig c = layout(m, 1, 4, 1, 1, 8);
  const PipelineShape shape = make_schedule("1f1b", {4, 1, 8, 0}).shape;
  for (const Recompute r : {Recompute::kNone, Recompute::kFull}) {
    c.recompute = r;
    const sim::AnalyticCost cost(m, gpu, c, shape);
    const double head_f = cost.stage(3).f.gemm_ns - cost.stage(2).f.gemm_ns;
    const double head_i = cost.stage(3).i.gemm_ns - cost.stage(2).i.gemm_ns;
    EXPECT_GT(head_f, 0);
    EXPECT_NEAR(head_i, head_f, 1e-6 * head_f) << to_string(r);
  }
}

TEST(Simulation, TheOptimizerStepIsShardedAndCountsInTheThroughput) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig one = layout(m, 1, 2, 1, 1, 8), eight = layout(m, 1, 2, 8, 1, 64);
  const auto a = run("llama3-8b", "1f1b", one), b = run("llama3-8b", "1f1b", eight);
  ASSERT_GT(a.optimizer_step_ns, 0);
  // The distributed optimizer shards the step over the data-parallel ranks.
  EXPECT_NEAR(static_cast<double>(b.optimizer_step_ns), a.optimizer_step_ns / 8.0, 2.0);
  // The iteration the throughput divides by is the pipeline's makespan, then the step.
  const double seconds = static_cast<double>(a.metrics.makespan_ns + a.optimizer_step_ns) * 1e-9;
  EXPECT_DOUBLE_EQ(a.throughput.tokens_per_s_per_gpu, static_cast<double>(a.tokens_per_iteration) / seconds / 2);
  // Uniform costs time no optimizer.
  sim::SimulationRequest r;
  r.model = m;
  r.gpu = gpu_preset("h100-sxm");
  r.config = one;
  r.schedule = "1f1b";
  r.cost_model = sim::CostModelKind::Uniform;
  EXPECT_EQ(sim::simulate_config(r).optimizer_step_ns, 0);
}

TEST(Simulation, ConfigRulesAreErrorsNamingTheRule) {
  const ModelSpec m = model_preset("llama3-70b");
  ParallelConfig c = layout(m, 16, 2, 1, 1, 8);
  try {
    run("llama3-70b", "1f1b", c);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tp=16 must divide num_query_groups=8"), std::string::npos) << e.what();
  }
  c = layout(m, 4, 3, 1, 1, 8);
  c.stage_layers = {40, 40};
  try {
    run("llama3-70b", "1f1b", c);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("stage_layers has 2 entries, need pp*vp=3"), std::string::npos) << e.what();
  }
  c = layout(m, 4, 4, 1, 1, 6);
  EXPECT_THROW(run("llama3-70b", "dualpipe", c), ScheduleError);  // m=6 < 2*pp
}

TEST(Simulation, CostModelsAreNamedByOneTable) {
  for (const auto& row : sim::kCostModelNames) EXPECT_EQ(sim::parse_cost_model(sim::cost_model_name(row.value)), row.value);
  EXPECT_EQ(sim::parse_cost_model("uniform"), sim::CostModelKind::Uniform);
  try {
    sim::parse_cost_model("profiled");  // built by the caller, through make_cost
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cost model='profiled' must be one of: analytic, uniform"), std::string::npos) << e.what();
  }
}

TEST(Simulation, IsDeterministic) {
  const ModelSpec m = model_preset("mixtral-8x7b");
  ParallelConfig c = layout(m, 2, 4, 4, 1, 64);
  c.ep = 2;
  const auto a = run("mixtral-8x7b", "dualpipev", c);
  const auto b = run("mixtral-8x7b", "dualpipev", c);
  EXPECT_EQ(timeline_to_json(a.result.timeline).dump(), timeline_to_json(b.result.timeline).dump());
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
}

// ---- memory -----------------------------------------------------------------------------------

// Korthikanti et al. 2022, §4.2, per layer with TP + SP: s*b*h/t * (34 + 5*a*s/h) bytes; selective
// recompute drops the 5as/h term; without SP, s*b*h*(10 + 24/t + 5as/(ht)).
TEST(MemoryModel, LayerActivationsMatchKorthikanti) {
  const ModelSpec m = model_preset("gpt-6.2b");  // MHA, GELU, ffn = 4h: the paper's setting
  const double s = m.seq_length, b = 2, h = m.hidden_size, a = m.num_attention_heads, t = 4;
  const Schedule sched = make_schedule("1f1b", {2, 1, 4, 0});
  ParallelConfig c = layout(m, 4, 2, 1, 2, 8);
  sim::MemoryOptions stored;
  stored.softmax_stored = true;
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape, stored).layer_activation_bytes(0),
            static_cast<std::int64_t>(s * b * h / t * (34 + 5 * a * s / h)));
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape).layer_activation_bytes(0), static_cast<std::int64_t>(s * b * h / t * 34));
  c.recompute = Recompute::kSelective;
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape, stored).layer_activation_bytes(0), static_cast<std::int64_t>(s * b * h / t * 34));
  c.recompute = Recompute::kFull;
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape).layer_activation_bytes(0), static_cast<std::int64_t>(2 * s * b * h / t));
  c.recompute = Recompute::kNone;
  c.sequence_parallel = false;
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape, stored).layer_activation_bytes(0),
            static_cast<std::int64_t>(s * b * h * (10 + 24 / t + 5 * a * s / (h * t))));
}

TEST(MemoryModel, WeightGradStashIsThirtyTwoSbhForGpt) {
  // ZB paper Table 1: W keeps 32sbh (per TP shard).
  const ModelSpec m = model_preset("gpt-1.5b");
  const Schedule sched = make_schedule("zb-h1", {2, 1, 4, 0});
  const ParallelConfig c = layout(m, 2, 2, 1, 1, 4);
  const double s = m.seq_length, h = m.hidden_size;
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape).layer_weight_stash_bytes(0), static_cast<std::int64_t>(32 * s * h / 2));
}

// A known configuration end to end: gpt-6.2b, TP2 PP4 DP2, 1F1B. Rank 0 holds the embedding and
// 30/4 layers... use 28 layers (7 per stage) via an override so the split is even.
TEST(MemoryModel, PeakOfAKnownConfigWithinFivePercentOfTheHandFormula) {
  ModelSpec m = model_preset("gpt-6.2b");
  apply_override(m, "num_layers", "28");
  ParallelConfig c = layout(m, 2, 4, 2, 1, 32);
  c.grad_reduce_in_fp32 = true;  // Megatron-LM's default (fp32 main gradients), as the hand formula
  sim::SimulationRequest r;
  r.model = m;
  r.gpu = gpu_preset("a100-80g");
  r.config = c;
  r.schedule = "1f1b";
  const auto o = sim::simulate_config(r);
  // By hand: params on rank 0 = 7 layers x 12h^2 (+ biases, norms) / t + embedding (V + s) x h / t.
  const double h = m.hidden_size, t = 2, dp = 2, s = m.seq_length, layers = 7, p = 4;
  const double vocab = std::ceil(m.vocab_size / 256.0) * 256;
  const double params = (layers * (12 * h * h + 13 * h) + vocab * h) / t;
  const double static_bytes = params * (2 + 4 + 12 / dp);  // bf16 weights, fp32 grads, sharded fp32 Adam
  const double activations = p * layers * (s * 1 * h / t * 34);  // 1F1B rank 0 holds P microbatches
  const double expected = static_bytes + activations;
  EXPECT_NEAR(static_cast<double>(o.peak_memory_bytes[0]) / expected, 1.0, 0.05)
      << o.peak_memory_bytes[0] << " vs " << expected;
}

TEST(MemoryModel, DualPipeHoldsTwiceTheParameters) {
  const ModelSpec m = model_preset("llama3-8b");
  const ParallelConfig c = layout(m, 1, 4, 1, 1, 8);
  const auto one = run("llama3-8b", "1f1b", c);
  const auto two = run("llama3-8b", "dualpipe", c);
  EXPECT_NEAR(static_cast<double>(two.static_memory[1].params_bytes) / one.static_memory[1].params_bytes, 2.0, 0.01);
}

TEST(MemoryModel, FlagsOutOfMemory) {
  const ModelSpec m = model_preset("llama3-70b");
  const auto o = run("llama3-70b", "gpipe", layout(m, 4, 4, 1, 1, 32));
  EXPECT_TRUE(o.oom);
  EXPECT_GT(*std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end()), o.memory_capacity_bytes);
}

TEST(MemoryModel, WeightStashWithoutSequenceParallelKeepsItsReplicatedPart) {
  const ModelSpec m = model_preset("gpt-1.5b");
  const Schedule sched = make_schedule("zb-h1", {2, 1, 4, 0});
  ParallelConfig c = layout(m, 2, 2, 1, 1, 4);
  c.sequence_parallel = false;
  const double s = m.seq_length, h = m.hidden_size;
  // 8h replicated + 24h sharded over t=2.
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape).layer_weight_stash_bytes(0), static_cast<std::int64_t>(s * (8 * h + 24 * h / 2)));
}

TEST(MemoryModel, FullRecomputeStillHoldsTheStashForDeferredWeightGrads) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = layout(m, 1, 4, 1, 1, 16);
  c.recompute = Recompute::kFull;
  const auto zb = run("llama3-8b", "zb-h1", c);
  const auto fused = run("llama3-8b", "1f1b", c);
  // Same forward memory, but ZB-H1 defers W's and so holds stashes 1F1B frees at once.
  EXPECT_GT(*std::max_element(zb.result.peak_activation_bytes.begin(), zb.result.peak_activation_bytes.end()),
            *std::max_element(fused.result.peak_activation_bytes.begin(), fused.result.peak_activation_bytes.end()));
}

// The backward of a full-recompute group re-runs the group's forward and holds all of its layers'
// activations at once: uniform groups of N layers hold N layers' worth, block method one layer.
TEST(MemoryModel, FullRecomputeRebuildsOneGroupAtATime) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = layout(m, 1, 1, 1, 1, 1);  // one microbatch on one rank: peak = F's bytes + B's transient
  const Schedule sched = make_schedule("1f1b", {1, 1, 1, 0});
  const std::int64_t layer = sim::MemoryModel(m, c, sched.shape).layer_activation_bytes(1);  // kept without recompute
  c.recompute = Recompute::kFull;
  for (const auto& [method, n, rebuilt] : {std::tuple{RecomputeMethod::kUniform, 1, 1}, std::tuple{RecomputeMethod::kUniform, 4, 4},
                                           std::tuple{RecomputeMethod::kUniform, 32, 32}, std::tuple{RecomputeMethod::kBlock, 4, 1}}) {
    c.recompute_method = method;
    c.recompute_num_layers = n;
    const sim::StageActivation stage = sim::MemoryModel(m, c, sched.shape).stage_activations()[0];
    // The group's first layer reuses the kept input rather than holding a second copy of it.
    const auto kept_input = static_cast<std::int64_t>(sim::LayerGeometry(m, c).hidden_state_bytes());
    EXPECT_EQ(stage.recompute_transient, rebuilt * layer - kept_input) << n;
    EXPECT_EQ(run("llama3-8b", "1f1b", c).result.peak_activation_bytes[0], stage.bytes + stage.recompute_transient) << n;
  }
}

// Under FP8 the weight-gradient GEMM takes quantized operands: W's stash holds them at a byte each,
// half the bf16 stash, whether I kept them or rebuilt them by full recompute. So full recompute never
// holds more than no recompute, as under bf16.
TEST(MemoryModel, Fp8WeightStashHoldsTheQuantizedOperands) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = layout(m, 1, 1, 1, 1, 1, 2048);
  const Schedule sched = make_schedule("zb-h1", {1, 1, 1, 0});
  c.recompute = Recompute::kFull;
  const std::int64_t bf16 = sim::MemoryModel(m, c, sched.shape).layer_weight_stash_bytes(1);
  c.precision = Precision::kFp8;
  EXPECT_EQ(sim::MemoryModel(m, c, sched.shape).layer_weight_stash_bytes(1), bf16 / 2);
  const std::int64_t full = run("llama3-8b", "zb-h1", c).result.peak_activation_bytes[0];
  c.recompute = Recompute::kNone;
  EXPECT_LE(full, run("llama3-8b", "zb-h1", c).result.peak_activation_bytes[0]);
}

// first_last_layers_bf16 keeps the first and last layers' GEMM inputs in BF16 and the rest in FP8:
// each layer is sized by its own precision (the layer-kind cache once sized every layer as layer 0).
TEST(MemoryModel, FirstAndLastBf16LayersAreSizedByTheirOwnPrecision) {
  const ModelSpec m = model_preset("llama3-8b");
  ParallelConfig c = layout(m, 1, 1, 1, 1, 1);
  const Schedule sched = make_schedule("1f1b", {1, 1, 1, 0});
  c.precision = Precision::kFp8;
  c.fp8_recipe = Fp8Recipe::kTensorwise;
  const sim::MemoryModel fp8(m, c, sched.shape);
  c.first_last_layers_bf16 = true;
  const sim::MemoryModel mixed(m, c, sched.shape);
  const std::int64_t bf16_layer = mixed.layer_activation_bytes(0), fp8_layer = mixed.layer_activation_bytes(1);
  EXPECT_GT(bf16_layer, fp8_layer);
  EXPECT_EQ(mixed.layer_activation_bytes(m.num_layers - 1), bf16_layer);
  EXPECT_EQ(mixed.stage_activations()[0].bytes - fp8.stage_activations()[0].bytes, 2 * (bf16_layer - fp8_layer));
}

}  // namespace
}  // namespace pipelab
