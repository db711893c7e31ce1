// The cuda backend: the stages of one rank on one GPU (kernels::DeviceStage, cuBLAS GEMMs in fp32,
// tf32 or bf16 math with fp32 accumulation), activations in pooled device memory guarded by
// fences, per-microbatch state under the shared MicrobatchStates rules. Work is enqueued on a
// compute stream (and a second one for the backward half of an F&B unit, so the two halves overlap
// for real) and timed with device events (DeviceClock): the executor never synchronizes the device
// per action. Ranks that share a GPU (single-GPU mode) each get a green-context SM group when the
// driver allows, and share the SMs otherwise. No CUDA type appears here; in a build without CUDA
// constructing one throws DeviceError.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "pipelab/kernels/device_block.h"
#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/microbatch_states.h"

namespace pipelab::runtime {

/// Where and how one rank runs on a GPU.
struct CudaRankConfig {
  int device = 0;
  kernels::GemmMath math = kernels::GemmMath::Bf16;
  /// Ranks sharing `device` and this rank's index among them (single-GPU mode: all ranks, index =
  /// rank). With more than one and partition_sms, each gets its own SM group (green context).
  int ranks_on_device = 1;
  int index_on_device = 0;
  bool partition_sms = true;
  /// Record every kernel and copy of each action through CUPTI (run_cuda_* collect them).
  bool cupti = false;
};

/// The device resources of a rank that its transport uses (streams, clock); runtime/cuda only.
struct CudaRankDevice;

class CudaBackend final : public Backend {
 public:
  CudaBackend(const ModelConfig& model, const PipelineShape& shape, int rank, const CudaRankConfig& config);
  ~CudaBackend() override;

  std::string_view name() const override { return "cuda"; }
  BufferPool& pool() override;
  std::size_t activation_bytes() const override;
  const std::vector<int>& stages() const override { return states_.stages(); }

  void begin_iteration() override;
  void load_input(int mb, Buffer& act) override;
  void forward(int stage, int mb, Buffer& act) override;
  double loss(int stage, int mb, Buffer& act) override;
  void backward_input(int stage, int mb, Buffer& grad) override;
  void backward_weight(int stage, int mb) override;
  void backward(int stage, int mb, Buffer& grad) override;
  double flops(const Action& a) const override { return action_flops(model_, a); }
  void synchronize() override;

  DeviceClock* clock() override;
  DeviceClock::Token begin_action(const Action& unit) override;
  DeviceClock::Token end_action(const Action& unit) override;
  double finish_iteration() override;

  void zero_grads() override;
  std::vector<kernels::BlockGrads> gradients(int stage) const override;
  std::int64_t state_bytes() const override { return states_.bytes(); }
  std::int64_t static_bytes() const override;
  std::vector<std::string> held_state() const override { return states_.held_state(); }
  void discard_state() override;

  /// "device 0 (NVIDIA H100 80GB HBM3), 64 of 132 SMs in a green context" or "..., all SMs shared
  /// with 1 other rank (<why not partitioned>)".
  const std::string& placement() const;
  /// SMs this rank's compute runs on.
  int sms() const;
  const CudaRankDevice& rank_device() const;

 private:
  struct Impl;
  ModelConfig model_;
  MicrobatchStates states_;
  std::unique_ptr<Impl> impl_;
};

/// nullopt when a CUDA device can run; otherwise why not, e.g. "no CUDA device available (driver:
/// cudaErrorInsufficientDriver)" or "pipelab was built without CUDA".
std::optional<std::string> cuda_unavailable();

/// "NVIDIA H100 80GB HBM3" (empty when unavailable), its SM count and memory bytes.
struct CudaDeviceInfo {
  std::string name;
  int sms = 0;
  std::int64_t memory_bytes = 0;
  int cc_major = 0;
  int cc_minor = 0;
};
CudaDeviceInfo cuda_device_info(int device);
int cuda_devices();

}  // namespace pipelab::runtime
