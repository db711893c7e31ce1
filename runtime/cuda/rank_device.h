// Private (runtime/cuda): what a rank's transport uses of its CudaBackend's device resources.
#pragma once

#include <cuda_runtime.h>

#include "pipelab/runtime/buffer.h"
#include "pipelab/runtime/cuda_backend.h"

namespace pipelab::runtime {

namespace cuda {
class CudaClock;
}

struct CudaRankDevice {
  int device = 0;
  cudaStream_t send = nullptr;  // outgoing copies / ncclSend
  cudaStream_t recv = nullptr;  // ncclRecv
  cuda::CudaClock* clock = nullptr;
  BufferPool* pool = nullptr;   // where this rank's received activations live
};

}  // namespace pipelab::runtime
