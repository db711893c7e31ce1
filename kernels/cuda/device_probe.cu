// Device measurements for profiles and benchmarks (GEMM time by shape and math, copy bandwidth)
// and the device loss entry point.
#include <cuda_bf16.h>

#include <algorithm>
#include <vector>

#include "cuda_check.h"
#include "device_memory.cuh"
#include "device_ops.cuh"
#include "pipelab/base/error.h"
#include "pipelab/kernels/device_block.h"

namespace pipelab::kernels {

namespace {

using cuda::DeviceGuard;

cublasComputeType_t compute_of(GemmMath math) {
  switch (math) {
    case GemmMath::Fp32: return CUBLAS_COMPUTE_32F;
    case GemmMath::Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmMath::Bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
  }
  return CUBLAS_COMPUTE_32F;
}

void check_device(int device, const char* what) {
  const int devices = cuda_device_count();
  if (device < 0 || device >= devices) {
    throw DeviceError(std::string(what) + ": device=" + std::to_string(device) + " but " + std::to_string(devices) +
                      " CUDA device(s) are available");
  }
}

/// Owns the stream, events and handle of one measurement.
struct Probe {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  cublasHandle_t handle = nullptr;
  explicit Probe(bool blas) {
    PIPELAB_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    PIPELAB_CUDA_CHECK(cudaEventCreate(&start));
    PIPELAB_CUDA_CHECK(cudaEventCreate(&stop));
    if (blas) {
      PIPELAB_CUBLAS_CHECK(cublasCreate(&handle));
      PIPELAB_CUBLAS_CHECK(cublasSetStream(handle, stream));
    }
  }
  ~Probe() {
    if (handle != nullptr) PIPELAB_CUBLAS_LOG(cublasDestroy(handle));
    if (start != nullptr) PIPELAB_CUDA_LOG(cudaEventDestroy(start));
    if (stop != nullptr) PIPELAB_CUDA_LOG(cudaEventDestroy(stop));
    if (stream != nullptr) PIPELAB_CUDA_LOG(cudaStreamDestroy(stream));
  }
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;

  /// Median ns of `run` over `repeats`, after 3 warm-up runs.
  template <class Run>
  double median_ns(int repeats, Run&& run) {
    for (int i = 0; i < 3; ++i) run();
    std::vector<float> ms;
    for (int i = 0; i < std::max(repeats, 1); ++i) {
      PIPELAB_CUDA_CHECK(cudaEventRecord(start, stream));
      run();
      PIPELAB_CUDA_CHECK(cudaEventRecord(stop, stream));
      PIPELAB_CUDA_CHECK(cudaEventSynchronize(stop));
      float t = 0;
      PIPELAB_CUDA_CHECK(cudaEventElapsedTime(&t, start, stop));
      ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    return static_cast<double>(ms[ms.size() / 2]) * 1e6;
  }
};

__global__ void fill_kernel(float* p, std::size_t n, unsigned seed) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    unsigned x = static_cast<unsigned>(i) * 2654435761u + seed;
    x ^= x >> 13;
    x *= 0x5bd1e995u;
    x ^= x >> 15;
    p[i] = static_cast<float>(x & 0xffffu) / 65536.f - 0.5f;  // uniform in [-0.5, 0.5): never zeros
  }
}

void fill_random(float* p, std::size_t n, unsigned seed, cudaStream_t s) {
  fill_kernel<<<1024, 256, 0, s>>>(p, n, seed);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

__global__ void to_bf16_kernel(const float* in, __nv_bfloat16* out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n; i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = __float2bfloat16(in[i]);
  }
}

void to_bf16(const float* in, __nv_bfloat16* out, std::size_t n, cudaStream_t s) {
  to_bf16_kernel<<<1024, 256, 0, s>>>(in, out, n);
  PIPELAB_CUDA_CHECK_LAUNCH();
}

}  // namespace

void device_mse_loss_in_place(float* out, const float* target, std::int64_t n, double scale, double* loss, void* stream) {
  cuda::mse_loss_in_place(out, target, n, scale, loss, static_cast<cudaStream_t>(stream));
}

double device_gemm_ns(int device, int m, int n, int k, GemmMath math, int repeats, bool native) {
  check_device(device, "device_gemm_ns");
  if (m <= 0 || n <= 0 || k <= 0) throw InputError("device_gemm_ns: m, n, k must be > 0");
  DeviceGuard guard(device);
  Probe probe(true);
  if (native && math == GemmMath::Bf16) {
    // bf16 operands (filled as fp32 then converted by a GEMM-free copy kernel), fp32 accumulation.
    DeviceBuffer a32(device, static_cast<std::size_t>(m) * k), b32(device, static_cast<std::size_t>(k) * n);
    fill_random(a32.data(), a32.size(), 1, probe.stream);
    fill_random(b32.data(), b32.size(), 2, probe.stream);
    __nv_bfloat16 *a = nullptr, *b = nullptr, *c = nullptr;
    PIPELAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&a), a32.size() * sizeof(__nv_bfloat16), probe.stream));
    PIPELAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&b), b32.size() * sizeof(__nv_bfloat16), probe.stream));
    PIPELAB_CUDA_CHECK(cudaMallocAsync(reinterpret_cast<void**>(&c), static_cast<std::size_t>(m) * n * sizeof(__nv_bfloat16), probe.stream));
    to_bf16(a32.data(), a, a32.size(), probe.stream);
    to_bf16(b32.data(), b, b32.size(), probe.stream);
    const float alpha = 1.f, beta = 0.f;
    const double ns = probe.median_ns(repeats, [&] {
      // Row-major C = A B is column-major C^T = B^T A^T: B first, m and n swapped (gemm_layout.h).
      PIPELAB_CUBLAS_CHECK(cublasGemmEx(probe.handle, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &alpha, b, CUDA_R_16BF, n, a,
                                        CUDA_R_16BF, k, &beta, c, CUDA_R_16BF, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    });
    for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c)}) {
      PIPELAB_CUDA_CHECK(cudaFreeAsync(p, probe.stream));
    }
    PIPELAB_CUDA_CHECK(cudaStreamSynchronize(probe.stream));
    return ns;
  }
  DeviceBuffer a(device, static_cast<std::size_t>(m) * k), b(device, static_cast<std::size_t>(k) * n),
      c(device, static_cast<std::size_t>(m) * n);
  fill_random(a.data(), a.size(), 1, probe.stream);
  fill_random(b.data(), b.size(), 2, probe.stream);
  const cublasComputeType_t compute = compute_of(math);
  return probe.median_ns(repeats, [&] {
    cuda::gemm(probe.handle, compute, false, false, m, n, k, 1.f, a.data(), k, 0, b.data(), n, 0, 0.f, c.data(), n, 0);
  });
}

double device_copy_bandwidth(int device, std::size_t bytes, int repeats) {
  check_device(device, "device_copy_bandwidth");
  if (bytes < sizeof(float)) throw InputError("device_copy_bandwidth: bytes must be >= 4");
  DeviceGuard guard(device);
  Probe probe(false);
  const std::size_t elems = bytes / sizeof(float);
  DeviceBuffer src(device, elems), dst(device, elems);
  fill_random(src.data(), elems, 3, probe.stream);
  const double ns = probe.median_ns(repeats, [&] {
    PIPELAB_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), elems * sizeof(float), cudaMemcpyDeviceToDevice, probe.stream));
  });
  return 2.0 * static_cast<double>(elems * sizeof(float)) / (ns * 1e-9);
}

}  // namespace pipelab::kernels
