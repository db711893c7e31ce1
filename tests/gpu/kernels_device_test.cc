// Device tests of kernels/cuda/: DeviceStage gives the CPU StageModel's outputs and gradients, and
// its I/W split matches B. Skipped without a usable GPU; without CUDA the stub's errors are checked.
#include "pipelab/kernels/device_block.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "pipelab/kernels/stage.h"

namespace pipelab::kernels {
namespace {

constexpr std::uint64_t kSeed = 31;

#define PIPELAB_SKIP_WITHOUT_GPU()                                              \
  do {                                                                          \
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA device available";   \
  } while (0)

BlockShape device_shape(bool swiglu) {
  return BlockShape{.hidden = 32, .ffn = 64, .heads = 4, .seq = 8, .mbs = 2, .swiglu = swiglu};
}

std::string mlp_name(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "SwiGlu" : "Gelu";
}

void expect_close(const std::vector<float>& got, const std::vector<float>& want, double rel,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float v : want) scale = std::max(scale, static_cast<double>(std::abs(v)));
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1 + scale)) << what << "[" << i << "]";
  }
}

TEST(KernelDevice, BuildWithoutCudaReportsNoDevice) {
  if (cuda_built()) GTEST_SKIP() << "built with CUDA";
  EXPECT_EQ(cuda_device_count(), 0);
  const StageModel cpu(device_shape(false), 0, 1, kSeed);
  EXPECT_THROW(DeviceStage(device_shape(false), 0, cpu.params()), DeviceError);
  EXPECT_THROW(DeviceBuffer(0, 4), DeviceError);
}

TEST(KernelDevice, RejectsMissingDevice) {
  if (!cuda_built()) GTEST_SKIP() << "built without CUDA";
  const StageModel cpu(device_shape(false), 0, 1, kSeed);
  EXPECT_THROW(DeviceStage(device_shape(false), cuda_device_count(), cpu.params()), DeviceError);
}

struct DeviceCase {
  GemmMath math;
  double tolerance;
};

class KernelDeviceStage : public ::testing::TestWithParam<bool> {};

// One microbatch through 2 layers, F then I then W on the device vs B on the CPU.
TEST_P(KernelDeviceStage, MatchesCpuStage) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const BlockShape s = device_shape(GetParam());
  StageModel cpu(s, 0, 2, kSeed);
  const auto x = synthetic_input(s, 0, kSeed);
  const auto dz = synthetic_target(s, 0, kSeed);

  std::vector<float> out(x.size()), dx(x.size());
  StageSaved saved;
  cpu.forward(x, out, saved);
  cpu.backward(std::move(saved), dz, dx);

  for (const DeviceCase& c : {DeviceCase{GemmMath::Fp32, 1e-4}, DeviceCase{GemmMath::Bf16, 5e-2}}) {
    DeviceStage dev(s, 0, cpu.params(), c.math);
    DeviceBuffer d_act(0, x.size());
    DeviceBuffer d_grad(0, x.size());
    d_act.upload(x);
    DeviceStageSaved dsaved;
    dev.forward(d_act.data(), d_act.data(), dsaved, nullptr);
    EXPECT_GT(dsaved.bytes(), 0);
    std::vector<float> dev_out(x.size());
    d_act.download(dev_out);
    expect_close(dev_out, out, c.tolerance, "out");

    d_grad.upload(dz);
    DeviceStageStash stash;
    dev.backward_input(std::move(dsaved), d_grad.data(), d_grad.data(), stash, nullptr);
    dev.backward_weight(std::move(stash), nullptr);
    std::vector<float> dev_dx(x.size());
    d_grad.download(dev_dx);
    expect_close(dev_dx, dx, c.tolerance, "dx");

    const auto grads = dev.download_grads(nullptr);
    ASSERT_EQ(grads.size(), 2u);
    for (int l = 0; l < 2; ++l) {
      const auto want = cpu.grads()[l].tensors();
      const auto got = grads[l].tensors();
      for (std::size_t k = 0; k < want.size(); ++k) {
        expect_close(std::vector<float>(got[k].data.begin(), got[k].data.end()),
                     std::vector<float>(want[k].data.begin(), want[k].data.end()), c.tolerance,
                     "layer " + std::to_string(l) + " " + std::string(want[k].name));
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mlp, KernelDeviceStage, ::testing::Values(false, true), mlp_name);

TEST(KernelDevice, SplitBackwardMatchesFusedAndConsumesState) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const BlockShape s = device_shape(true);
  const StageModel cpu(s, 0, 1, kSeed);
  DeviceStage fused(s, 0, cpu.params());
  DeviceStage split(s, 0, cpu.params());
  DeviceBuffer a(0, s.activation_elems()), b(0, s.activation_elems());
  DeviceBuffer ga(0, s.activation_elems()), gb(0, s.activation_elems());
  std::vector<DeviceStageSaved> sa(2), sb(2);
  std::vector<DeviceStageStash> stash(2);
  for (int m = 0; m < 2; ++m) {
    const auto x = synthetic_input(s, m, kSeed);
    a.upload(x);
    b.upload(x);
    fused.forward(a.data(), a.data(), sa[m], nullptr);
    split.forward(b.data(), b.data(), sb[m], nullptr);
  }
  for (int m = 0; m < 2; ++m) {
    const auto dz = synthetic_target(s, m, kSeed);
    ga.upload(dz);
    gb.upload(dz);
    fused.backward(std::move(sa[m]), ga.data(), ga.data(), nullptr);
    split.backward_input(std::move(sb[m]), gb.data(), gb.data(), stash[m], nullptr);
  }
  EXPECT_EQ(sb[0].bytes(), 0);
  split.backward_weight(std::move(stash[1]), nullptr);
  split.backward_weight(std::move(stash[0]), nullptr);
  EXPECT_THROW(split.backward_weight(std::move(stash[0]), nullptr), InputError);
  const auto gf = fused.download_grads(nullptr);
  const auto gs = split.download_grads(nullptr);
  expect_close(gs[0].w_qkv, gf[0].w_qkv, 1e-5, "w_qkv");
  expect_close(gs[0].w_gate, gf[0].w_gate, 1e-5, "w_gate");
  expect_close(gs[0].norm1_gain, gf[0].norm1_gain, 1e-5, "norm1_gain");
}

}  // namespace
}  // namespace pipelab::kernels
