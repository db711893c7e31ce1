// MPI transport: one process per rank (`mpirun -np P pipelab run --transport mpi ...`). SEND posts
// MPI_Isend, RECV posts MPI_Irecv, the consumer waits; waits poll so that the watchdog and abort
// notices from failed peers are seen. No MPI header is included here.
#pragma once

#include <cstddef>
#include <memory>
#include <span>

#include "pipelab/runtime/transport.h"

namespace pipelab::runtime {

/// True when this build contains the MPI transport.
bool mpi_built();

/// MPI for the lifetime of the object: initializes MPI (thread level FUNNELED) unless it already
/// is, finalizes it on destruction if it initialized it. At most one per process. Throws DeviceError
/// when the build has no MPI.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  /// Endpoint on MPI_COMM_WORLD for messages of `shape`; shape.ranks must equal size().
  std::unique_ptr<Transport> transport(const PipelineShape& shape, WaitPolicy wait = WaitPolicy::Auto);
  /// Rank 0's `bytes` on every rank (a collective: every rank calls it, at start-up; e.g. NCCL's id).
  void broadcast(std::span<std::byte> bytes);

 private:
  int rank_ = 0;
  int size_ = 1;
  bool owns_ = false;
};

}  // namespace pipelab::runtime
