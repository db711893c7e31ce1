// What compute loses beside communication kernels that hold SMs (sm_carve_out.h).
#include <gtest/gtest.h>

#include "pipelab/sim/sm_carve_out.h"

namespace pipelab {
namespace {

// The Megatron-Core MoE report's point: DeepEP's 20 SMs of an H100's 132 cost the GEMMs beside them
// roughly 20 % of their efficiency, more than the 15.2 % the SMs alone are.
TEST(SmCarveOut, ReproducesTheReportsDeepEpPointOnAnH100) {
  EXPECT_NEAR(sim::sm_carve_out_loss(20, 132), 0.20, 1e-12);
  EXPECT_GT(sim::sm_carve_out_loss(20, 132), 20.0 / 132);
}

// Linear in the SMs held, at the report's ratio to their share, on any GPU; nothing held or no SM
// count known costs nothing.
TEST(SmCarveOut, IsTheReportsRatioTimesTheShare) {
  EXPECT_NEAR(sim::sm_carve_out_loss(16, 132), 0.16, 1e-12);
  EXPECT_NEAR(sim::sm_carve_out_loss(1, 132), 0.01, 1e-12);
  EXPECT_NEAR(sim::sm_carve_out_loss(20, 148), 0.20 * 132 / 148, 1e-12);  // 20 SMs of a 148-SM Blackwell
  EXPECT_EQ(sim::sm_carve_out_loss(0, 132), 0);
  EXPECT_EQ(sim::sm_carve_out_loss(20, 0), 0);
  EXPECT_EQ(sim::sm_carve_out_loss(40, 40), 0);  // every SM held: a spec validate() refuses, taken as unknown
}

// A GPU with few SMs: the ratio would take more than everything; the SMs left keep 1 / the ratio of
// their speed instead, and the loss grows with the SMs held without a step where the bound takes over.
TEST(SmCarveOut, LeavesTheRemainingSmsSomeSpeed) {
  const int sms = 40;
  double previous = 0;
  for (int held = 1; held <= 32; ++held) {
    const double loss = sim::sm_carve_out_loss(held, sms);
    const double share = static_cast<double>(held) / sms;
    EXPECT_LT(loss, 1) << held;
    EXPECT_GE(loss, share) << held;
    EXPECT_GT(loss, previous) << held;
    EXPECT_LE(loss - previous, sim::kSmCarveOutCost / sms + 1e-12) << held;
    previous = loss;
  }
  EXPECT_NEAR(sim::sm_carve_out_loss(32, sms), 1 - (1 - 0.8) / sim::kSmCarveOutCost, 1e-12);
}

}  // namespace
}  // namespace pipelab
