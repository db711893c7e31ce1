// One pre-norm transformer block on the CPU, with forward (F), input-gradient (I) and
// weight-gradient (W) as three separate passes so zero-bubble schedules execute for real:
//   y = x + Attn(RMSNorm1(x)) Wo,   z = y + MLP(RMSNorm2(y)).
// The float instantiation is the runtime's; double exists for finite-difference reference checks.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <type_traits>
#include <vector>

#include "pipelab/kernels/shape.h"

namespace pipelab::kernels {

/// RMSNorm epsilon: rstd = 1 / sqrt(mean(x^2) + kRmsNormEps).
inline constexpr double kRmsNormEps = 1e-5;

/// Span parameters that do not take part in template deduction, so std::vector<Real> arguments
/// convert implicitly once Real is deduced from the params/saved/stash argument.
template <class Real>
using ConstSpan = std::type_identity_t<std::span<const Real>>;
template <class Real>
using MutSpan = std::type_identity_t<std::span<Real>>;

/// A named view of one tensor, for iteration (optimizers, all-reduce, tests).
template <class Real>
struct NamedTensor {
  std::string_view name;
  std::span<Real> data;
};

/// All learnable weights of one block (no biases). Row-major; a GEMM computes x(T, in) @ W(in, out).
/// The same type holds gradients (BlockGrads), which the W pass accumulates with +=.
template <class Real>
struct BasicBlockParams {
  BlockShape shape;
  std::vector<Real> norm1_gain;  // (hidden)
  std::vector<Real> w_qkv;       // (hidden, 3*hidden): columns [q | k | v], head h at h*head_dim
  std::vector<Real> w_out;       // (hidden, hidden)
  std::vector<Real> norm2_gain;  // (hidden)
  std::vector<Real> w_up;        // (hidden, ffn): GELU W1, SwiGLU W_up
  std::vector<Real> w_gate;      // (hidden, ffn): SwiGLU W_gate; empty for GELU
  std::vector<Real> w_down;      // (ffn, hidden): GELU W2, SwiGLU W_down

  /// The non-empty tensors in a fixed order: norm1_gain, w_qkv, w_out, norm2_gain, w_up, [w_gate,] w_down.
  std::vector<NamedTensor<Real>> tensors();
  std::vector<NamedTensor<const Real>> tensors() const;
  /// Total elements over all tensors (== param_count(shape)).
  std::int64_t size() const;
};

/// What the forward pass keeps for the backward of one microbatch. A value owned by the caller:
/// many microbatches can be in flight at once.
template <class Real>
struct BasicBlockSaved {
  BlockShape shape;
  std::vector<Real> xhat1;     // (T, hidden) x * rstd1 (norm1 output before the gain)
  std::vector<Real> rstd1;     // (T)
  std::vector<Real> n1;        // (T, hidden) norm1 output, input of the QKV GEMM
  std::vector<Real> qkv;       // (T, 3*hidden)
  std::vector<Real> probs;     // (mbs, heads, seq, seq) causal softmax; zeros above the diagonal
  std::vector<Real> attn;      // (T, hidden) heads concatenated, input of the Wo GEMM
  std::vector<Real> yhat2;     // (T, hidden) y * rstd2
  std::vector<Real> rstd2;     // (T)
  std::vector<Real> n2;        // (T, hidden) norm2 output, input of the up/gate GEMMs
  std::vector<Real> mlp_pre;   // (T, ffn) GELU: x W1; SwiGLU: x W_gate (pre-activation)
  std::vector<Real> mlp_up;    // (T, ffn) SwiGLU: x W_up; empty for GELU
  std::vector<Real> mlp_act;   // (T, ffn) input of the down GEMM: GELU(pre) or SiLU(pre) * up

  std::int64_t bytes() const;
};

/// What the W pass needs, filled by backward_input: for each weight GEMM out = in @ W, the pair
/// (in, d_out), so dW = in^T @ d_out; for each norm gain, (xhat, d_norm_out), so dgain = sum_t.
template <class Real>
struct BasicWeightGradStash {
  BlockShape shape;
  std::vector<Real> xhat1;     // (T, hidden)   norm1 gain: dgain1 = sum_t xhat1 * dn1
  std::vector<Real> dn1;       // (T, hidden)
  std::vector<Real> n1;        // (T, hidden)   QKV: dW_qkv = n1^T dqkv
  std::vector<Real> dqkv;      // (T, 3*hidden)
  std::vector<Real> attn;      // (T, hidden)   out: dW_out = attn^T dy
  std::vector<Real> dy;        // (T, hidden)
  std::vector<Real> yhat2;     // (T, hidden)   norm2 gain: dgain2 = sum_t yhat2 * dn2
  std::vector<Real> dn2;       // (T, hidden)
  std::vector<Real> n2;        // (T, hidden)   up/gate: dW_up = n2^T dup, dW_gate = n2^T dgate
  std::vector<Real> dup;       // (T, ffn)
  std::vector<Real> dgate;     // (T, ffn) SwiGLU only
  std::vector<Real> mlp_act;   // (T, ffn)      down: dW_down = mlp_act^T dz
  std::vector<Real> dz;        // (T, hidden)

  std::int64_t bytes() const;
};

using BlockParams = BasicBlockParams<float>;
using BlockGrads = BasicBlockParams<float>;
using BlockSaved = BasicBlockSaved<float>;
using WeightGradStash = BasicWeightGradStash<float>;

/// Deterministic weights for `shape` (validated) from `seed`: every weight uniform with variance
/// 1/fan_in (so activations stay O(1)), norm gains 1. Same (shape, seed) -> same bits.
template <class Real>
BasicBlockParams<Real> init_params(const BlockShape& shape, std::uint64_t seed);

/// All-zero tensors shaped for `shape`: the initial value of a gradient accumulator.
template <class Real>
BasicBlockParams<Real> zero_params(const BlockShape& shape);

/// Seed of global layer `layer` derived from a model seed, so that a layer gets the same weights
/// whichever stage holds it.
std::uint64_t layer_seed(std::uint64_t seed, int layer);

/// F: out = block(x). x and out are (T, hidden) and may not alias. Overwrites `saved`.
template <class Real>
void forward(const BasicBlockParams<Real>& params, ConstSpan<Real> x, MutSpan<Real> out,
             BasicBlockSaved<Real>& saved);

/// I: dx = d block / dx applied to dout (both (T, hidden)). Consumes `saved` (what W needs moves into
/// `stash`, the rest is freed) and overwrites `stash`.
template <class Real>
void backward_input(const BasicBlockParams<Real>& params, BasicBlockSaved<Real>&& saved,
                    ConstSpan<Real> dout, MutSpan<Real> dx, BasicWeightGradStash<Real>& stash);

/// W: grads += the weight gradients recorded in `stash`, which is consumed (freed).
template <class Real>
void backward_weight(BasicWeightGradStash<Real>&& stash, BasicBlockParams<Real>& grads);

/// B: backward_input then backward_weight, the full backward of one microbatch.
template <class Real>
void backward(const BasicBlockParams<Real>& params, BasicBlockSaved<Real>&& saved,
              ConstSpan<Real> dout, MutSpan<Real> dx, BasicBlockParams<Real>& grads);

// Explicit instantiations live in kernels/block.cc.
extern template struct BasicBlockParams<float>;
extern template struct BasicBlockParams<double>;
extern template struct BasicBlockSaved<float>;
extern template struct BasicBlockSaved<double>;
extern template struct BasicWeightGradStash<float>;
extern template struct BasicWeightGradStash<double>;

}  // namespace pipelab::kernels
