// MPI transport, the data path: a message is a 16-byte header (the sender's post time) and the
// payload, each an MPI_Isend/MPI_Irecv with its own tag (2*index+1, 2*index+2). Waits poll with
// MPI_Testall so the watchdog and abort notices are seen; the thread level is FUNNELED (only the
// rank's main thread calls MPI). Each transport works on its own duplicate of MPI_COMM_WORLD;
// barriers, agreements, the gather and abort notices are the control plane's (mpi_control.h), on
// tags above the messages'. Memory MPI may still read or write is never freed under it: a receive
// abandoned after a failure is cancelled and waited for; a send, which cannot be taken back
// reliably, has its request freed and its storage (header and payload) kept until the transport
// is destroyed.
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "mpi_control.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/mpi_transport.h"
#include "wait.h"

namespace pipelab::runtime {
namespace {

using detail::mpi_check;
using detail::MpiControl;
using detail::ms_text;

void check(int rc, const char* what) { mpi_check(rc, what); }

struct Header {
  std::int64_t sent_ns = 0;
  std::int64_t bytes = 0;
};

class MpiTransport final : public Transport {
 public:
  MpiTransport(const PipelineShape& shape, WaitPolicy wait)
      : index_(shape), recvs_(index_.size()), send_slot_(index_.size(), -1) {
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (size_ != shape.ranks) {
      MPI_Comm_free(&comm_);
      throw ConfigError("mpi: the schedule has " + std::to_string(shape.ranks) + " ranks but MPI runs " + std::to_string(size_) +
                        " processes (use mpirun -np " + std::to_string(shape.ranks) + ")");
    }
    // Tags: 0 abort notices, 2i+1 / 2i+2 the header / payload of message i, then the control
    // plane's. MPI guarantees only MPI_TAG_UB >= 32767: 2 x stages x microbatches <= 16 374.
    int* tag_ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    const long long overhead = 2LL + MpiControl::tags_used();  // the control plane's tags above the messages'
    const long long highest = 2LL * static_cast<long long>(index_.size()) + overhead;
    if (flag && tag_ub != nullptr && highest > *tag_ub) {
      const long long fits = std::max<long long>(0, (static_cast<long long>(*tag_ub) - overhead) / 2);
      MPI_Comm_free(&comm_);
      throw ConfigError("mpi: a pipeline of " + std::to_string(shape.stages) + " stages and " + std::to_string(shape.microbatches) +
                        " microbatches sends " + std::to_string(index_.size()) + " distinct messages per iteration and needs MPI tags up to " +
                        std::to_string(highest) + ", but this MPI's MPI_TAG_UB is " + std::to_string(*tag_ub) +
                        ": use fewer stages or microbatches (2 x stages x microbatches must be at most " + std::to_string(fits) + ")");
    }
    // Processes on one host: spin when each has a core (the launcher may have bound each process
    // to one core, so count the node's cores).
    policy_ = detail::resolve(wait, size_, online_cores());
    control_ = std::make_unique<MpiControl>(comm_, control_first_tag(), policy_, [this] { progress(); });
    sends_.reserve(index_.size());
    pending_sends_.reserve(index_.size());
    completions_.reserve(index_.size());
    pending_recvs_.reserve(index_.size());
  }

  ~MpiTransport() override {
    cancel_all();
    control_.reset();
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Clock::time_point barrier(std::chrono::nanoseconds timeout) override {
    if (!control_->barrier(Clock::now() + timeout)) {
      throw WatchdogTimeout("rank " + std::to_string(rank_) + " waited " + ms_text(timeout) + " ms at the iteration barrier for the other ranks");
    }
    epoch_ = Clock::now();
    return epoch_;
  }

  void isend(int dst, const MessageKey& key, Buffer data, std::int64_t now_ns) override {
    check_key(key, dst);
    const std::size_t i = index_(key);
    if (send_slot_[i] >= 0) throw ExecutionError("mpi: rank " + std::to_string(rank_) + " sends the " + describe(key) + " twice");
    Send s;
    s.key = key;
    s.header.sent_ns = now_ns;
    s.header.bytes = static_cast<std::int64_t>(data.bytes());
    s.buffer = std::move(data);
    sends_.push_back(std::move(s));  // never reallocates: reserved for every message of an iteration
    Send& p = sends_.back();
    send_slot_[i] = static_cast<std::int32_t>(sends_.size() - 1);
    pending_sends_.push_back(sends_.size() - 1);
    check(MPI_Isend(&p.header, sizeof(Header), MPI_BYTE, dst, header_tag(i), comm_, &p.req[0]), "MPI_Isend");
    check(MPI_Isend(p.buffer.data(), static_cast<int>(p.buffer.bytes()), MPI_BYTE, dst, data_tag(i), comm_, &p.req[1]),
          "MPI_Isend");
  }

  void irecv(int src, const MessageKey& key, std::size_t bytes, BufferPool& pool) override {
    check_key(key, src);
    Recv& r = recvs_[index_(key)];
    if (r.posted) throw ExecutionError("mpi: rank " + std::to_string(rank_) + " posts the receive of the " + describe(key) + " twice");
    r.buffer = pool.acquire(bytes);
    r.posted = true;
    pending_recvs_.push_back(index_(key));
    r.done = false;
    const std::size_t i = index_(key);
    check(MPI_Irecv(&r.header, sizeof(Header), MPI_BYTE, src, header_tag(i), comm_, &r.req[0]), "MPI_Irecv");
    check(MPI_Irecv(r.buffer.data(), static_cast<int>(bytes), MPI_BYTE, src, data_tag(i), comm_, &r.req[1]), "MPI_Irecv");
  }

  std::optional<Received> wait_recv(const MessageKey& key, std::chrono::nanoseconds timeout) override {
    if (!index_.contains(key) || !recvs_[index_(key)].posted) {
      throw ExecutionError("mpi: rank " + std::to_string(rank_) + " waits for the " + describe(key) + " without a posted receive");
    }
    Recv& r = recvs_[index_(key)];
    if (!r.done) {
      if (!wait_requests(r.req, 2, Clock::now() + timeout, true)) return std::nullopt;
      if (!r.done) {  // (progress() may have seen it first while the wait polled)
        r.done = true;
        r.arrived_ns = now();
      }
    }
    if (r.header.bytes != static_cast<std::int64_t>(r.buffer.bytes())) {
      throw ExecutionError("mpi: the " + describe(key) + " has " + std::to_string(r.header.bytes) + " bytes, expected " +
                           std::to_string(r.buffer.bytes()));
    }
    Received out;
    out.buffer = std::move(r.buffer);
    out.sent_ns = r.header.sent_ns;
    out.arrived_ns = r.arrived_ns;
    r.posted = false;
    r.done = false;
    return out;
  }

  // Tests every outstanding send and posted receive, stamping completions and arrivals: called
  // between actions and while a wait polls, so comm intervals end when the rank could first see them.
  void progress() override {
    for (std::size_t k = 0; k < pending_sends_.size();) {
      Send& s = sends_[pending_sends_[k]];
      int flag = 0;
      if (!s.complete) check(MPI_Testall(2, s.req, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (flag) finish(s);
      if (s.complete) {
        pending_sends_[k] = pending_sends_.back();
        pending_sends_.pop_back();
      } else {
        ++k;
      }
    }
    for (std::size_t k = 0; k < pending_recvs_.size();) {
      Recv& r = recvs_[pending_recvs_[k]];
      int flag = 0;
      if (r.posted && !r.done) check(MPI_Testall(2, r.req, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
      if (flag) {
        r.done = true;
        r.arrived_ns = now();
      }
      if (!r.posted || r.done) {
        pending_recvs_[k] = pending_recvs_.back();
        pending_recvs_.pop_back();
      } else {
        ++k;
      }
    }
  }

  std::vector<SendCompletion> flush_sends(std::chrono::nanoseconds timeout) override {
    const auto deadline = Clock::now() + timeout;
    for (Send& s : sends_) {
      if (s.complete) continue;
      if (!wait_requests(s.req, 2, deadline, true)) {
        throw WatchdogTimeout("rank " + std::to_string(rank_) + " waited " + ms_text(timeout) + " ms for its send of the " + describe(s.key) +
                              " to complete (is the receiver alive?)");
      }
      if (!s.complete) finish(s);  // (progress() may have seen it first while the wait polled)
    }
    sends_.clear();
    pending_sends_.clear();
    std::fill(send_slot_.begin(), send_slot_.end(), -1);
    std::vector<SendCompletion> out;
    out.swap(completions_);
    completions_.reserve(index_.size());
    return out;
  }

  void cancel_all() noexcept override {
    pending_recvs_.clear();
    for (Recv& r : recvs_) {
      if (!r.posted) continue;
      if (!r.done) {
        for (MPI_Request& q : r.req) {
          if (q == MPI_REQUEST_NULL) continue;
          MPI_Cancel(&q);
          MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
      }
      r.buffer.reset();
      r.posted = r.done = false;
    }
    bool abandoned = false;
    for (Send& s : sends_) {
      if (s.complete) continue;
      // An unmatched send cannot be taken back reliably: let MPI finish it in the background.
      for (MPI_Request& q : s.req) {
        if (q != MPI_REQUEST_NULL) MPI_Request_free(&q);
      }
      abandoned = true;
    }
    if (abandoned) {
      // MPI may still read the header and the payload of those sends: keep every Send record where it
      // is (moving the vector moves its storage, not the elements) until this transport is destroyed.
      try {
        orphans_.push_back(std::move(sends_));
      } catch (...) {
        static_cast<void>(new (std::nothrow) std::vector<Send>(std::move(sends_)));  // out of memory: leak, never free
      }
      sends_ = std::vector<Send>();
      try {
        sends_.reserve(index_.size());
      } catch (...) {
      }
    } else {
      sends_.clear();
    }
    pending_sends_.clear();
    std::fill(send_slot_.begin(), send_slot_.end(), -1);
    completions_.clear();
  }

  void check_abort() override { control_->check_abort(); }
  void abort(const std::string& message) noexcept override { control_->abort(message); }
  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data, std::chrono::nanoseconds) override {
    return control_->gather(data);
  }
  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override { return control_->any_failed(failed, timeout); }

 private:
  struct Send {
    MessageKey key;
    Header header;
    Buffer buffer;
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    bool complete = false;
  };
  struct Recv {
    Header header;
    Buffer buffer;
    MPI_Request req[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    bool posted = false;
    bool done = false;
    std::int64_t arrived_ns = 0;
  };

  static int header_tag(std::size_t i) { return static_cast<int>(2 * i + 1); }
  int control_first_tag() const { return static_cast<int>(2 * index_.size() + 3); }
  static int data_tag(std::size_t i) { return static_cast<int>(2 * i + 2); }

  std::int64_t now() const { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch_).count(); }

  void check_key(const MessageKey& key, int peer) const {
    if (!index_.contains(key) || peer < 0 || peer >= size_ || peer == rank_) {
      throw ExecutionError("mpi: rank " + std::to_string(rank_) + ": the " + describe(key) + " with rank " + std::to_string(peer) +
                           " is out of range");
    }
  }

  void finish(Send& s) {
    s.complete = true;
    s.buffer.reset();
    completions_.push_back({s.key, now()});
  }

  bool wait_requests(MPI_Request* reqs, int n, Clock::time_point deadline, bool abortable) {
    return control_->wait_requests(reqs, n, deadline, abortable);
  }

  MessageIndex index_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<MpiControl> control_;
  int rank_ = 0;
  int size_ = 1;
  WaitPolicy policy_ = WaitPolicy::Spin;
  Clock::time_point epoch_ = Clock::now();
  std::vector<Recv> recvs_;             // per message
  std::vector<Send> sends_;             // this iteration's sends, in post order
  std::vector<std::size_t> pending_sends_;  // indices into sends_ of sends not yet seen complete
  std::vector<std::int32_t> send_slot_; // per message: index into sends_, -1 if none
  std::vector<SendCompletion> completions_;
  std::vector<std::size_t> pending_recvs_;  // posted receives not yet seen complete
  std::vector<std::vector<Send>> orphans_;  // send records of iterations abandoned after a failure
};

}  // namespace

bool mpi_built() { return true; }

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    owns_ = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  // Errors come back as codes (checked and thrown), not as an abort of the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::broadcast(std::span<std::byte> bytes) {
  check(MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
}

std::unique_ptr<Transport> MpiSession::transport(const PipelineShape& shape, WaitPolicy wait) {
  return std::make_unique<MpiTransport>(shape, wait);
}

}  // namespace pipelab::runtime
