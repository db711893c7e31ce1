// Tests of kernels/stage.cc: a stage is its chain of blocks, any split of a model into stages gives
// the unsplit model's loss and gradients, and the stage + loss gradient matches finite differences.
#include "pipelab/kernels/stage.h"

#include <gtest/gtest.h>

#include <cmath>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "test_util.h"

namespace pipelab::kernels {
namespace {

using testing::central_difference;
using testing::grad_close;
using testing::sample_indices;
using testing::tiny_shape;

constexpr std::uint64_t kSeed = 1234;

TEST(KernelStage, WeightsComeFromGlobalLayerIndex) {
  const BlockShape s = tiny_shape(false);
  const StageModel whole(s, 0, 4, kSeed);
  const StageModel tail(s, 2, 2, kSeed);
  EXPECT_EQ(tail.first_layer(), 2);
  EXPECT_EQ(tail.num_layers(), 2);
  EXPECT_EQ(tail.params()[0].w_qkv, whole.params()[2].w_qkv);
  EXPECT_EQ(tail.params()[1].w_down, whole.params()[3].w_down);
  EXPECT_NE(whole.params()[0].w_qkv, whole.params()[1].w_qkv);
  EXPECT_EQ(whole.params()[1].w_out, init_params<float>(s, layer_seed(kSeed, 1)).w_out);
}

TEST(KernelStage, MatchesChainOfBlocks) {
  const BlockShape s = tiny_shape(true);
  StageModel stage(s, 0, 3, kSeed);
  const auto x = synthetic_input(s, 0, kSeed);
  const auto dz = synthetic_target(s, 0, kSeed);

  std::vector<float> out(x.size()), dx(x.size());
  StageSaved saved;
  stage.forward(x, out, saved);
  EXPECT_EQ(saved.blocks.size(), 3u);
  stage.backward(std::move(saved), dz, dx);

  std::vector<std::vector<float>> acts(4, std::vector<float>(x.size()));
  acts[0] = x;
  std::vector<BlockSaved> block_saved(3);
  for (int l = 0; l < 3; ++l) forward(stage.params()[l], acts[l], acts[l + 1], block_saved[l]);
  EXPECT_EQ(acts[3], out);
  std::vector<float> g = dz, g_next(x.size());
  for (int l = 2; l >= 0; --l) {
    auto grads = zero_params<float>(s);
    backward(stage.params()[l], std::move(block_saved[l]), g, g_next, grads);
    EXPECT_EQ(grads.w_qkv, stage.grads()[l].w_qkv) << "layer " << l;
    EXPECT_EQ(grads.norm2_gain, stage.grads()[l].norm2_gain) << "layer " << l;
    g = g_next;
  }
  EXPECT_EQ(g, dx);
}

// What the pipeline runtime relies on: two stages [0,2) + [2,4) exchanging activations and
// gradients produce exactly the loss and gradients of one stage [0,4).
TEST(KernelStage, SplitStagesMatchUnsplitModel) {
  const BlockShape s = tiny_shape(false);
  constexpr int kMicrobatches = 3;
  StageModel whole(s, 0, 4, kSeed);
  StageModel first(s, 0, 2, kSeed);
  StageModel second(s, 2, 2, kSeed);

  double loss_whole = 0, loss_split = 0;
  for (int m = 0; m < kMicrobatches; ++m) {
    const auto x = synthetic_input(s, m, kSeed);
    const auto target = synthetic_target(s, m, kSeed);
    std::vector<float> out(x.size()), dx(x.size());
    StageSaved saved;
    whole.forward(x, out, saved);
    auto loss = mse_loss(out, target, 1.0 / kMicrobatches);
    loss_whole += loss.loss;
    whole.backward(std::move(saved), loss.dout, dx);

    std::vector<float> mid(x.size()), out2(x.size()), dmid(x.size()), dx2(x.size());
    StageSaved saved1, saved2;
    StageStash stash1, stash2;
    first.forward(x, mid, saved1);
    second.forward(mid, out2, saved2);
    auto loss2 = mse_loss(out2, target, 1.0 / kMicrobatches);
    loss_split += loss2.loss;
    second.backward_input(std::move(saved2), loss2.dout, dmid, stash2);
    first.backward_input(std::move(saved1), dmid, dx2, stash1);
    first.backward_weight(std::move(stash1));
    second.backward_weight(std::move(stash2));
    EXPECT_EQ(out, out2);
    EXPECT_EQ(dx, dx2);
  }
  EXPECT_EQ(loss_whole, loss_split);
  for (int l = 0; l < 4; ++l) {
    const auto& split = l < 2 ? first.grads()[l] : second.grads()[l - 2];
    EXPECT_EQ(whole.grads()[l].w_qkv, split.w_qkv) << "layer " << l;
    EXPECT_EQ(whole.grads()[l].w_down, split.w_down) << "layer " << l;
    EXPECT_EQ(whole.grads()[l].norm1_gain, split.norm1_gain) << "layer " << l;
  }
}

// End to end in double: two layers + MSE loss against finite differences of the loss.
TEST(KernelStage, GradientOfLossMatchesFiniteDifferences) {
  const BlockShape s = tiny_shape(true);
  BasicStageModel<double> stage(s, 0, 2, kSeed);
  auto x = synthetic_input<double>(s, 0, kSeed);
  const auto target = synthetic_target<double>(s, 0, kSeed);
  auto loss = [&]() {
    std::vector<double> out(x.size());
    BasicStageSaved<double> saved;
    stage.forward(x, out, saved);
    return mse_loss(out, target).loss;
  };
  std::vector<double> out(x.size()), dx(x.size());
  BasicStageSaved<double> saved;
  stage.forward(x, out, saved);
  const auto l = mse_loss(out, target);
  stage.backward(std::move(saved), l.dout, dx);

  int failures = 0;
  for (std::size_t i : sample_indices(x.size(), 32)) {
    const double fd = central_difference(x[i], loss);
    if (!grad_close(fd, dx[i]) && ++failures <= 5) {
      ADD_FAILURE() << "dx[" << i << "]: " << dx[i] << " vs " << fd;
    }
  }
  for (int layer = 0; layer < 2; ++layer) {
    auto pt = stage.params()[layer].tensors();
    const auto gt = stage.grads()[layer].tensors();
    for (std::size_t k = 0; k < pt.size(); ++k) {
      for (std::size_t idx : sample_indices(pt[k].data.size(), 6)) {
        const double fd = central_difference(pt[k].data[idx], loss);
        if (!grad_close(fd, gt[k].data[idx]) && ++failures <= 10) {
          ADD_FAILURE() << "layer " << layer << " " << pt[k].name << "[" << idx
                        << "]: " << gt[k].data[idx] << " vs " << fd;
        }
      }
    }
  }
  EXPECT_EQ(failures, 0);
}

TEST(KernelStage, ZeroGradsAndCounts) {
  const BlockShape s = tiny_shape(false);
  StageModel stage(s, 1, 3, kSeed);
  const auto x = synthetic_input(s, 0, kSeed);
  std::vector<float> out(x.size()), dx(x.size());
  StageSaved saved;
  stage.forward(x, out, saved);
  stage.backward(std::move(saved), x, dx);
  EXPECT_NE(stage.grads()[0].w_out, zero_params<float>(s).w_out);
  stage.zero_grads();
  for (const auto& g : stage.grads()) EXPECT_EQ(g.w_out, zero_params<float>(s).w_out);

  const OpFlops one = block_flops(s);
  EXPECT_EQ(stage.flops(), (OpFlops{3 * one.forward, 3 * one.backward_input, 3 * one.backward_weight}));
  EXPECT_EQ(stage.param_count(), 3 * param_count(s));
}

TEST(KernelStage, RejectsBadArguments) {
  const BlockShape s = tiny_shape(false);
  EXPECT_THROW(StageModel(s, 0, 0, kSeed), InputError);
  EXPECT_THROW(StageModel(s, -1, 2, kSeed), InputError);
  BlockShape bad = s;
  bad.heads = 3;
  EXPECT_THROW(StageModel(bad, 0, 1, kSeed), InputError);

  StageModel stage(s, 0, 2, kSeed);
  std::vector<float> x(s.activation_elems()), dx(x.size());
  StageSaved empty;
  StageStash stash;
  EXPECT_THROW(stage.backward_input(std::move(empty), x, dx, stash), InputError);
  EXPECT_THROW(stage.backward_weight(std::move(stash)), InputError);
  std::vector<float> short_out(5);
  StageSaved saved;
  EXPECT_THROW(stage.forward(x, short_out, saved), InputError);
}

}  // namespace
}  // namespace pipelab::kernels
