// The transport interface: point-to-point messages between pipeline ranks, keyed like the IR's
// RECV actions, plus the few collectives a run needs (barrier, gather, outcome agreement, abort).
// Implementations: in-process (threads, inproc_transport.h), MPI (processes, mpi_transport.h);
// NCCL implements the same interface. One Transport object per rank, used by that rank only.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/runtime/buffer.h"
#include "pipelab/runtime/device_clock.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::runtime {

using Clock = std::chrono::steady_clock;

enum class Direction : std::uint8_t {
  Forward,   // an activation, stage s-1 -> s (SEND_F / RECV_F)
  Backward,  // an input gradient, stage s+1 -> s (SEND_B / RECV_B)
};

/// A message of one iteration: the data `stage` receives for microbatch `mb`, i.e. the stage of
/// the matching RECV_F / RECV_B action. Unique within an iteration.
struct MessageKey {
  Direction dir = Direction::Forward;
  std::int32_t stage = 0;
  std::int32_t mb = 0;
  bool operator==(const MessageKey&) const = default;
};

/// "activation for stage 2, mb 3" / "gradient for stage 1, mb 0".
std::string describe(const MessageKey& key);

/// The message a SEND/RECV action moves, keyed by its RECV's stage (as transports key it).
MessageKey message_of(const Action& p2p);

/// Dense numbering of the messages of a shape (for mailboxes and MPI tags).
struct MessageIndex {
  std::int32_t stages = 1;
  std::int32_t microbatches = 1;
  explicit MessageIndex(const PipelineShape& shape) : stages(shape.stages), microbatches(shape.microbatches) {}
  std::size_t size() const { return 2 * static_cast<std::size_t>(stages) * static_cast<std::size_t>(microbatches); }
  std::size_t operator()(const MessageKey& k) const {
    return (static_cast<std::size_t>(k.dir) * static_cast<std::size_t>(stages) + static_cast<std::size_t>(k.stage)) *
               static_cast<std::size_t>(microbatches) +
           static_cast<std::size_t>(k.mb);
  }
  bool contains(const MessageKey& k) const {
    return k.stage >= 0 && k.stage < stages && k.mb >= 0 && k.mb < microbatches;
  }
};

/// A completed receive. Times are ns on the receiving rank's iteration clock (see barrier()).
/// A device transport hands the buffer over before the device has moved the data: the buffer's
/// fence orders the consumer after the transfer, and `device` times it.
struct Received {
  Buffer buffer;
  std::int64_t sent_ns = 0;     // when the sender posted it (sender's clock; -1 if unknown)
  std::int64_t arrived_ns = 0;  // when this rank first saw it complete
  DeviceInterval device;        // set: the transfer's device-timed interval replaces the two above
};

/// A completed send: when the transport released the sender's buffer.
struct SendCompletion {
  MessageKey key;
  std::int64_t done_ns = 0;
  DeviceInterval device;  // set: the device-timed send replaces [post time, done_ns]
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual std::string_view name() const = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// Waits for all ranks (up to `timeout`; WatchdogTimeout after) and starts a new iteration clock:
  /// returns its epoch. In-process ranks share one epoch; processes take theirs on leaving the barrier.
  /// Throws PeerAborted when another rank failed.
  virtual Clock::time_point barrier(std::chrono::nanoseconds timeout) = 0;

  /// Starts sending `data` to `dst` and returns at once; the transport owns the buffer until the send
  /// completes (in-process: the receiver takes it over). `now_ns` is the iteration clock now.
  virtual void isend(int dst, const MessageKey& key, Buffer data, std::int64_t now_ns) = 0;
  /// Posts a receive of `bytes` from `src` (never blocks); memory comes from `pool` when needed.
  virtual void irecv(int src, const MessageKey& key, std::size_t bytes, BufferPool& pool) = 0;
  /// Waits for a posted receive; nullopt after `timeout`. Throws PeerAborted when another rank failed,
  /// ExecutionError when no receive for `key` was posted or the transport fails.
  virtual std::optional<Received> wait_recv(const MessageKey& key, std::chrono::nanoseconds timeout) = 0;
  /// Lets outstanding transfers advance and records completions; cheap, called between actions.
  virtual void progress() {}
  /// Waits until every send of this rank completed; returns the completions not returned before.
  /// Throws WatchdogTimeout after `timeout`.
  virtual std::vector<SendCompletion> flush_sends(std::chrono::nanoseconds timeout) = 0;
  /// Drops posted receives and pending sends (after a failure), freeing their buffers.
  virtual void cancel_all() noexcept = 0;

  /// Throws PeerAborted if another rank failed.
  virtual void check_abort() = 0;
  /// Tells the other ranks this one failed with `message`; they stop at their next wait or action.
  virtual void abort(const std::string& message) noexcept = 0;

  /// Collectives for result collection; every rank calls them. gather: rank 0 gets every rank's
  /// bytes (index = rank), the others an empty vector. any_failed: true if any rank passed true.
  virtual std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data, std::chrono::nanoseconds timeout) = 0;
  virtual bool any_failed(bool failed, std::chrono::nanoseconds timeout) = 0;
};

/// Makes this process's endpoint of a multi-process transport (one process per rank), e.g.
/// `[&] { return mpi.transport(shape); }`. Whoever owns the buffer pools a transport's messages use
/// makes the transport after them, so that it is destroyed first: after a failure a transport may
/// hold buffers (sends it could not take back) until it is destroyed.
using TransportFactory = std::function<std::unique_ptr<Transport>()>;

/// How a rank waits for data: spin (lowest latency; only with a core per rank), block (sleep on the
/// OS), or auto: spin when ranks <= cores, else spin briefly then block.
enum class WaitPolicy : std::uint8_t { Auto, Spin, Block };

}  // namespace pipelab::runtime
