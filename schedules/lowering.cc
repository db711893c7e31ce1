// Lowering passes; see lowering.h.
#include "pipelab/schedules/lowering.h"

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

}  // namespace

Schedule add_send_recv(const Schedule& compute) {
  if (compute.has_comms()) throw ScheduleError("add_send_recv: schedule \"" + compute.name + "\" already has send/recv actions");
  // The structure first (the replay below indexes by stage and microbatch); the replay itself finds
  // a deadlock, and only then does the full validator run, for its report.
  require_valid(compute, ValidationScope::WithoutDeadlock);
  const PipelineShape& shape = compute.shape;
  const SignalIndex index(shape);
  std::vector<char> done(index.size(), 0);
  const auto P = static_cast<std::size_t>(shape.ranks);
  std::vector<std::vector<Slot>> out(P);
  std::vector<std::size_t> pos(P, 0);

  auto skip_idle = [&](std::size_t r) {
    while (pos[r] < compute.ranks[r].size() && !compute.ranks[r][pos[r]]) ++pos[r];
  };
  auto ready = [&](const Action& a) {
    for (const SignalKey& k : prerequisites(a, shape, CommMode::Explicit)) {
      if (!done[index(k)]) return false;
    }
    return true;
  };
  auto mark = [&](const Action& a) {
    for (const SignalKey& k : completions(a)) done[index(k)] = 1;
  };
  // Sends of one (half) action, and the matching receives on the peer ranks.
  auto add_comms = [&](std::size_t r, Op op, int stage, int mb) {
    const Op send_op = op == Op::F ? Op::SendF : (op == Op::B || op == Op::I) ? Op::SendB : Op::W;
    if (send_op == Op::W) return;
    const Action send = Action::make(send_op, stage, mb);
    if (p2p_past_chain_end(send, shape) || !crosses_ranks(shape, stage, peer_stage(send))) return;
    out[r].emplace_back(send);
    mark(send);
    const Action recv = matching_p2p(send);
    out[static_cast<std::size_t>(shape.rank_of(recv.stage))].emplace_back(recv);
  };

  for (;;) {
    bool progressed = false, remaining = false;
    for (std::size_t r = 0; r < P; ++r) {
      skip_idle(r);
      if (pos[r] >= compute.ranks[r].size()) continue;
      remaining = true;
      const Action& a = *compute.ranks[r][pos[r]];
      if (!ready(a)) continue;
      out[r].emplace_back(a);
      mark(a);
      if (a.op == Op::OverlapFB) {
        add_comms(r, Op::F, a.stage, a.mb);
        add_comms(r, Op::B, a.b_stage, a.b_mb);
      } else {
        add_comms(r, a.op, a.stage, a.mb);
      }
      ++pos[r];
      progressed = true;
    }
    if (!remaining) break;
    if (!progressed) {
      // A stall is a deadlock in list order, whatever order the ranks are visited in (a signal,
      // once true, stays true): the validator's replay finds it too and reports it with the grid.
      require_valid(compute);
      throw ScheduleError("add_send_recv: schedule \"" + compute.name + "\" does not progress");
    }
  }
  return with_ranks(compute, std::move(out));
}

Schedule overlap_forward_backward(const Schedule& compute) {
  if (compute.has_comms()) throw ScheduleError("overlap_forward_backward: schedule \"" + compute.name + "\" already has send/recv actions");
  require_valid(compute);
  const PipelineShape& shape = compute.shape;
  const SignalIndex index(shape);
  std::vector<char> done(index.size(), 0);
  const auto P = static_cast<std::size_t>(shape.ranks);
  std::vector<std::vector<Slot>> out(P);
  std::vector<std::size_t> pos(P, 0);
  auto next_action = [&](std::size_t r, std::size_t from) {
    while (from < compute.ranks[r].size() && !compute.ranks[r][from]) ++from;
    return from;
  };
  auto ready = [&](const Action& a) {
    for (const SignalKey& k : prerequisites(a, shape, CommMode::Implicit)) {
      if (!done[index(k)]) return false;
    }
    return true;
  };
  auto mark = [&](const Action& a) {
    for (const SignalKey& k : completions(a)) done[index(k)] = 1;
  };
  for (;;) {
    bool progressed = false, remaining = false;
    for (std::size_t r = 0; r < P; ++r) {
      pos[r] = next_action(r, pos[r]);
      if (pos[r] >= compute.ranks[r].size()) continue;
      remaining = true;
      const Action& a = *compute.ranks[r][pos[r]];
      if (!ready(a)) continue;
      const std::size_t after = next_action(r, pos[r] + 1);
      const Action* b = after < compute.ranks[r].size() ? &*compute.ranks[r][after] : nullptr;
      // A backward with the forward after it: the forward before it stays whole, so its output
      // leaves before the unit (Megatron's extra warm-up forward) and the next rank need not wait.
      if (a.op == Op::B && b && b->op == Op::F && b->mb != a.mb && ready(*b)) {
        out[r].emplace_back(Action::overlap(b->stage, b->mb, a.stage, a.mb));
        mark(a);
        mark(*b);
        pos[r] = after + 1;
      } else {
        out[r].emplace_back(a);
        mark(a);
        ++pos[r];
      }
      progressed = true;
    }
    if (!remaining) break;
    if (!progressed) throw ScheduleError("overlap_forward_backward: schedule \"" + compute.name + "\" does not progress");
  }
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
