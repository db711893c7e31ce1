// RankBuilder implementation.
#include "rank_builder.h"

#include <algorithm>

#include "pipelab/base/error.h"

namespace pipelab::detail {

RankBuilder::RankBuilder(const PipelineShape& shape, bool idle_beyond_end)
    : shape_(shape),
      idle_beyond_end_(idle_beyond_end),
      next_f_(static_cast<std::size_t>(shape.stages), 0),
      next_b_(static_cast<std::size_t>(shape.stages), 0),
      next_w_(static_cast<std::size_t>(shape.stages), 0) {
  // Room for a rank's share of F, I and W (or F and B) without regrowing: capacity that is never
  // written costs no memory, while regrowing a large list copies it and touches twice the pages.
  const auto per_rank = static_cast<std::size_t>(shape.stages / std::max(1, shape.ranks) + 1) *
                        static_cast<std::size_t>(shape.microbatches_per_chain());
  slots_.reserve(3 * per_rank);
}

int RankBuilder::mb_of(int stage, int counter) const {
  return shape_.chain_of_stage(stage) * shape_.microbatches_per_chain() + counter;
}

void RankBuilder::emit(Op op, int stage, int counter) {
  if (beyond_end(counter)) {
    slots_.emplace_back(std::nullopt);
    return;
  }
  slots_.emplace_back(Action::make(op, stage, mb_of(stage, counter)));
}

void RankBuilder::idle(int n) {
  for (int k = 0; k < n; ++k) slots_.emplace_back(std::nullopt);
}

void RankBuilder::f(int stage) { emit(Op::F, stage, next_f_[static_cast<std::size_t>(stage)]++); }

void RankBuilder::b(int stage) { emit(Op::B, stage, next_b_[static_cast<std::size_t>(stage)]++); }

void RankBuilder::i(int stage) {
  const int counter = next_b_[static_cast<std::size_t>(stage)]++;
  emit(Op::I, stage, counter);
  if (!beyond_end(counter)) pending_w_.push_back(Action::make(Op::W, stage, mb_of(stage, counter)));
}

void RankBuilder::w() {
  if (pending_w_.empty()) throw ScheduleError("internal: W requested with no pending input-grad");
  slots_.emplace_back(pending_w_.front());
  pending_w_.pop_front();
}

void RankBuilder::w(int stage) { emit(Op::W, stage, next_w_[static_cast<std::size_t>(stage)]++); }

void RankBuilder::fb(int f_stage, int b_stage) {
  const int fc = next_f_[static_cast<std::size_t>(f_stage)]++;
  const int bc = next_b_[static_cast<std::size_t>(b_stage)]++;
  slots_.emplace_back(Action::overlap(f_stage, mb_of(f_stage, fc), b_stage, mb_of(b_stage, bc)));
}

void RankBuilder::drain_weight_grads() {
  while (!pending_w_.empty()) w();
}

Schedule assemble(std::string name, PipelineShape shape, std::vector<std::vector<Slot>> ranks) {
  Schedule s;
  s.name = std::move(name);
  s.shape = std::move(shape);
  s.ranks = std::move(ranks);
  return s;
}

void require(bool cond, const std::string& message) {
  if (!cond) throw ScheduleError(message);
}

}  // namespace pipelab::detail
