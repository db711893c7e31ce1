// Launchers of the block's small CUDA kernels (norms, causal softmax, activations, gain gradients)
// and the row-major cuBLAS GEMM wrapper. Each launcher takes a stream, checks its arguments and the
// launch. Device-side only: included by kernels/cuda/*.cu.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace pipelab::kernels::cuda {

// ---------------------------------------------------------------------------------------------
// GEMM

/// Row-major C(M, N) = alpha op(A)(M, K) op(B)(K, N) + beta C, fp32 storage, `compute` math; with
/// batch > 1, matrix i of each operand starts at stride_* * i elements. Runs on the handle's stream.
void gemm(cublasHandle_t handle, cublasComputeType_t compute, bool trans_a, bool trans_b, int m,
          int n, int k, float alpha, const float* a, int lda, std::int64_t stride_a,
          const float* b, int ldb, std::int64_t stride_b, float beta, float* c, int ldc,
          std::int64_t stride_c, int batch = 1);

// ---------------------------------------------------------------------------------------------
// RMSNorm

/// Per row: rstd = 1/sqrt(mean(x^2) + eps), xhat = x * rstd, out = xhat * gain. out may equal x.
void rmsnorm_forward(const float* x, const float* gain, std::int64_t rows, int cols, float eps,
                     float* xhat, float* rstd, float* out, cudaStream_t stream);

/// dx += rstd * (dn*gain - xhat * mean(dn*gain*xhat)) per row.
void rmsnorm_backward_add(const float* dn, const float* xhat, const float* rstd,
                          const float* gain, std::int64_t rows, int cols, float* dx,
                          cudaStream_t stream);

/// grad[c] += sum_t a[t, c] * b[t, c]   (norm-gain weight gradient)
void column_dot_add(const float* a, const float* b, std::int64_t rows, int cols, float* grad,
                    cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// Causal softmax over `rows` rows of length seq; row r is query position r % seq.

/// In place: scores -> probabilities, zeros above the diagonal.
void causal_softmax_forward(float* scores, std::int64_t rows, int seq, cudaStream_t stream);

/// In place: dprobs -> dscores = P * (dP - rowsum(P * dP)), zeros above the diagonal.
void causal_softmax_backward(const float* probs, float* dprobs, std::int64_t rows, int seq,
                             cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// MLP activations, elementwise over n elements

void gelu_forward(const float* pre, float* act, std::int64_t n, cudaStream_t stream);
/// dpre = dact * gelu'(pre)
void gelu_backward(const float* dact, const float* pre, float* dpre, std::int64_t n,
                   cudaStream_t stream);
/// act = silu(gate) * up
void swiglu_forward(const float* gate, const float* up, float* act, std::int64_t n,
                    cudaStream_t stream);
/// dup = dact * silu(gate), dgate = dact * up * silu'(gate)
void swiglu_backward(const float* dact, const float* gate, const float* up, float* dup,
                     float* dgate, std::int64_t n, cudaStream_t stream);

// ---------------------------------------------------------------------------------------------
// Loss

/// MSE against `target` over n elements, in place like kernels::mse_loss_in_place: out := scale *
/// 2 (out - target) / n, and *loss (a device double) += scale * mean((out - target)^2).
void mse_loss_in_place(float* out, const float* target, std::int64_t n, double scale,
                       double* loss, cudaStream_t stream);

}  // namespace pipelab::kernels::cuda
