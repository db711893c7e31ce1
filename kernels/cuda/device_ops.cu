// The block's small CUDA kernels and the row-major cuBLAS GEMM wrapper (declared in device_ops.cuh).
// Same math as kernels/block.cc; docs/kernels.md has the equations.
#include "device_ops.cuh"

#include <algorithm>
#include <cassert>
#include <cfloat>

#include "cuda_check.h"
#include "pipelab/kernels/gemm_layout.h"
#include "pipelab/base/error.h"

namespace pipelab::kernels::cuda {

namespace {

constexpr int kRowThreads = 256;   // one block per row; a multiple of the warp size
constexpr int kElemThreads = 256;

int elem_blocks(std::int64_t n) {
  return static_cast<int>((n + kElemThreads - 1) / kElemThreads);
}

void check_rows(std::int64_t rows) {
  if (rows > 0x7fffffff) throw DeviceError("kernels/cuda: too many rows for one grid: " +
                                           std::to_string(rows));
}

// ---------------------------------------------------------------------------------------------
// CUDA kernels

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// Reduces v over the block (blockDim.x a multiple of 32) and returns the result to every thread.
template <class Op>
__device__ float block_reduce(float v, Op op, float identity) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x >> 5;
  v = lane < warps ? partial[lane] : identity;
  if (warp == 0) {
    for (int offset = 16; offset > 0; offset >>= 1) {
      v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
    }
    if (lane == 0) partial[0] = v;
  }
  __syncthreads();
  const float result = partial[0];
  __syncthreads();  // partial[] may be reused by the next call
  return result;
}

__global__ void rmsnorm_forward_kernel(const float* x, const float* gain, int cols, float eps,
                                       float* xhat, float* rstd, float* out) {
  const std::int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  float sum_sq = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) sum_sq += xr[c] * xr[c];
  sum_sq = block_reduce(sum_sq, SumOp{}, 0.f);
  const float r = rsqrtf(sum_sq / cols + eps);
  if (threadIdx.x == 0) rstd[row] = r;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xh = xr[c] * r;  // read before the write below (out may alias x, same index)
    xhat[row * cols + c] = xh;
    out[row * cols + c] = xh * gain[c];
  }
}

__global__ void rmsnorm_backward_add_kernel(const float* dn, const float* xhat, const float* rstd,
                                            const float* gain, int cols, float* dx) {
  const std::int64_t row = blockIdx.x;
  const float* dnr = dn + row * cols;
  const float* xhr = xhat + row * cols;
  float dot = 0.f;
  for (int c = threadIdx.x; c < cols; c += blockDim.x) dot += dnr[c] * gain[c] * xhr[c];
  dot = block_reduce(dot, SumOp{}, 0.f);
  const float mean = dot / cols;
  const float r = rstd[row];
  for (int c = threadIdx.x; c < cols; c += blockDim.x) {
    dx[row * cols + c] += r * (dnr[c] * gain[c] - xhr[c] * mean);
  }
}

__global__ void column_dot_add_kernel(const float* a, const float* b, std::int64_t rows, int cols,
                                      float* grad) {
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  if (c >= cols) return;
  float acc = 0.f;
  for (std::int64_t t = 0; t < rows; ++t) acc += a[t * cols + c] * b[t * cols + c];
  grad[c] += acc;
}

__global__ void causal_softmax_forward_kernel(float* scores, int seq) {
  const std::int64_t row = blockIdx.x;
  const int t = static_cast<int>(row % seq);
  float* p = scores + row * seq;
  float max = -FLT_MAX;
  for (int j = threadIdx.x; j <= t; j += blockDim.x) max = fmaxf(max, p[j]);
  max = block_reduce(max, MaxOp{}, -FLT_MAX);
  float sum = 0.f;
  for (int j = threadIdx.x; j <= t; j += blockDim.x) {
    const float e = __expf(p[j] - max);
    p[j] = e;
    sum += e;
  }
  sum = block_reduce(sum, SumOp{}, 0.f);
  const float inv = 1.f / sum;
  for (int j = threadIdx.x; j < seq; j += blockDim.x) p[j] = j <= t ? p[j] * inv : 0.f;
}

__global__ void causal_softmax_backward_kernel(const float* probs, float* dprobs, int seq) {
  const std::int64_t row = blockIdx.x;
  const int t = static_cast<int>(row % seq);
  const float* p = probs + row * seq;
  float* d = dprobs + row * seq;
  float dot = 0.f;
  for (int j = threadIdx.x; j <= t; j += blockDim.x) dot += p[j] * d[j];
  dot = block_reduce(dot, SumOp{}, 0.f);
  for (int j = threadIdx.x; j < seq; j += blockDim.x) d[j] = j <= t ? p[j] * (d[j] - dot) : 0.f;
}

constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2/pi)
constexpr float kGeluA = 0.044715f;

__global__ void gelu_forward_kernel(const float* pre, float* act, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = pre[i];
  act[i] = 0.5f * x * (1.f + tanhf(kGeluC * (x + kGeluA * x * x * x)));
}

__global__ void gelu_backward_kernel(const float* dact, const float* pre, float* dpre,
                                     std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = pre[i];
  const float th = tanhf(kGeluC * (x + kGeluA * x * x * x));
  const float grad =
      0.5f * (1.f + th) + 0.5f * x * (1.f - th * th) * kGeluC * (1.f + 3.f * kGeluA * x * x);
  dpre[i] = dact[i] * grad;
}

__device__ float sigmoidf(float x) { return 1.f / (1.f + __expf(-x)); }

__global__ void swiglu_forward_kernel(const float* gate, const float* up, float* act,
                                      std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  act[i] = g * sigmoidf(g) * up[i];
}

__global__ void swiglu_backward_kernel(const float* dact, const float* gate, const float* up,
                                       float* dup, float* dgate, std::int64_t n) {
  const std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  const float s = sigmoidf(g);
  dup[i] = dact[i] * g * s;
  dgate[i] = dact[i] * up[i] * s * (1.f + g * (1.f - s));
}

__global__ void mse_loss_in_place_kernel(float* out, const float* target, std::int64_t n,
                                         double scale, double* loss) {
  float sum_sq = 0.f;
  const double grad_scale = scale * 2.0 / static_cast<double>(n);
  for (std::int64_t i = blockIdx.x * std::int64_t{blockDim.x} + threadIdx.x; i < n;
       i += std::int64_t{gridDim.x} * blockDim.x) {
    const float diff = out[i] - target[i];
    sum_sq += diff * diff;
    out[i] = static_cast<float>(grad_scale * diff);
  }
  sum_sq = block_reduce(sum_sq, SumOp{}, 0.f);
  if (threadIdx.x == 0) atomicAdd(loss, scale * static_cast<double>(sum_sq) / static_cast<double>(n));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Kernel launchers

void gemm(cublasHandle_t handle, cublasComputeType_t compute, bool trans_a, bool trans_b, int m,
          int n, int k, float alpha, const float* a, int lda, std::int64_t stride_a,
          const float* b, int ldb, std::int64_t stride_b, float beta, float* c, int ldc,
          std::int64_t stride_c, int batch) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  const ColMajorGemm g = row_major_to_col_major(trans_a, trans_b, m, n, k);
  const cublasOperation_t op_first = g.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t op_second = g.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (batch == 1) {
    PIPELAB_CUBLAS_CHECK(cublasGemmEx(handle, op_first, op_second, g.m, g.n, g.k, &alpha, b,
                                      CUDA_R_32F, ldb, a, CUDA_R_32F, lda, &beta, c, CUDA_R_32F,
                                      ldc, compute, CUBLAS_GEMM_DEFAULT));
  } else {
    PIPELAB_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle, op_first, op_second, g.m, g.n, g.k, &alpha, b, CUDA_R_32F, ldb, stride_b, a,
        CUDA_R_32F, lda, stride_a, &beta, c, CUDA_R_32F, ldc, stride_c, batch, compute,
        CUBLAS_GEMM_DEFAULT));
  }
}

void rmsnorm_forward(const float* x, const float* gain, std::int64_t rows, int cols, float eps,
                     float* xhat, float* rstd, float* out, cudaStream_t stream) {
  check_rows(rows);
  if (rows == 0) return;
  rmsnorm_forward_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      x, gain, cols, eps, xhat, rstd, out);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void rmsnorm_backward_add(const float* dn, const float* xhat, const float* rstd,
                          const float* gain, std::int64_t rows, int cols, float* dx,
                          cudaStream_t stream) {
  check_rows(rows);
  if (rows == 0) return;
  rmsnorm_backward_add_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      dn, xhat, rstd, gain, cols, dx);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void column_dot_add(const float* a, const float* b, std::int64_t rows, int cols, float* grad,
                    cudaStream_t stream) {
  if (cols == 0) return;
  column_dot_add_kernel<<<elem_blocks(cols), kElemThreads, 0, stream>>>(a, b, rows, cols, grad);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void causal_softmax_forward(float* scores, std::int64_t rows, int seq, cudaStream_t stream) {
  check_rows(rows);
  if (rows == 0) return;
  causal_softmax_forward_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(scores,
                                                                                         seq);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void causal_softmax_backward(const float* probs, float* dprobs, std::int64_t rows, int seq,
                             cudaStream_t stream) {
  check_rows(rows);
  if (rows == 0) return;
  causal_softmax_backward_kernel<<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
      probs, dprobs, seq);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void gelu_forward(const float* pre, float* act, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  gelu_forward_kernel<<<elem_blocks(n), kElemThreads, 0, stream>>>(pre, act, n);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void gelu_backward(const float* dact, const float* pre, float* dpre, std::int64_t n,
                   cudaStream_t stream) {
  if (n == 0) return;
  gelu_backward_kernel<<<elem_blocks(n), kElemThreads, 0, stream>>>(dact, pre, dpre, n);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void swiglu_forward(const float* gate, const float* up, float* act, std::int64_t n,
                    cudaStream_t stream) {
  if (n == 0) return;
  swiglu_forward_kernel<<<elem_blocks(n), kElemThreads, 0, stream>>>(gate, up, act, n);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void swiglu_backward(const float* dact, const float* gate, const float* up, float* dup,
                     float* dgate, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  swiglu_backward_kernel<<<elem_blocks(n), kElemThreads, 0, stream>>>(dact, gate, up, dup, dgate,
                                                                      n);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

void mse_loss_in_place(float* out, const float* target, std::int64_t n, double scale,
                       double* loss, cudaStream_t stream) {
  if (n <= 0) throw InputError("mse_loss_in_place: n=" + std::to_string(n) + " must be > 0");
  const int blocks = static_cast<int>(std::min<std::int64_t>(elem_blocks(n), 1024));
  mse_loss_in_place_kernel<<<blocks, kElemThreads, 0, stream>>>(out, target, n, scale, loss);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

}  // namespace pipelab::kernels::cuda
