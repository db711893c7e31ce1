#include "pipelab/sim/expert_bias.h"

namespace pipelab::sim {

ExpertBiasWork expert_bias_work(const ModelSpec& m, const ParallelConfig& c, int layer, double local_experts) {
  if (!m.add_bias_linear || !m.is_moe_layer(layer)) return {};
  // The DDP hook accumulates each expert's FC1 and FC2 bias gradient into main_grad whichever path adds
  // the bias (distributed_data_parallel.py: an add_ per parameter without gradient-accumulation fusion,
  // which only the GEMMs' weights have; pipelab counts it for these per-expert biases alone).
  const double n = local_experts;
  ExpertBiasWork w;
  w.input_grad_launches = 2 * n;
  if (c.moe_expert_rank_capacity_factor > 0 || c.cuda_graph_impl == CudaGraphImpl::kFullIteration) return w;
  // The product b * p takes the probabilities' precision: BF16 from the alltoall and allgather
  // dispatchers (Megatron's router keeps the logits' dtype), FP32 from flex (DeepEP and HybridEP take
  // only FP32 probabilities: token_dispatcher.py). FC2's output t is BF16.
  const bool fp32 = c.moe_token_dispatcher_type == MoeDispatcher::kFlex;
  const double s = fp32 ? 4 : 2;
  constexpr double kBf16 = 2;
  // Forward: b * p writes s; t + (b * p) reads 2 + s and writes s; torch.cat reads and writes s; the
  // final .to(BF16) reads 4 and writes 2 when the sum is FP32.
  w.forward_bytes_per_element = s + (kBf16 + 2 * s) + 2 * s + (fp32 ? 4 + kBf16 : 0);
  // Backward: the cast back to FP32 (2 + 4) and t's gradient cast to BF16 (4 + 2) when FP32; b's and
  // p's gradients each a multiply (read and write s) and a reduction (read s); the split's backward
  // concatenates t's gradient (read and write 2).
  w.input_grad_bytes_per_element = (fp32 ? 2 * (kBf16 + 4) : 0) + 2 * 3 * s + 2 * kBf16;
  // Launches: a multiply and an add per expert, the cat (and the cast); backward two multiplies and two
  // reductions per expert (and t's cast and b's gradient's cast back to BF16), the cat of t's gradient
  // and of p's (and the cast).
  w.forward_launches = 2 * n + 1 + (fp32 ? 1 : 0);
  w.input_grad_launches += 4 * n + 2 + (fp32 ? 2 * n + 1 : 0);
  return w;
}

}  // namespace pipelab::sim
