// CudaMemory and the buffer fences.
#include "device_memory.h"

#include "pipelab/runtime/errors.h"
#include "streams.h"

namespace pipelab::runtime::cuda {

void* CudaMemory::allocate(std::size_t bytes) {
  DeviceGuard guard(device_);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw ExecutionError("cuda: cannot allocate " + std::to_string(bytes) + " bytes on device " + std::to_string(device_) + ": " +
                         cudaGetErrorString(err));
  }
  return p;
}

void CudaMemory::deallocate(void* p, std::size_t) noexcept {
  NoThrowDeviceGuard guard(device_);
  if (guard.ok()) PIPELAB_CUDA_LOG(cudaFree(p));
}

void* CudaMemory::create_fence() {
  DeviceGuard guard(device_);
  cudaEvent_t e = nullptr;
  PIPELAB_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void CudaMemory::destroy_fence(void* fence) noexcept {
  if (fence == nullptr) return;
  NoThrowDeviceGuard guard(device_);
  if (guard.ok()) PIPELAB_CUDA_LOG(cudaEventDestroy(static_cast<cudaEvent_t>(fence)));
}

void wait_for(const Buffer& b, cudaStream_t stream) {
  if (b.fence() != nullptr) PIPELAB_CUDA_CHECK(cudaStreamWaitEvent(stream, static_cast<cudaEvent_t>(b.fence()), 0));
}

void fence_after(const Buffer& b, cudaStream_t stream) {
  if (b.fence() != nullptr) PIPELAB_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(b.fence()), stream));
}

}  // namespace pipelab::runtime::cuda
