// MicrobatchStates: the F -> I -> W life cycle of each held (stage, microbatch).
#include "pipelab/runtime/microbatch_states.h"

#include "pipelab/runtime/errors.h"

namespace pipelab::runtime {

namespace {

std::string at(int stage, int mb) { return "(stage " + std::to_string(stage) + ", mb " + std::to_string(mb) + ")"; }

std::string call(Op op, int stage, int mb) {
  return std::string(op_name(op)) + "(" + std::to_string(stage) + ", mb " + std::to_string(mb) + ")";
}

}  // namespace

MicrobatchStates::MicrobatchStates(std::string_view backend, const PipelineShape& shape, int rank)
    : backend_(backend), rank_(rank), microbatches_(shape.microbatches), stages_(shape.stages_of_rank(rank)) {
  local_of_stage_.assign(static_cast<std::size_t>(shape.stages), -1);
  for (std::size_t i = 0; i < stages_.size(); ++i) local_of_stage_[static_cast<std::size_t>(stages_[i])] = static_cast<int>(i);
  const std::size_t n = stages_.size() * static_cast<std::size_t>(microbatches_);
  states_.assign(n, State::None);
  state_bytes_.assign(n, 0);
}

void MicrobatchStates::fail(const std::string& what) const { throw ExecutionError(backend_ + " backend: " + what); }

std::size_t MicrobatchStates::local(int stage, std::string_view what) const {
  if (stage < 0 || static_cast<std::size_t>(stage) >= local_of_stage_.size() || local_of_stage_[static_cast<std::size_t>(stage)] < 0) {
    fail(std::string(what) + " on stage " + std::to_string(stage) + ", which rank " + std::to_string(rank_) + " does not hold");
  }
  return static_cast<std::size_t>(local_of_stage_[static_cast<std::size_t>(stage)]);
}

std::size_t MicrobatchStates::index(int stage, int mb) const {
  const std::size_t l = local(stage, "state");
  if (mb < 0 || mb >= microbatches_) fail("microbatch " + std::to_string(mb) + " out of range (" + std::to_string(microbatches_) + ")");
  return l * static_cast<std::size_t>(microbatches_) + static_cast<std::size_t>(mb);
}

void MicrobatchStates::require(Op op, int stage, int mb) const {
  local(stage, op_name(op));
  if (mb < 0 || mb >= microbatches_) fail(call(op, stage, mb) + ": microbatch out of range (" + std::to_string(microbatches_) + ")");
  const State s = states_[index(stage, mb)];
  switch (op) {
    case Op::F:
      if (s != State::None) fail(call(op, stage, mb) + " ran twice");
      return;
    case Op::I:
    case Op::B:
      if (s == State::None) fail(call(op, stage, mb) + " before its F");
      if (s == State::Stash) fail(call(op, stage, mb) + " ran twice");
      return;
    case Op::W:
      if (s != State::Stash) fail(call(op, stage, mb) + " before its I");
      return;
    default: fail(std::string("no per-microbatch state for ") + std::string(op_name(op)));
  }
}

void MicrobatchStates::record(Op op, int stage, int mb, std::int64_t bytes) {
  const std::size_t i = index(stage, mb);
  bytes_ -= state_bytes_[i];
  if (states_[i] != State::None) --held_;
  switch (op) {
    case Op::F: states_[i] = State::Forward; break;
    case Op::I: states_[i] = State::Stash; break;
    default: states_[i] = State::None; bytes = 0; break;  // W, B: the microbatch is done here
  }
  state_bytes_[i] = bytes;
  bytes_ += bytes;
  if (states_[i] != State::None) ++held_;
}

std::vector<std::string> MicrobatchStates::held_state() const {
  std::vector<std::string> out;
  const auto m = static_cast<std::size_t>(microbatches_);
  for (std::size_t i = 0; i < states_.size(); ++i) {
    if (states_[i] == State::None) continue;
    out.push_back(at(stages_[i / m], static_cast<int>(i % m)) + ": " +
                  (states_[i] == State::Forward ? "forward state (its I/B never ran)" : "weight-grad stash (its W never ran)"));
  }
  return out;
}

void MicrobatchStates::discard() {
  std::fill(states_.begin(), states_.end(), State::None);
  std::fill(state_bytes_.begin(), state_bytes_.end(), 0);
  bytes_ = 0;
  held_ = 0;
}

}  // namespace pipelab::runtime
