#include "pipelab/sim/host_launches.h"

#include <algorithm>

namespace pipelab::sim {
namespace {

// Kernel launches per region and pass, read off Megatron-Core (d98e8a64) and Transformer Engine
// (d0067d0d, 2.20.0.dev0) in their steady state (weights already quantized for the step). Estimates of
// the code's launches, not traces: docs/simulator.md "Host launches" lists each region's kernels.
struct Launches {
  double forward = 0, backward = 0;
};

// The attention block: norm and QKV (TE LayerNormLinear), RoPE, the fused attention kernel, the output
// projection, bias-dropout-add. FP8 adds its quantizations and amax updates by recipe: delayed scaling
// fuses the QKV input's cast into the norm; current scaling takes an amax, a scale and a cast per
// tensor; MXFP8, blockwise and NVFP4 one quantize kernel per tensor.
Launches attention_block(const ParallelConfig& c, Precision precision) {
  Launches l{11, 22};
  if (precision != Precision::kBf16) {
    const bool current = precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kTensorwise;
    const bool delayed = precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kDelayed;
    l.forward += current ? 7 : delayed ? 1 : 3;
    l.backward += current ? 8 : delayed ? 2 : 4;
  }
  return l;
}

// A dense MLP: norm and FC1, the activation, FC2, the residual add; FP8 as above.
Launches dense_mlp(const ParallelConfig& c, Precision precision) {
  Launches l{5, 9};
  if (precision != Precision::kBf16) {
    const bool current = precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kTensorwise;
    const bool delayed = precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kDelayed;
    l.forward += current ? 5 : delayed ? 1 : 2;
    l.backward += current ? 5 : delayed ? 1 : 2;
  }
  return l;
}

// The routed experts, TE GroupedLinear's default path (one GEMM per local expert with tokens, on four
// streams: general_grouped_gemm), FC1, the activation and FC2. Per expert, forward: BF16 and delayed
// scaling 2 GEMMs (delayed casts all experts in one or two multi_cast_transpose launches); current
// scaling 4 quantize kernels (zero amax, amax, scale, cast) per input plus the GEMMs; MXFP8 (and the
// other block-scaled recipes) 1 quantize per input. Backward: dgrad and wgrad GEMMs, and the output
// gradients' quantizations. HybridEP's per-rank budget needs TE's grouped-tensor path or its op fuser
// (Megatron refuses it otherwise), which launches one grouped GEMM and quantization per MLP whatever the
// experts: 6-12 kernels forward, 8-12 backward (grouped_linear.py, the cuBLASLt grouped GEMM).
Launches experts(const ParallelConfig& c, Precision precision, double local_experts) {
  if (c.moe_expert_rank_capacity_factor > 0) return {9, 10};
  const double n = local_experts;
  if (precision == Precision::kBf16) return {2 * n + 2, 4 * n + 2};
  if (precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kDelayed) return {2 * n + 5, 4 * n + 5};
  if (precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kTensorwise) return {10 * n + 2, 12 * n + 2};
  return {4 * n + 4, 6 * n + 7};
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
  const Precision precision = c.layer_precision(layer, m.num_layers);
  const bool moe = m.is_moe_layer(layer);
  LayerLaunches out;
  if (c.cuda_graph_impl == CudaGraphImpl::kFullIteration) return out;  // one launch per iteration
  const bool whole_layer = c.cuda_graph_impl != CudaGraphImpl::kNone && c.cuda_graph_modules.empty();
  if (whole_layer) return {1, 1, 0};

  // TP with sequence parallelism: an all-gather before and a reduce-scatter after each block, each way.
  const double tp_collectives = c.tp > 1 ? 2 : 0;
  Launches attention = attention_block(c, precision);
  attention.forward += tp_collectives;
  attention.backward += tp_collectives;
  attention = graphed(attention, c.cuda_graphed("attn"));

  Launches mlp;  // the MLP side: a dense MLP, or the MoE layer from its norm to the combine
  if (!moe) {
    mlp = dense_mlp(c, precision);
    mlp.forward += tp_collectives;
    mlp.backward += tp_collectives;
    mlp = graphed(mlp, c.cuda_graphed("mlp"));
  } else if (c.cuda_graphed("moe")) {
    mlp = {1, 1};
  } else {
    const double local_experts = std::max(1.0, static_cast<double>(m.num_experts) / c.ep);
    const bool router_graph = c.cuda_graphed("moe_router");
    const Launches r = graphed(router(), router_graph);
    const Launches p = graphed(preprocess(c), router_graph && c.cuda_graphed("moe_preprocess"));
    const Launches d = dispatch_combine(c);
    const Launches e = experts(c, precision, local_experts);
    mlp = {r.forward + p.forward + d.forward + e.forward, r.backward + p.backward + d.backward + e.backward};
    if (m.moe_shared_expert_intermediate_size > 0) {
      const Launches shared = dense_mlp(c, precision);
      mlp.forward += shared.forward;
      mlp.backward += shared.backward;
    }
  }
  out.forward = attention.forward + mlp.forward;
  const double backward = attention.backward + mlp.backward;
  // W: the weight-gradient GEMMs (QKV, projection, FC1, FC2; two per local expert).
  const double wgrad_gemms = moe ? 2 + 2 * std::max(1.0, static_cast<double>(m.num_experts) / c.ep) : 4;
  out.weight_grad = std::min(backward, wgrad_gemms);
  out.input_grad = backward - out.weight_grad;
  if (full_recompute) {
    out.input_grad += out.forward;
  } else {  // selective recompute re-runs its modules' forward kernels
    if (c.recomputes_module("core_attn")) out.input_grad += 1;
    if (c.recomputes_module("layernorm")) out.input_grad += 2;
    if (c.recomputes_module("moe_act") && moe) out.input_grad += 1;
    if ((c.recomputes_module("mlp") && !moe) || (c.recomputes_module("moe") && moe)) out.input_grad += mlp.forward;
  }
  return out;
}

}  // namespace pipelab::sim
