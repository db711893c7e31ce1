// Private (runtime/cuda): the device-copy transport of an in-process CUDA run. A message is a
// device-to-device copy (peer copy across GPUs) into a buffer of the receiver's pool, enqueued by
// the sender on the receiver's receive stream, ordered by the buffers' fences and timed on the
// receiver's clock; the hand-over itself (and the barrier, abort and gather) is the in-process
// transport's. Single-GPU mode runs every rank's traffic through it.
#pragma once

#include <memory>
#include <vector>

#include "pipelab/runtime/transport.h"
#include "rank_device.h"

namespace pipelab::runtime::cuda {

class CopyWorld {
 public:
  explicit CopyWorld(const PipelineShape& shape);
  /// Registers rank r's device resources; every rank does before its first iteration (the
  /// iteration barrier orders that before any send).
  void attach(int rank, const CudaRankDevice& device);
  /// Rank r's endpoint over `control`, the in-process endpoint of the same rank.
  std::unique_ptr<Transport> transport(int rank, Transport& control);

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace pipelab::runtime::cuda
