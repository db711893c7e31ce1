// The cpu backend: kernels::StageModel per held stage, per-microbatch saved state and stashes in
// slots reused across iterations, activations in pooled host memory.
#include "pipelab/runtime/cpu_backend.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "pipelab/runtime/errors.h"

namespace pipelab::runtime {

struct CpuBackend::Held {
  int stage;
  kernels::StageModel model;
  std::vector<kernels::StageSaved> saved;  // per microbatch
  std::vector<kernels::StageStash> stash;  // per microbatch
  std::vector<std::uint8_t> has_saved;
  std::vector<std::uint8_t> has_stash;
  std::vector<std::int64_t> saved_bytes;
  std::vector<std::int64_t> stash_bytes;

  Held(int s, const ModelConfig& m, int part, int microbatches)
      : stage(s),
        model(m.block, part * m.layers_per_stage, m.layers_per_stage, m.seed),
        saved(static_cast<std::size_t>(microbatches)),
        stash(static_cast<std::size_t>(microbatches)),
        has_saved(static_cast<std::size_t>(microbatches), 0),
        has_stash(static_cast<std::size_t>(microbatches), 0),
        saved_bytes(static_cast<std::size_t>(microbatches), 0),
        stash_bytes(static_cast<std::size_t>(microbatches), 0) {}
};

CpuBackend::CpuBackend(const ModelConfig& model, const PipelineShape& shape, int rank)
    : model_(model), shape_(shape), rank_(rank), pool_(std::make_shared<HostMemory>()) {
  model.validate();
  if (rank < 0 || rank >= shape.ranks) {
    throw InputError("cpu backend: rank " + std::to_string(rank) + " out of range for " + std::to_string(shape.ranks) + " ranks");
  }
  stages_ = shape.stages_of_rank(rank);
  local_of_stage_.assign(static_cast<std::size_t>(shape.stages), -1);
  bool needs_inputs = false, needs_targets = false;
  for (std::size_t i = 0; i < stages_.size(); ++i) {
    const int s = stages_[i];
    local_of_stage_[static_cast<std::size_t>(s)] = static_cast<int>(i);
    held_.push_back(std::make_unique<Held>(s, model, shape.part_of_stage(s), shape.microbatches));
    needs_inputs |= shape.first_in_chain(s);
    needs_targets |= shape.last_in_chain(s);
  }
  // Data of every microbatch this rank may touch, generated once (not part of the timed loop).
  for (int mb = 0; mb < shape.microbatches; ++mb) {
    inputs_.push_back(needs_inputs ? kernels::synthetic_input<float>(model.block, mb, model.seed) : std::vector<float>{});
    targets_.push_back(needs_targets ? kernels::synthetic_target<float>(model.block, mb, model.seed) : std::vector<float>{});
  }
  // Activation buffers for the microbatches in flight: allocated now, reused by the pool afterwards.
  pool_.reserve(activation_bytes(), std::min(shape.microbatches, 4) * static_cast<int>(stages_.size()));
}

CpuBackend::~CpuBackend() = default;

std::size_t CpuBackend::activation_bytes() const { return static_cast<std::size_t>(model_.activation_bytes()); }

CpuBackend::Held& CpuBackend::held(int stage, const char* what) {
  if (stage < 0 || stage >= shape_.stages || local_of_stage_[static_cast<std::size_t>(stage)] < 0) {
    throw ExecutionError(std::string("cpu backend: ") + what + " on stage " + std::to_string(stage) + ", which rank " +
                         std::to_string(rank_) + " does not hold");
  }
  return *held_[static_cast<std::size_t>(local_of_stage_[static_cast<std::size_t>(stage)])];
}

const CpuBackend::Held& CpuBackend::held(int stage, const char* what) const {
  return const_cast<CpuBackend*>(this)->held(stage, what);
}

namespace {

void check_mb(int mb, int microbatches, const char* what) {
  if (mb < 0 || mb >= microbatches) {
    throw ExecutionError(std::string("cpu backend: ") + what + ": microbatch " + std::to_string(mb) + " out of range");
  }
}

void check_buffer(const Buffer& b, std::size_t bytes, const char* what) {
  if (!b || b.bytes() != bytes) {
    throw ExecutionError(std::string("cpu backend: ") + what + ": expected an activation buffer of " + std::to_string(bytes) +
                         " bytes, got " + std::to_string(b.bytes()));
  }
}

}  // namespace

void CpuBackend::load_input(int mb, Buffer& act) {
  check_mb(mb, shape_.microbatches, "load_input");
  check_buffer(act, activation_bytes(), "load_input");
  const auto& in = inputs_[static_cast<std::size_t>(mb)];
  if (in.empty()) throw ExecutionError("cpu backend: rank " + std::to_string(rank_) + " holds no first stage");
  std::memcpy(act.data(), in.data(), act.bytes());
}

void CpuBackend::forward(int stage, int mb, Buffer& act) {
  Held& h = held(stage, "F");
  check_mb(mb, shape_.microbatches, "F");
  check_buffer(act, activation_bytes(), "F");
  const auto i = static_cast<std::size_t>(mb);
  if (h.has_saved[i]) throw ExecutionError("cpu backend: F(" + std::to_string(stage) + ", mb " + std::to_string(mb) + ") ran twice");
  const std::span<float> x = act.floats();
  h.model.forward(x, x, h.saved[i]);
  h.has_saved[i] = 1;
  h.saved_bytes[i] = h.saved[i].bytes();
  state_bytes_ += h.saved_bytes[i];
}

double CpuBackend::loss(int stage, int mb, Buffer& act) {
  held(stage, "loss");
  check_mb(mb, shape_.microbatches, "loss");
  check_buffer(act, activation_bytes(), "loss");
  const auto& target = targets_[static_cast<std::size_t>(mb)];
  if (target.empty()) throw ExecutionError("cpu backend: rank " + std::to_string(rank_) + " holds no last stage");
  // In place: the activation buffer becomes the loss gradient (no allocation).
  return kernels::mse_loss_in_place(act.floats().subspan(0, target.size()), target,
                                    1.0 / static_cast<double>(shape_.microbatches));
}

void CpuBackend::backward_input(int stage, int mb, Buffer& grad) {
  Held& h = held(stage, "I");
  check_mb(mb, shape_.microbatches, "I");
  check_buffer(grad, activation_bytes(), "I");
  const auto i = static_cast<std::size_t>(mb);
  if (!h.has_saved[i]) throw ExecutionError("cpu backend: I(" + std::to_string(stage) + ", mb " + std::to_string(mb) + ") before its F");
  if (h.has_stash[i]) throw ExecutionError("cpu backend: I(" + std::to_string(stage) + ", mb " + std::to_string(mb) + ") ran twice");
  const std::span<float> g = grad.floats();
  h.model.backward_input(std::move(h.saved[i]), g, g, h.stash[i]);
  h.has_saved[i] = 0;
  h.has_stash[i] = 1;
  state_bytes_ -= h.saved_bytes[i];
  h.saved_bytes[i] = 0;
  h.stash_bytes[i] = h.stash[i].bytes();
  state_bytes_ += h.stash_bytes[i];
}

void CpuBackend::backward_weight(int stage, int mb) {
  Held& h = held(stage, "W");
  check_mb(mb, shape_.microbatches, "W");
  const auto i = static_cast<std::size_t>(mb);
  if (!h.has_stash[i]) throw ExecutionError("cpu backend: W(" + std::to_string(stage) + ", mb " + std::to_string(mb) + ") before its I");
  h.model.backward_weight(std::move(h.stash[i]));
  h.has_stash[i] = 0;
  state_bytes_ -= h.stash_bytes[i];
  h.stash_bytes[i] = 0;
}

void CpuBackend::backward(int stage, int mb, Buffer& grad) {
  backward_input(stage, mb, grad);
  backward_weight(stage, mb);
}

void CpuBackend::zero_grads() {
  for (auto& h : held_) h->model.zero_grads();
}

std::vector<kernels::BlockGrads> CpuBackend::gradients(int stage) const { return held(stage, "gradients").model.grads(); }

std::int64_t CpuBackend::static_bytes() const {
  std::int64_t n = 0;
  for (const auto& h : held_) n += 2 * h->model.param_count() * static_cast<std::int64_t>(sizeof(float));
  return n;
}

std::vector<std::string> CpuBackend::held_state() const {
  std::vector<std::string> out;
  for (const auto& h : held_) {
    for (std::size_t mb = 0; mb < h->has_saved.size(); ++mb) {
      const std::string at = "(stage " + std::to_string(h->stage) + ", mb " + std::to_string(mb) + ")";
      if (h->has_saved[mb]) out.push_back(at + ": forward state (its I/B never ran)");
      if (h->has_stash[mb]) out.push_back(at + ": weight-grad stash (its W never ran)");
    }
  }
  return out;
}

void CpuBackend::discard_state() {
  for (auto& h : held_) {
    for (std::size_t mb = 0; mb < h->has_saved.size(); ++mb) {
      h->saved[mb] = {};
      h->stash[mb] = {};
      h->has_saved[mb] = h->has_stash[mb] = 0;
      h->saved_bytes[mb] = h->stash_bytes[mb] = 0;
    }
  }
  state_bytes_ = 0;
}

const kernels::StageModel& CpuBackend::stage_model(int stage) const { return held(stage, "stage_model").model; }

}  // namespace pipelab::runtime
