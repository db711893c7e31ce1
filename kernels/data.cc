// Seeded synthetic microbatches and the MSE loss of the last stage.
#include "pipelab/kernels/data.h"

#include <cmath>
#include <string>

#include "cpu_ops.h"
#include "pipelab/base/error.h"

namespace pipelab::kernels {

namespace {

constexpr std::uint64_t kInputStream = 0x1'0000'0000ULL;
constexpr std::uint64_t kTargetStream = 0x2'0000'0000ULL;

template <class Real>
std::vector<Real> synthetic(const BlockShape& shape, int microbatch, std::uint64_t seed,
                            std::uint64_t stream, const char* what) {
  shape.validate();
  if (microbatch < 0) {
    throw InputError(std::string(what) + ": microbatch=" + std::to_string(microbatch) +
                     " must be >= 0");
  }
  std::vector<Real> out(static_cast<std::size_t>(shape.activation_elems()));
  detail::fill_uniform(out, seed, stream + static_cast<std::uint64_t>(microbatch), std::sqrt(3.0));
  return out;
}

}  // namespace

template <class Real>
std::vector<Real> synthetic_input(const BlockShape& shape, int microbatch, std::uint64_t seed) {
  return synthetic<Real>(shape, microbatch, seed, kInputStream, "synthetic_input");
}

template <class Real>
std::vector<Real> synthetic_target(const BlockShape& shape, int microbatch, std::uint64_t seed) {
  return synthetic<Real>(shape, microbatch, seed, kTargetStream, "synthetic_target");
}

namespace {

// The loss arithmetic, once: overwrites `values` (holding out) with d loss / d out.
template <class Real>
double mse_in_place(std::span<Real> values, std::span<const Real> target, double scale) {
  if (values.empty() || values.size() != target.size()) {
    throw InputError("mse_loss: out has " + std::to_string(values.size()) + " elements, target has " +
                     std::to_string(target.size()) + " (must be equal and non-zero)");
  }
  const double n = static_cast<double>(values.size());
  double sum_sq = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double diff = static_cast<double>(values[i]) - static_cast<double>(target[i]);
    sum_sq += diff * diff;
    values[i] = static_cast<Real>(scale * 2.0 * diff / n);
  }
  return scale * sum_sq / n;
}

template <class Real>
LossAndGrad<Real> mse_loss_impl(std::span<const Real> out, std::span<const Real> target, double scale) {
  LossAndGrad<Real> result;
  result.dout.assign(out.begin(), out.end());
  result.loss = mse_in_place<Real>(result.dout, target, scale);
  return result;
}

}  // namespace

LossAndGrad<float> mse_loss(std::span<const float> out, std::span<const float> target,
                            double scale) {
  return mse_loss_impl(out, target, scale);
}

LossAndGrad<double> mse_loss(std::span<const double> out, std::span<const double> target,
                             double scale) {
  return mse_loss_impl(out, target, scale);
}

double mse_loss_in_place(std::span<float> out, std::span<const float> target, double scale) {
  return mse_in_place<float>(out, target, scale);
}

template std::vector<float> synthetic_input<float>(const BlockShape&, int, std::uint64_t);
template std::vector<double> synthetic_input<double>(const BlockShape&, int, std::uint64_t);
template std::vector<float> synthetic_target<float>(const BlockShape&, int, std::uint64_t);
template std::vector<double> synthetic_target<double>(const BlockShape&, int, std::uint64_t);

}  // namespace pipelab::kernels
