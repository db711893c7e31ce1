// The per-(stage, microbatch) state machine every backend keeps between F, I and W: what a
// microbatch of a held stage owns now (nothing, its forward state, or its weight-grad stash), how
// many bytes that is, and the errors for an action out of order. Backends own the tensors; this
// owns the rules, so the cpu, cuda and null backends enforce them identically.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/schedules/action.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::runtime {

class MicrobatchStates {
 public:
  enum class State : std::uint8_t { None, Forward, Stash };

  /// The stages `shape` places on `rank`; `backend` prefixes every message ("cpu backend: ...").
  MicrobatchStates(std::string_view backend, const PipelineShape& shape, int rank);

  /// The stages held, ascending (== shape.stages_of_rank(rank)).
  const std::vector<int>& stages() const { return stages_; }
  /// Index of a held stage in stages(); throws ExecutionError naming `what` when the rank does not
  /// hold `stage`.
  std::size_t local(int stage, std::string_view what) const;

  /// Throws ExecutionError when `op` (F, I, B or W) may not run on (stage, mb) now: a stage this
  /// rank does not hold, a microbatch out of range, F twice, I/B before its F, W before its I.
  void require(Op op, int stage, int mb) const;
  /// Records that `op` ran (after require): F holds `bytes` of forward state, I replaces it by
  /// `bytes` of stash, W and B release everything the microbatch held.
  void record(Op op, int stage, int mb, std::int64_t bytes = 0);

  State state(int stage, int mb) const { return states_[index(stage, mb)]; }
  /// Bytes held by all microbatches now.
  std::int64_t bytes() const { return bytes_; }
  /// Entries not in State::None.
  std::int64_t held() const { return held_; }
  /// "(stage 0, mb 3): forward state (its I/B never ran)" per microbatch still holding state.
  std::vector<std::string> held_state() const;
  /// Forgets all state (after a failed iteration; the backend frees the tensors).
  void discard();

  /// Flat index of (stage, mb) for backends that keep tensors per microbatch: local(stage) * m + mb.
  std::size_t index(int stage, int mb) const;
  std::size_t size() const { return states_.size(); }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  std::string backend_;
  int rank_;
  int microbatches_;
  std::vector<int> stages_;
  std::vector<int> local_of_stage_;  // stage -> index into stages_, -1 if not here
  std::vector<State> states_;
  std::vector<std::int64_t> state_bytes_;
  std::int64_t bytes_ = 0;
  std::int64_t held_ = 0;
};

}  // namespace pipelab::runtime
