// Cross-entropy bytes per logit by implementation; see cross_entropy.h.
#include "pipelab/sim/cross_entropy.h"

namespace pipelab::sim {

CrossEntropyBytes cross_entropy_bytes(const ParallelConfig& c) {
  if (!c.cross_entropy_loss_fusion) {
    // Megatron's unfused loss (tensor_parallel/cross_entropy.py, eager): F casts to fp32 (2 + 4), takes
    // the max (4), subtracts it in place (8), exponentiates in place (8), sums (4) and divides in place
    // (8); I scales the kept fp32 softmax in place (8) and autograd casts the gradient back to BF16 for
    // the LM head (4 + 2).
    return {38, 14, 4};
  }
  switch (c.cross_entropy_fusion_impl) {
    case CrossEntropyFusionImpl::kNative:
      // fusions/fused_cross_entropy.py: the same steps as three torch.compile'd functions: cast + max
      // (2 + 4), subtract + exp + sum (4 + 4), divide (4 + 4); I reads the fp32 softmax, writes back
      // its in-place update and writes the BF16 gradient (4 + 4 + 2).
      return {22, 10, 4};
    case CrossEntropyFusionImpl::kTe:
      // Transformer Engine 2.18 on (triton/cross_entropy.py after 01bbe3eea): an online-softmax pass
      // over the BF16 logits (2), a pass that reads them again and writes an fp32 gradient (2 + 4); I
      // scales it by the per-token loss gradient (4 + 4) and autograd casts it to BF16 (4 + 2).
      return {8, 14, 4};
    case CrossEntropyFusionImpl::kTeInplace:
      // Transformer Engine before 2.18: the same two passes write the gradient over the BF16 logits in
      // place (2, 2 + 2) and keep them; I scales them in place (2 + 2); nothing to cast.
      return {6, 4, 2};
  }
  return {38, 14, 4};
}

}  // namespace pipelab::sim
