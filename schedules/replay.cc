// Lock-step replay; see replay.h.
#include "pipelab/schedules/replay.h"

#include <climits>

namespace pipelab {
namespace {

constexpr int kNever = INT_MAX;

struct ReplayState {
  const Schedule& s;
  CommMode mode;
  SignalIndex index;
  std::vector<int> ready;  // step from which each signal holds
  std::vector<std::size_t> pos;

  explicit ReplayState(const Schedule& sched)
      : s(sched),
        mode(sched.has_comms() ? CommMode::Explicit : CommMode::Implicit),
        index(sched.shape),
        ready(index.size(), kNever),
        pos(sched.ranks.size(), 0) {}

  const std::vector<Slot>& list(std::size_t r) const { return s.ranks[r]; }

  void skip_idle(std::size_t r) {
    while (pos[r] < list(r).size() && !list(r)[pos[r]]) ++pos[r];
  }
  bool finished(std::size_t r) { skip_idle(r); return pos[r] >= list(r).size(); }

  // Latest ready step among the prerequisites, or kNever if one does not hold yet.
  int prereq_step(const Action& a) const {
    int latest = 0;
    for (const SignalKey& k : prerequisites(a, s.shape, mode)) {
      const int at = ready[index(k)];
      if (at == kNever) return kNever;
      latest = std::max(latest, at);
    }
    return latest;
  }
  void complete(const Action& a, int step) {
    for (const SignalKey& k : completions(a)) {
      int& at = ready[index(k)];
      at = std::min(at, step);
    }
  }
};

}  // namespace

Replay replay_lockstep(const Schedule& s) {
  ReplayState st(s);
  Replay out;
  const std::size_t P = s.ranks.size();
  out.step_of.resize(P);
  for (std::size_t r = 0; r < P; ++r) out.step_of[r].assign(s.ranks[r].size(), -1);

  for (int step = 0;; ++step) {
    bool progressed = false;
    // Zero-time communication first, to a fixpoint, so rank order within a step does not matter.
    for (bool again = true; again;) {
      again = false;
      for (std::size_t r = 0; r < P; ++r) {
        while (!st.finished(r)) {
          const Action& a = *st.list(r)[st.pos[r]];
          if (!is_comm(a.op)) break;
          const int at = st.prereq_step(a);
          if (at > step) break;
          st.complete(a, at);
          ++st.pos[r];
          again = progressed = true;
        }
      }
    }
    // One compute action per rank; its results hold from the next step.
    bool all_done = true;
    for (std::size_t r = 0; r < P; ++r) {
      if (st.finished(r)) continue;
      all_done = false;
      const Action& a = *st.list(r)[st.pos[r]];
      if (is_comm(a.op) || st.prereq_step(a) > step) continue;
      st.complete(a, step + 1);
      out.step_of[r][st.pos[r]] = step;
      ++st.pos[r];
      progressed = true;
      out.steps = step + 1;
    }
    if (all_done) {
      out.completed = true;
      return out;
    }
    if (!progressed) break;
  }
  // Deadlock: nothing ran in a whole step, so nothing ever will.
  out.stuck = stuck_ranks(s, st.pos, st.mode, [&](const SignalKey& k) { return st.ready[st.index(k)] != kNever; });
  return out;
}

std::vector<StuckRank> stuck_ranks(const Schedule& s, const std::vector<std::size_t>& positions, CommMode mode,
                                   const std::function<bool(const SignalKey&)>& holds) {
  std::vector<StuckRank> out;
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    const std::vector<Slot>& list = s.ranks[r];
    std::size_t pos = positions[r];
    while (pos < list.size() && !list[pos]) ++pos;
    if (pos >= list.size()) continue;
    StuckRank stuck{static_cast<int>(r), static_cast<int>(pos), *list[pos], {}};
    for (const SignalKey& k : prerequisites(stuck.action, s.shape, mode)) {
      if (!holds(k)) stuck.waiting_for.push_back(k);
    }
    out.push_back(std::move(stuck));
  }
  return out;
}

std::string describe_waits(const StuckRank& stuck) {
  std::string out;
  for (const SignalKey& k : stuck.waiting_for) out += (out.empty() ? "" : ", ") + describe(k);
  return out;
}

std::vector<std::vector<Slot>> Replay::grid(const Schedule& s) const {
  std::vector<std::vector<Slot>> g(s.ranks.size(), std::vector<Slot>(static_cast<std::size_t>(steps)));
  for (std::size_t r = 0; r < s.ranks.size(); ++r) {
    for (std::size_t i = 0; i < s.ranks[r].size(); ++i) {
      if (step_of[r][i] >= 0) g[r][static_cast<std::size_t>(step_of[r][i])] = s.ranks[r][i];
    }
  }
  return g;
}

}  // namespace pipelab
