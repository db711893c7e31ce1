// Lowering passes; see lowering.h.
#include "pipelab/schedules/lowering.h"

#include <optional>
#include <set>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/schedules/dependencies.h"
#include "pipelab/schedules/validate.h"

namespace pipelab {
namespace {

Schedule with_ranks(const Schedule& s, std::vector<std::vector<Slot>> ranks) {
  Schedule out;
  out.name = s.name;
  out.shape = s.shape;
  out.ranks = std::move(ranks);
  return out;
}

// The round-robin replay the placing passes share: ranks in turn place their next action once its
// prerequisites hold (in `mode`); a signal, once true, stays true, so a stall is a deadlock in list
// order whatever the visiting order.
class RoundRobinReplay {
 public:
  RoundRobinReplay(const Schedule& compute, CommMode mode)
      : s_(compute), mode_(mode), index_(compute.shape), done_(index_.size(), 0), pos_(compute.ranks.size(), 0) {}

  bool ready(const Action& a) const {
    for (const SignalKey& k : prerequisites(a, s_.shape, mode_)) {
      if (!done_[index_(k)]) return false;
    }
    return true;
  }
  void mark(const Action& a) {
    for (const SignalKey& k : completions(a)) done_[index_(k)] = 1;
  }
  /// The first action at or after list position `from` on rank r (the list's size when none).
  std::size_t next_action(std::size_t r, std::size_t from) const {
    const auto& list = s_.ranks[r];
    while (from < list.size() && !list[from]) ++from;
    return from;
  }
  /// Visits the ranks in turn until every list is placed: `place(r, pos)` is called when rank r's
  /// next action (at `pos`) is ready, and returns the position after what it placed. False on a stall.
  template <typename Place>
  bool run(Place place) {
    for (;;) {
      bool progressed = false, remaining = false;
      for (std::size_t r = 0; r < pos_.size(); ++r) {
        pos_[r] = next_action(r, pos_[r]);
        if (pos_[r] >= s_.ranks[r].size()) continue;
        remaining = true;
        if (!ready(*s_.ranks[r][pos_[r]])) continue;
        pos_[r] = place(r, pos_[r]);
        progressed = true;
      }
      if (!remaining) return true;
      if (!progressed) return false;
    }
  }

 private:
  const Schedule& s_;
  CommMode mode_;
  SignalIndex index_;
  std::vector<char> done_;
  std::vector<std::size_t> pos_;
};

}  // namespace

Schedule add_send_recv(const Schedule& compute) {
  if (compute.has_comms()) throw ScheduleError("add_send_recv: schedule \"" + compute.name + "\" already has send/recv actions");
  // The structure first (the replay below indexes by stage and microbatch); the replay itself finds
  // a deadlock, and only then does the full validator run, for its report.
  require_valid(compute, ValidationScope::WithoutDeadlock);
  const PipelineShape& shape = compute.shape;
  // The send of one (half) action, if its output goes to another rank.
  auto send_of = [&](Op op, int stage, int mb) -> std::optional<Action> {
    const Op send_op = op == Op::F ? Op::SendF : (op == Op::B || op == Op::I) ? Op::SendB : Op::W;
    if (send_op == Op::W) return std::nullopt;
    const Action send = Action::make(send_op, stage, mb);
    if (p2p_past_chain_end(send, shape) || !crosses_ranks(shape, stage, peer_stage(send))) return std::nullopt;
    return send;
  };
  // Each list sized once: its actions, their sends, and the receives of its peers' sends (a large
  // schedule's lists are most of the lowering's memory traffic).
  std::vector<std::vector<Slot>> out(static_cast<std::size_t>(shape.ranks));
  {
    std::vector<std::size_t> sizes(out.size(), 0);
    auto count = [&](std::size_t r, Op op, int stage, int mb) {
      if (const auto send = send_of(op, stage, mb)) {
        ++sizes[r];
        ++sizes[static_cast<std::size_t>(shape.rank_of(matching_p2p(*send).stage))];
      }
    };
    for (std::size_t r = 0; r < out.size() && r < compute.ranks.size(); ++r) {
      for (const Slot& slot : compute.ranks[r]) {
        ++sizes[r];
        if (!slot) continue;
        if (slot->op == Op::OverlapFB) {
          count(r, Op::F, slot->stage, slot->mb);
          count(r, Op::B, slot->b_stage, slot->b_mb);
        } else {
          count(r, slot->op, slot->stage, slot->mb);
        }
      }
    }
    for (std::size_t r = 0; r < out.size(); ++r) out[r].reserve(sizes[r]);
  }
  RoundRobinReplay replay(compute, CommMode::Explicit);
  // Sends of one (half) action, and the matching receives on the peer ranks.
  auto add_comms = [&](std::size_t r, Op op, int stage, int mb) {
    const auto send = send_of(op, stage, mb);
    if (!send) return;
    out[r].emplace_back(*send);
    replay.mark(*send);
    const Action recv = matching_p2p(*send);
    out[static_cast<std::size_t>(shape.rank_of(recv.stage))].emplace_back(recv);
  };
  const bool placed = replay.run([&](std::size_t r, std::size_t pos) {
    const Action& a = *compute.ranks[r][pos];
    out[r].emplace_back(a);
    replay.mark(a);
    if (a.op == Op::OverlapFB) {
      add_comms(r, Op::F, a.stage, a.mb);
      add_comms(r, Op::B, a.b_stage, a.b_mb);
    } else {
      add_comms(r, a.op, a.stage, a.mb);
    }
    return pos + 1;
  });
  if (!placed) {
    // The validator's replay finds the same deadlock and reports it with the grid.
    require_valid(compute);
    throw ScheduleError("add_send_recv: schedule \"" + compute.name + "\" does not progress");
  }
  return with_ranks(compute, std::move(out));
}

Schedule overlap_forward_backward(const Schedule& compute) {
  if (compute.has_comms()) throw ScheduleError("overlap_forward_backward: schedule \"" + compute.name + "\" already has send/recv actions");
  require_valid(compute);
  std::vector<std::vector<Slot>> out(compute.ranks.size());
  RoundRobinReplay replay(compute, CommMode::Implicit);
  const bool placed = replay.run([&](std::size_t r, std::size_t pos) {
    const Action& a = *compute.ranks[r][pos];
    const std::size_t after = replay.next_action(r, pos + 1);
    const Action* b = after < compute.ranks[r].size() ? &*compute.ranks[r][after] : nullptr;
    // A backward with the forward after it: the forward before it stays whole, so its output
    // leaves before the unit (Megatron's extra warm-up forward) and the next rank need not wait.
    // The forward must be ready before the backward runs (a unit never waits on its own halves).
    const bool pair = a.op == Op::B && b && b->op == Op::F && b->mb != a.mb && replay.ready(*b);
    replay.mark(a);
    if (!pair) {
      out[r].emplace_back(a);
      return pos + 1;
    }
    out[r].emplace_back(Action::overlap(b->stage, b->mb, a.stage, a.mb));
    replay.mark(*b);
    return after + 1;
  });
  if (!placed) throw ScheduleError("overlap_forward_backward: schedule \"" + compute.name + "\" does not progress");
  return with_ranks(compute, std::move(out));
}

Schedule add_reduce_grad(const Schedule& s, ReduceGradPlacement placement) { return add_reduce_grad(Schedule(s), placement); }

Schedule add_reduce_grad(Schedule&& s, ReduceGradPlacement placement) {
  const int per_chain = s.shape.microbatches_per_chain();
  std::vector<int> weight_grads(static_cast<std::size_t>(s.shape.stages), 0);
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    std::vector<Slot> list;
    list.reserve(s.ranks[r].size() + s.shape.stages_of_rank(static_cast<int>(r)).size());
    std::vector<Slot> reductions;
    for (const Slot& slot : s.ranks[r]) {
      list.push_back(slot);
      if (!slot) continue;
      if (slot->op == Op::ReduceGrad) throw ScheduleError("add_reduce_grad: schedule \"" + s.name + "\" already has REDUCE_GRAD");
      int stage = -1;
      if (slot->op == Op::W || slot->op == Op::B) stage = slot->stage;
      if (slot->op == Op::OverlapFB) stage = slot->b_stage;
      if (stage >= 0 && ++weight_grads[static_cast<std::size_t>(stage)] == per_chain) {
        Slot reduce = Action::make(Op::ReduceGrad, stage, 0);
        if (placement == ReduceGradPlacement::AtEnd) {
          reductions.push_back(reduce);
        } else {
          list.push_back(reduce);
        }
      }
    }
    list.insert(list.end(), reductions.begin(), reductions.end());
    s.ranks[r] = std::move(list);  // the old list is freed before the next rank's is built
  }
  return std::move(s);
}

Schedule remove_comms(const Schedule& s) {
  std::vector<std::vector<Slot>> ranks(s.ranks.size());
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    for (const Slot& slot : s.ranks[r]) {
      if (slot && is_compute(slot->op)) ranks[r].push_back(slot);
    }
  }
  return with_ranks(s, std::move(ranks));
}

Schedule split_backward(const Schedule& s) {
  std::vector<std::vector<Slot>> ranks(s.ranks.size());
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    for (const Slot& slot : s.ranks[r]) {
      if (slot && slot->op == Op::B) {
        ranks[r].emplace_back(Action::make(Op::I, slot->stage, slot->mb));
        ranks[r].emplace_back(Action::make(Op::W, slot->stage, slot->mb));
      } else {
        ranks[r].push_back(slot);
      }
    }
  }
  return with_ranks(s, std::move(ranks));
}

Schedule merge_backward(const Schedule& s) {
  std::vector<std::vector<Slot>> ranks(s.ranks.size());
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    std::set<std::pair<int, int>> merged;  // (stage, mb) whose I became a B
    for (const Slot& slot : s.ranks[r]) {
      if (slot && slot->op == Op::I) {
        ranks[r].emplace_back(Action::make(Op::B, slot->stage, slot->mb));
        merged.emplace(slot->stage, slot->mb);
      } else if (slot && slot->op == Op::W && merged.count({slot->stage, slot->mb})) {
        continue;
      } else {
        ranks[r].push_back(slot);
      }
    }
  }
  return with_ranks(s, std::move(ranks));
}

}  // namespace pipelab
