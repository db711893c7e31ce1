// Timeline: what happened (or is predicted to happen) on each rank: the one output type of both
// the simulator and the runtime. All metrics are computed from it by one implementation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipelab/schedules/action.h"

namespace pipelab {

enum class Stream : std::uint8_t {
  Compute,  // the rank's compute stream: F, B, I, W, F&B
  Send,     // outgoing P2P transfers
  Recv,        // incoming P2P transfers (the time the data is in flight towards this rank)
  Collective,  // data-parallel gradient reduction (REDUCE_GRAD)
};

std::string_view stream_name(Stream s);

struct TimelineEvent {
  Action action;
  Stream stream = Stream::Compute;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;   // bytes moved (comm) or activation bytes produced (compute)
  double flops = 0;         // floating-point operations of the action

  std::int64_t duration_ns() const { return end_ns - start_ns; }
  bool operator==(const TimelineEvent&) const = default;
};

/// One kernel or memory copy a GPU ran inside an action (recorded by CUPTI in a measured run), on
/// the rank's iteration clock: the detail under a timeline's compute events.
struct DeviceActivity {
  int rank = 0;
  std::string name;           // the kernel's (mangled) name, or "memcpy" for a copy
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int64_t bytes = 0;     // copies: bytes moved; kernels: 0
  std::string action;         // the enclosing action in IR text ("2F0", "(0F3;3B1)OVERLAP_F_B")
  bool operator==(const DeviceActivity&) const = default;
};

/// One phase of a compute action's time (docs/simulator.md, "Phases"): a part of the work, summed
/// over the stage's layers, with the communication running during it.
struct Phase {
  std::string name;                  // "attention & dense", "dispatch", "F experts | B dispatch", ...
  std::int64_t ns = 0;               // the phase's share of the action's duration
  std::int64_t comm_ns = 0;          // transfer time of the communication in it
  std::int64_t exposed_comm_ns = 0;  // what the phase takes beyond its compute alone (<= ns)
  bool operator==(const Phase&) const = default;
};

/// How every occurrence of one compute action kind, (op, stage) or an F&B unit's (stage, b_stage),
/// splits into consecutive phases, in order; each occurrence's duration is split in proportion.
struct ActionPhases {
  Op op = Op::F;
  int stage = 0;
  int b_stage = -1;  // F&B units only
  std::vector<Phase> phases;
  /// Whether `a` is an occurrence of this kind.
  bool matches(const Action& a) const { return a.op == op && a.stage == stage && (op != Op::OverlapFB || a.b_stage == b_stage); }
  bool operator==(const ActionPhases&) const = default;
};

/// The entry of `kinds` that `a` is an occurrence of, or null.
const ActionPhases* find_phases(const std::vector<ActionPhases>& kinds, const Action& a);

/// One phase of one event on the time axis.
struct PhaseSpan {
  const Phase* phase = nullptr;
  std::int64_t start_ns = 0, end_ns = 0;
  std::int64_t exposed_ns = 0;  // the phase's exposed communication, as the cost model gives it
};

/// The phases of `split` laid end to end over event `e`; the last ends at e.end_ns. The event may be
/// longer than the phases' sum (compute slowed by a data-parallel collective beside it) or differ by
/// rounding: the exposed communication keeps its figure and the rest stretches to fill the event (when
/// the event is shorter than the exposed parts, everything scales alike).
std::vector<PhaseSpan> lay_out_phases(const TimelineEvent& e, const ActionPhases& split);

struct Timeline {
  // Per rank: compute events in execution order, transfers in the order they were posted (a
  // transfer may start after later compute events); consumers sort intervals themselves.
  std::vector<std::vector<TimelineEvent>> ranks;

  /// Latest end over all events (the first event is taken to start the iteration at 0).
  std::int64_t makespan_ns() const;
  bool operator==(const Timeline&) const = default;
};

/// Each phase name's time over the timeline's compute events (laid out by lay_out_phases), summed
/// per rank and averaged over the ranks, rounded to the ns; in order of first appearance. Empty when
/// no event has phases.
std::vector<Phase> phase_totals(const Timeline& t, const std::vector<ActionPhases>& kinds);

/// A flat array of {"rank","action","stream","start_ns","end_ns","bytes","flops"} records.
nlohmann::json timeline_to_json(const Timeline& t);
/// Throws InputError naming the record and field on malformed input.
Timeline timeline_from_json(const nlohmann::json& j);

}  // namespace pipelab
