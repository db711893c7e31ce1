// The FC2 bias of biased routed experts (gpt-oss): Megatron's TEGroupedMLP asks Transformer Engine for
// FC2's output without its bias and adds each expert's bias, scaled by the router's probability, in
// eager PyTorch, one expert at a time (`_apply_bias`: split by the host's token counts, `t + b * p` per
// expert, `torch.cat`; core_v0.15.0 to the packed path of later releases). It is HBM-bound work on every
// routed row and two to four small kernels per local expert, forward and backward (docs/simulator.md,
// "Biased experts").
#pragma once

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab::sim {

/// Per MoE layer and microbatch, on one GPU: HBM bytes per element of FC2's output (routed rows x
/// hidden) and eager launches, forward and input-gradient backward. All zero without expert biases
/// and on a dense layer. Where the experts take the token counts on the device (HybridEP's per-rank
/// budget or full-iteration graphs) the bias rides TE's grouped or fused MLP: only the bias gradients'
/// accumulation launches remain (which full-iteration graphs capture).
struct ExpertBiasWork {
  double forward_bytes_per_element = 0;
  double input_grad_bytes_per_element = 0;
  double forward_launches = 0;
  double input_grad_launches = 0;
};

/// `layer` (0-based, model order) with `local_experts` experts on this GPU.
ExpertBiasWork expert_bias_work(const ModelSpec& model, const ParallelConfig& config, int layer, double local_experts);

}  // namespace pipelab::sim
