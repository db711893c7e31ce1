// Idle time by cause (idle_parts.h; definitions in docs/metrics.md, "Idle time by cause").
//
// Each compute gap of a rank ends when its next action starts. That action's inputs from other
// ranks are the rank's RECV events for it (RECV_F for an F, RECV_B for a B or I, both for an F&B
// unit). Until the last of them was produced by the neighbour's compute the rank waits on the
// pipeline; from then until it arrived, on the transfer; anything after the arrival, or a gap
// before an action with no such input, is the rank's own data-parallel collective where one runs (a
// forward waiting for its parameters' all-gather), else what the timeline does not explain. After the rank's last
// action it waits for the pipeline to drain (the last compute of any rank), and after that for
// the communication that outlives compute: gradient reductions first, then P2P transfers.
#include "pipelab/schedules/idle_parts.h"

#include <algorithm>
#include <tuple>

#include "intervals.h"

namespace pipelab {
namespace {

using detail::Interval;

constexpr std::int64_t kNone = -1;

// Dense numbering of (kind, stage, microbatch), kind 0 = forward activation, 1 = input gradient, so
// the lookups below are array reads rather than map searches (the plan search calls this per layout).
class Slots {
 public:
  explicit Slots(const Timeline& t) {
    for (const auto& rank : t.ranks) {
      for (const TimelineEvent& e : rank) {
        stages_ = std::max({stages_, e.action.stage + 2, e.action.b_stage + 2});
        mbs_ = std::max({mbs_, e.action.mb + 1, e.action.b_mb + 1});
      }
    }
  }
  std::size_t size() const { return 2 * static_cast<std::size_t>(stages_) * static_cast<std::size_t>(mbs_); }
  // stage may be -1 or stages-1 (a neighbour of a valid stage); anything else outside is kNone.
  std::int64_t operator()(bool grad, int stage, int mb) const {
    if (stage < -1 || stage + 1 >= stages_ || mb < 0 || mb >= mbs_) return kNone;
    return (static_cast<std::int64_t>(grad) * stages_ + stage + 1) * mbs_ + mb;
  }

 private:
  int stages_ = 1, mbs_ = 1;
};

// The RECV events a compute action waits for, as (is RECV_B, stage, mb); their number.
int input_recvs(const Action& a, std::tuple<bool, int, int> out[2]) {
  switch (a.op) {
    case Op::F: out[0] = {false, a.stage, a.mb}; return 1;
    case Op::B:
    case Op::I: out[0] = {true, a.stage, a.mb}; return 1;
    case Op::OverlapFB:
      out[0] = {false, a.stage, a.mb};
      out[1] = {true, a.b_stage, a.b_mb};
      return 2;
    default: return 0;
  }
}

}  // namespace

std::vector<IdleParts> split_idle(const Timeline& t) {
  const std::int64_t makespan = t.makespan_ns();
  std::vector<IdleParts> parts(t.ranks.size());
  const Slots slot(t);

  // When each neighbour output was produced, the last compute end of the iteration, and the
  // communication of all ranks (for the time after the last compute).
  std::vector<std::int64_t> produced(slot.size(), kNone);
  std::int64_t compute_end = 0;
  std::vector<Interval> collectives, transfers;
  for (const auto& rank : t.ranks) {
    for (const TimelineEvent& e : rank) {
      if (e.stream != Stream::Compute) continue;
      compute_end = std::max(compute_end, e.end_ns);
      const Action& a = e.action;
      auto note = [&](bool grad, int stage, int mb) {
        const std::int64_t i = slot(grad, stage, mb);
        if (i != kNone) produced[static_cast<std::size_t>(i)] = std::max(produced[static_cast<std::size_t>(i)], e.end_ns);
      };
      if (a.op == Op::F || a.op == Op::OverlapFB) note(false, a.stage, a.mb);
      if (a.op == Op::B || a.op == Op::I) note(true, a.stage, a.mb);
      if (a.op == Op::OverlapFB) note(true, a.b_stage, a.b_mb);
    }
  }
  // Only what reaches past the last compute matters to the tail.
  for (const auto& rank : t.ranks) {
    for (const TimelineEvent& e : rank) {
      if (e.stream == Stream::Compute || e.end_ns <= compute_end) continue;
      (e.stream == Stream::Collective ? collectives : transfers).emplace_back(e.start_ns, e.end_ns);
    }
  }
  detail::merge(collectives);
  transfers.insert(transfers.end(), collectives.begin(), collectives.end());
  detail::merge(transfers);  // now: any communication
  const std::int64_t tail = makespan - compute_end;
  const std::int64_t tail_dp = detail::covered_within(collectives, compute_end, makespan);
  const std::int64_t tail_pp = detail::covered_within(transfers, compute_end, makespan) - tail_dp;

  std::vector<std::int64_t> busy(t.ranks.size(), 0), waiting(t.ranks.size(), 0);
  std::vector<Interval> recv(slot.size(), {kNone, kNone});  // per slot, this rank's RECV of it
  std::vector<std::size_t> touched;
  std::vector<const TimelineEvent*> compute;
  std::vector<Interval> own_collectives;  // this rank's data-parallel collectives (a gap beside one waits for it)
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    IdleParts& p = parts[r];
    compute.clear();
    own_collectives.clear();
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Collective) own_collectives.emplace_back(e.start_ns, e.end_ns);
      if (e.stream == Stream::Recv && (e.action.op == Op::RecvF || e.action.op == Op::RecvB)) {
        const std::int64_t i = slot(e.action.op == Op::RecvB, e.action.stage, e.action.mb);
        if (i == kNone) continue;
        recv[static_cast<std::size_t>(i)] = {e.start_ns, e.end_ns};
        touched.push_back(static_cast<std::size_t>(i));
      }
      if (e.stream == Stream::Compute && e.end_ns > e.start_ns) compute.push_back(&e);
    }
    const auto earlier = [](const TimelineEvent* a, const TimelineEvent* b) {
      return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
    };
    if (!std::is_sorted(compute.begin(), compute.end(), earlier)) std::sort(compute.begin(), compute.end(), earlier);
    detail::merge(own_collectives);
    // What of [from, to) the rank's own collective covers is DP communication (a forward waiting for
    // its parameters' all-gather); the rest the timeline does not explain.
    const auto unexplained = [&](std::int64_t from, std::int64_t to) {
      const std::int64_t dp = detail::covered_within(own_collectives, from, to);
      p.exposed_dp_comm_ns += dp;
      p.other_ns += to - from - dp;
    };
    // Walk the compute events in start order; a gap ends where one starts after all before it ended.
    std::int64_t covered_to = 0;
    for (std::size_t i = 0; i < compute.size(); ++i) {
      const TimelineEvent& e = *compute[i];
      if (e.start_ns > covered_to) {
        const std::int64_t g0 = covered_to, g1 = e.start_ns;
        // The inputs of every action starting at g1 (one, except in a measured timeline).
        bool any = false;
        std::int64_t ready = g0, arrived = g0;
        for (std::size_t k = i; k < compute.size() && compute[k]->start_ns == g1; ++k) {
          std::tuple<bool, int, int> inputs[2];
          const int n = input_recvs(compute[k]->action, inputs);
          for (int j = 0; j < n; ++j) {
            const auto [grad, stage, mb] = inputs[j];
            const std::int64_t at = slot(grad, stage, mb);
            if (at == kNone || recv[static_cast<std::size_t>(at)].first == kNone) continue;
            const Interval transfer = recv[static_cast<std::size_t>(at)];
            // RECV_F(s) carries the forward of s-1, RECV_B(s) the input gradient of s+1.
            const std::int64_t out = slot(grad, grad ? stage + 1 : stage - 1, mb);
            const std::int64_t made = out != kNone ? produced[static_cast<std::size_t>(out)] : kNone;
            any = true;
            ready = std::max(ready, made != kNone ? made : transfer.first);
            arrived = std::max(arrived, transfer.second);
          }
        }
        if (any) {
          ready = std::min(ready, g1);
          arrived = std::clamp(arrived, ready, g1);
          waiting[r] += ready - g0;
          p.exposed_pp_comm_ns += arrived - ready;
          unexplained(arrived, g1);
        } else {
          unexplained(g0, g1);
        }
      }
      busy[r] += std::max<std::int64_t>(0, e.end_ns - std::max(e.start_ns, covered_to));
      covered_to = std::max(covered_to, e.end_ns);
    }
    for (std::size_t i : touched) recv[i] = {kNone, kNone};
    touched.clear();
    // After the rank's last action: the drain, then the communication that outlives compute.
    waiting[r] += std::max<std::int64_t>(0, compute_end - covered_to);
    p.exposed_dp_comm_ns += tail_dp;
    p.exposed_pp_comm_ns += tail_pp;
    p.other_ns += tail - tail_dp - tail_pp;
  }

  // A rank with less work than the busiest must wait at least the difference: that much of its
  // pipeline waiting is stage imbalance, the rest the pipeline bubble.
  const std::int64_t busiest = busy.empty() ? 0 : *std::max_element(busy.begin(), busy.end());
  for (std::size_t r = 0; r < parts.size(); ++r) {
    parts[r].imbalance_ns = std::min(busiest - busy[r], waiting[r]);
    parts[r].pipeline_bubble_ns = waiting[r] - parts[r].imbalance_ns;
  }
  return parts;
}

}  // namespace pipelab
