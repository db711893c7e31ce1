// Tests of kernels/data.cc: synthetic microbatches are reproducible, distinct and unit-variance;
// the MSE loss and its gradient match a hand computation.
#include "pipelab/kernels/data.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "pipelab/base/error.h"
#include "test_util.h"

namespace pipelab::kernels {
namespace {

using testing::tiny_shape;

TEST(KernelData, SyntheticIsReproducibleAndDistinct) {
  const BlockShape s = tiny_shape(false);
  const auto a = synthetic_input(s, 3, 99);
  EXPECT_EQ(a.size(), static_cast<std::size_t>(s.activation_elems()));
  EXPECT_EQ(a, synthetic_input(s, 3, 99));
  EXPECT_NE(a, synthetic_input(s, 4, 99));
  EXPECT_NE(a, synthetic_input(s, 3, 100));
  EXPECT_NE(a, synthetic_target(s, 3, 99));
  EXPECT_EQ(testing::convert<double>(a), synthetic_input<double>(s, 3, 99));
  EXPECT_THROW(synthetic_input(s, -1, 99), InputError);
}

TEST(KernelData, SyntheticHasZeroMeanUnitVariance) {
  const BlockShape s{.hidden = 64, .ffn = 64, .heads = 1, .seq = 64, .mbs = 4, .swiglu = false};
  const auto v = synthetic_input(s, 0, 5);
  double sum = 0, sq = 0;
  for (float x : v) sum += x, sq += static_cast<double>(x) * x;
  const double n = static_cast<double>(v.size());
  EXPECT_NEAR(sum / n, 0.0, 0.03);
  EXPECT_NEAR(sq / n, 1.0, 0.03);
}

TEST(KernelData, MseLossValueAndGradient) {
  const std::vector<float> out = {1.0f, 2.0f, -1.0f, 0.5f};
  const std::vector<float> target = {0.0f, 2.0f, 1.0f, 0.0f};
  // diffs 1, 0, -2, 0.5 -> squares 1 + 0 + 4 + 0.25 = 5.25, mean 1.3125
  const auto l = mse_loss(out, target);
  EXPECT_DOUBLE_EQ(l.loss, 1.3125);
  EXPECT_EQ(l.dout, (std::vector<float>{0.5f, 0.0f, -1.0f, 0.25f}));  // 2 * diff / 4
  const auto half = mse_loss(out, target, 0.5);
  EXPECT_DOUBLE_EQ(half.loss, 0.65625);
  EXPECT_EQ(half.dout, (std::vector<float>{0.25f, 0.0f, -0.5f, 0.125f}));
}

TEST(KernelData, MseLossRejectsMismatchedSizes) {
  const std::vector<float> a(4), b(3), empty;
  EXPECT_THAT([&] { mse_loss(a, b); },
              ::testing::ThrowsMessage<InputError>(::testing::HasSubstr("out has 4 elements, target has 3")));
  EXPECT_THROW(mse_loss(empty, empty), InputError);
}

}  // namespace
}  // namespace pipelab::kernels
