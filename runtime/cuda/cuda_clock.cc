// CudaClock: markers are timing events, reused from one iteration to the next.
#include "cuda_clock.h"

#include <cmath>

#include "cupti_trace.h"
#include "pipelab/runtime/errors.h"

namespace pipelab::runtime::cuda {

CudaClock::CudaClock(int device, cudaStream_t epoch_stream, int cupti_rank)
    : device_(device), epoch_stream_(epoch_stream), cupti_rank_(cupti_rank), epoch_(device, true) {}

void CudaClock::start_iteration() {
  std::lock_guard lock(mutex_);
  used_ = 0;
  epoch_.record(epoch_stream_);
  if (cupti_rank_ >= 0) CuptiTrace::instance().mark_epoch(cupti_rank_);
}

DeviceClock::Token CudaClock::mark(void* stream) {
  std::lock_guard lock(mutex_);
  if (used_ == markers_.size()) markers_.emplace_back(device_, true);
  markers_[used_].record(static_cast<cudaStream_t>(stream));
  return static_cast<Token>(used_++);
}

std::int64_t CudaClock::resolve(Token token) {
  std::lock_guard lock(mutex_);
  if (token < 0 || static_cast<std::size_t>(token) >= used_) {
    throw ExecutionError("cuda clock: marker " + std::to_string(token) + " was not recorded this iteration");
  }
  float ms = 0;
  PIPELAB_CUDA_CHECK(cudaEventElapsedTime(&ms, epoch_.get(), markers_[static_cast<std::size_t>(token)].get()));
  return std::llround(static_cast<double>(ms) * 1e6);
}

}  // namespace pipelab::runtime::cuda
