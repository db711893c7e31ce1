// Private (runtime/cuda): the DeviceClock of a rank: timing events recorded in stream order,
// resolved against the iteration's epoch event after the device caught up.
#pragma once

#include <cuda_runtime.h>

#include <deque>
#include <mutex>

#include "pipelab/runtime/device_clock.h"
#include "streams.h"

namespace pipelab::runtime::cuda {

class CudaClock final : public DeviceClock {
 public:
  /// Events on `device`; the epoch is recorded on `epoch_stream` (the rank's compute stream). With
  /// `cupti_rank` >= 0 the CUPTI trace's epoch of that rank starts with the clock's.
  CudaClock(int device, cudaStream_t epoch_stream, int cupti_rank = -1);

  void start_iteration() override;
  Token mark(void* stream) override;
  std::int64_t resolve(Token token) override;

 private:
  int device_;
  cudaStream_t epoch_stream_;
  int cupti_rank_;
  Event epoch_;
  std::mutex mutex_;
  std::deque<Event> markers_;  // reused across iterations; a deque never moves its elements
  std::size_t used_ = 0;
};

}  // namespace pipelab::runtime::cuda
