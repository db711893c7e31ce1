// A stage = a run of blocks; F/I/W/B loop over them (forward in layer order, backward in reverse).
#include "pipelab/kernels/stage.h"

#include <algorithm>
#include <string>

#include "cpu_ops.h"
#include "pipelab/base/error.h"

namespace pipelab::kernels {

template <class Real>
std::int64_t BasicStageSaved<Real>::bytes() const {
  std::int64_t n = 0;
  for (const auto& b : blocks) n += b.bytes();
  return n;
}

template <class Real>
std::int64_t BasicStageStash<Real>::bytes() const {
  std::int64_t n = 0;
  for (const auto& b : blocks) n += b.bytes();
  return n;
}

template <class Real>
BasicStageModel<Real>::BasicStageModel(const BlockShape& shape, int first_layer, int num_layers,
                                       std::uint64_t seed)
    : shape_(shape), first_layer_(first_layer) {
  shape.validate();
  if (first_layer < 0) {
    throw InputError("StageModel: first_layer=" + std::to_string(first_layer) + " must be >= 0");
  }
  if (num_layers <= 0) {
    throw InputError("StageModel: num_layers=" + std::to_string(num_layers) + " must be positive");
  }
  params_.reserve(num_layers);
  grads_.reserve(num_layers);
  for (int l = 0; l < num_layers; ++l) {
    params_.push_back(init_params<Real>(shape, layer_seed(seed, first_layer + l)));
    grads_.push_back(zero_params<Real>(shape));
  }
}

template <class Real>
void BasicStageModel<Real>::zero_grads() {
  for (auto& g : grads_) {
    for (auto& t : g.tensors()) std::fill(t.data.begin(), t.data.end(), Real(0));
  }
}

template <class Real>
void BasicStageModel<Real>::forward(std::span<const Real> x, std::span<Real> out,
                                    BasicStageSaved<Real>& saved) const {
  detail::check_size("StageModel::forward: x", x.size(), shape_.activation_elems(),
                     "mbs*seq*hidden");
  detail::check_size("StageModel::forward: out", out.size(), shape_.activation_elems(),
                     "mbs*seq*hidden");
  if (out.data() != x.data()) std::copy(x.begin(), x.end(), out.begin());
  saved.blocks.resize(params_.size());
  // Blocks run in place on `out` (forward allows x == out).
  for (std::size_t l = 0; l < params_.size(); ++l) {
    kernels::forward(params_[l], std::span<const Real>(out), out, saved.blocks[l]);
  }
}

template <class Real>
void BasicStageModel<Real>::backward_input(BasicStageSaved<Real>&& saved,
                                           std::span<const Real> dout, std::span<Real> dx,
                                           BasicStageStash<Real>& stash) const {
  if (saved.blocks.size() != params_.size()) {
    throw InputError("StageModel::backward_input: saved state holds " +
                     std::to_string(saved.blocks.size()) + " blocks, stage has " +
                     std::to_string(params_.size()) + " (was forward run?)");
  }
  detail::check_size("StageModel::backward_input: dout", dout.size(), shape_.activation_elems(),
                     "mbs*seq*hidden");
  detail::check_size("StageModel::backward_input: dx", dx.size(), shape_.activation_elems(),
                     "mbs*seq*hidden");
  if (dx.data() != dout.data()) std::copy(dout.begin(), dout.end(), dx.begin());
  stash.blocks.clear();
  stash.blocks.resize(params_.size());
  // Reverse layer order, in place on `dx` (backward_input allows dout == dx).
  for (std::size_t i = params_.size(); i-- > 0;) {
    kernels::backward_input(params_[i], std::move(saved.blocks[i]), std::span<const Real>(dx), dx,
                            stash.blocks[i]);
  }
  saved.blocks.clear();
}

template <class Real>
void BasicStageModel<Real>::backward_weight(BasicStageStash<Real>&& stash) {
  if (stash.blocks.size() != grads_.size()) {
    throw InputError("StageModel::backward_weight: stash holds " +
                     std::to_string(stash.blocks.size()) + " blocks, stage has " +
                     std::to_string(grads_.size()) + " (was backward_input run?)");
  }
  for (std::size_t i = grads_.size(); i-- > 0;) {
    kernels::backward_weight(std::move(stash.blocks[i]), grads_[i]);
  }
  stash.blocks.clear();
}

template <class Real>
void BasicStageModel<Real>::backward(BasicStageSaved<Real>&& saved, std::span<const Real> dout,
                                     std::span<Real> dx) {
  BasicStageStash<Real> stash;
  backward_input(std::move(saved), dout, dx, stash);
  backward_weight(std::move(stash));
}

template <class Real>
OpFlops BasicStageModel<Real>::flops() const {
  const OpFlops per_block = block_flops(shape_);
  const std::int64_t layers = num_layers();
  return OpFlops{per_block.forward * layers, per_block.backward_input * layers,
                 per_block.backward_weight * layers};
}

template <class Real>
std::int64_t BasicStageModel<Real>::param_count() const {
  return kernels::param_count(shape_) * num_layers();
}

template struct BasicStageSaved<float>;
template struct BasicStageSaved<double>;
template struct BasicStageStash<float>;
template struct BasicStageStash<double>;
template class BasicStageModel<float>;
template class BasicStageModel<double>;

}  // namespace pipelab::kernels
