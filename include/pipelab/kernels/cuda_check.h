// Error checks and device scopes for CUDA runtime calls, shared by the CUDA sources of kernels/ and runtime/ (and
// only those: the header includes cuda_runtime.h). A failed call throws pipelab::DeviceError with
// file:line, the call and the library's error name and text; never exit(). Destructors, which must
// not throw, use the _LOG variants: they report the failure on stderr and carry on. Other CUDA
// libraries (cuBLAS, NCCL, CUPTI) report through the same two functions.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "pipelab/base/error.h"

namespace pipelab::kernels::cuda {

/// Throws DeviceError "file:line: expr failed: name (text)".
[[noreturn]] inline void throw_device_call_error(const char* name, const char* text, const char* expr, const char* file,
                                                 int line) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " + name + " (" + text + ")");
}

/// Reports "pipelab: file:line: expr failed: name (text)" on stderr.
inline void log_device_call_error(const char* name, const char* text, const char* expr, const char* file, int line) noexcept {
  std::fprintf(stderr, "pipelab: %s:%d: %s failed: %s (%s)\n", file, line, expr, name, text);
}

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file, int line) {
  throw_device_call_error(cudaGetErrorName(err), cudaGetErrorString(err), expr, file, line);
}

/// For destructors: reports a failed call and clears the runtime's last-error state, so that a later
/// PIPELAB_CUDA_CHECK_LAUNCH does not blame a kernel launch for it. Returns whether it succeeded.
inline bool log_cuda_error(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  if (err == cudaSuccess) return true;
  log_device_call_error(cudaGetErrorName(err), cudaGetErrorString(err), expr, file, line);
  cudaGetLastError();
  return false;
}

}  // namespace pipelab::kernels::cuda

#define PIPELAB_CUDA_CHECK(expr)                                                                  \
  do {                                                                                            \
    const cudaError_t pipelab_err_ = (expr);                                                      \
    if (pipelab_err_ != cudaSuccess) ::pipelab::kernels::cuda::throw_cuda_error(pipelab_err_, #expr, __FILE__, __LINE__); \
  } while (0)

/// After a kernel launch: launch-configuration errors surface here, with the launch's location.
#define PIPELAB_CUDA_CHECK_LAUNCH() PIPELAB_CUDA_CHECK(cudaGetLastError())

/// Non-throwing check for destructors: logs a failure to stderr; evaluates to true on success.
#define PIPELAB_CUDA_LOG(expr) ::pipelab::kernels::cuda::log_cuda_error((expr), #expr, __FILE__, __LINE__)

namespace pipelab::kernels::cuda {

/// Makes `device` current for a scope and restores the previous device.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) {
    PIPELAB_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ != device) PIPELAB_CUDA_CHECK(cudaSetDevice(device));
    changed_ = previous_ != device;
  }
  ~DeviceGuard() {
    if (changed_) PIPELAB_CUDA_LOG(cudaSetDevice(previous_));  // destructors log, never throw
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

/// DeviceGuard for destructors: never throws, logs failures; ok() says whether `device` is current.
class NoThrowDeviceGuard {
 public:
  explicit NoThrowDeviceGuard(int device) noexcept {
    if (!PIPELAB_CUDA_LOG(cudaGetDevice(&previous_))) return;
    if (previous_ == device) {
      ok_ = true;
      return;
    }
    ok_ = changed_ = PIPELAB_CUDA_LOG(cudaSetDevice(device));
  }
  ~NoThrowDeviceGuard() {
    if (changed_) PIPELAB_CUDA_LOG(cudaSetDevice(previous_));
  }
  NoThrowDeviceGuard(const NoThrowDeviceGuard&) = delete;
  NoThrowDeviceGuard& operator=(const NoThrowDeviceGuard&) = delete;
  bool ok() const { return ok_; }

 private:
  int previous_ = 0;
  bool ok_ = false;
  bool changed_ = false;
};

}  // namespace pipelab::kernels::cuda
