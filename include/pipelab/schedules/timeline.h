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

struct Timeline {
  // Per rank: compute events in execution order, transfers in the order they were posted (a
  // transfer may start after later compute events); consumers sort intervals themselves.
  std::vector<std::vector<TimelineEvent>> ranks;

  /// Latest end over all events (the first event is taken to start the iteration at 0).
  std::int64_t makespan_ns() const;
  bool operator==(const Timeline&) const = default;
};

/// A flat array of {"rank","action","stream","start_ns","end_ns","bytes","flops"} records.
nlohmann::json timeline_to_json(const Timeline& t);
/// Throws InputError naming the record and field on malformed input.
Timeline timeline_from_json(const nlohmann::json& j);

}  // namespace pipelab
