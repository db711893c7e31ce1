// Device memory RAII for the CUDA kernels: the stream-ordered array that holds per-microbatch
// state. Device-side only: included by kernels/cuda/*.cu.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <utility>

#include "cuda_check.h"

namespace pipelab::kernels::cuda::detail {

using cuda::NoThrowDeviceGuard;

/// Stream-ordered fp32 device array (cudaMallocAsync / cudaFreeAsync). Per-microbatch state.
/// It records its device and the stream its last pass was enqueued on (the allocating stream until
/// used_on() moves it), so that state dropped without being consumed is freed in that stream's
/// order, on that device, without synchronizing anything.
class DevArray {
 public:
  DevArray() = default;
  /// On the current device (the callers hold a DeviceGuard), ordered on `stream`.
  static DevArray alloc(std::size_t elems, cudaStream_t stream) {
    DevArray a;
    PIPELAB_CUDA_CHECK(cudaGetDevice(&a.device_));
    a.stream_ = stream;
    if (elems > 0) {
      PIPELAB_CUDA_CHECK(
          cudaMallocAsync(reinterpret_cast<void**>(&a.ptr_), elems * sizeof(float), stream));
    }
    a.size_ = elems;
    return a;
  }
  ~DevArray() { reset(); }
  DevArray(DevArray&& o) noexcept
      : ptr_(std::exchange(o.ptr_, nullptr)),
        size_(std::exchange(o.size_, 0)),
        device_(o.device_),
        stream_(o.stream_) {}
  /// Frees what this array held (stream-ordered, no device synchronization), then takes `o`'s.
  DevArray& operator=(DevArray&& o) noexcept {
    if (this != &o) {
      reset();
      ptr_ = std::exchange(o.ptr_, nullptr);
      size_ = std::exchange(o.size_, 0);
      device_ = o.device_;
      stream_ = o.stream_;
    }
    return *this;
  }
  DevArray(const DevArray&) = delete;
  DevArray& operator=(const DevArray&) = delete;

  /// Work reading or writing the array is now enqueued on `stream` (a later pass, possibly on
  /// another stream): a drop frees it after that work rather than after the allocating stream's.
  void used_on(cudaStream_t stream) { stream_ = stream; }
  /// Stream-ordered free after the work already enqueued on `stream` (the consuming pass's).
  void release(cudaStream_t stream) {
    if (ptr_ != nullptr) PIPELAB_CUDA_CHECK(cudaFreeAsync(ptr_, stream));
    ptr_ = nullptr;
    size_ = 0;
  }
  float* get() const { return ptr_; }
  std::size_t size() const { return size_; }
  std::int64_t bytes() const { return static_cast<std::int64_t>(size_ * sizeof(float)); }

 private:
  /// The drop path (destructor, move-assignment): free on the owning device, in the order of the
  /// recorded stream (which must still exist). Never throws; failures are logged to stderr, and
  /// the memory is leaked when the device cannot be made current.
  void reset() noexcept {
    if (ptr_ != nullptr) {
      NoThrowDeviceGuard guard(device_);
      if (guard.ok()) PIPELAB_CUDA_LOG(cudaFreeAsync(ptr_, stream_));
    }
    ptr_ = nullptr;
    size_ = 0;
  }

  float* ptr_ = nullptr;
  std::size_t size_ = 0;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

}  // namespace pipelab::kernels::cuda::detail
