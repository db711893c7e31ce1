// wait_stream: cudaStreamQuery in a polling loop (the transports' wait loop).
#include "stream_wait.h"

#include "../wait.h"
#include "pipelab/kernels/cuda_check.h"

namespace pipelab::runtime::cuda {

bool wait_stream(cudaStream_t stream, Clock::time_point deadline) {
  auto done = [&] {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaErrorNotReady) return false;
    PIPELAB_CUDA_CHECK(e);
    return true;
  };
  return detail::poll_until(done, [] {}, deadline, WaitPolicy::Block);
}

}  // namespace pipelab::runtime::cuda
