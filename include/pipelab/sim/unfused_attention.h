// Attention with the score matrix materialised (`--attention-backend unfused|local`): Megatron's own
// DotProductAttention (baddbmm, FusedScaleMaskSoftmax, dropout, bmm) or Transformer Engine's
// UnfusedDotProductAttention. Its HBM traffic per score, what it keeps for the backward and its kernel
// launches beyond one fused kernel's, per layer (docs/simulator.md, "Unfused attention"). The QK^T and
// PV GEMMs themselves are the cost model's.
#pragma once

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab::sim {

/// Per element of the s x s score matrix (one sequence, one head), for a layer that is `windowed` or
/// causal. The softmax runs as the fused CUDA kernel where its key length allows (Megatron's
/// 16 < s <= 4096, Transformer Engine's 16 < s < 16384), else as PyTorch's FP32 softmax. `kept`
/// is also what a fused backend keeps under `--softmax-stored`.
struct UnfusedAttentionWork {
  bool fused_softmax = true;
  double forward_bytes = 0;  // softmax (and the FP32 path's casts, scale and mask), dropout
  double backward_bytes = 0;
  double kept_bytes = 0;      // held from the forward to the backward
  int forward_kernels = 0;    // kernels beside the two GEMMs
  int backward_kernels = 0;   // beside the four GEMMs
};

UnfusedAttentionWork unfused_attention_work(const ModelSpec& model, const ParallelConfig& config, bool windowed);

/// What a fused softmax kernel's attention keeps per score for the backward: its BF16 output (2 bytes),
/// and with dropout the mask (1) and the dropout's output (2): Korthikanti et al.'s 5as/h term.
inline double fused_softmax_kept_bytes(bool dropout) { return dropout ? 5.0 : 2.0; }

}  // namespace pipelab::sim
