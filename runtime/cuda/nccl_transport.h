// Private (runtime/cuda): the NCCL transport. NCCL matches point-to-point messages by order, not by
// tag, and orders every operation of one communicator: so each direction of each rank pair with
// traffic gets its own two-rank communicator and, on both sides, its own stream. Sends are issued
// in the executor's order (which defines the pair's order); a receive posts every earlier message
// of its pair, in the sender's order (pair_traffic), into buffers of this rank's pool. Operations a
// rank issues between two other actions (consecutive SEND/RECV actions, comm_batches) go out in one
// ncclGroupStart/End. Barriers, abort notices and the result gather stay with the control transport
// (the in-process endpoint, or MPI's).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "pipelab/runtime/p2p_plan.h"
#include "pipelab/runtime/transport.h"
#include "rank_device.h"

namespace pipelab::runtime::cuda {

/// The pair communicators of one run. In-process: made once for all ranks (ncclCommInitAll per
/// pair), then each rank thread takes its endpoint. Multi-process: every process makes its own
/// from a world communicator bootstrapped with `unique_id` bytes rank 0 made (broadcast by MPI).
class NcclPairs {
 public:
  /// In-process: `device_of_rank[r]` is rank r's GPU; pairs need two distinct GPUs.
  static std::shared_ptr<NcclPairs> in_process(const Schedule& lowered, const std::vector<int>& device_of_rank);
  /// Multi-process: this process is `rank` of `ranks` on `device`; `unique_id` from new_unique_id()
  /// on rank 0, the same bytes on every rank.
  static std::shared_ptr<NcclPairs> distributed(const Schedule& lowered, int rank, int device, std::span<const std::byte> unique_id);
  static std::vector<std::byte> new_unique_id();
  static std::size_t unique_id_bytes();

  ~NcclPairs();
  NcclPairs(const NcclPairs&) = delete;
  NcclPairs& operator=(const NcclPairs&) = delete;

  /// Rank r's endpoint; `control` carries barrier, abort and gather.
  std::unique_ptr<Transport> transport(int rank, Transport& control, const CudaRankDevice& device);

  struct Pair;

 private:
  explicit NcclPairs(const PipelineShape& shape);
  PipelineShape shape_;
  std::vector<PairTraffic> traffic_;
  std::vector<std::unique_ptr<Pair>> pairs_;  // parallel to traffic_
  void* world_ = nullptr;                     // ncclComm_t of a distributed run
};

/// NCCL's version as "2.28.3".
std::string nccl_version();

}  // namespace pipelab::runtime::cuda
