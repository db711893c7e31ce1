// CUDA version of the mock block stack: the same F / I / W passes as StageModel on one GPU, fp32
// activations, GEMMs through cuBLAS (fp32, TF32 or BF16 tensor-core math). Opaque handles only: no
// CUDA header is included here, streams are cudaStream_t passed as void*. In a build without CUDA
// every entry point except the queries throws pipelab::DeviceError.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "pipelab/kernels/block.h"

namespace pipelab::kernels {

/// True when this build contains the CUDA kernels.
bool cuda_built();

/// Usable CUDA devices: 0 when built without CUDA or when cudaGetDeviceCount reports any error
/// (no driver, no device). Never throws.
int cuda_device_count();

/// Math mode of the cuBLAS GEMMs. Storage is fp32 throughout; Tf32 / Bf16 let cuBLAS round the
/// GEMM inputs to TF32 / BF16 on tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32 / _FAST_16BF), with
/// fp32 accumulation.
enum class GemmMath { Fp32, Tf32, Bf16 };

/// "fp32", "tf32", "bf16" and back; parse throws InputError listing the valid names.
std::string_view gemm_math_name(GemmMath math);
GemmMath parse_gemm_math(std::string_view name);

/// Owning fp32 device memory on one device (cudaMalloc). Move-only.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(int device, std::size_t elems);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  int device() const { return device_; }

  /// Synchronous copies; host.size() must equal size().
  void upload(std::span<const float> host);
  void download(std::span<float> host) const;

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
  int device_ = -1;
};

/// Per-microbatch forward state of a DeviceStage (device memory, stream-ordered). Move-only value.
class DeviceStageSaved {
 public:
  DeviceStageSaved();
  ~DeviceStageSaved();
  DeviceStageSaved(DeviceStageSaved&&) noexcept;
  DeviceStageSaved& operator=(DeviceStageSaved&&) noexcept;
  /// Live device bytes (same formula as BlockSaved; 0 once consumed).
  std::int64_t bytes() const;
  struct Impl;

 private:
  friend class DeviceStage;
  std::unique_ptr<Impl> impl_;
};

/// Per-microbatch W-pass state of a DeviceStage. Move-only value.
class DeviceStageStash {
 public:
  DeviceStageStash();
  ~DeviceStageStash();
  DeviceStageStash(DeviceStageStash&&) noexcept;
  DeviceStageStash& operator=(DeviceStageStash&&) noexcept;
  std::int64_t bytes() const;
  struct Impl;

 private:
  friend class DeviceStage;
  std::unique_ptr<Impl> impl_;
};

/// A run of blocks resident on one GPU, with device gradient accumulators. Activation pointers are
/// device pointers of shape (T, hidden); all work is enqueued on `stream` (a cudaStream_t, nullptr =
/// the legacy default stream) and is asynchronous unless stated. Per-microbatch state is allocated
/// with cudaMallocAsync on the pass's stream and freed stream-ordered when consumed; the caller
/// orders passes of one microbatch across streams (events), as the executor does. State dropped
/// unconsumed is freed in the order of the stream of its last pass (no device synchronization), so
/// that stream must outlive it.
class DeviceStage {
 public:
  /// Uploads `params` (one BlockParams per layer, all of `shape`) to `device`.
  DeviceStage(const BlockShape& shape, int device, std::span<const BlockParams> params,
              GemmMath math = GemmMath::Fp32);
  ~DeviceStage();
  DeviceStage(DeviceStage&&) noexcept;
  DeviceStage& operator=(DeviceStage&&) noexcept;

  const BlockShape& shape() const;
  int device() const;
  int num_layers() const;

  /// F: out = stage(x). x == out is allowed.
  void forward(const float* x, float* out, DeviceStageSaved& saved, void* stream);
  /// I: dx from dout, consuming `saved`, overwriting `stash`. dout == dx is allowed.
  void backward_input(DeviceStageSaved&& saved, const float* dout, float* dx,
                      DeviceStageStash& stash, void* stream);
  /// W: device grads += weight gradients from `stash` (consumed).
  void backward_weight(DeviceStageStash&& stash, void* stream);
  /// B: backward_input then backward_weight.
  void backward(DeviceStageSaved&& saved, const float* dout, float* dx, void* stream);

  void zero_grads(void* stream);
  /// Copies the gradient accumulators to the host; waits for `stream`.
  std::vector<BlockGrads> download_grads(void* stream) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The last stage's MSE loss on the device, in place like kernels::mse_loss_in_place: out (n
/// device floats) becomes d loss / d out and *loss (a device double) accumulates the loss. Enqueued
/// on `stream`; asynchronous.
void device_mse_loss_in_place(float* out, const float* target, std::int64_t n, double scale, double* loss,
                              void* stream);

/// Median device time of one row-major GEMM C(m, n) = A(m, k) B(k, n) in `math` on `device`
/// (cudaEvent-timed after warm-up, random data). Storage is fp32 (as the mock block's), or with
/// `native` and Bf16 math, bf16 operands and output with fp32 accumulation: the GPU's own BF16 GEMM
/// rate, which training frameworks get. For profiles and benchmarks.
double device_gemm_ns(int device, int m, int n, int k, GemmMath math, int repeats = 20, bool native = false);

/// Device memory bandwidth: bytes read plus written per second by a device-to-device copy of
/// `bytes` (median of `repeats`).
double device_copy_bandwidth(int device, std::size_t bytes, int repeats = 20);

}  // namespace pipelab::kernels
