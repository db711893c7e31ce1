// Helpers shared by the kernels tests: tiny shapes, float->double conversion, and a
// central-difference gradient probe in double precision.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "pipelab/kernels/block.h"

namespace pipelab::kernels::testing {

inline BlockShape tiny_shape(bool swiglu) {
  return BlockShape{.hidden = 16, .ffn = 32, .heads = 4, .seq = 8, .mbs = 2, .swiglu = swiglu};
}

template <class To, class From>
std::vector<To> convert(const std::vector<From>& v) {
  return std::vector<To>(v.begin(), v.end());
}

template <class To, class From>
BasicBlockParams<To> convert(const BasicBlockParams<From>& p) {
  BasicBlockParams<To> out;
  out.shape = p.shape;
  out.norm1_gain = convert<To>(p.norm1_gain);
  out.w_qkv = convert<To>(p.w_qkv);
  out.w_out = convert<To>(p.w_out);
  out.norm2_gain = convert<To>(p.norm2_gain);
  out.w_up = convert<To>(p.w_up);
  out.w_gate = convert<To>(p.w_gate);
  out.w_down = convert<To>(p.w_down);
  return out;
}

/// Gains 1 make a wrong gain placement invisible; spread them around 1 deterministically.
template <class Real>
void perturb_gains(BasicBlockParams<Real>& p) {
  for (std::size_t i = 0; i < p.norm1_gain.size(); ++i) {
    p.norm1_gain[i] = static_cast<Real>(static_cast<float>(0.7 + 0.6 * ((i * 7) % 11) / 10.0));
    p.norm2_gain[i] = static_cast<Real>(static_cast<float>(1.3 - 0.6 * ((i * 5) % 13) / 12.0));
  }
}

/// Central difference of `loss` with respect to `value`, restoring it afterwards.
inline double central_difference(double& value, const std::function<double()>& loss,
                                 double eps = 1e-5) {
  const double saved = value;
  value = saved + eps;
  const double plus = loss();
  value = saved - eps;
  const double minus = loss();
  value = saved;
  return (plus - minus) / (2 * eps);
}

/// Indices to probe in a tensor of n elements: all of them if n <= max_samples, else an even spread
/// that includes the first and last element.
inline std::vector<std::size_t> sample_indices(std::size_t n, std::size_t max_samples) {
  std::vector<std::size_t> out;
  if (n <= max_samples) {
    for (std::size_t i = 0; i < n; ++i) out.push_back(i);
    return out;
  }
  for (std::size_t k = 0; k < max_samples; ++k) out.push_back(k * (n - 1) / (max_samples - 1));
  return out;
}

/// |fd - analytic| <= kAbs + kRel * |analytic|: tight enough that a 0.1% error fails (double).
inline constexpr double kGradAbsTol = 1e-8;
inline constexpr double kGradRelTol = 1e-6;

inline bool grad_close(double fd, double analytic) {
  const double diff = fd > analytic ? fd - analytic : analytic - fd;
  const double mag = analytic < 0 ? -analytic : analytic;
  return diff <= kGradAbsTol + kGradRelTol * mag;
}

}  // namespace pipelab::kernels::testing
