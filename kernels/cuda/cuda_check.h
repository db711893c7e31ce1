// Error checks for CUDA runtime and cuBLAS calls: they throw pipelab::DeviceError carrying
// file:line and the library's error string. Never exit(). Device-side code only (kernels/cuda/).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

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
