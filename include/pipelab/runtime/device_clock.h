// Device time for asynchronous backends. A GPU runs an action long after the host enqueued it, so
// its start and end are markers (device events) enqueued in stream order, and the timeline is
// resolved after the iteration, when the device has caught up: no host synchronization per
// action. The executor and the transports handle markers as tokens of a clock; the cpu backend has
// no clock and is timed by the host.
#pragma once

#include <cstdint>

namespace pipelab::runtime {

class DeviceClock {
 public:
  using Token = std::int32_t;
  static constexpr Token kNone = -1;

  virtual ~DeviceClock() = default;

  /// Starts an iteration: forgets the markers of the last one and records the epoch (the executor
  /// calls it right after the iteration barrier). Every rank has its own clock; epochs of ranks
  /// started at one barrier differ by the barrier's release skew.
  virtual void start_iteration() = 0;
  /// A marker in the order of `stream` (an opaque cudaStream_t of this clock's device). Thread-safe:
  /// a transport may mark a sender's clock while its owner marks it too.
  virtual Token mark(void* stream) = 0;
  /// Nanoseconds from the epoch to the marker. Only after the work before the marker has completed
  /// (the backend's finish_iteration synchronized its device). Thread-safe.
  virtual std::int64_t resolve(Token token) = 0;
};

/// An interval timed by a clock: what an asynchronous transport reports for a message.
struct DeviceInterval {
  DeviceClock* clock = nullptr;  // nullptr: the host times given beside it hold
  DeviceClock::Token start = DeviceClock::kNone;
  DeviceClock::Token end = DeviceClock::kNone;
};

}  // namespace pipelab::runtime
