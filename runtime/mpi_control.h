// Private (includes mpi.h; only MPI-built sources see it): the control plane of a multi-process
// run over MPI — abort notices, barriers, agreements and a byte gather to rank 0 — on a
// communicator of its own tags, so that a transport's data path (MPI point-to-point, or NCCL
// bootstrapped through MPI) can share it. Everything is point-to-point and polled, so a wait sees
// the watchdog deadline and abort notices; storage MPI may still touch after a failure is never
// freed under it.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "pipelab/runtime/transport.h"

namespace pipelab::runtime::detail {

/// Throws ExecutionError "mpi: <what> failed: <MPI's text>" unless rc is MPI_SUCCESS.
void mpi_check(int rc, const char* what);

/// "1234" milliseconds of a duration, for watchdog messages.
std::string ms_text(std::chrono::nanoseconds t);

class MpiControl {
 public:
  /// Tag 0 carries abort notices; the control rounds use `first_tag` and the tags above it
  /// (tags_used() of them). `progress` runs while a wait polls (the data path's completions).
  MpiControl(MPI_Comm comm, int first_tag, WaitPolicy policy, std::function<void()> progress);
  ~MpiControl();
  MpiControl(const MpiControl&) = delete;
  MpiControl& operator=(const MpiControl&) = delete;

  static constexpr int kAbortTag = 0;
  /// Tags above first_tag the control rounds and the gather use.
  static int tags_used();

  int rank() const { return rank_; }
  int size() const { return size_; }

  /// All ranks arrive before any leaves; false after `deadline`. Abort notices interrupt the wait.
  bool barrier(Clock::time_point deadline);
  /// Whether any rank passed true (every rank calls it); WatchdogTimeout after `timeout`.
  bool any_failed(bool failed, std::chrono::nanoseconds timeout);
  /// Rank 0 gets every rank's bytes (index = rank); the others an empty vector.
  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> data);

  /// Throws PeerAborted when a peer's abort notice has arrived.
  void check_abort();
  /// Tells every other rank this one failed (once; never throws).
  void abort(const std::string& message) noexcept;
  /// True after abort() or a peer's notice.
  bool failed() const { return aborted_ || !peer_error_.empty(); }

  /// Polls until all `n` requests completed (true) or `deadline` passed (false); with `abortable`,
  /// abort notices interrupt the wait (PeerAborted).
  bool wait_requests(MPI_Request* reqs, int n, Clock::time_point deadline, bool abortable);

 private:
  struct Round;
  bool gather_and_release(int tag, int value, Clock::time_point deadline, bool abortable, int* result);
  int control_tag(std::uint64_t round, int which) const;
  int gather_tag() const { return first_tag_; }
  /// Receives one pending abort notice into peer_error_ (if none was recorded yet); false if none.
  bool receive_abort_notice();

  MPI_Comm comm_;
  int first_tag_;
  WaitPolicy policy_;
  std::function<void()> progress_;
  int rank_ = 0;
  int size_ = 1;
  std::uint64_t barrier_count_ = 0;
  std::uint64_t agree_count_ = 0;
  std::vector<std::unique_ptr<Round>> abandoned_rounds_;  // rounds abandoned with a send pending
  bool aborted_ = false;
  std::unique_ptr<std::string> abort_text_;
  std::vector<MPI_Request> abort_reqs_;
  std::string peer_error_;
};

}  // namespace pipelab::runtime::detail
