// RankBuilder: appends one rank's actions while keeping per-stage microbatch counters, so a
// generator reads like its published phases ("F(s0); I(s1); W()") rather than index arithmetic.
// Private to schedules/.
#pragma once

#include <deque>
#include <vector>

#include "pipelab/schedules/schedule.h"

namespace pipelab::detail {

class RankBuilder {
 public:
  /// With `idle_beyond_end`, actions whose microbatch counter passes the chain's microbatch count
  /// become idle slots instead (PyTorch's ZB-V formulation pads to max(2P-1, m)).
  explicit RankBuilder(const PipelineShape& shape, bool idle_beyond_end = false);

  void idle(int n = 1);
  /// An action with an explicit microbatch (for generators that do not run microbatches in order).
  void raw(Op op, int stage, int mb) { slots_.emplace_back(Action::make(op, stage, mb)); }
  void f(int stage);
  void b(int stage);
  /// Input-grad; its weight-grad is queued for w().
  void i(int stage);
  /// Weight-grad of the oldest queued input-grad (FIFO, as DualPipe's WeightGradStore).
  void w();
  /// Weight-grad of the next microbatch of one stage (PyTorch's per-stage W counters, for ZB-V;
  /// a generator uses either this or the FIFO w(), not both).
  void w(int stage);
  /// DualPipe's overlapped unit: F of f_stage together with a full B of b_stage.
  void fb(int f_stage, int b_stage);

  int forwards_done(int stage) const { return next_f_[static_cast<std::size_t>(stage)]; }
  int weight_grads_done(int stage) const { return next_w_[static_cast<std::size_t>(stage)]; }
  void drain_weight_grads();

  std::vector<Slot> take() { return std::move(slots_); }

 private:
  int mb_of(int stage, int counter) const;
  bool beyond_end(int counter) const { return idle_beyond_end_ && counter >= shape_.microbatches_per_chain(); }
  void emit(Op op, int stage, int counter);

  const PipelineShape& shape_;
  bool idle_beyond_end_;
  std::vector<int> next_f_, next_b_, next_w_;
  std::deque<Action> pending_w_;
  std::vector<Slot> slots_;
};

/// Assembles a Schedule from per-rank builders' output.
Schedule assemble(std::string name, PipelineShape shape, std::vector<std::vector<Slot>> ranks);

/// Throws ScheduleError(message) unless cond holds; callers start the message with the schedule's
/// name ("dualpipe needs ...").
void require(bool cond, const std::string& message);

}  // namespace pipelab::detail
