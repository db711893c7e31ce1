// Private (runtime/cuda): owning handles of CUDA streams and events, created on a given device.
#pragma once

#include <cuda_runtime.h>

#include <utility>

#include "pipelab/kernels/cuda_check.h"

namespace pipelab::runtime::cuda {

using kernels::cuda::DeviceGuard;
using kernels::cuda::NoThrowDeviceGuard;

/// A non-blocking stream on `device`, or one adopted from elsewhere (a green context's; it is then
/// destroyed here too). Move-only.
class Stream {
 public:
  Stream() = default;
  explicit Stream(int device) : device_(device) {
    DeviceGuard guard(device);
    PIPELAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  static Stream adopt(int device, cudaStream_t s) {
    Stream out;
    out.device_ = device;
    out.stream_ = s;
    return out;
  }
  ~Stream() { reset(); }
  Stream(Stream&& o) noexcept : device_(o.device_), stream_(std::exchange(o.stream_, nullptr)) {}
  Stream& operator=(Stream&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      stream_ = std::exchange(o.stream_, nullptr);
    }
    return *this;
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  int device() const { return device_; }
  void synchronize() const { PIPELAB_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  void reset() noexcept {
    if (stream_ == nullptr) return;
    NoThrowDeviceGuard guard(device_);
    if (guard.ok()) PIPELAB_CUDA_LOG(cudaStreamDestroy(stream_));
    stream_ = nullptr;
  }
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
};

/// An event on `device`; `timing` false makes a cheap ordering-only event. Move-only.
class Event {
 public:
  Event() = default;
  Event(int device, bool timing) : device_(device) {
    DeviceGuard guard(device);
    PIPELAB_CUDA_CHECK(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming));
  }
  ~Event() { reset(); }
  Event(Event&& o) noexcept : device_(o.device_), event_(std::exchange(o.event_, nullptr)) {}
  Event& operator=(Event&& o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      event_ = std::exchange(o.event_, nullptr);
    }
    return *this;
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }
  void record(cudaStream_t s) const { PIPELAB_CUDA_CHECK(cudaEventRecord(event_, s)); }
  /// `s` waits for the work before the last record().
  void wait_on(cudaStream_t s) const { PIPELAB_CUDA_CHECK(cudaStreamWaitEvent(s, event_, 0)); }

 private:
  void reset() noexcept {
    if (event_ == nullptr) return;
    NoThrowDeviceGuard guard(device_);
    if (guard.ok()) PIPELAB_CUDA_LOG(cudaEventDestroy(event_));
    event_ = nullptr;
  }
  int device_ = 0;
  cudaEvent_t event_ = nullptr;
};

}  // namespace pipelab::runtime::cuda
