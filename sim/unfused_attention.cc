// Unfused attention's per-score work; see unfused_attention.h and docs/simulator.md, "Unfused attention".
#include "pipelab/sim/unfused_attention.h"

namespace pipelab::sim {

UnfusedAttentionWork unfused_attention_work(const ModelSpec& m, const ParallelConfig& c, bool windowed) {
  UnfusedAttentionWork w;
  const bool dropout = m.attention_dropout > 0;
  // The fused softmax kernel's key lengths: Megatron's fused_softmax.py is_kernel_available, TE's
  // attention/dot_product_attention/softmax.py.
  const int s = c.seq_length;
  w.fused_softmax = s > 16 && (c.attention_backend == AttentionBackend::kLocal ? s <= 4096 : s < 16384);
  if (w.fused_softmax) {
    // BF16 in and out. The causal kernel (scaled_upper_triang_masked_softmax) reads only the lower
    // triangle and writes every element: 1 + 2 bytes forward; backward reads the gradient and the
    // output there and writes it: 1 + 1 + 2. A window's masked kernel reads and writes it all.
    w.forward_bytes = windowed ? 4 : 3;
    w.backward_bytes = windowed ? 6 : 4;
    w.kept_bytes = fused_softmax_kept_bytes(false);  // the softmax output, read by the backward and by the PV GEMM
    w.forward_kernels = 1;
    w.backward_kernels = 1;
  } else {
    // PyTorch in FP32 (attention_softmax_in_fp32): cast to FP32 (2 + 4), scale (4 + 4), masked_fill
    // (4 + 1 + 4), softmax (4 + 4), cast back (4 + 2); the backward the same steps in reverse (6, 4 + 4
    // + 4, 4 + 1 + 4, 4 + 4, 4 + 2). It keeps the FP32 probabilities and their BF16 copy.
    w.forward_bytes = 37;
    w.backward_bytes = 41;
    w.kept_bytes = 6;
    w.forward_kernels = 5;
    w.backward_kernels = 5;
  }
  if (dropout) {
    // PyTorch's dropout on the BF16 probabilities: read 2, write 2 and a 1-byte mask; backward reads
    // the gradient and the mask and writes it. It keeps the mask and its output.
    w.forward_bytes += 5;
    w.backward_bytes += 5;
    w.kept_bytes += 3;
    w.forward_kernels += 1;
    w.backward_kernels += 1;
  }
  return w;
}

}  // namespace pipelab::sim
