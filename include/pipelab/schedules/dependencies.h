// The data dependencies of the schedule IR, in one place: which facts ("signals") an action needs
// before it may start and which it makes true when it completes. The validator's replay, the
// simulator and the runtime executor all use these functions, so they agree on what a schedule means.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "pipelab/schedules/action.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab {

enum class Signal : std::uint8_t {
  Forward,     // F(s, mb) has run: its output activation exists
  InputGrad,   // I(s, mb) or B(s, mb) has run: the gradient w.r.t. its input exists
  WeightGrad,  // W(s, mb) or B(s, mb) has run
  SentF,       // SEND_F(s, mb) has been posted: the activation is on its way to stage s+1
  SentB,       // SEND_B(s, mb) has been posted: the input gradient is on its way to stage s-1
};
inline constexpr int kNumSignals = 5;

struct SignalKey {
  Signal signal;
  std::int32_t stage;
  std::int32_t mb;
  bool operator==(const SignalKey&) const = default;
};

/// "F(2, 3) done" style description for diagnostics.
std::string describe(const SignalKey& key);

/// A small fixed-capacity set (no allocation on the simulator's hot path).
struct SignalSet {
  std::array<SignalKey, 4> items{};
  int count = 0;
  void add(SignalKey k) { items[static_cast<std::size_t>(count++)] = k; }
  const SignalKey* begin() const { return items.data(); }
  const SignalKey* end() const { return items.data() + count; }
};

/// How cross-rank data dependencies are expressed. Implicit: a compute-only schedule, where a
/// consumer depends directly on the producer's compute on another rank. Explicit: a lowered
/// schedule, where it depends on the producer rank's SEND (its RECV is a non-blocking post that
/// the validator requires before the consumer).
enum class CommMode : std::uint8_t { Implicit, Explicit };

/// Signals `a` needs before it may start.
SignalSet prerequisites(const Action& a, const PipelineShape& shape, CommMode mode);

/// Signals `a` makes true when it completes.
SignalSet completions(const Action& a);

/// Dense numbering of signals for a shape: index = (signal, stage, mb).
class SignalIndex {
 public:
  explicit SignalIndex(const PipelineShape& shape) : stages_(shape.stages), mbs_(shape.microbatches) {}
  std::size_t size() const { return static_cast<std::size_t>(kNumSignals) * stages_ * mbs_; }
  std::size_t operator()(const SignalKey& k) const {
    return (static_cast<std::size_t>(k.signal) * stages_ + static_cast<std::size_t>(k.stage)) * mbs_ +
           static_cast<std::size_t>(k.mb);
  }

 private:
  std::size_t stages_;
  std::size_t mbs_;
};

/// The stage on the other end of a SEND/RECV: SEND_F(s) -> s+1, RECV_F(s) <- s-1, SEND_B(s) -> s-1,
/// RECV_B(s) <- s+1. Only meaningful for P2P ops (is_p2p).
constexpr int peer_stage(const Action& a) {
  return (a.op == Op::SendF || a.op == Op::RecvB) ? a.stage + 1 : a.stage - 1;
}

/// The RECV that matches a SEND (and the SEND that matches a RECV): same microbatch, peer stage.
constexpr Action matching_p2p(const Action& a) {
  const Op partner = a.op == Op::SendF ? Op::RecvF : a.op == Op::RecvF ? Op::SendF : a.op == Op::SendB ? Op::RecvB : Op::SendB;
  return Action::make(partner, peer_stage(a), a.mb);
}

/// The RECV a consumer must have posted before it may use the data a SentF/SentB signal announces
/// (the RECV matching the SEND that makes the signal true).
constexpr Action receive_for(const SignalKey& sent) {
  return matching_p2p(Action::make(sent.signal == Signal::SentF ? Op::SendF : Op::SendB, sent.stage, sent.mb));
}

/// True when a P2P op has no peer stage in its chain (e.g. SEND_F from a chain's last stage).
inline bool p2p_past_chain_end(const Action& a, const PipelineShape& shape) {
  return peer_stage(a) > a.stage ? shape.last_in_chain(a.stage) : shape.first_in_chain(a.stage);
}

/// True when two stages live on different ranks, so data between them crosses a link.
inline bool crosses_ranks(const PipelineShape& shape, int from, int to) { return shape.rank_of(from) != shape.rank_of(to); }

}  // namespace pipelab
