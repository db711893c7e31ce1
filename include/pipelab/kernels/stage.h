// A pipeline stage of the mock model: a contiguous run of blocks [first_layer, first_layer+layers)
// with its weights and gradient accumulators, and F / I / W / B over the whole run.
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/kernels/block.h"

namespace pipelab::kernels {

/// Per-microbatch forward state of a stage: one BlockSaved per layer.
template <class Real>
struct BasicStageSaved {
  std::vector<BasicBlockSaved<Real>> blocks;
  std::int64_t bytes() const;
};

/// Per-microbatch W-pass state of a stage: one WeightGradStash per layer.
template <class Real>
struct BasicStageStash {
  std::vector<BasicWeightGradStash<Real>> blocks;
  std::int64_t bytes() const;
};

/// Layers [first_layer, first_layer + num_layers) of a model built from `seed`; layer l's weights are
/// init_params(shape, layer_seed(seed, l)), so any split of a model into stages holds the same
/// weights as the unsplit model. Not thread-safe: one stage is driven by one thread at a time.
template <class Real>
class BasicStageModel {
 public:
  BasicStageModel(const BlockShape& shape, int first_layer, int num_layers, std::uint64_t seed);

  const BlockShape& shape() const { return shape_; }
  int first_layer() const { return first_layer_; }
  int num_layers() const { return static_cast<int>(params_.size()); }

  std::vector<BasicBlockParams<Real>>& params() { return params_; }
  const std::vector<BasicBlockParams<Real>>& params() const { return params_; }
  /// Gradient accumulators, one per layer; W (and B) add into them.
  std::vector<BasicBlockParams<Real>>& grads() { return grads_; }
  const std::vector<BasicBlockParams<Real>>& grads() const { return grads_; }
  void zero_grads();

  /// F: x (T, hidden) -> out (T, hidden). Overwrites `saved`.
  void forward(std::span<const Real> x, std::span<Real> out, BasicStageSaved<Real>& saved) const;
  /// I: dout -> dx, consuming `saved` and overwriting `stash`. Weight gradients untouched.
  void backward_input(BasicStageSaved<Real>&& saved, std::span<const Real> dout, std::span<Real> dx,
                      BasicStageStash<Real>& stash) const;
  /// W: grads() += weight gradients from `stash` (consumed).
  void backward_weight(BasicStageStash<Real>&& stash);
  /// B: backward_input then backward_weight.
  void backward(BasicStageSaved<Real>&& saved, std::span<const Real> dout, std::span<Real> dx);

  /// FLOPs of this stage for one microbatch: num_layers * block_flops(shape).
  OpFlops flops() const;
  /// Parameters held by this stage.
  std::int64_t param_count() const;

 private:
  BlockShape shape_;
  int first_layer_ = 0;
  std::vector<BasicBlockParams<Real>> params_;
  std::vector<BasicBlockParams<Real>> grads_;
};

using StageSaved = BasicStageSaved<float>;
using StageStash = BasicStageStash<float>;
using StageModel = BasicStageModel<float>;

extern template struct BasicStageSaved<float>;
extern template struct BasicStageSaved<double>;
extern template struct BasicStageStash<float>;
extern template struct BasicStageStash<double>;
extern template class BasicStageModel<float>;
extern template class BasicStageModel<double>;

}  // namespace pipelab::kernels
