// Private (runtime/cuda): device memory for activation buffers, and the fence protocol that makes
// pooled device buffers safe to reuse across streams: every device operation on a buffer first
// waits for its fence and then records it (buffer.h).
#pragma once

#include <cuda_runtime.h>

#include "pipelab/runtime/buffer.h"

namespace pipelab::runtime::cuda {

/// cudaMalloc'd memory of one device; each buffer's fence is an ordering-only event there.
class CudaMemory final : public MemoryResource {
 public:
  explicit CudaMemory(int device) : device_(device) {}
  void* allocate(std::size_t bytes) override;
  void deallocate(void* p, std::size_t bytes) noexcept override;
  bool host_accessible() const override { return false; }
  void* create_fence() override;
  void destroy_fence(void* fence) noexcept override;
  int device() const { return device_; }

 private:
  int device_;
};

/// `stream` waits for the last device work on `b`.
void wait_for(const Buffer& b, cudaStream_t stream);
/// The work enqueued on `stream` so far is now the last device work on `b`.
void fence_after(const Buffer& b, cudaStream_t stream);

}  // namespace pipelab::runtime::cuda
