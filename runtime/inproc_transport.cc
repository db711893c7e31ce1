// In-process transport: a mailbox slot per (receiver, message); the sender moves its buffer into
// the slot and publishes it with a release store, the receiver polls the slot. A sense-reversing
// barrier starts every iteration and gives all ranks one epoch.
#include "pipelab/runtime/inproc_transport.h"

#include <atomic>
#include <mutex>
#include <string>

#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/machine.h"
#include "wait.h"

namespace pipelab::runtime {

namespace {

struct MailSlot {
  std::atomic<int> full{0};
  Buffer buffer;
  std::int64_t sent_ns = 0;
};

class InprocTransport;

}  // namespace

struct InprocWorld::State {
  int ranks;
  MessageIndex index;
  WaitPolicy policy;
  std::vector<std::unique_ptr<MailSlot[]>> mail;  // per receiving rank, per message
  std::vector<std::unique_ptr<InprocTransport>> endpoints;

  std::atomic<bool> aborted{false};
  mutable std::mutex error_mutex;
  std::string first_error;
  int first_rank = -1;

  // Barrier: arrivals count up; the last one sets the epoch and bumps the generation.
  std::atomic<int> arrived{0};
  std::atomic<std::uint64_t> generation{0};
  Clock::time_point epoch{};

  // Collectives.
  std::vector<std::vector<std::byte>> gathered;

  State(const PipelineShape& shape, WaitPolicy wait, int cores)
      : ranks(shape.ranks), index(shape), policy(detail::resolve(wait, shape.ranks, cores > 0 ? cores : hardware_cores())) {
    for (int r = 0; r < ranks; ++r) mail.push_back(std::make_unique<MailSlot[]>(index.size()));
    gathered.resize(static_cast<std::size_t>(ranks));
  }

  void probe() const {
    if (aborted.load(std::memory_order_acquire)) {
      std::lock_guard lock(error_mutex);
      throw PeerAborted("stopped because another rank failed: " + first_error);
    }
  }

  // Returns the new epoch, or throws on abort / timeout.
  Clock::time_point barrier(int rank, std::chrono::nanoseconds timeout) {
    const std::uint64_t gen = generation.load(std::memory_order_acquire);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == ranks) {
      arrived.store(0, std::memory_order_relaxed);
      epoch = Clock::now();
      generation.fetch_add(1, std::memory_order_acq_rel);
      return epoch;
    }
    const bool ok = detail::poll_until([&] { return generation.load(std::memory_order_acquire) != gen; }, [&] { probe(); },
                                       Clock::now() + timeout, policy);
    if (!ok) {
      throw WatchdogTimeout("rank " + std::to_string(rank) + " waited " +
                            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                            " ms at the iteration barrier for the other ranks");
    }
    return epoch;
  }

  void abort(int rank, const std::string& message) noexcept {
    std::lock_guard lock(error_mutex);
    if (aborted.load()) return;
    first_rank = rank;
    try {
      first_error = "rank " + std::to_string(rank) + " failed: " + message;
    } catch (...) {
    }
    aborted.store(true, std::memory_order_release);
  }
};

namespace {

class InprocTransport final : public Transport {
 public:
  InprocTransport(InprocWorld::State& world, int rank)
      : world_(world), rank_(rank), posted_(world.index.size(), -1) {
    completions_.reserve(world.index.size());
  }

  std::string_view name() const override { return "inproc"; }
  int rank() const override { return rank_; }
  int size() const override { return world_.ranks; }

  Clock::time_point barrier(std::chrono::nanoseconds timeout) override {
    world_.probe();
    return world_.barrier(rank_, timeout);
  }

  void isend(int dst, const MessageKey& key, Buffer data, std::int64_t now_ns) override {
    check_key(key, dst, "send");
    MailSlot& slot = world_.mail[static_cast<std::size_t>(dst)][world_.index(key)];
    if (slot.full.load(std::memory_order_acquire) != 0) {
      throw ExecutionError("inproc: rank " + std::to_string(rank_) + " sends the " + describe(key) + " to rank " +
                           std::to_string(dst) + " twice (the first was not received)");
    }
    slot.buffer = std::move(data);
    slot.sent_ns = now_ns;
    slot.full.store(1, std::memory_order_release);
    completions_.push_back({key, now_ns});  // handed over: the sender's buffer is gone
  }

  void irecv(int src, const MessageKey& key, std::size_t, BufferPool&) override {
    check_key(key, src, "receive");
    posted_[world_.index(key)] = src;
  }

  std::optional<Received> wait_recv(const MessageKey& key, std::chrono::nanoseconds timeout) override {
    if (!world_.index.contains(key) || posted_[world_.index(key)] < 0) {
      throw ExecutionError("inproc: rank " + std::to_string(rank_) + " waits for the " + describe(key) + " without a posted receive");
    }
    MailSlot& slot = world_.mail[static_cast<std::size_t>(rank_)][world_.index(key)];
    const bool ok = detail::poll_until([&] { return slot.full.load(std::memory_order_acquire) != 0; }, [&] { world_.probe(); },
                                       Clock::now() + timeout, world_.policy);
    if (!ok) return std::nullopt;
    Received r;
    r.buffer = std::move(slot.buffer);
    r.sent_ns = slot.sent_ns;
    r.arrived_ns = slot.sent_ns;  // a hand-over: the data is there the moment it was sent
    slot.full.store(0, std::memory_order_release);
    posted_[world_.index(key)] = -1;
    return r;
  }

  std::vector<SendCompletion> flush_sends(std::chrono::nanoseconds) override {
    std::vector<SendCompletion> out;
    out.swap(completions_);
    completions_.reserve(out.capacity());
    return out;
  }

  void cancel_all() noexcept override {
    std::fill(posted_.begin(), posted_.end(), -1);
    completions_.clear();
    // Messages already delivered to this rank are dropped (their buffers return to their pools).
    MailSlot* box = world_.mail[static_cast<std::size_t>(rank_)].get();
    for (std::size_t i = 0; i < world_.index.size(); ++i) {
      if (box[i].full.load(std::memory_order_acquire) != 0) {
        box[i].buffer.reset();
        box[i].full.store(0, std::memory_order_release);
      }
    }
  }

  void check_abort() override { world_.probe(); }
  void abort(const std::string& message) noexcept override { world_.abort(rank_, message); }

  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data, std::chrono::nanoseconds timeout) override {
    world_.gathered[static_cast<std::size_t>(rank_)].assign(data.begin(), data.end());
    world_.barrier(rank_, timeout);
    std::vector<std::vector<std::byte>> out;
    if (rank_ == 0) out = world_.gathered;
    world_.barrier(rank_, timeout);
    return out;
  }

  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override {
    if (failed || world_.aborted.load()) return true;
    try {
      world_.barrier(rank_, timeout);
    } catch (const PeerAborted&) {
      return true;
    }
    return world_.aborted.load();
  }

 private:
  void check_key(const MessageKey& key, int peer, const char* what) const {
    if (!world_.index.contains(key) || peer < 0 || peer >= world_.ranks) {
      throw ExecutionError(std::string("inproc: rank ") + std::to_string(rank_) + " cannot " + what + " the " + describe(key) +
                           " with rank " + std::to_string(peer) + ": out of range");
    }
  }

  InprocWorld::State& world_;
  int rank_;
  std::vector<int> posted_;  // per message: source rank of a posted receive, -1 if none
  std::vector<SendCompletion> completions_;
};

}  // namespace

InprocWorld::InprocWorld(const PipelineShape& shape, WaitPolicy wait, int cores)
    : state_(std::make_unique<State>(shape, wait, cores)) {
  for (int r = 0; r < shape.ranks; ++r) state_->endpoints.push_back(std::make_unique<InprocTransport>(*state_, r));
}

InprocWorld::~InprocWorld() = default;

int InprocWorld::size() const { return state_->ranks; }

Transport& InprocWorld::transport(int rank) { return *state_->endpoints.at(static_cast<std::size_t>(rank)); }

int InprocWorld::first_failed_rank() const {
  std::lock_guard lock(state_->error_mutex);
  return state_->first_rank;
}

}  // namespace pipelab::runtime
