// CopyWorld and its endpoints.
#include "copy_transport.h"

#include "cuda_clock.h"
#include "device_memory.h"
#include "pipelab/runtime/errors.h"
#include "stream_wait.h"
#include "streams.h"

namespace pipelab::runtime::cuda {

struct CopyWorld::State {
  MessageIndex index;
  std::vector<const CudaRankDevice*> devices;
  // [receiver][message]: the transfer's interval, written by the sender before the hand-over that
  // publishes the buffer (so the receiver reads it after its wait, ordered by the mailbox).
  std::vector<std::vector<DeviceInterval>> intervals;
  explicit State(const PipelineShape& shape)
      : index(shape), devices(static_cast<std::size_t>(shape.ranks), nullptr),
        intervals(static_cast<std::size_t>(shape.ranks), std::vector<DeviceInterval>(index.size())) {}
};

namespace {

class CopyTransport final : public Transport {
 public:
  CopyTransport(std::shared_ptr<CopyWorld::State> world, int rank, Transport& control)
      : world_(std::move(world)), rank_(rank), control_(control) {
    sent_.reserve(world_->index.size());
  }

  std::string_view name() const override { return "cuda-copy"; }
  int rank() const override { return rank_; }
  int size() const override { return control_.size(); }
  Clock::time_point barrier(std::chrono::nanoseconds timeout) override { return control_.barrier(timeout); }

  void isend(int dst, const MessageKey& key, Buffer data, std::int64_t now_ns) override {
    if (dst < 0 || dst >= size() || !world_->index.contains(key)) {
      throw ExecutionError("cuda-copy: rank " + std::to_string(rank_) + ": the " + describe(key) + " to rank " +
                           std::to_string(dst) + " is out of range");
    }
    const CudaRankDevice& me = device(rank_);
    const CudaRankDevice& peer = device(dst);
    Buffer out = peer.pool->acquire(data.bytes());
    DeviceInterval interval{peer.clock, DeviceClock::kNone, DeviceClock::kNone};
    {
      DeviceGuard guard(peer.device);
      wait_for(data, peer.recv);
      wait_for(out, peer.recv);
      interval.start = peer.clock->mark(peer.recv);
      PIPELAB_CUDA_CHECK(cudaMemcpyAsync(out.data(), data.data(), data.bytes(), cudaMemcpyDefault, peer.recv));
      interval.end = peer.clock->mark(peer.recv);
      fence_after(out, peer.recv);
    }
    {
      // The source may be reused once the copy has read it.
      DeviceGuard guard(me.device);
      wait_for(out, me.send);
      fence_after(data, me.send);
    }
    data.reset();
    world_->intervals[static_cast<std::size_t>(dst)][world_->index(key)] = interval;
    sent_.push_back({key, interval, dst});
    control_.isend(dst, key, std::move(out), now_ns);
  }

  void irecv(int src, const MessageKey& key, std::size_t bytes, BufferPool& pool) override {
    control_.irecv(src, key, bytes, pool);
  }

  std::optional<Received> wait_recv(const MessageKey& key, std::chrono::nanoseconds timeout) override {
    std::optional<Received> r = control_.wait_recv(key, timeout);
    if (r) r->device = world_->intervals[static_cast<std::size_t>(rank_)][world_->index(key)];
    return r;
  }

  void progress() override { control_.progress(); }

  std::vector<SendCompletion> flush_sends(std::chrono::nanoseconds timeout) override {
    std::vector<SendCompletion> out = control_.flush_sends(timeout);
    // The sends' markers are on the receivers' clocks: wait until their copies ran, so that this
    // rank can resolve them.
    const auto deadline = Clock::now() + timeout;
    std::vector<int> waited(static_cast<std::size_t>(size()), 0);
    for (const Sent& s : sent_) {
      if (waited[static_cast<std::size_t>(s.dst)]) continue;
      waited[static_cast<std::size_t>(s.dst)] = 1;
      const CudaRankDevice& peer = device(s.dst);
      DeviceGuard guard(peer.device);
      if (!wait_stream(peer.recv, deadline)) {
        throw WatchdogTimeout("cuda-copy: rank " + std::to_string(rank_) + " waited " +
                              std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                              " ms for its copies to rank " + std::to_string(s.dst) + " to complete");
      }
    }
    for (SendCompletion& c : out) {
      for (const Sent& s : sent_) {
        if (s.key == c.key) c.device = s.interval;
      }
    }
    sent_.clear();
    return out;
  }

  void cancel_all() noexcept override {
    sent_.clear();
    control_.cancel_all();
  }
  void check_abort() override { control_.check_abort(); }
  void abort(const std::string& message) noexcept override { control_.abort(message); }
  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data, std::chrono::nanoseconds timeout) override {
    return control_.gather(data, timeout);
  }
  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override { return control_.any_failed(failed, timeout); }

 private:
  struct Sent {
    MessageKey key;
    DeviceInterval interval;
    int dst;
  };

  const CudaRankDevice& device(int r) const {
    const CudaRankDevice* d = world_->devices[static_cast<std::size_t>(r)];
    if (d == nullptr) throw ExecutionError("cuda-copy: rank " + std::to_string(r) + " has no device attached");
    return *d;
  }

  std::shared_ptr<CopyWorld::State> world_;
  int rank_;
  Transport& control_;
  std::vector<Sent> sent_;
};

}  // namespace

CopyWorld::CopyWorld(const PipelineShape& shape) : state_(std::make_shared<State>(shape)) {}

void CopyWorld::attach(int rank, const CudaRankDevice& device) { state_->devices.at(static_cast<std::size_t>(rank)) = &device; }

std::unique_ptr<Transport> CopyWorld::transport(int rank, Transport& control) {
  return std::make_unique<CopyTransport>(state_, rank, control);
}

}  // namespace pipelab::runtime::cuda
