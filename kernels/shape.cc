// BlockShape validation and the counts derived from a shape (FLOPs, bytes, parameters).
#include "pipelab/kernels/shape.h"

#include <climits>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/base/names.h"

namespace pipelab::kernels {

namespace {

void require_positive(const char* field, int value) {
  if (value <= 0) {
    throw InputError(std::string("BlockShape: ") + field + "=" + std::to_string(value) +
                     " must be positive");
  }
}

}  // namespace

void BlockShape::validate() const {
  require_positive("hidden", hidden);
  require_positive("ffn", ffn);
  require_positive("heads", heads);
  require_positive("seq", seq);
  require_positive("mbs", mbs);
  if (hidden % heads != 0) {
    throw InputError("BlockShape: hidden=" + std::to_string(hidden) +
                     " must be divisible by heads=" + std::to_string(heads));
  }
  // BLAS takes int dimensions: T rows and 3*hidden columns must each fit.
  if (tokens() > INT_MAX) {
    throw InputError("BlockShape: mbs*seq=" + std::to_string(tokens()) + " exceeds " +
                     std::to_string(INT_MAX));
  }
  if (std::int64_t{3} * hidden > INT_MAX) {
    throw InputError("BlockShape: 3*hidden=" + std::to_string(std::int64_t{3} * hidden) +
                     " exceeds " + std::to_string(INT_MAX));
  }
  // The counts below are int64: bound the largest, one layer's F+I+W FLOPs (at most
  // T*H*(24H + 18F + 12*seq)) and the bytes BlockSaved keeps (at most 4*(12TH + mbs*heads*seq^2 + 3TF
  // + 2T)), in floating point so the bound itself cannot overflow.
  const double t = static_cast<double>(tokens()), h = hidden, f = ffn, s = seq;
  const double flops = t * h * (24 * h + 18 * f + 12 * s);
  const double bytes = 4 * (12 * t * h + static_cast<double>(mbs) * heads * s * s + 3 * t * f + 2 * t);
  constexpr double kMaxCount = 4611686018427387904.0;  // 2^62
  if (flops > kMaxCount || bytes > kMaxCount) {
    throw InputError("BlockShape: mbs=" + std::to_string(mbs) + ", seq=" + std::to_string(seq) + ", hidden=" + std::to_string(hidden) +
                     ", ffn=" + std::to_string(ffn) + ", heads=" + std::to_string(heads) + " give a layer of about " +
                     number_text(flops) + " FLOPs and " + number_text(bytes) + " bytes per microbatch; the limit is 2^62 of each");
  }
}

OpFlops block_flops(const BlockShape& shape) {
  shape.validate();
  const std::int64_t t = shape.tokens();
  const std::int64_t h = shape.hidden;
  const std::int64_t f = shape.ffn;
  const std::int64_t mlp_mats = shape.swiglu ? 3 : 2;
  // Weight GEMMs, each 2*T*in*out: QKV (H -> 3H), out (H -> H), MLP (2 or 3 of H <-> F).
  const std::int64_t projections = 2 * t * h * (3 * h) + 2 * t * h * h + mlp_mats * 2 * t * h * f;
  // Attention per (sequence, head): S = Q K^T and O = P V, each 2*seq*seq*head_dim over the full
  // square; summed over mbs*heads that is 2 * (2 * T * seq * H).
  const std::int64_t attention = 2 * (2 * t * shape.seq * h);
  OpFlops flops;
  flops.forward = projections + attention;
  // I: one data-gradient GEMM per weight GEMM (same shape), and 4 attention GEMMs
  // (dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q): twice the forward attention.
  flops.backward_input = projections + 2 * attention;
  // W: one weight-gradient GEMM per weight GEMM (same shape).
  flops.backward_weight = projections;
  return flops;
}

std::int64_t activation_bytes(const BlockShape& shape) {
  shape.validate();
  return shape.activation_elems() * static_cast<std::int64_t>(sizeof(float));
}

std::int64_t saved_bytes(const BlockShape& shape) {
  shape.validate();
  const std::int64_t t = shape.tokens(), h = shape.hidden, f = shape.ffn, nf = shape.swiglu ? 3 : 2;
  const std::int64_t scores = std::int64_t{shape.mbs} * shape.heads * shape.seq * shape.seq;
  return (8 * t * h + 2 * t + scores + nf * t * f) * static_cast<std::int64_t>(sizeof(float));
}

std::int64_t stash_bytes(const BlockShape& shape) {
  shape.validate();
  const std::int64_t t = shape.tokens(), h = shape.hidden, f = shape.ffn, nf = shape.swiglu ? 3 : 2;
  return (12 * t * h + nf * t * f) * static_cast<std::int64_t>(sizeof(float));
}

std::int64_t param_count(const BlockShape& shape) {
  shape.validate();
  const std::int64_t h = shape.hidden;
  const std::int64_t f = shape.ffn;
  return 2 * h + 4 * h * h + (shape.swiglu ? 3 : 2) * h * f;
}

}  // namespace pipelab::kernels
