// MPI transport: a message is a 16-byte header (the sender's post time) and the payload, each an
// MPI_Isend/MPI_Irecv with its own tag (2*index+1, 2*index+2; tag 0 carries abort notices). Waits
// poll with MPI_Testall so the watchdog and abort notices are seen; the thread level is FUNNELED
// (only the rank's main thread calls MPI). Each transport works on its own duplicate of
// MPI_COMM_WORLD, and its barrier, agreement and gather are point-to-point with their own tags:
// after a failure, ranks that stopped at different points never mismatch a collective, and
// messages a failed run left behind cannot reach a later transport. Memory MPI may still read or
// write is never freed under it: a receive abandoned after a failure is cancelled and waited for; a
// send, which cannot be taken back reliably, has its request freed and its storage (header and
// payload) kept until the transport is destroyed.
#include <mpi.h>

#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/mpi_transport.h"
#include "wait.h"

namespace pipelab::runtime {
namespace {

constexpr int kAbortTag = 0;

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw ExecutionError(std::string("mpi: ") + what + " failed: " + std::string(text, static_cast<std::size_t>(len)));
  }
}

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
    // Tags: 0 abort notices, 2i+1 / 2i+2 the header / payload of message i, then the gather tag and
    // the control rounds. MPI guarantees only MPI_TAG_UB >= 32767: 2 x stages x microbatches <= 16 374.
    int* tag_ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag);
    const long long overhead = 4LL * kControlSlots + 3;  // gather tag and control rounds above the messages' tags
    const long long highest = 2LL * static_cast<long long>(index_.size()) + overhead;  // = control_tag(kControlSlots - 1, 3)
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
    sends_.reserve(index_.size());
    pending_sends_.reserve(index_.size());
    completions_.reserve(index_.size());
    pending_recvs_.reserve(index_.size());
  }

  ~MpiTransport() override {
    cancel_all();
    // Abort notices still in flight read abort_text_: free their requests and keep the text.
    bool pending = false;
    for (MPI_Request& q : abort_reqs_) {
      if (q == MPI_REQUEST_NULL) continue;
      int done = 0;
      MPI_Test(&q, &done, MPI_STATUS_IGNORE);
      if (!done) {
        MPI_Request_free(&q);
        pending = true;
      }
    }
    if (pending) static_cast<void>(abort_text_.release());  // a deliberate leak of at most 4 kB, once
    if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
  }

  std::string_view name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Clock::time_point barrier(std::chrono::nanoseconds timeout) override {
    check_abort();
    const int tag = control_tag(barrier_count_++, 0);
    if (!gather_and_release(tag, 0, Clock::now() + timeout, true)) {
      throw WatchdogTimeout("rank " + std::to_string(rank_) + " waited " + ms(timeout) + " ms at the iteration barrier for the other ranks");
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
        throw WatchdogTimeout("rank " + std::to_string(rank_) + " waited " + ms(timeout) + " ms for its send of the " + describe(s.key) +
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

  void check_abort() override {
    if (!peer_error_.empty()) throw PeerAborted("stopped because another rank failed: " + peer_error_);
    int flag = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comm_, &flag, &status);
    if (!flag) return;
    int count = 0;
    MPI_Get_count(&status, MPI_CHAR, &count);
    std::string text(static_cast<std::size_t>(count), '\0');
    MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kAbortTag, comm_, MPI_STATUS_IGNORE);
    peer_error_ = "rank " + std::to_string(status.MPI_SOURCE) + " failed: " + text;
    throw PeerAborted("stopped because another rank failed: " + peer_error_);
  }

  void abort(const std::string& message) noexcept override {
    if (aborted_ || !peer_error_.empty()) return;  // already told, or stopped by a peer: no new notice
    aborted_ = true;
    try {
      abort_text_ = std::make_unique<std::string>(message.substr(0, 4000));
      abort_reqs_.resize(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        MPI_Isend(abort_text_->data(), static_cast<int>(abort_text_->size()), MPI_CHAR, r, kAbortTag, comm_,
                  &abort_reqs_[static_cast<std::size_t>(r)]);
      }
    } catch (...) {
    }
  }

  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data, std::chrono::nanoseconds) override {
    std::vector<std::vector<std::byte>> out;
    if (rank_ == 0) {
      out.resize(static_cast<std::size_t>(size_));
      out[0].assign(data.begin(), data.end());
      for (int r = 1; r < size_; ++r) {
        long long n = 0;
        check(MPI_Recv(&n, 1, MPI_LONG_LONG, r, gather_tag(), comm_, MPI_STATUS_IGNORE), "MPI_Recv");
        auto& buf = out[static_cast<std::size_t>(r)];
        buf.resize(static_cast<std::size_t>(n));
        recv_large(buf.data(), buf.size(), r);
      }
    } else {
      long long n = static_cast<long long>(data.size());
      check(MPI_Send(&n, 1, MPI_LONG_LONG, 0, gather_tag(), comm_), "MPI_Send");
      send_large(data.data(), data.size(), 0);
    }
    return out;
  }

  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override {
    const int in = (failed || aborted_ || !peer_error_.empty()) ? 1 : 0;
    int out = in;
    if (!gather_and_release(control_tag(agree_count_++, 2), in, Clock::now() + timeout, false, &out)) {
      throw WatchdogTimeout("rank " + std::to_string(rank_) + " waited " + ms(timeout) + " ms for the other ranks to finish");
    }
    if (out != 0) drain_abort_notices();
    return out != 0;
  }

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
  int gather_tag() const { return static_cast<int>(2 * index_.size() + 3); }
  // Barrier and agreement rounds: 4 tags per slot (barrier arrive/release, agreement arrive/release).
  int control_tag(std::uint64_t round, int which) const {
    return static_cast<int>(2 * index_.size() + 4 + 4 * (round % kControlSlots)) + which;
  }

  // The storage of one barrier / agreement round. MPI reads and writes it while its requests are
  // pending, so it is on the heap, and a round abandoned with a send pending is kept until the
  // transport is destroyed.
  struct Round {
    std::vector<int> values;        // rank 0: the value of every other rank
    std::vector<MPI_Request> reqs;  // rank 0: receives [0, n), sends [n, 2n); others: send [0], receive [1]
    int value = 0;                  // this rank's value (sent by ranks other than 0)
    int reply = 0;                  // the maximum (sent by rank 0, received by the others)
  };

  // Rank 0 collects one int from every rank (tag) and sends back the maximum (tag + 1). False on
  // timeout. When the wait ends early (timeout or abort), pending receives are cancelled and waited
  // for, and pending sends are freed with their storage kept alive.
  bool gather_and_release(int tag, int value, Clock::time_point deadline, bool abortable, int* result = nullptr) {
    const int n = size_ - 1;
    auto round = std::make_unique<Round>();
    Round& rd = *round;
    rd.values.assign(static_cast<std::size_t>(std::max(n, 1)), 0);
    rd.reqs.assign(static_cast<std::size_t>(std::max(n, 1)) * 2, MPI_REQUEST_NULL);
    rd.value = value;
    auto is_send = [&](std::size_t i) { return rank_ == 0 ? i >= static_cast<std::size_t>(n) : i == 0; };
    auto abandon = [&]() noexcept {
      bool keep = false;
      for (std::size_t i = 0; i < rd.reqs.size(); ++i) {
        MPI_Request& q = rd.reqs[i];
        if (q == MPI_REQUEST_NULL) continue;
        if (is_send(i)) {
          MPI_Request_free(&q);
          keep = true;
        } else {
          MPI_Cancel(&q);
          MPI_Wait(&q, MPI_STATUS_IGNORE);  // MPI may write the receive buffer until the cancel completes
        }
      }
      if (!keep) return;
      try {
        abandoned_rounds_.push_back(std::move(round));
      } catch (...) {
        static_cast<void>(round.release());  // out of memory: leak, never free under MPI
      }
    };
    try {
      if (rank_ == 0) {
        for (int r = 1; r < size_; ++r) {
          check(MPI_Irecv(&rd.values[static_cast<std::size_t>(r - 1)], 1, MPI_INT, r, tag, comm_,
                          &rd.reqs[static_cast<std::size_t>(r - 1)]),
                "MPI_Irecv");
        }
        if (!wait_requests(rd.reqs.data(), n, deadline, abortable)) {
          abandon();
          return false;
        }
        rd.reply = value;
        for (int v : rd.values) rd.reply = std::max(rd.reply, v);
        for (int r = 1; r < size_; ++r) {
          check(MPI_Isend(&rd.reply, 1, MPI_INT, r, tag + 1, comm_, &rd.reqs[static_cast<std::size_t>(n + r - 1)]), "MPI_Isend");
        }
        if (!wait_requests(rd.reqs.data() + n, n, deadline, false)) {
          abandon();
          return false;
        }
      } else {
        check(MPI_Isend(&rd.value, 1, MPI_INT, 0, tag, comm_, &rd.reqs[0]), "MPI_Isend");
        check(MPI_Irecv(&rd.reply, 1, MPI_INT, 0, tag + 1, comm_, &rd.reqs[1]), "MPI_Irecv");
        if (!wait_requests(rd.reqs.data(), 2, deadline, abortable)) {
          abandon();
          return false;
        }
      }
    } catch (...) {
      abandon();
      throw;
    }
    if (result != nullptr) *result = rank_ == 0 ? rd.reply : std::max(rd.reply, value);
    return true;
  }
  static int data_tag(std::size_t i) { return static_cast<int>(2 * i + 2); }
  static std::string ms(std::chrono::nanoseconds t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(t).count());
  }

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

  // Polls until all `n` requests completed (true) or the deadline passed (false). With `abortable`,
  // abort notices of failed peers interrupt the wait (PeerAborted).
  bool wait_requests(MPI_Request* reqs, int n, Clock::time_point deadline, bool abortable) {
    auto ready = [&] {
      int flag = 0;
      check(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
      return flag != 0;
    };
    auto probe = [&] {
      if (abortable) check_abort();
      progress();
    };
    return detail::poll_until(ready, probe, deadline, policy_);
  }

  void drain_abort_notices() {
    for (;;) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comm_, &flag, &status);
      if (!flag) break;
      int count = 0;
      MPI_Get_count(&status, MPI_CHAR, &count);
      std::string text(static_cast<std::size_t>(count), '\0');
      MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kAbortTag, comm_, MPI_STATUS_IGNORE);
      if (peer_error_.empty()) peer_error_ = "rank " + std::to_string(status.MPI_SOURCE) + " failed: " + text;
    }
    for (MPI_Request& q : abort_reqs_) {
      if (q != MPI_REQUEST_NULL) MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
  }

  // Point-to-point for large byte arrays (counts are int): chunks of 1 GiB.
  void send_large(const std::byte* p, std::size_t n, int dst) {
    constexpr std::size_t kChunk = std::size_t{1} << 30;
    for (std::size_t off = 0; off < n; off += kChunk) {
      const int len = static_cast<int>(std::min(kChunk, n - off));
      check(MPI_Send(p + off, len, MPI_BYTE, dst, gather_tag(), comm_), "MPI_Send");
    }
  }
  void recv_large(std::byte* p, std::size_t n, int src) {
    constexpr std::size_t kChunk = std::size_t{1} << 30;
    for (std::size_t off = 0; off < n; off += kChunk) {
      const int len = static_cast<int>(std::min(kChunk, n - off));
      check(MPI_Recv(p + off, len, MPI_BYTE, src, gather_tag(), comm_, MPI_STATUS_IGNORE), "MPI_Recv");
    }
  }

  // Control rounds (barriers, agreements) run one after the other and each completes before the
  // next starts, so a few tag slots suffice; a round abandoned after a failure is never followed by
  // one of its kind on the same transport.
  static constexpr int kControlSlots = 4;

  MessageIndex index_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::uint64_t barrier_count_ = 0;
  std::uint64_t agree_count_ = 0;
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
  std::vector<std::unique_ptr<Round>> abandoned_rounds_;  // control rounds abandoned with a send pending
  bool aborted_ = false;
  std::unique_ptr<std::string> abort_text_;
  std::vector<MPI_Request> abort_reqs_;
  std::string peer_error_;
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

std::unique_ptr<Transport> MpiSession::transport(const PipelineShape& shape, WaitPolicy wait) {
  return std::make_unique<MpiTransport>(shape, wait);
}

}  // namespace pipelab::runtime
