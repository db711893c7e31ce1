// Private (runtime/cuda): one rank's SM group of a GPU shared by several ranks (single-GPU mode),
// as a green context (CUDA driver API, CUDA >= 12.4): streams made here run on that group only.
#pragma once

#include <cuda.h>

#include "pipelab/runtime/sm_partition.h"
#include "streams.h"

namespace pipelab::runtime::cuda {

class GreenPartition {
 public:
  /// Group `rank` of `ranks` equal groups of `device`'s SMs (plan_sm_partition with the device's
  /// own granularity). Throws DeviceError when the driver cannot split or create the context, or
  /// when the plan leaves the ranks sharing the SMs.
  GreenPartition(int device, int ranks, int rank);
  ~GreenPartition();
  GreenPartition(const GreenPartition&) = delete;
  GreenPartition& operator=(const GreenPartition&) = delete;

  /// A non-blocking stream whose kernels run on this group's SMs.
  Stream make_stream() const;
  const SmPartition& plan() const { return plan_; }

 private:
  int device_;
  SmPartition plan_;
  CUgreenCtx context_ = nullptr;
};

/// SMs of `device` (cudaDevAttrMultiProcessorCount).
int sm_count(int device);

}  // namespace pipelab::runtime::cuda
