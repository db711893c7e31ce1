#include "pipelab/sim/host_launches.h"

#include <algorithm>
#include <array>

#include "pipelab/sim/expert_bias.h"
#include "pipelab/sim/unfused_attention.h"

namespace pipelab::sim {
namespace {

// Kernel launches per region and pass, read off Megatron-Core (d98e8a64) and Transformer Engine
// (d0067d0d, 2.20.0.dev0) in their steady state (weights already quantized for the step). Estimates of
// the code's launches, not traces: docs/simulator.md "Host launches" lists each region's kernels.
struct Launches {
  double forward = 0, backward = 0;
};

// How a layer's quantized GEMMs scale: per-tensor delayed scaling, per-tensor current scaling, or one of
// the block-scaled recipes (MXFP8, blockwise, NVFP4).
enum class QuantizationKind { kNone, kDelayed, kCurrent, kBlock };
QuantizationKind quantization(const ParallelConfig& c, Precision precision) {
  if (precision == Precision::kBf16) return QuantizationKind::kNone;
  if (precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kDelayed) return QuantizationKind::kDelayed;
  if (precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kTensorwise) return QuantizationKind::kCurrent;
  return QuantizationKind::kBlock;
}

// A block's BF16 launches plus its quantizations' by kind ({delayed, current, block}, each {F, I+W}).
Launches with_quantization(Launches bf16, QuantizationKind kind, const std::array<Launches, 3>& extra) {
  if (kind == QuantizationKind::kNone) return bf16;
  const Launches& e = extra[static_cast<std::size_t>(kind) - 1];
  return {bf16.forward + e.forward, bf16.backward + e.backward};
}

// The attention block: norm and QKV (TE LayerNormLinear), RoPE, the fused attention kernel, the output
// projection, bias-dropout-add. FP8 adds its quantizations and amax updates by recipe: delayed scaling
// fuses the QKV input's cast into the norm; current scaling takes an amax, a scale and a cast per
// tensor; MXFP8, blockwise and NVFP4 one quantize kernel per tensor.
Launches attention_block(QuantizationKind kind) { return with_quantization({11, 22}, kind, {{{1, 2}, {7, 8}, {3, 4}}}); }

// A dense MLP: norm and FC1, the activation, FC2, the residual add; FP8 as above.
Launches dense_mlp(QuantizationKind kind) { return with_quantization({5, 9}, kind, {{{1, 1}, {5, 5}, {2, 2}}}); }

// The routed experts, TE GroupedLinear's default path (one GEMM per local expert with tokens, on four
// streams: general_grouped_gemm), FC1, the activation and FC2. Per expert, forward: BF16 and delayed
// scaling 2 GEMMs (delayed casts all experts in one or two multi_cast_transpose launches); current
// scaling 4 quantize kernels (zero amax, amax, scale, cast) per input plus the GEMMs; MXFP8 (and the
// other block-scaled recipes) 1 quantize per input. Backward: dgrad and wgrad GEMMs, and the output
// gradients' quantizations. HybridEP's per-rank budget needs TE's grouped-tensor path or its op fuser
// (Megatron refuses it otherwise), which launches one grouped GEMM and quantization per MLP whatever the
// experts: 6-12 kernels forward, 8-12 backward (grouped_linear.py, the cuBLASLt grouped GEMM).
Launches experts(const ParallelConfig& c, QuantizationKind kind, double local_experts) {
  if (c.moe_expert_rank_capacity_factor > 0) return {9, 10};
  const double n = local_experts;
  switch (kind) {
    case QuantizationKind::kNone: return {2 * n + 2, 4 * n + 2};
    case QuantizationKind::kDelayed: return {2 * n + 5, 4 * n + 5};
    case QuantizationKind::kCurrent: return {10 * n + 2, 12 * n + 2};
    case QuantizationKind::kBlock: return {4 * n + 4, 6 * n + 7};
  }
  return {};
}

// The MoE layer's routing side: the pre-MLP norm and the router (GEMM, fused top-k, aux-loss scores,
// counts); the dispatcher's preprocessing (counts, the count all-gather, D2H copies; alltoall also its
// permute), then its dispatch and combine (all-to-alls, sorts by local expert, unpermute; HybridEP and
// DeepEP fused kernels, DeepEP's multihot conversion).
Launches router() { return {10, 15}; }
Launches preprocess(const ParallelConfig& c) {
  switch (c.moe_token_dispatcher_type) {
    case MoeDispatcher::kAlltoall: return {16, 4};
    case MoeDispatcher::kAllgather: return {6, 2};
    case MoeDispatcher::kFlex: return {3, 0};
  }
  return {};
}
Launches dispatch_combine(const ParallelConfig& c) {
  switch (c.moe_token_dispatcher_type) {
    case MoeDispatcher::kAlltoall: return {10, 16};
    case MoeDispatcher::kAllgather: return {12, 12};
    case MoeDispatcher::kFlex: return c.moe_flex_dispatcher_backend == "hybridep" ? Launches{15, 14} : Launches{21, 18};
  }
  return {};
}

// A captured region replays with one launch per pass.
Launches graphed(Launches l, bool graph) { return graph ? Launches{1, 1} : l; }

}  // namespace

LayerLaunches layer_launches(const ModelSpec& m, const ParallelConfig& c, int layer, bool full_recompute) {
  const QuantizationKind kind = quantization(c, c.layer_precision(layer, m.num_layers));
  const bool moe = m.is_moe_layer(layer);
  const double local_experts = std::max(1.0, static_cast<double>(m.num_experts) / c.ep);
  LayerLaunches out;
  if (c.cuda_graph_impl == CudaGraphImpl::kFullIteration) return out;  // one launch per iteration
  const bool whole_layer = c.cuda_graph_impl != CudaGraphImpl::kNone && c.cuda_graph_modules.empty();
  if (whole_layer) return {1, 1, 0};

  // TP with sequence parallelism: an all-gather before and a reduce-scatter after each block, each way.
  const double tp_collectives = c.tp > 1 ? 2 : 0;
  Launches attention = attention_block(kind);
  attention.forward += tp_collectives;
  attention.backward += tp_collectives;
  // Unfused attention: two GEMMs and its softmax and dropout kernels where a fused backend launches one
  // kernel; the backward four GEMMs and theirs (unfused_attention.h).
  double unfused_forward = 0;
  if (c.attention_unfused() && !c.cuda_graphed("attn")) {
    const UnfusedAttentionWork w = unfused_attention_work(m, c, m.is_window_attention_layer(layer));
    unfused_forward = 1 + w.forward_kernels;
    attention.forward += unfused_forward;
    attention.backward += 3 + w.backward_kernels;
  }
  attention = graphed(attention, c.cuda_graphed("attn"));

  Launches mlp;  // the MLP side: a dense MLP, or the MoE layer from its norm to the combine
  if (!moe) {
    mlp = dense_mlp(kind);
    mlp.forward += tp_collectives;
    mlp.backward += tp_collectives;
    mlp = graphed(mlp, c.cuda_graphed("mlp"));
  } else if (c.cuda_graphed("moe")) {
    mlp = {1, 1};
  } else {
    const bool router_graph = c.cuda_graphed("moe_router");
    const Launches r = graphed(router(), router_graph);
    const Launches p = graphed(preprocess(c), router_graph && c.cuda_graphed("moe_preprocess"));
    const Launches d = dispatch_combine(c);
    const Launches e = experts(c, kind, local_experts);
    const ExpertBiasWork bias = expert_bias_work(m, c, layer, local_experts);
    mlp = {r.forward + p.forward + d.forward + e.forward + bias.forward_launches,
           r.backward + p.backward + d.backward + e.backward + bias.input_grad_launches};
    if (m.has_shared_experts()) {
      const Launches shared = dense_mlp(kind);
      mlp.forward += shared.forward;
      mlp.backward += shared.backward;
    }
  }
  out.forward = attention.forward + mlp.forward;
  const double backward = attention.backward + mlp.backward;
  // W: the weight-gradient GEMMs (QKV, projection, FC1, FC2; two per local expert, or two grouped ones).
  const double expert_wgrads = c.moe_expert_rank_capacity_factor > 0 ? 2 : 2 * local_experts;
  const double wgrad_gemms = moe ? 2 + expert_wgrads : 4;
  out.weight_grad = std::min(backward, wgrad_gemms);
  out.input_grad = backward - out.weight_grad;
  if (full_recompute) {
    out.input_grad += out.forward;
  } else {  // selective recompute re-runs its modules' forward kernels
    if (c.recomputes_module("core_attn")) out.input_grad += 1 + unfused_forward;
    if (c.recomputes_module("layernorm")) out.input_grad += 2;
    if (c.recomputes_module("moe_act") && moe) out.input_grad += 1;
    if ((c.recomputes_module("mlp") && !moe) || (c.recomputes_module("moe") && moe)) out.input_grad += mlp.forward;
  }
  return out;
}

}  // namespace pipelab::sim
