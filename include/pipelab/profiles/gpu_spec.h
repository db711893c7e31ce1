// GpuSpec: one GPU type's peaks, memory, links and achievable-efficiency constants, with its strict
// JSON form. Sources and rationale for every preset number: docs/profiles.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <pipelab/profiles/precision.h>

namespace pipelab {

/// One point of the GEMM efficiency curve: a GEMM of `flops` runs at `efficiency` x peak.
struct GemmEfficiencyPoint {
  double flops = 0;       // 2*m*n*k of one GEMM call
  double efficiency = 0;  // achieved / peak, in (0, 1]

  bool operator==(const GemmEfficiencyPoint&) const = default;
};

/// One point of the fused-attention efficiency curve (FlashAttention / cuDNN kernels, BF16): a kernel
/// whose queries each attend `keys` keys on average runs its forward at `forward` x peak_bf16_tflops and
/// its backward at `backward` x peak_bf16_tflops, with FLOPs counted as FlashAttention's benchmarks count
/// them (forward 4 x keys x head_dim per query and head; backward 2.5 x the forward, which recomputes
/// the scores). docs/profiles.md, "attention_efficiency_curve".
struct AttentionEfficiencyPoint {
  double keys = 0;      // mean keys attended per query in one kernel call (causal over s: s/2)
  double forward = 0;   // achieved / BF16 peak, in (0, 1]
  double backward = 0;  // achieved / BF16 peak, in (0, 1]

  bool operator==(const AttentionEfficiencyPoint&) const = default;
};

/// The head dim the attention curves are measured at (docs/profiles.md, "attention_efficiency_curve").
inline constexpr double kAttentionCurveHeadDim = 128;

/// What a query/key head dim other than 128 makes of the d = 128 kernel's efficiency at the same keys,
/// forward and backward, measured by cuDNN 9.19 on an H200 against Llama 3.1's d = 128 at the same mean
/// keys: 0.73 / 0.81 at d = 64 (gpt-oss: fewer FLOPs per K/V tile against the same softmax and tile
/// overheads; FlashAttention-3's H100 figures give 0.72 / 0.84), 1.01 / 0.85 at d = 192 (DeepSeek-V3's MLA,
/// V 128). Log-linear in d between, held outside [64, 192]. `keys` in the result is 0.
AttentionEfficiencyPoint attention_head_dim_factor(double head_dim);

/// Bandwidths are GB/s with G = 1e9. nvlink_bandwidth_gbps is per GPU *per direction* (half of the
/// "total bidirectional" figure NVIDIA quotes: H100 900 GB/s total -> 450); nic_bandwidth_gbps is the
/// scale-out NIC per GPU per direction (400 Gb/s -> 50).
/// The most SMs a communication kernel pipelab models holds while it runs (HybridEP's 32; TE
/// userbuffers and NCCL beside compute 16, DeepEP 20): a GPU spec's sm_count, when given, must exceed it
/// so that compute keeps some SMs.
constexpr int kMaxCommKernelSms = 32;

struct GpuSpec {
  std::string name;
  double peak_bf16_tflops = 0;  // dense
  double peak_fp8_tflops = 0;   // dense; 0 = no FP8 tensor cores
  double peak_fp4_tflops = 0;   // dense NVFP4; 0 = no FP4 tensor cores
  std::int64_t hbm_bytes = 0;
  double hbm_bandwidth_gbps = 0;
  double nvlink_bandwidth_gbps = 0;  // per GPU per direction
  double nic_bandwidth_gbps = 0;     // per GPU per direction
  double host_link_bandwidth_gbps = 0;  // GPU <-> host memory, per GPU per direction (PCIe or NVLink-C2C); 0 = unknown
  int gpus_per_node = 8;             // GPUs sharing one NVLink domain (72 for GB200 NVL72)
  double nvlink_latency_ns = 0;      // per-message alpha of an NVLink transfer (NCCL level)
  double nic_latency_ns = 0;         // per-message alpha across the scale-out network
  double kernel_launch_overhead_ns = 0;  // gap per kernel launch not hidden by queueing
  /// GPU idle per MoE layer forward whose token dispatcher waits for the host (dropless: the token
  /// counts copied to the host), while the host does its own work at the wait (reading the counts,
  /// computing the splits) before it launches again; the launches are host_launch_ns's. A property of
  /// the node's host and software as much as of the GPU; 0 = not modelled.
  double moe_sync_gap_ns = 0;
  /// Host CPU time per eager kernel launch (Python, PyTorch dispatch, Transformer Engine's module code,
  /// the launch): a pass whose kernels the GPU runs faster than the host launches them waits for the
  /// host (sim/host_launches.h). A property of the node's host and software; 0 = not modelled.
  double host_launch_ns = 0;
  std::vector<GemmEfficiencyPoint> gemm_efficiency_curve;  // BF16, of peak_bf16_tflops; strictly increasing flops
  /// FP8 GEMMs, of peak_fp8_tflops (quantization kernels not included); empty = the BF16 curve.
  std::vector<GemmEfficiencyPoint> fp8_gemm_efficiency_curve;
  /// NVFP4 GEMMs, of peak_fp4_tflops (inputs already quantized); empty = the FP8 curve.
  std::vector<GemmEfficiencyPoint> fp4_gemm_efficiency_curve;
  /// Fused attention by keys per query; empty = attention timed on gemm_efficiency_curve.
  std::vector<AttentionEfficiencyPoint> attention_efficiency_curve;
  int sm_count = 0;  // streaming multiprocessors; 0 = unknown (communication kernels' SMs not modelled)
  /// Tensor-core throughput sustained at the power limit through training, as a fraction of the
  /// short-run throughput the curves above were measured at (clocks fall when the GPU holds its power
  /// cap); multiplies GEMM and attention speed. 1 = not modelled.
  double sustained_compute_ratio = 1;
  double memory_bandwidth_efficiency = 0;  // achievable fraction of hbm_bandwidth_gbps
  double collective_efficiency = 0;        // achievable fraction of link bandwidth (NCCL busbw)
  // NCCL's all-to-all inside the NVLink domain, of nvlink_bandwidth_gbps (a measured figure: below the ring
  // collectives'); 0 = collective_efficiency. nvlink_alltoall_efficiency() reads it.
  double alltoall_nvlink_efficiency = 0;
  std::int64_t reserved_memory_bytes = 0;  // CUDA context, NCCL buffers, workspaces, allocator slack

  bool operator==(const GpuSpec&) const = default;

  /// Efficiency of a GEMM of `flops`: piecewise linear in log10(flops) between curve points, clamped
  /// to the first/last point outside the curve.
  double gemm_efficiency(double flops) const;
  /// The same on the curve of `precision`: FP8 reads fp8_gemm_efficiency_curve, NVFP4
  /// fp4_gemm_efficiency_curve, each falling back to the curve before it when empty.
  double gemm_efficiency(double flops, Precision precision) const;
  /// Forward and backward efficiency of a fused-attention kernel whose queries attend `keys` keys
  /// (log-linear in keys between points, the last point's beyond it, and below the first point that
  /// point's efficiency x keys / its keys: a fixed time per query tile); requires the curve and keys > 0.
  /// The curve is measured at head dim 128; another `head_dim` scales it by attention_head_dim_factor.
  AttentionEfficiencyPoint attention_efficiency(double keys, double head_dim = kAttentionCurveHeadDim) const;
  /// Dense peak at `precision` (ConfigError for fp8 or nvfp4 on a GPU without those tensor cores).
  double peak_tflops(Precision precision) const;
  /// NCCL's all-to-all inside the NVLink domain: alltoall_nvlink_efficiency, else collective_efficiency.
  double nvlink_alltoall_efficiency() const {
    return alltoall_nvlink_efficiency > 0 ? alltoall_nvlink_efficiency : collective_efficiency;
  }
  /// hbm_bytes - reserved_memory_bytes: what the memory model may fill.
  std::int64_t usable_memory_bytes() const { return hbm_bytes - reserved_memory_bytes; }
};

/// Throws ConfigError listing every broken sanity rule.
void validate(const GpuSpec& gpu, std::string_view context = {});

/// Strict JSON, as model_spec_from_json: required keys as docs/profiles.md lists them (the curves but the
/// BF16 GEMM curve, peak_fp8_tflops, peak_fp4_tflops, sm_count and sustained_compute_ratio are optional).
GpuSpec gpu_spec_from_json(const nlohmann::json& json, std::string_view context);
GpuSpec parse_gpu_spec(std::string_view json_text, std::string_view context);
nlohmann::json to_json(const GpuSpec& gpu);

}  // namespace pipelab
