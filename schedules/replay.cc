// Lock-step replay; see replay.h.
#include "pipelab/schedules/replay.h"

#include <climits>

namespace pipelab {
namespace {

constexpr int kNever = INT_MAX;

// Event-driven lock-step replay. The lock-step rules (below) are applied only to ranks that can
// have changed: a rank is examined at a step when it ran an action at the step before, or when a
// signal it waits for became true. A rank whose next action waits for a signal nobody produced
// yet parks on that signal (a list per signal, as the simulator does). So the work is linear in
// the actions and their prerequisites, not steps x ranks (which a 20,000-rank chain makes 10^9).
struct ReplayState {
  const Schedule& s;
  CommMode mode;
  SignalIndex index;
  std::vector<int> ready;             // step from which each signal holds
  std::vector<int> parked_head;       // per signal: first rank parked on it, or -1
  std::vector<int> parked_next;       // per rank: next rank parked on the same signal, or -1
  std::vector<int> queued_for;        // per rank: the step it waits in a queue for, or -1
  std::vector<std::size_t> pos;
  std::vector<std::size_t> now, next;  // ranks to examine at this step and at the next

  explicit ReplayState(const Schedule& sched)
      : s(sched),
        mode(sched.has_comms() ? CommMode::Explicit : CommMode::Implicit),
        index(sched.shape),
        ready(index.size(), kNever),
        parked_head(index.size(), -1),
        parked_next(sched.ranks.size(), -1),
        queued_for(sched.ranks.size(), -1),
        pos(sched.ranks.size(), 0) {}

  const std::vector<Slot>& list(std::size_t r) const { return s.ranks[r]; }

  void skip_idle(std::size_t r) {
    while (pos[r] < list(r).size() && !list(r)[pos[r]]) ++pos[r];
  }
  bool finished(std::size_t r) {
    skip_idle(r);
    return pos[r] >= list(r).size();
  }

  // A rank is in at most one place: a queue, a signal's parked list, or being examined.
  void queue(std::size_t r, int step) {
    if (queued_for[r] == step) return;
    queued_for[r] = step;
    (step == current ? now : next).push_back(r);
  }

  // Latest ready step among the prerequisites; kNever (and the rank parked on the missing signal)
  // if one does not hold yet.
  int prereq_step(std::size_t r, const Action& a) {
    int latest = 0;
    for (const SignalKey& k : prerequisites(a, s.shape, mode)) {
      const std::size_t sig = index(k);
      if (ready[sig] == kNever) {
        parked_next[r] = parked_head[sig];
        parked_head[sig] = static_cast<int>(r);
        return kNever;
      }
      latest = std::max(latest, ready[sig]);
    }
    return latest;
  }
  // The action's signals hold from `step`; ranks parked on them are examined then.
  void complete(const Action& a, int step) {
    for (const SignalKey& k : completions(a)) {
      const std::size_t sig = index(k);
      ready[sig] = std::min(ready[sig], step);
      for (int r = parked_head[sig]; r >= 0;) {
        const int after = parked_next[static_cast<std::size_t>(r)];
        parked_next[static_cast<std::size_t>(r)] = -1;
        queue(static_cast<std::size_t>(r), std::max(step, current));
        r = after;
      }
      parked_head[sig] = -1;
    }
  }

  int current = 0;  // the step being replayed
};

}  // namespace

// The lock-step rules: at each step, zero-time communication runs first, to a fixpoint (so rank
// order within a step does not matter), completing at the step its prerequisites held; then every
// rank whose next action is compute and whose prerequisites held by this step runs it, and its
// results hold from the next step.
Replay replay_lockstep(const Schedule& s) {
  ReplayState st(s);
  Replay out;
  const std::size_t P = s.ranks.size();
  out.step_of.resize(P);
  for (std::size_t r = 0; r < P; ++r) out.step_of[r].assign(s.ranks[r].size(), -1);
  for (std::size_t r = 0; r < P; ++r) st.queue(r, 0);

  std::vector<std::size_t> computing;  // ranks whose next action is compute, examined this step
  for (st.current = 0; !st.now.empty(); ++st.current) {
    const int step = st.current;
    // Step 1: communication to a fixpoint; a rank woken by a completion is examined again.
    computing.clear();
    for (std::size_t i = 0; i < st.now.size(); ++i) {
      const std::size_t r = st.now[i];
      st.queued_for[r] = -1;
      while (!st.finished(r)) {
        const Action& a = *st.list(r)[st.pos[r]];
        if (!is_comm(a.op)) {
          computing.push_back(r);
          break;
        }
        const int at = st.prereq_step(r, a);
        if (at == kNever) break;  // parked
        if (at > step) {
          st.queue(r, at);
          break;
        }
        st.complete(a, at);
        ++st.pos[r];
      }
    }
    // Step 2: one compute action per rank whose prerequisites held by this step.
    for (const std::size_t r : computing) {
      const Action& a = *st.list(r)[st.pos[r]];
      const int at = st.prereq_step(r, a);
      if (at == kNever) continue;  // parked
      if (at > step) {
        st.queue(r, at);
        continue;
      }
      st.complete(a, step + 1);
      out.step_of[r][st.pos[r]] = step;
      ++st.pos[r];
      out.steps = step + 1;
      st.queue(r, step + 1);
    }
    st.now.swap(st.next);
    st.next.clear();
  }
  out.completed = true;
  for (std::size_t r = 0; r < P; ++r) out.completed = out.completed && st.finished(r);
  if (out.completed) return out;
  // Deadlock: every unfinished rank waits for a signal nobody will produce.
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
