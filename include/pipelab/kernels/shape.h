// The mock transformer block's shape, and the counts derived from it: exact GEMM FLOPs per pass,
// parameter count and the bytes of the activation passed between pipeline stages.
#pragma once

#include <cstdint>

namespace pipelab::kernels {

/// Dimensions of one block and one microbatch. T = mbs * seq tokens flow through a block as a
/// row-major (T, hidden) matrix; sequence b owns rows [b*seq, (b+1)*seq).
struct BlockShape {
  int hidden = 0;       ///< model width H
  int ffn = 0;          ///< MLP inner width F
  int heads = 0;        ///< attention heads; head_dim = hidden / heads
  int seq = 0;          ///< tokens per sequence (causal attention runs within a sequence)
  int mbs = 0;          ///< sequences per microbatch
  bool swiglu = false;  ///< MLP: false = GELU(x W1) W2, true = (SiLU(x Wg) * x Wu) Wd

  /// Throws pipelab::InputError naming the offending field, e.g.
  /// "BlockShape: hidden=100 must be divisible by heads=3".
  void validate() const;

  int head_dim() const { return heads > 0 ? hidden / heads : 0; }
  /// Tokens per microbatch, T = mbs * seq.
  std::int64_t tokens() const { return std::int64_t{mbs} * seq; }
  /// Elements of one (T, hidden) activation.
  std::int64_t activation_elems() const { return tokens() * hidden; }

  friend bool operator==(const BlockShape&, const BlockShape&) = default;
};

/// FLOPs of one block for one microbatch, per pass. Counted exactly from the GEMMs the CPU kernels
/// execute: 2*M*N*K each; attention score/probability GEMMs over the full seq x seq square, as
/// executed (the causal mask is applied after the GEMM, so the masked half is computed and counted).
/// That is twice Megatron's causal attention term, which halves the square (megatron_model_flops in
/// profiles/flops.cc); the projection and MLP GEMMs match it. Elementwise work (norms, softmax,
/// activations, residuals) is excluded. See docs/kernels.md for the per-GEMM table.
struct OpFlops {
  std::int64_t forward = 0;          ///< F
  std::int64_t backward_input = 0;   ///< I: input gradient only
  std::int64_t backward_weight = 0;  ///< W: weight gradients only

  /// B = I + W.
  std::int64_t backward() const { return backward_input + backward_weight; }
  std::int64_t total() const { return forward + backward(); }

  friend bool operator==(const OpFlops&, const OpFlops&) = default;
};

/// GEMM FLOPs of one block for one microbatch of `shape` (validated).
OpFlops block_flops(const BlockShape& shape);

/// Bytes of the fp32 activation a stage sends to the next (and of the gradient sent back):
/// mbs * seq * hidden * 4.
std::int64_t activation_bytes(const BlockShape& shape);

/// Bytes one block keeps per microbatch in fp32: after F (BlockSaved: 8TH + 2T + mbs*heads*seq^2
/// + (2|3)TF floats) and after I until W (WeightGradStash: 12TH + (2|3)TF floats). The structs'
/// bytes() equal these; the simulator's memory model for the mock model uses them.
std::int64_t saved_bytes(const BlockShape& shape);
std::int64_t stash_bytes(const BlockShape& shape);

/// Learnable parameters of one block: 2H (norm gains) + 4H^2 (QKV, out) + 2HF (GELU) or 3HF (SwiGLU).
std::int64_t param_count(const BlockShape& shape);

}  // namespace pipelab::kernels
