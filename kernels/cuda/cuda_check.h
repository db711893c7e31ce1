// cuBLAS error checks for kernels/cuda/, on top of the shared CUDA checks (pipelab/kernels/cuda_check.h).
#pragma once

#include <cublas_v2.h>

#include "pipelab/kernels/cuda_check.h"

#define PIPELAB_CUBLAS_CHECK(expr)                                                                        \
  do {                                                                                                    \
    const cublasStatus_t pipelab_status_ = (expr);                                                        \
    if (pipelab_status_ != CUBLAS_STATUS_SUCCESS) {                                                       \
      ::pipelab::kernels::cuda::throw_device_call_error(cublasGetStatusName(pipelab_status_),             \
                                                        cublasGetStatusString(pipelab_status_), #expr,    \
                                                        __FILE__, __LINE__);                              \
    }                                                                                                     \
  } while (0)

#define PIPELAB_CUBLAS_LOG(expr)                                                                          \
  [&]() noexcept {                                                                                        \
    const cublasStatus_t pipelab_status_ = (expr);                                                        \
    if (pipelab_status_ == CUBLAS_STATUS_SUCCESS) return true;                                            \
    ::pipelab::kernels::cuda::log_device_call_error(cublasGetStatusName(pipelab_status_),                 \
                                                    cublasGetStatusString(pipelab_status_), #expr,        \
                                                    __FILE__, __LINE__);                                  \
    return false;                                                                                         \
  }()
