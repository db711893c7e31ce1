// MpiControl: barriers, agreements and the gather as point-to-point rounds through rank 0, and
// abort notices on tag 0. Rounds run one after the other and each completes before the next
// starts, so a few tag slots suffice; a round abandoned after a failure is never followed by one of
// its kind on the same communicator.
#include "mpi_control.h"

#include <algorithm>
#include <new>

#include "pipelab/runtime/errors.h"
#include "wait.h"

namespace pipelab::runtime::detail {

namespace {

constexpr int kControlSlots = 4;  // 4 tags each: barrier arrive/release, agreement arrive/release

}  // namespace

void mpi_check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    throw ExecutionError(std::string("mpi: ") + what + " failed: " + std::string(text, static_cast<std::size_t>(len)));
  }
}

std::string ms_text(std::chrono::nanoseconds t) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(t).count());
}

// The storage of one barrier / agreement round. MPI reads and writes it while its requests are
// pending, so it is on the heap, and a round abandoned with a send pending is kept until the
// control plane is destroyed.
struct MpiControl::Round {
  std::vector<int> values;        // rank 0: the value of every other rank
  std::vector<MPI_Request> reqs;  // rank 0: receives [0, n), sends [n, 2n); others: send [0], receive [1]
  int value = 0;                  // this rank's value (sent by ranks other than 0)
  int reply = 0;                  // the maximum (sent by rank 0, received by the others)
};

MpiControl::MpiControl(MPI_Comm comm, int first_tag, WaitPolicy policy, std::function<void()> progress)
    : comm_(comm), first_tag_(first_tag), policy_(policy), progress_(std::move(progress)) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

MpiControl::~MpiControl() {
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
}

int MpiControl::tags_used() { return 1 + 4 * kControlSlots; }

int MpiControl::control_tag(std::uint64_t round, int which) const {
  return first_tag_ + 1 + 4 * static_cast<int>(round % kControlSlots) + which;
}

bool MpiControl::barrier(Clock::time_point deadline) {
  check_abort();
  return gather_and_release(control_tag(barrier_count_++, 0), 0, deadline, true, nullptr);
}

bool MpiControl::any_failed(bool failed, std::chrono::nanoseconds timeout) {
  const int in = (failed || this->failed()) ? 1 : 0;
  int out = in;
  if (!gather_and_release(control_tag(agree_count_++, 2), in, Clock::now() + timeout, false, &out)) {
    throw WatchdogTimeout("rank " + std::to_string(rank_) + " waited " + ms_text(timeout) + " ms for the other ranks to finish");
  }
  if (out != 0) {
    while (receive_abort_notice()) {
    }
    for (MPI_Request& q : abort_reqs_) {
      if (q != MPI_REQUEST_NULL) MPI_Wait(&q, MPI_STATUS_IGNORE);
    }
  }
  return out != 0;
}

bool MpiControl::receive_abort_notice() {
  int flag = 0;
  MPI_Status status;
  MPI_Iprobe(MPI_ANY_SOURCE, kAbortTag, comm_, &flag, &status);
  if (!flag) return false;
  int count = 0;
  MPI_Get_count(&status, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(count), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, status.MPI_SOURCE, kAbortTag, comm_, MPI_STATUS_IGNORE);
  if (peer_error_.empty()) peer_error_ = "rank " + std::to_string(status.MPI_SOURCE) + " failed: " + text;
  return true;
}

void MpiControl::check_abort() {
  if (peer_error_.empty()) receive_abort_notice();
  if (!peer_error_.empty()) throw PeerAborted("stopped because another rank failed: " + peer_error_);
}

void MpiControl::abort(const std::string& message) noexcept {
  if (failed()) return;  // already told, or stopped by a peer: no new notice
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

bool MpiControl::wait_requests(MPI_Request* reqs, int n, Clock::time_point deadline, bool abortable) {
  auto ready = [&] {
    int flag = 0;
    mpi_check(MPI_Testall(n, reqs, &flag, MPI_STATUSES_IGNORE), "MPI_Testall");
    return flag != 0;
  };
  auto probe = [&] {
    if (abortable) check_abort();
    if (progress_) progress_();
  };
  return poll_until(ready, probe, deadline, policy_);
}

// Rank 0 collects one int from every rank (tag) and sends back the maximum (tag + 1). False on
// timeout. When the wait ends early (timeout or abort), pending receives are cancelled and waited
// for, and pending sends are freed with their storage kept alive.
bool MpiControl::gather_and_release(int tag, int value, Clock::time_point deadline, bool abortable, int* result) {
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
        mpi_check(MPI_Irecv(&rd.values[static_cast<std::size_t>(r - 1)], 1, MPI_INT, r, tag, comm_,
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
        mpi_check(MPI_Isend(&rd.reply, 1, MPI_INT, r, tag + 1, comm_, &rd.reqs[static_cast<std::size_t>(n + r - 1)]), "MPI_Isend");
      }
      if (!wait_requests(rd.reqs.data() + n, n, deadline, false)) {
        abandon();
        return false;
      }
    } else {
      mpi_check(MPI_Isend(&rd.value, 1, MPI_INT, 0, tag, comm_, &rd.reqs[0]), "MPI_Isend");
      mpi_check(MPI_Irecv(&rd.reply, 1, MPI_INT, 0, tag + 1, comm_, &rd.reqs[1]), "MPI_Irecv");
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

namespace {

// Point-to-point for large byte arrays (MPI counts are int): chunks of 1 GiB.
constexpr std::size_t kChunk = std::size_t{1} << 30;

}  // namespace

std::vector<std::vector<std::byte>> MpiControl::gather(std::span<const std::byte> data) {
  std::vector<std::vector<std::byte>> out;
  if (rank_ == 0) {
    out.resize(static_cast<std::size_t>(size_));
    out[0].assign(data.begin(), data.end());
    for (int r = 1; r < size_; ++r) {
      long long n = 0;
      mpi_check(MPI_Recv(&n, 1, MPI_LONG_LONG, r, gather_tag(), comm_, MPI_STATUS_IGNORE), "MPI_Recv");
      auto& buf = out[static_cast<std::size_t>(r)];
      buf.resize(static_cast<std::size_t>(n));
      for (std::size_t off = 0; off < buf.size(); off += kChunk) {
        const int len = static_cast<int>(std::min(kChunk, buf.size() - off));
        mpi_check(MPI_Recv(buf.data() + off, len, MPI_BYTE, r, gather_tag(), comm_, MPI_STATUS_IGNORE), "MPI_Recv");
      }
    }
  } else {
    long long n = static_cast<long long>(data.size());
    mpi_check(MPI_Send(&n, 1, MPI_LONG_LONG, 0, gather_tag(), comm_), "MPI_Send");
    for (std::size_t off = 0; off < data.size(); off += kChunk) {
      const int len = static_cast<int>(std::min(kChunk, data.size() - off));
      mpi_check(MPI_Send(data.data() + off, len, MPI_BYTE, 0, gather_tag(), comm_), "MPI_Send");
    }
  }
  return out;
}

}  // namespace pipelab::runtime::detail
