// Discrete-event core; see engine.h. Events are (time, seq, kind, rank, payload) in a binary heap.
// A rank that cannot start its next action parks on the missing signal (an intrusive list per
// signal; a rank waits on at most one at a time) and is woken when the signal arrives.
#include "pipelab/sim/engine.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"
#include "pipelab/schedules/dependencies.h"
#include "pipelab/schedules/replay.h"

namespace pipelab::sim {
namespace {

enum class EventKind : std::uint8_t { RankReady, ActionDone, SignalArrives };

struct Event {
  std::int64_t time;
  std::uint64_t seq;
  EventKind kind;
  std::int32_t rank;
  std::uint64_t payload;  // ActionDone: list position; SignalArrives: signal index

  // std::priority_queue is a max-heap: "greater" means later.
  bool operator<(const Event& o) const { return time != o.time ? time > o.time : seq > o.seq; }
};

constexpr std::int64_t kNotYet = -1;  // a time not reached (yet)

// Simulated time is bounded (limits::kMaxDurationNs per action or transfer, limits::kMaxSimulatedNs
// in all): a cost that breaks a bound is refused with the bound, so the time arithmetic below
// (a time plus a duration, both within the bounds) never overflows.
std::int64_t checked_duration(std::int64_t ns, int rank, const Action& a, std::string_view what) {
  if (ns < 0 || ns > limits::kMaxDurationNs) {
    throw InputError("simulate: the " + std::string(what) + " of " + to_string(a) + " on rank " + std::to_string(rank) +
                     (ns < 0 ? " is negative (" + std::to_string(ns) + " ns)" : " exceeds the limit of " + std::to_string(limits::kMaxDurationNs) +
                                                                                  " ns (about 3 years) per action") +
                     ": the model, GPU, profile or flags give an absurd cost");
  }
  return ns;
}

std::int64_t checked_end(std::int64_t start, std::int64_t ns, int rank, const Action& a) {
  const std::int64_t end = start + ns;
  if (end > limits::kMaxSimulatedNs) {
    throw InputError("simulate: " + to_string(a) + " on rank " + std::to_string(rank) + " would end at " + std::to_string(end) +
                     " ns, past the limit of simulated time " + std::to_string(limits::kMaxSimulatedNs) + " ns (about 3 years)");
  }
  return end;
}

class Engine {
 public:
  Engine(const Schedule& s, const CostModel& cost, const SimOptions& options)
      : s_(s),
        cost_(cost),
        dp_compute_loss_(std::clamp(cost.dp_collective_compute_loss(), 0.0, 1.0)),
        options_(options),
        index_(s.shape),
        signalled_(index_.size(), 0),
        waiting_head_(index_.size(), -1),
        ranks_(s.ranks.size()) {
    result_.timeline.ranks.resize(s.ranks.size());
    // Compute and send events of a rank, plus the receives its peers post to it: about its list.
    if (options.record_timeline) {
      for (std::size_t r = 0; r < s.ranks.size(); ++r) result_.timeline.ranks[r].reserve(s.ranks[r].size() + 8);
    }
    result_.memory.resize(s.ranks.size());
    result_.peak_activation_bytes.assign(s.ranks.size(), 0);
    if (!options.iteration_starts.empty()) {
      if (options.iteration_starts.size() != s.ranks.size()) {
        throw InputError("simulate: iteration starts given for " + std::to_string(options.iteration_starts.size()) + " ranks, schedule has " +
                         std::to_string(s.ranks.size()));
      }
      barriers_ = options.iteration_starts.front().size();
      for (const auto& starts : options.iteration_starts) {
        if (starts.size() != barriers_) throw InputError("simulate: every rank needs the same number of iteration starts");
      }
      arrived_.assign(barriers_, 0);
      open_at_.assign(barriers_, kNotYet);
      reductions_done_.assign(barriers_, 0);
    }
    if (options_.optimizer_step_ns < 0 || options_.optimizer_step_ns > limits::kMaxDurationNs) {
      throw InputError("simulate: the optimizer step time " + std::to_string(options_.optimizer_step_ns) + " ns is out of range");
    }
    if (!options.activations.empty() && static_cast<int>(options.activations.size()) != s.shape.stages) {
      throw InputError("simulate: activation table has " + std::to_string(options.activations.size()) +
                       " stages, schedule has " + std::to_string(s.shape.stages));
    }
    prepare_param_gathers();
  }

  SimResult run() {
    for (std::size_t r = 0; r < ranks_.size(); ++r) {
      begin_iteration(static_cast<int>(r));
      push(0, EventKind::RankReady, static_cast<int>(r), 0);
    }
    for (;;) {
      Event e;
      if (!queue_.empty() && (queue_.top().time == now_ || now_head_ == now_events_.size())) {
        e = queue_.top();
        queue_.pop();
      } else if (now_head_ < now_events_.size()) {
        e = now_events_[now_head_++];
        if (now_head_ == now_events_.size()) {
          now_events_.clear();
          now_head_ = 0;
        }
      } else {
        break;
      }
      ++result_.events;
      now_ = e.time;
      switch (e.kind) {
        case EventKind::RankReady:
          if (ranks_[static_cast<std::size_t>(e.rank)].wake_at == e.time) ranks_[static_cast<std::size_t>(e.rank)].wake_at = kNotYet;
          advance(e.rank);
          break;
        case EventKind::ActionDone: finish(e.rank, e.payload); break;
        case EventKind::SignalArrives: arrive(e.payload); break;
      }
    }
    report_deadlock();
    return std::move(result_);
  }

 private:
  // One chunk's parameter all-gather in the current iteration (CostModel::param_gather).
  struct GatherSlot {
    bool dispatched = false;
    bool forward_seen = false;     // its first forward reached the front of the rank's list
    bool gather_bound = false;     // that forward ends with the last bucket, not with its own compute
    std::int64_t start = 0;        // on the data-parallel link
    std::int64_t forward_at = 0;   // when that forward may start: its layers wait for their buckets
  };

  struct RankState {
    std::size_t pos = 0;
    std::int64_t free_at = 0;   // compute stream busy until
    std::int64_t link_free = 0; // outgoing link busy until
    std::int64_t dp_link_free = 0;  // data-parallel collectives busy until
    std::int64_t last_compute_start = 0;  // of the latest compute action started
    std::int64_t compute_ready_at = 0;    // the last pass's real end when a reduction beside it slowed it
    bool busy = false;
    std::size_t next_iteration = 0;     // index into options.iteration_starts[rank]
    bool at_barrier = false;            // counted in arrived_ for next_iteration
    std::int64_t wake_at = kNotYet;     // a RankReady is scheduled for this time
    std::int64_t step_done = kNotYet;   // overlap: when this rank's own optimizer step ends
    std::int32_t next_waiting = -1;  // intrusive list of ranks parked on one signal
    std::int64_t held_bytes = 0;
    std::vector<GatherSlot> gathers;  // per chunk of the rank, this iteration's parameter all-gather
    int forwards = 0;                 // forwards reached this iteration (aligned gathers' dispatch clock)
    std::size_t forward_counted_at = static_cast<std::size_t>(-1);  // the list position last counted
  };

  // Events at the current time (a rank woken by a signal, a zero-time action) skip the heap: each
  // was pushed after every heap event of this time (those were pushed while time was earlier), so
  // taking the heap's events of this time first, then these in push order, is (time, seq) order.
  void push(std::int64_t t, EventKind k, int rank, std::uint64_t payload) {
    const Event e{t, seq_++, k, rank, payload};
    if (t == now_) {
      now_events_.push_back(e);
    } else {
      queue_.push(e);
    }
  }

  const std::vector<Slot>& list(int r) const { return s_.ranks[static_cast<std::size_t>(r)]; }

  void record(int r, const TimelineEvent& e) {
    result_.makespan_ns = std::max(result_.makespan_ns, e.end_ns);
    if (options_.record_timeline) result_.timeline.ranks[static_cast<std::size_t>(r)].push_back(e);
  }

  // Runs zero-time posts and starts the next compute action of rank r, if it can start now.
  void advance(int r) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    if (st.busy) return;
    const auto& actions = list(r);
    while (st.pos < actions.size()) {
      if (st.next_iteration < barriers_ &&
          st.pos == options_.iteration_starts[static_cast<std::size_t>(r)][st.next_iteration] && !pass_optimizer_step(r)) {
        return;
      }
      if (!actions[st.pos]) {  // idle slots carry no meaning for timing
        ++st.pos;
        continue;
      }
      const Action& a = *actions[st.pos];
      for (const SignalKey& k : prerequisites(a, s_.shape, CommMode::Explicit)) {
        const std::size_t sig = index_(k);
        if (!signalled_[sig]) {
          park(r, sig);
          return;
        }
      }
      if (is_comm(a.op)) {
        post(r, a);
        ++st.pos;
        continue;
      }
      if (st.compute_ready_at > now_) {  // the previous pass, slowed by a reduction beside it, has not ended
        wake(r, st.compute_ready_at);
        return;
      }
      std::int64_t duration = checked_duration(cost_.duration_ns(r, a), r, a, "duration");
      bool gather_bound = false;
      if (any_gather_ && (a.op == Op::F || a.op == Op::OverlapFB) && !parameters_gathered(r, a, duration, gather_bound)) return;
      // A data-parallel collective running beside it holds some SMs: the action is slowed by the share of
      // its speed they cost it (CostModel::dp_collective_compute_loss), times the overlap (not a forward
      // paced by its parameters' gather: its compute has slack).
      if (st.dp_link_free > now_ && !gather_bound) {
        duration += static_cast<std::int64_t>(dp_compute_loss_ * static_cast<double>(std::min(duration, st.dp_link_free - now_)));
      }
      const std::int64_t end = checked_end(now_, duration, r, a);
      record(r, TimelineEvent{a, Stream::Compute, now_, end, 0, cost_.flops(a)});
      st.last_compute_start = now_;
      allocate(r, a);
      st.busy = true;
      st.free_at = end;
      push(st.free_at, EventKind::ActionDone, r, st.pos);
      return;
    }
  }

  void finish(int r, std::uint64_t pos) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    const Action& a = *list(r)[pos];
    release(r, a);
    for (const SignalKey& k : completions(a)) arrive(index_(k));
    st.busy = false;
    ++st.pos;
    advance(r);
  }

  // A stage's gradient reduction. When only a tail of it must follow the stage's last gradient pass
  // (bucketed reduction: the last bucket), the body runs from that pass's start — REDUCE_GRAD comes
  // right after the pass (add_reduce_grad), so the pass is the latest compute started — and slows the
  // pass by the SMs it holds: the pass really ends that much later, and the tail, the rank's next
  // compute and its sends wait for that. Recorded as the body and the tail, each when the link is busy.
  void post_reduction(int r, const Action& a) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    const std::int64_t whole = checked_duration(cost_.reduce_grad_ns(r, a.stage), r, a, "reduction time");
    const std::int64_t tail = std::min(whole, checked_duration(cost_.reduce_grad_tail_ns(r, a.stage), r, a, "reduction time"));
    const std::int64_t bytes = cost_.reduce_grad_bytes(a.stage);
    if (tail == whole) {
      const std::int64_t start = std::max(now_, st.dp_link_free);
      st.dp_link_free = checked_end(start, whole, r, a);
      if (st.dp_link_free > start) record(r, TimelineEvent{a, Stream::Collective, start, st.dp_link_free, bytes, 0});
      return;
    }
    const std::int64_t body = whole - tail;
    const std::int64_t start = std::max(st.last_compute_start, st.dp_link_free);
    const std::int64_t body_end = checked_end(start, body, r, a);
    const std::int64_t beside_pass = std::clamp<std::int64_t>(now_ - start, 0, body);
    const std::int64_t pass_end = checked_end(now_, static_cast<std::int64_t>(dp_compute_loss_ * static_cast<double>(beside_pass)), r, a);
    st.compute_ready_at = std::max(st.compute_ready_at, pass_end);
    if (pass_end > now_ && options_.record_timeline) {
      // The pass's event ends where it really ended; its sends and this rank's later compute wait for
      // that (post, advance). AnalyticCost buckets only the first stage, whose backward sends nothing.
      auto& events = result_.timeline.ranks[static_cast<std::size_t>(r)];
      for (auto e = events.rbegin(); e != events.rend(); ++e) {
        if (e->stream != Stream::Compute) continue;
        if (e->start_ns == st.last_compute_start) e->end_ns = pass_end;
        break;
      }
    }
    result_.makespan_ns = std::max(result_.makespan_ns, pass_end);
    const std::int64_t tail_start = std::max(body_end, pass_end);
    st.dp_link_free = checked_end(tail_start, tail, r, a);
    const std::int64_t tail_bytes = std::clamp<std::int64_t>(cost_.reduce_grad_tail_bytes(a.stage), 0, bytes);
    if (body > 0) record(r, TimelineEvent{a, Stream::Collective, start, body_end, bytes - tail_bytes, 0});
    if (tail > 0) record(r, TimelineEvent{a, Stream::Collective, tail_start, st.dp_link_free, tail_bytes, 0});
  }

  // SEND: the transfer occupies this rank's outgoing link; the signal holds when the data arrives.
  // RECV: a non-blocking post; nothing to do. REDUCE_GRAD: a collective on the data-parallel link,
  // overlapping whatever compute follows it; the iteration ends when the last one does.
  void post(int r, const Action& a) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    if (a.op == Op::ReduceGrad) {
      post_reduction(r, a);
      return;
    }
    if (a.op != Op::SendF && a.op != Op::SendB) return;
    const Action recv = matching_p2p(a);
    const int dst = s_.shape.rank_of(recv.stage);
    // Activations cross the boundary after the sender's stage; gradients the one after the receiver's.
    const std::int64_t bytes = cost_.boundary_bytes(a.op == Op::SendF ? a.stage : recv.stage);
    // Not before the pass that produced it has really ended (a reduction beside it may have slowed it).
    const std::int64_t start = std::max({now_, st.link_free, st.compute_ready_at});
    const std::int64_t end = checked_end(start, checked_duration(cost_.p2p_ns(bytes, r, dst), r, a, "transfer time"), r, a);
    st.link_free = end;
    record(r, TimelineEvent{a, Stream::Send, start, end, bytes, 0});
    record(dst, TimelineEvent{recv, Stream::Recv, start, end, bytes, 0});
    const std::size_t sig = index_(completions(a).items[0]);
    if (end == now_) {
      arrive(sig);
    } else {
      push(end, EventKind::SignalArrives, r, sig);
    }
  }

  // The optimizer step before iteration st.next_iteration + 1: true once rank r may go on now.
  bool pass_optimizer_step(int r) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    const std::size_t k = st.next_iteration;
    std::int64_t ready = kNotYet;
    if (options_.optimizer_step == OptimizerStep::Overlap) {
      // Its own gradients reduced, its own step: other ranks do not hold it back.
      if (!st.at_barrier) {
        st.at_barrier = true;
        st.step_done = std::max(now_, st.dp_link_free) + options_.optimizer_step_ns;
      }
      ready = st.step_done;
    } else {
      if (!st.at_barrier) {
        st.at_barrier = true;
        reductions_done_[k] = std::max(reductions_done_[k], st.dp_link_free);
        if (++arrived_[k] == ranks_.size()) {
          open_at_[k] = std::max(now_, reductions_done_[k]) + options_.optimizer_step_ns;
          for (std::size_t q = 0; q < ranks_.size(); ++q) wake(static_cast<int>(q), open_at_[k]);
        }
      }
      ready = open_at_[k];
      if (ready == kNotYet) return false;  // the last rank to arrive wakes everyone
    }
    if (now_ < ready) {
      wake(r, ready);
      return false;
    }
    st.at_barrier = false;
    ++st.next_iteration;
    begin_iteration(r);
    return true;
  }

  // Parameter all-gathers (CostModel::param_gather). Each rank's chunks in the order their first
  // forwards (F, or an F&B unit's forward half) come in its list, and how many forwards precede each.
  void prepare_param_gathers() {
    const int stages = s_.shape.stages;
    gathers_.resize(static_cast<std::size_t>(stages));
    chunk_of_stage_.assign(static_cast<std::size_t>(stages), -1);
    rank_chunks_.resize(ranks_.size());
    aligned_dispatch_.resize(ranks_.size());
    for (std::size_t r = 0; r < s_.ranks.size(); ++r) {
      int forwards = 0;
      std::vector<int> first_forward;  // per chunk, the forwards before its first
      for (const Slot& slot : s_.ranks[r]) {
        if (!slot || (slot->op != Op::F && slot->op != Op::OverlapFB) || slot->stage < 0 || slot->stage >= stages) continue;
        auto& chunk = chunk_of_stage_[static_cast<std::size_t>(slot->stage)];
        if (chunk < 0) {
          chunk = static_cast<int>(rank_chunks_[r].size());
          rank_chunks_[r].push_back(slot->stage);
          first_forward.push_back(forwards);
          const ParamGather g = cost_.param_gather(static_cast<int>(r), slot->stage);
          checked_duration(g.ns, static_cast<int>(r), *slot, "parameter all-gather time");
          gathers_[static_cast<std::size_t>(slot->stage)] = g;
          any_gather_ = any_gather_ || g.ns > 0;
        }
        ++forwards;
      }
      // Aligned (Megatron's interleaved schedule, param_sync_func): chunks 0 and 1 at the iteration's
      // start, chunk k + 1 (k >= 1) at the forward step pp_rank steps before chunk k's first forward.
      auto& at = aligned_dispatch_[r];
      at.assign(rank_chunks_[r].size(), -1);
      for (std::size_t k = 2; k < at.size(); ++k) at[k] = std::max(0, first_forward[k - 1] - static_cast<int>(r));
    }
    if (!any_gather_) return;
    for (std::size_t r = 0; r < ranks_.size(); ++r) ranks_[r].gathers.resize(rank_chunks_[r].size());
  }

  // A new iteration: no chunk gathered yet; aligned gathers of chunks 0 and 1 start now.
  void begin_iteration(int r) {
    if (!any_gather_) return;
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    std::fill(st.gathers.begin(), st.gathers.end(), GatherSlot{});
    st.forwards = 0;
    const auto& chunks = rank_chunks_[static_cast<std::size_t>(r)];
    for (std::size_t k = 0; k < std::min<std::size_t>(2, chunks.size()); ++k) {
      if (gathers_[static_cast<std::size_t>(chunks[k])].aligned) dispatch_gather(r, static_cast<int>(k));
    }
  }

  // Puts chunk k's gather on the rank's data-parallel link from now (after what occupies it). The
  // timeline shows it on the collective stream under the chunk's next forward.
  void dispatch_gather(int r, int k) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    GatherSlot& g = st.gathers[static_cast<std::size_t>(k)];
    if (g.dispatched) return;
    g.dispatched = true;
    const int stage = rank_chunks_[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)];
    const ParamGather& pg = gathers_[static_cast<std::size_t>(stage)];
    g.start = std::max(now_, st.dp_link_free);
    if (pg.ns <= 0) return;
    Action label = Action::make(Op::F, stage, 0);
    const auto& actions = list(r);
    for (std::size_t i = st.pos; i < actions.size(); ++i) {
      if (actions[i] && (actions[i]->op == Op::F || actions[i]->op == Op::OverlapFB) && actions[i]->stage == stage) {
        label = Action::make(Op::F, stage, actions[i]->mb);
        break;
      }
    }
    st.dp_link_free = checked_end(g.start, pg.ns, r, label);
    record(r, TimelineEvent{label, Stream::Collective, g.start, st.dp_link_free, pg.bytes, 0});
  }

  // Whether forward `a` (an F, or an F&B unit's forward half) of `duration` may start now. The first
  // forward of a chunk in an iteration runs its layers as their buckets arrive, one after another from
  // the gather's start: with b buckets of gather g and forward f each (the whole gather G, the whole
  // forward F), it ends at the latest of now + F, start + g + F and start + G + f (then `gather_bound`:
  // its compute has slack between buckets). It starts that much later than now + F would end, so the
  // wait shows as the rank idling beside the gather (schedules/idle_parts.cc counts it as DP
  // communication).
  bool parameters_gathered(int r, const Action& a, std::int64_t duration, bool& gather_bound) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    if (st.forward_counted_at != st.pos) {  // a forward step: aligned gathers due at it start now
      st.forward_counted_at = st.pos;
      const auto& at = aligned_dispatch_[static_cast<std::size_t>(r)];
      for (std::size_t k = 2; k < at.size(); ++k) {
        if (at[k] == st.forwards && gathers_[static_cast<std::size_t>(rank_chunks_[static_cast<std::size_t>(r)][k])].aligned) {
          dispatch_gather(r, static_cast<int>(k));
        }
      }
      ++st.forwards;
    }
    const int k = chunk_of_stage_[static_cast<std::size_t>(a.stage)];
    if (k < 0) return true;
    GatherSlot& g = st.gathers[static_cast<std::size_t>(k)];
    if (!g.forward_seen) {
      g.forward_seen = true;
      dispatch_gather(r, k);
      const ParamGather& pg = gathers_[static_cast<std::size_t>(a.stage)];
      g.forward_at = now_;
      if (pg.ns > 0) {
        const double forward = static_cast<double>(duration);
        const double buckets = std::max(1, pg.buckets);
        const double gather = static_cast<double>(pg.ns), start = static_cast<double>(g.start), now = static_cast<double>(now_);
        const double compute_bound = std::max(now + forward, start + gather / buckets + forward);
        const double gather_end = start + gather + forward / buckets;
        g.gather_bound = gather_end > compute_bound;
        g.forward_at = now_ + static_cast<std::int64_t>(std::llround(std::max(compute_bound, gather_end) - (now + forward)));
      }
    }
    if (now_ < g.forward_at) {
      wake(r, g.forward_at);
      return false;
    }
    gather_bound = g.gather_bound;  // the chunk's first forward only: it starts now
    g.gather_bound = false;
    return true;
  }

  void wake(int r, std::int64_t at) {
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    if (st.wake_at == at) return;
    st.wake_at = at;
    push(at, EventKind::RankReady, r, 0);
  }

  void park(int r, std::size_t sig) {
    ranks_[static_cast<std::size_t>(r)].next_waiting = waiting_head_[sig];
    waiting_head_[sig] = r;
  }

  void arrive(std::size_t sig) {
    signalled_[sig] = 1;
    for (std::int32_t r = waiting_head_[sig]; r >= 0;) {
      const std::int32_t next = ranks_[static_cast<std::size_t>(r)].next_waiting;
      ranks_[static_cast<std::size_t>(r)].next_waiting = -1;
      push(now_, EventKind::RankReady, r, 0);
      r = next;
    }
    waiting_head_[sig] = -1;
  }

  // ---- activation memory -------------------------------------------------------------------
  void change_memory(int r, std::int64_t delta) {
    if (delta == 0) return;
    RankState& st = ranks_[static_cast<std::size_t>(r)];
    st.held_bytes += delta;
    if (options_.record_timeline) {
      auto& trace = result_.memory[static_cast<std::size_t>(r)];
      if (!trace.empty() && trace.back().time_ns == now_) {
        trace.back().bytes = st.held_bytes;
      } else {
        trace.push_back({now_, st.held_bytes});
      }
    }
    auto& peak = result_.peak_activation_bytes[static_cast<std::size_t>(r)];
    peak = std::max(peak, st.held_bytes);
  }
  const StageActivation& act(int stage) const { return options_.activations[static_cast<std::size_t>(stage)]; }
  // An F&B unit run layer by layer (SimOptions::overlap_frees_by_layer): what it holds beyond its
  // start while it runs; its end settles to forward minus backward.
  std::int64_t layered_overlap_bytes(const Action& a) const {
    const std::int64_t f = act(a.stage).bytes;
    return std::min(f, std::max<std::int64_t>(0, f - act(a.b_stage).bytes) + act(a.stage).largest_layer);
  }
  // The recompute transient of a backward: held from its start to its end (StageActivation).
  std::int64_t recompute_transient(const Action& a) const {
    if (a.op == Op::B || a.op == Op::I) return act(a.stage).recompute_transient;
    if (a.op == Op::OverlapFB) return act(a.b_stage).recompute_transient;
    return 0;
  }
  void allocate(int r, const Action& a) {
    if (options_.activations.empty()) return;
    if (a.op == Op::OverlapFB && options_.overlap_frees_by_layer) {
      change_memory(r, layered_overlap_bytes(a));
    } else if (a.op == Op::F || a.op == Op::OverlapFB) {
      change_memory(r, act(a.stage).bytes);
    }
    change_memory(r, recompute_transient(a));
  }
  void release(int r, const Action& a) {
    if (options_.activations.empty()) return;
    change_memory(r, -recompute_transient(a));
    switch (a.op) {
      case Op::B: change_memory(r, -act(a.stage).bytes); break;
      case Op::I: change_memory(r, act(a.stage).allocated_by_input_grad - act(a.stage).freed_by_input_grad); break;
      case Op::W:
        change_memory(r, -(act(a.stage).bytes - act(a.stage).freed_by_input_grad + act(a.stage).allocated_by_input_grad));
        break;
      case Op::OverlapFB: {
        const std::int64_t held = options_.overlap_frees_by_layer ? layered_overlap_bytes(a) : act(a.stage).bytes;
        change_memory(r, act(a.stage).bytes - held - act(a.b_stage).bytes);
        break;
      }
      default: break;
    }
  }

  void report_deadlock() const {
    std::vector<std::size_t> positions;
    for (const RankState& st : ranks_) positions.push_back(st.pos);
    const auto holds = [&](const SignalKey& k) { return signalled_[index_(k)] != 0; };
    std::string message;
    for (const StuckRank& st : stuck_ranks(s_, positions, CommMode::Explicit, holds)) {
      const std::string waits = describe_waits(st);
      message += "\n  rank " + std::to_string(st.rank) + " at position " + std::to_string(st.position) + " (" + to_string(st.action) +
                 ") waits for " + (waits.empty() ? "its stream" : waits);
    }
    if (!message.empty()) throw ScheduleError("simulation deadlocked:" + message);
  }

  const Schedule& s_;
  const CostModel& cost_;
  const double dp_compute_loss_;  // CostModel::dp_collective_compute_loss
  const SimOptions& options_;
  SignalIndex index_;
  std::vector<char> signalled_;  // per signal: it holds (a byte, not a time: nothing reads when)
  std::vector<std::int32_t> waiting_head_;
  std::vector<RankState> ranks_;
  std::priority_queue<Event> queue_;  // events after the current time
  std::vector<Event> now_events_;     // events at the current time, in push order, from now_head_
  std::size_t now_head_ = 0;
  std::uint64_t seq_ = 0;
  std::int64_t now_ = 0;
  std::size_t barriers_ = 0;                    // optimizer steps between iterations
  std::vector<ParamGather> gathers_;            // per stage (CostModel::param_gather)
  std::vector<int> chunk_of_stage_;             // its index among its rank's chunks
  std::vector<std::vector<int>> rank_chunks_;   // per rank, its stages in the order of their first forwards
  std::vector<std::vector<int>> aligned_dispatch_;  // per rank and chunk, the forward step an aligned gather starts at (-1: at the start)
  bool any_gather_ = false;
  std::vector<std::size_t> arrived_;            // sync: ranks at each step
  std::vector<std::int64_t> open_at_;           // sync: when each step is done
  std::vector<std::int64_t> reductions_done_;   // sync: latest gradient reduction before each step
  SimResult result_;
};

}  // namespace

SimResult simulate(const Schedule& lowered, const CostModel& cost, const SimOptions& options) {
  SimResult r = Engine(lowered, cost, options).run();
  return r;
}

}  // namespace pipelab::sim
