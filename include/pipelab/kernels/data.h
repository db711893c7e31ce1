// Synthetic inputs and targets for the mock model, and the MSE loss at the last stage.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "pipelab/kernels/block.h"

namespace pipelab::kernels {

/// Input activations of microbatch `microbatch`: (T, hidden), i.i.d. uniform with zero mean and unit
/// variance, a pure function of (shape, microbatch, seed).
template <class Real = float>
std::vector<Real> synthetic_input(const BlockShape& shape, int microbatch, std::uint64_t seed);

/// Regression target of microbatch `microbatch`: (T, hidden), same distribution as the input but an
/// independent stream.
template <class Real = float>
std::vector<Real> synthetic_target(const BlockShape& shape, int microbatch, std::uint64_t seed);

template <class Real>
struct LossAndGrad {
  double loss = 0;          ///< scale * mean((out - target)^2), accumulated in double
  std::vector<Real> dout;   // (T, hidden) d loss / d out = scale * 2 (out - target) / numel
};

/// MSE loss of one microbatch. Pass scale = 1/microbatches to make the iteration's loss (and its
/// gradients) the mean over microbatches. Throws InputError when sizes differ or are empty.
LossAndGrad<float> mse_loss(std::span<const float> out, std::span<const float> target,
                            double scale = 1.0);
LossAndGrad<double> mse_loss(std::span<const double> out, std::span<const double> target,
                             double scale = 1.0);

/// The same loss, overwriting `out` with its gradient (no allocation; the executor's hot path).
/// Returns the loss.
double mse_loss_in_place(std::span<float> out, std::span<const float> target, double scale = 1.0);

}  // namespace pipelab::kernels
