// Error checks for CUDA runtime and cuBLAS calls: they throw pipelab::DeviceError carrying
// file:line and the library's error string. Never exit(). Destructors, which must not throw, use
// the _LOG variants instead: they report a failure on stderr and carry on. Device-side code only
// (kernels/cuda/).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <string>

#include "pipelab/base/error.h"

namespace pipelab::kernels::cuda {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* expr, const char* file,
                                          int line) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                    cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

[[noreturn]] inline void throw_cublas_error(cublasStatus_t status, const char* expr,
                                            const char* file, int line) {
  throw DeviceError(std::string(file) + ":" + std::to_string(line) + ": " + expr + " failed: " +
                    cublasGetStatusName(status) + " (" + cublasGetStatusString(status) + ")");
}

/// For destructors: reports a failed call on stderr (file:line, the call, the error name) and clears
/// the runtime's last-error state, so that a later PIPELAB_CUDA_CHECK_LAUNCH does not blame a kernel
/// launch for it. Returns whether the call succeeded.
inline bool log_cuda_error(cudaError_t err, const char* expr, const char* file, int line) noexcept {
  if (err == cudaSuccess) return true;
  std::fprintf(stderr, "pipelab: %s:%d: %s failed: %s (%s)\n", file, line, expr, cudaGetErrorName(err),
               cudaGetErrorString(err));
  cudaGetLastError();
  return false;
}

inline bool log_cublas_error(cublasStatus_t status, const char* expr, const char* file, int line) noexcept {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  std::fprintf(stderr, "pipelab: %s:%d: %s failed: %s (%s)\n", file, line, expr, cublasGetStatusName(status),
               cublasGetStatusString(status));
  return false;
}

}  // namespace pipelab::kernels::cuda

#define PIPELAB_CUDA_CHECK(expr)                                                   \
  do {                                                                             \
    const cudaError_t pipelab_err_ = (expr);                                       \
    if (pipelab_err_ != cudaSuccess) {                                             \
      ::pipelab::kernels::cuda::throw_cuda_error(pipelab_err_, #expr, __FILE__,    \
                                                 __LINE__);                        \
    }                                                                              \
  } while (0)

#define PIPELAB_CUBLAS_CHECK(expr)                                                 \
  do {                                                                             \
    const cublasStatus_t pipelab_status_ = (expr);                                 \
    if (pipelab_status_ != CUBLAS_STATUS_SUCCESS) {                                \
      ::pipelab::kernels::cuda::throw_cublas_error(pipelab_status_, #expr,         \
                                                   __FILE__, __LINE__);            \
    }                                                                              \
  } while (0)

/// After a kernel launch: launch-configuration errors surface here, with the launch's location.
#define PIPELAB_CUDA_CHECK_LAUNCH() PIPELAB_CUDA_CHECK(cudaGetLastError())

/// Non-throwing checks for destructors: log a failure to stderr; evaluate to true on success.
#define PIPELAB_CUDA_LOG(expr) ::pipelab::kernels::cuda::log_cuda_error((expr), #expr, __FILE__, __LINE__)
#define PIPELAB_CUBLAS_LOG(expr) \
  ::pipelab::kernels::cuda::log_cublas_error((expr), #expr, __FILE__, __LINE__)
