// NcclPairs and the NCCL endpoint.
#include "nccl_transport.h"

#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "cuda_clock.h"
#include "device_memory.h"
#include "pipelab/runtime/errors.h"
#include "stream_wait.h"
#include "streams.h"

#define PIPELAB_NCCL_CHECK(expr)                                                                                 \
  do {                                                                                                           \
    const ncclResult_t pipelab_nccl_ = (expr);                                                                   \
    if (pipelab_nccl_ != ncclSuccess) {                                                                          \
      ::pipelab::kernels::cuda::throw_device_call_error("nccl", ncclGetErrorString(pipelab_nccl_), #expr, __FILE__, \
                                                        __LINE__);                                               \
    }                                                                                                            \
  } while (0)

namespace pipelab::runtime::cuda {

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "unknown";
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

// One direction of one pair: its communicator on each side (in-process, both live here; in a
// distributed run only this process's side is set).
struct NcclPairs::Pair {
  ncclComm_t src_comm = nullptr;  // rank 0 of the pair communicator
  ncclComm_t dst_comm = nullptr;  // rank 1
  ~Pair() {
    for (ncclComm_t c : {src_comm, dst_comm}) {
      if (c != nullptr) ncclCommDestroy(c);
    }
  }
};

NcclPairs::NcclPairs(const PipelineShape& shape) : shape_(shape) {}

std::size_t NcclPairs::unique_id_bytes() { return sizeof(ncclUniqueId); }

std::vector<std::byte> NcclPairs::new_unique_id() {
  ncclUniqueId id;
  PIPELAB_NCCL_CHECK(ncclGetUniqueId(&id));
  std::vector<std::byte> out(sizeof(id));
  std::memcpy(out.data(), &id, sizeof(id));
  return out;
}

std::shared_ptr<NcclPairs> NcclPairs::in_process(const Schedule& lowered, const std::vector<int>& device_of_rank) {
  std::shared_ptr<NcclPairs> p(new NcclPairs(lowered.shape));
  p->traffic_ = pair_traffic(lowered);
  for (const PairTraffic& t : p->traffic_) {
    const int devs[2] = {device_of_rank.at(static_cast<std::size_t>(t.src)), device_of_rank.at(static_cast<std::size_t>(t.dst))};
    if (devs[0] == devs[1]) {
      throw ConfigError("nccl: ranks " + std::to_string(t.src) + " and " + std::to_string(t.dst) + " are both on GPU " +
                        std::to_string(devs[0]) + "; NCCL needs one GPU per rank (use the copy transport for single-GPU mode)");
    }
    auto pair = std::make_unique<Pair>();
    ncclComm_t comms[2] = {nullptr, nullptr};
    PIPELAB_NCCL_CHECK(ncclCommInitAll(comms, 2, devs));
    pair->src_comm = comms[0];
    pair->dst_comm = comms[1];
    p->pairs_.push_back(std::move(pair));
  }
  return p;
}

std::shared_ptr<NcclPairs> NcclPairs::distributed(const Schedule& lowered, int rank, int device, std::span<const std::byte> unique_id) {
  if (unique_id.size() != sizeof(ncclUniqueId)) throw ExecutionError("nccl: the unique id has the wrong size");
  std::shared_ptr<NcclPairs> p(new NcclPairs(lowered.shape));
  p->traffic_ = pair_traffic(lowered);
  ncclUniqueId id;
  std::memcpy(&id, unique_id.data(), sizeof(id));
  DeviceGuard guard(device);
  ncclComm_t world = nullptr;
  PIPELAB_NCCL_CHECK(ncclCommInitRank(&world, lowered.shape.ranks, id, rank));
  p->world_ = world;
  // Every process splits in the same (src, dst) order; a rank outside a pair passes NOCOLOR.
  for (std::size_t i = 0; i < p->traffic_.size(); ++i) {
    const PairTraffic& t = p->traffic_[i];
    const bool in = rank == t.src || rank == t.dst;
    ncclComm_t comm = nullptr;
    PIPELAB_NCCL_CHECK(ncclCommSplit(world, in ? static_cast<int>(i) : NCCL_SPLIT_NOCOLOR, rank == t.src ? 0 : 1, &comm, nullptr));
    auto pair = std::make_unique<Pair>();
    (rank == t.src ? pair->src_comm : pair->dst_comm) = in ? comm : nullptr;
    p->pairs_.push_back(std::move(pair));
  }
  return p;
}

NcclPairs::~NcclPairs() {
  pairs_.clear();
  if (world_ != nullptr) ncclCommDestroy(static_cast<ncclComm_t>(world_));
}

namespace {

// One side of a pair as this rank sees it.
struct Link {
  int peer = 0;
  ncclComm_t comm = nullptr;
  int peer_rank_in_comm = 0;
  Stream stream;
  std::vector<MessageKey> order;  // incoming links: the sender's order
  std::size_t posted = 0;         // incoming links: messages of `order` posted so far
};

class NcclTransport final : public Transport {
 public:
  NcclTransport(const PipelineShape& shape, const std::vector<PairTraffic>& traffic,
                const std::vector<std::unique_ptr<NcclPairs::Pair>>& pairs, int rank, Transport& control,
                const CudaRankDevice& device)
      : rank_(rank), control_(control), device_(device), index_(shape) {
    received_.resize(index_.size());
    intervals_.resize(index_.size());
    posted_.assign(index_.size(), 0);
    for (std::size_t i = 0; i < traffic.size(); ++i) {
      const PairTraffic& t = traffic[i];
      if (t.src == rank) {
        outgoing_.push_back(Link{t.dst, pairs[i]->src_comm, 1, Stream(device.device), {}, 0});
      } else if (t.dst == rank) {
        incoming_.push_back(Link{t.src, pairs[i]->dst_comm, 0, Stream(device.device), t.messages, 0});
      }
    }
  }

  std::string_view name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return control_.size(); }

  Clock::time_point barrier(std::chrono::nanoseconds timeout) override {
    for (Link& l : incoming_) l.posted = 0;
    std::fill(posted_.begin(), posted_.end(), 0);
    return control_.barrier(timeout);
  }

  void isend(int dst, const MessageKey& key, Buffer data, std::int64_t now_ns) override {
    Link& l = link(outgoing_, dst, "send to");
    queue_.push_back(Op{true, &l, key, std::move(data)});
    sent_.push_back({key, now_ns});
  }

  void irecv(int src, const MessageKey& key, std::size_t bytes, BufferPool& pool) override {
    Link& l = link(incoming_, src, "receive from");
    if (!index_.contains(key)) throw ExecutionError("nccl: the " + describe(key) + " is out of range");
    if (posted_[index_(key)]) return;  // posted with a later message of the pair
    // Post every message of this pair up to `key`, in the sender's order.
    for (;;) {
      if (l.posted == l.order.size()) {
        throw ExecutionError("nccl: rank " + std::to_string(rank_) + " receives the " + describe(key) + " from rank " +
                             std::to_string(src) + ", which never sends it");
      }
      const MessageKey next = l.order[l.posted++];
      posted_[index_(next)] = 1;
      queue_.push_back(Op{false, &l, next, pool.acquire(bytes)});
      if (next == key) break;
    }
  }

  std::optional<Received> wait_recv(const MessageKey& key, std::chrono::nanoseconds) override {
    flush_queue();
    Slot& s = received_.at(index_(key));
    if (!s.buffer) throw ExecutionError("nccl: rank " + std::to_string(rank_) + " waits for the " + describe(key) + " without a posted receive");
    Received r;
    r.buffer = std::move(s.buffer);
    r.sent_ns = -1;
    r.arrived_ns = 0;
    r.device = intervals_[index_(key)];
    return r;
  }

  void progress() override { flush_queue(); }

  std::vector<SendCompletion> flush_sends(std::chrono::nanoseconds timeout) override {
    flush_queue();
    const auto deadline = Clock::now() + timeout;
    for (std::vector<Link>* links : {&outgoing_, &incoming_}) {
      for (Link& l : *links) {
        if (!wait_stream(l.stream.get(), deadline)) {
          throw WatchdogTimeout("nccl: rank " + std::to_string(rank_) + " waited " +
                                std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count()) +
                                " ms for its transfers with rank " + std::to_string(l.peer) + " (is the peer alive?)");
        }
      }
    }
    std::vector<SendCompletion> out;
    for (const auto& [key, posted_ns] : sent_) out.push_back(SendCompletion{key, posted_ns, intervals_[index_(key)]});
    sent_.clear();
    return out;
  }

  void cancel_all() noexcept override {
    queue_.clear();
    for (Link& l : incoming_) l.posted = 0;
    std::fill(posted_.begin(), posted_.end(), 0);
    sent_.clear();
    for (Slot& s : received_) s.buffer.reset();
    control_.cancel_all();
  }
  void check_abort() override { control_.check_abort(); }
  void abort(const std::string& message) noexcept override { control_.abort(message); }
  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data, std::chrono::nanoseconds timeout) override {
    return control_.gather(data, timeout);
  }
  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override { return control_.any_failed(failed, timeout); }

 private:
  struct Op {
    bool send;
    Link* link;
    MessageKey key;
    Buffer buffer;
  };
  struct Slot {
    Buffer buffer;
  };
  Link& link(std::vector<Link>& links, int peer, const char* what) {
    for (Link& l : links) {
      if (l.peer == peer) return l;
    }
    throw ExecutionError("nccl: rank " + std::to_string(rank_) + " has no traffic to " + what + " rank " + std::to_string(peer) +
                         " in this schedule");
  }

  // Issues the queued operations as one group. Stream waits and start markers go before the group
  // and end markers and fences after it: NCCL launches a group's kernels at ncclGroupEnd.
  void flush_queue() {
    if (queue_.empty()) return;
    DeviceGuard guard(device_.device);
    std::vector<DeviceClock::Token> starts;
    starts.reserve(queue_.size());
    for (Op& op : queue_) {
      wait_for(op.buffer, op.link->stream.get());
      starts.push_back(device_.clock->mark(op.link->stream.get()));
    }
    PIPELAB_NCCL_CHECK(ncclGroupStart());
    for (Op& op : queue_) {
      if (op.send) {
        PIPELAB_NCCL_CHECK(ncclSend(op.buffer.data(), op.buffer.bytes(), ncclInt8, op.link->peer_rank_in_comm, op.link->comm,
                                    op.link->stream.get()));
      } else {
        PIPELAB_NCCL_CHECK(ncclRecv(op.buffer.data(), op.buffer.bytes(), ncclInt8, op.link->peer_rank_in_comm, op.link->comm,
                                    op.link->stream.get()));
      }
    }
    PIPELAB_NCCL_CHECK(ncclGroupEnd());
    for (std::size_t i = 0; i < queue_.size(); ++i) {
      Op& op = queue_[i];
      const DeviceClock::Token end = device_.clock->mark(op.link->stream.get());
      fence_after(op.buffer, op.link->stream.get());
      intervals_[index_(op.key)] = DeviceInterval{device_.clock, starts[i], end};
      if (!op.send) received_[index_(op.key)].buffer = std::move(op.buffer);  // a send's buffer returns to its pool, fenced
    }
    queue_.clear();
  }

  int rank_;
  Transport& control_;
  const CudaRankDevice& device_;
  MessageIndex index_;
  std::vector<Link> outgoing_, incoming_;
  std::vector<Op> queue_;
  std::vector<std::pair<MessageKey, std::int64_t>> sent_;
  std::vector<Slot> received_;
  std::vector<DeviceInterval> intervals_;  // per message: its transfer on this rank's clock
  std::vector<std::uint8_t> posted_;       // per message: its receive is queued or issued
};

}  // namespace

std::unique_ptr<Transport> NcclPairs::transport(int rank, Transport& control, const CudaRankDevice& device) {
  return std::make_unique<NcclTransport>(shape_, traffic_, pairs_, rank, control, device);
}

}  // namespace pipelab::runtime::cuda

namespace pipelab::runtime {

std::string nccl_loopback_check(int device, std::size_t bytes) {
  if (bytes == 0) throw InputError("nccl_loopback_check: bytes must be > 0");
  cuda::DeviceGuard guard(device);
  ncclComm_t comm = nullptr;
  PIPELAB_NCCL_CHECK(ncclCommInitAll(&comm, 1, &device));
  struct Cleanup {
    ncclComm_t comm;
    void* a = nullptr;
    void* b = nullptr;
    ~Cleanup() {
      if (a != nullptr) PIPELAB_CUDA_LOG(cudaFree(a));
      if (b != nullptr) PIPELAB_CUDA_LOG(cudaFree(b));
      ncclCommDestroy(comm);
    }
  } c{comm};
  const cuda::Stream stream(device);
  std::vector<unsigned char> pattern(bytes), back(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i) pattern[i] = static_cast<unsigned char>((i * 131 + 7) & 0xff);
  PIPELAB_CUDA_CHECK(cudaMalloc(&c.a, bytes));
  PIPELAB_CUDA_CHECK(cudaMalloc(&c.b, bytes));
  PIPELAB_CUDA_CHECK(cudaMemcpy(c.a, pattern.data(), bytes, cudaMemcpyHostToDevice));
  PIPELAB_CUDA_CHECK(cudaMemset(c.b, 0, bytes));
  PIPELAB_NCCL_CHECK(ncclGroupStart());
  PIPELAB_NCCL_CHECK(ncclSend(c.a, bytes, ncclInt8, 0, comm, stream.get()));
  PIPELAB_NCCL_CHECK(ncclRecv(c.b, bytes, ncclInt8, 0, comm, stream.get()));
  PIPELAB_NCCL_CHECK(ncclGroupEnd());
  stream.synchronize();
  PIPELAB_CUDA_CHECK(cudaMemcpy(back.data(), c.b, bytes, cudaMemcpyDeviceToHost));
  for (std::size_t i = 0; i < bytes; ++i) {
    if (back[i] != pattern[i]) {
      throw DeviceError("nccl loopback: byte " + std::to_string(i) + " came back as " + std::to_string(back[i]) + ", sent " +
                        std::to_string(pattern[i]));
    }
  }
  return cuda::nccl_version();
}

}  // namespace pipelab::runtime
