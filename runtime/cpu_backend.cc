// The cpu backend: kernels::StageModel per held stage, per-microbatch saved state and stashes in
// slots reused across iterations (their life cycle is MicrobatchStates'), activations in pooled
// host memory.
#include "pipelab/runtime/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "pipelab/runtime/errors.h"

namespace pipelab::runtime {

namespace {

// Validates the arguments before any member is built from them.
MicrobatchStates checked_states(const ModelConfig& model, const PipelineShape& shape, int rank) {
  model.validate();
  if (rank < 0 || rank >= shape.ranks) {
    throw InputError("cpu backend: rank " + std::to_string(rank) + " out of range for " + std::to_string(shape.ranks) + " ranks");
  }
  return MicrobatchStates("cpu", shape, rank);
}

void check_buffer(const Buffer& b, std::size_t bytes, const char* what) {
  if (!b || b.bytes() != bytes) {
    throw ExecutionError(std::string("cpu backend: ") + what + ": expected an activation buffer of " + std::to_string(bytes) +
                         " bytes, got " + std::to_string(b.bytes()));
  }
}

void check_mb(int mb, int microbatches, const char* what) {
  if (mb < 0 || mb >= microbatches) {
    throw ExecutionError(std::string("cpu backend: ") + what + ": microbatch " + std::to_string(mb) + " out of range");
  }
}

}  // namespace

CpuBackend::CpuBackend(const ModelConfig& model, const PipelineShape& shape, int rank)
    : model_(model), shape_(shape), rank_(rank), states_(checked_states(model, shape, rank)),
      pool_(std::make_shared<HostMemory>()) {
  bool needs_inputs = false, needs_targets = false;
  for (int s : states_.stages()) {
    models_.emplace_back(model.block, shape.part_of_stage(s) * model.layers_per_stage, model.layers_per_stage, model.seed);
    needs_inputs |= shape.first_in_chain(s);
    needs_targets |= shape.last_in_chain(s);
  }
  saved_.resize(states_.size());
  stash_.resize(states_.size());
  // Data of every microbatch this rank may touch, generated once (not part of the timed loop).
  for (int mb = 0; mb < shape.microbatches; ++mb) {
    inputs_.push_back(needs_inputs ? kernels::synthetic_input<float>(model.block, mb, model.seed) : std::vector<float>{});
    targets_.push_back(needs_targets ? kernels::synthetic_target<float>(model.block, mb, model.seed) : std::vector<float>{});
  }
  // Activation buffers for the microbatches in flight: allocated now, reused by the pool afterwards.
  pool_.reserve(activation_bytes(), std::min(shape.microbatches, 4) * static_cast<int>(models_.size()));
}

CpuBackend::~CpuBackend() = default;

std::size_t CpuBackend::activation_bytes() const { return static_cast<std::size_t>(model_.activation_bytes()); }

void CpuBackend::load_input(int mb, Buffer& act) {
  check_mb(mb, shape_.microbatches, "load_input");
  check_buffer(act, activation_bytes(), "load_input");
  const auto& in = inputs_[static_cast<std::size_t>(mb)];
  if (in.empty()) throw ExecutionError("cpu backend: rank " + std::to_string(rank_) + " holds no first stage");
  std::memcpy(act.data(), in.data(), act.bytes());
}

void CpuBackend::forward(int stage, int mb, Buffer& act) {
  states_.require(Op::F, stage, mb);
  check_buffer(act, activation_bytes(), "F");
  const std::size_t i = states_.index(stage, mb);
  const std::span<float> x = act.floats();
  models_[states_.local(stage, "F")].forward(x, x, saved_[i]);
  states_.record(Op::F, stage, mb, saved_[i].bytes());
}

double CpuBackend::loss(int stage, int mb, Buffer& act) {
  states_.local(stage, "loss");
  check_mb(mb, shape_.microbatches, "loss");
  check_buffer(act, activation_bytes(), "loss");
  const auto& target = targets_[static_cast<std::size_t>(mb)];
  if (target.empty()) throw ExecutionError("cpu backend: rank " + std::to_string(rank_) + " holds no last stage");
  // In place: the activation buffer becomes the loss gradient (no allocation).
  return kernels::mse_loss_in_place(act.floats().subspan(0, target.size()), target,
                                    1.0 / static_cast<double>(shape_.microbatches));
}

void CpuBackend::backward_input(int stage, int mb, Buffer& grad) {
  states_.require(Op::I, stage, mb);
  check_buffer(grad, activation_bytes(), "I");
  const std::size_t i = states_.index(stage, mb);
  const std::span<float> g = grad.floats();
  models_[states_.local(stage, "I")].backward_input(std::move(saved_[i]), g, g, stash_[i]);
  states_.record(Op::I, stage, mb, stash_[i].bytes());
}

void CpuBackend::backward_weight(int stage, int mb) {
  states_.require(Op::W, stage, mb);
  const std::size_t i = states_.index(stage, mb);
  models_[states_.local(stage, "W")].backward_weight(std::move(stash_[i]));
  states_.record(Op::W, stage, mb);
}

void CpuBackend::backward(int stage, int mb, Buffer& grad) {
  backward_input(stage, mb, grad);
  backward_weight(stage, mb);
}

void CpuBackend::zero_grads() {
  for (auto& m : models_) m.zero_grads();
}

std::vector<kernels::BlockGrads> CpuBackend::gradients(int stage) const { return stage_model(stage).grads(); }

std::int64_t CpuBackend::static_bytes() const {
  std::int64_t n = 0;
  for (const auto& m : models_) n += 2 * m.param_count() * static_cast<std::int64_t>(sizeof(float));
  return n;
}

void CpuBackend::discard_state() {
  for (auto& s : saved_) s = {};
  for (auto& s : stash_) s = {};
  states_.discard();
}

const kernels::StageModel& CpuBackend::stage_model(int stage) const { return models_[states_.local(stage, "stage_model")]; }

}  // namespace pipelab::runtime
