// GpuSpec: efficiency interpolation, sanity rules and strict JSON.
#include <pipelab/profiles/gpu_spec.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include <pipelab/base/error.h>
#include <pipelab/base/json_reader.h>

#include "field_table.h"

namespace pipelab {
namespace {

using PointField = detail::Field<GemmEfficiencyPoint, double>;
const std::array kPointFields = {
    PointField{"flops", &GemmEfficiencyPoint::flops, true},
    PointField{"efficiency", &GemmEfficiencyPoint::efficiency, true},
};

using AttentionPointField = detail::Field<AttentionEfficiencyPoint, double>;
const std::array kAttentionPointFields = {
    AttentionPointField{"keys", &AttentionEfficiencyPoint::keys, true},
    AttentionPointField{"forward", &AttentionEfficiencyPoint::forward, true},
    AttentionPointField{"backward", &AttentionEfficiencyPoint::backward, true},
};

}  // namespace

namespace detail {

// The efficiency curve: an array of {"flops", "efficiency"} points.
template <>
struct ValueCodec<std::vector<GemmEfficiencyPoint>> : ObjectListCodec<GemmEfficiencyPoint, kPointFields, "gemm efficiency point"> {};
// The attention curve: an array of {"keys", "forward", "backward"} points.
template <>
struct ValueCodec<std::vector<AttentionEfficiencyPoint>>
    : ObjectListCodec<AttentionEfficiencyPoint, kAttentionPointFields, "attention efficiency point"> {};

}  // namespace detail

namespace {

using Field = detail::Field<GpuSpec, std::string, double, std::int64_t, int, std::vector<GemmEfficiencyPoint>,
                            std::vector<AttentionEfficiencyPoint>>;

// One row per JSON key; drives from_json and to_json. Keys marked true are required; the others have defaults.
const std::array kFields = {
    Field{"name", &GpuSpec::name, true},
    Field{"peak_bf16_tflops", &GpuSpec::peak_bf16_tflops, true},
    Field{"peak_fp8_tflops", &GpuSpec::peak_fp8_tflops},  // absent = 0: no FP8 tensor cores
    Field{"peak_fp4_tflops", &GpuSpec::peak_fp4_tflops},  // absent = 0: no FP4 tensor cores
    Field{"hbm_bytes", &GpuSpec::hbm_bytes, true},
    Field{"hbm_bandwidth_gbps", &GpuSpec::hbm_bandwidth_gbps, true},
    Field{"nvlink_bandwidth_gbps", &GpuSpec::nvlink_bandwidth_gbps, true},
    Field{"nic_bandwidth_gbps", &GpuSpec::nic_bandwidth_gbps, true},
    Field{"host_link_bandwidth_gbps", &GpuSpec::host_link_bandwidth_gbps},  // absent = 0: activation offload not timed
    Field{"gpus_per_node", &GpuSpec::gpus_per_node, true},
    Field{"nvlink_latency_ns", &GpuSpec::nvlink_latency_ns, true},
    Field{"nic_latency_ns", &GpuSpec::nic_latency_ns, true},
    Field{"kernel_launch_overhead_ns", &GpuSpec::kernel_launch_overhead_ns, true},
    Field{"moe_sync_gap_ns", &GpuSpec::moe_sync_gap_ns},  // absent = 0, not modelled
    Field{"host_launch_ns", &GpuSpec::host_launch_ns},    // absent = 0, not modelled
    Field{"gemm_efficiency_curve", &GpuSpec::gemm_efficiency_curve, true},
    Field{"fp8_gemm_efficiency_curve", &GpuSpec::fp8_gemm_efficiency_curve},  // absent = the BF16 curve
    Field{"fp4_gemm_efficiency_curve", &GpuSpec::fp4_gemm_efficiency_curve},  // absent = the FP8 curve
    Field{"attention_efficiency_curve", &GpuSpec::attention_efficiency_curve},  // absent = the BF16 GEMM curve
    Field{"sm_count", &GpuSpec::sm_count},                                    // absent = 0, unknown
    Field{"sustained_compute_ratio", &GpuSpec::sustained_compute_ratio},  // absent = 1, not modelled
    Field{"memory_bandwidth_efficiency", &GpuSpec::memory_bandwidth_efficiency, true},
    Field{"collective_efficiency", &GpuSpec::collective_efficiency, true},
    Field{"alltoall_nvlink_efficiency", &GpuSpec::alltoall_nvlink_efficiency},  // absent = 0: collective_efficiency
    Field{"reserved_memory_bytes", &GpuSpec::reserved_memory_bytes, true},
};

// Log-linear in the key: efficiency grows with the order of magnitude of the work, not its raw size.
// Clamped to the first/last point outside the curve; `curve` is non-empty with strictly increasing keys.
template <class Point>
double log_linear(const std::vector<Point>& curve, double Point::*key, double Point::*value, double x) {
  if (x <= curve.front().*key) return curve.front().*value;
  if (x >= curve.back().*key) return curve.back().*value;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (x > curve[i].*key) continue;
    const double t = (std::log(x) - std::log(curve[i - 1].*key)) / (std::log(curve[i].*key) - std::log(curve[i - 1].*key));
    return curve[i - 1].*value + t * (curve[i].*value - curve[i - 1].*value);
  }
  return curve.back().*value;
}

double curve_efficiency(const std::vector<GemmEfficiencyPoint>& curve, double flops) {
  if (curve.empty()) return 1.0;
  return log_linear(curve, &GemmEfficiencyPoint::flops, &GemmEfficiencyPoint::efficiency, flops);
}

// The ranges of a GPU's numbers (docs/validation.md, "Limits"): each a factor of 1000 or more
// beyond any GPU built, in both directions, so that a finite but absurd value (a peak of 1e-300
// TFLOPS, a latency of 1e300 ns) is refused here instead of turning into times no clock can hold.
constexpr double kMinRate = 1e-3, kMaxRate = 1e6;         // TFLOPS and GB/s
constexpr double kMaxLatencyNs = 1e9;                     // one second per message or launch
constexpr double kMinEfficiency = 1e-3;                   // achieved / peak
constexpr double kMaxGemmFlops = 1e30;                    // an efficiency-curve point
constexpr double kMaxAttentionKeys = 1e12;                // keys per query of an attention-curve point
constexpr std::int64_t kMaxHbmBytes = std::int64_t{1} << 50;  // 1 PiB
constexpr int kMaxGpusPerNode = 1 << 16;
constexpr int kMaxSmCount = 1 << 16;
constexpr std::size_t kMaxCurvePoints = 1000;

// One number of a curve point and its JSON key.
template <class Point>
struct PointMember {
  std::string_view key;
  double Point::*member;
};

// A curve's points (1 to kMaxCurvePoints of them when required, else 0 or that many): the key in
// (0, key_max], strictly increasing; every value, an efficiency, in [kMinEfficiency, 1].
template <class Point, std::size_t N>
void check_points(const std::vector<Point>& curve, std::string_view field, bool required, PointMember<Point> key, double key_max,
                  const std::array<PointMember<Point>, N>& values, std::vector<std::string>& errors) {
  if ((required && curve.empty()) || curve.size() > kMaxCurvePoints) {
    errors.push_back(std::string(field) + " must have " + (required ? "1" : "0") + " to " + std::to_string(kMaxCurvePoints) +
                     " points, got " + std::to_string(curve.size()));
  }
  for (std::size_t i = 0; i < curve.size() && i < kMaxCurvePoints; ++i) {
    const Point& point = curve[i];
    const std::string at = std::string(field) + "[" + std::to_string(i) + "].";
    const double x = point.*key.member;
    if (!(x > 0 && x <= key_max)) {
      errors.push_back(at + std::string(key.key) + "=" + number_text(x) + " must be positive and at most " + number_text(key_max));
    }
    for (const PointMember<Point>& value : values) {
      const double v = point.*value.member;
      if (!(v >= kMinEfficiency && v <= 1)) {
        errors.push_back(at + std::string(value.key) + "=" + number_text(v) + " must be in [" + number_text(kMinEfficiency) + ", 1]");
      }
    }
    if (i > 0 && !(x > curve[i - 1].*key.member)) {
      errors.push_back(at + std::string(key.key) + "=" + number_text(x) + " must be greater than the previous point's");
    }
  }
}

void check_curve(const std::vector<GemmEfficiencyPoint>& curve, std::string_view field, bool required, std::vector<std::string>& errors) {
  check_points(curve, field, required, {"flops", &GemmEfficiencyPoint::flops}, kMaxGemmFlops,
               std::array{PointMember<GemmEfficiencyPoint>{"efficiency", &GemmEfficiencyPoint::efficiency}}, errors);
}

}  // namespace

double GpuSpec::gemm_efficiency(double flops) const { return curve_efficiency(gemm_efficiency_curve, flops); }

double GpuSpec::gemm_efficiency(double flops, Precision precision) const {
  const std::vector<GemmEfficiencyPoint>* curve = &gemm_efficiency_curve;
  if (precision != Precision::kBf16 && !fp8_gemm_efficiency_curve.empty()) curve = &fp8_gemm_efficiency_curve;
  if (precision == Precision::kNvfp4 && !fp4_gemm_efficiency_curve.empty()) curve = &fp4_gemm_efficiency_curve;
  return curve_efficiency(*curve, flops);
}

AttentionEfficiencyPoint attention_head_dim_factor(double head_dim) {
  if (!(head_dim > 0)) throw InputError("attention head_dim=" + number_text(head_dim) + " must be positive");
  // NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training/results/h200_919_only_cudnn @3929da2e, one
  // run (cuDNN 9.19, H200, causal), against llama3.1 (64 / 8 heads, d = 128) at the same mean keys:
  // gpt_oss (64 / 8, d = 64, window 1024) 349-358 / 299-303 TFLOPS at S = 8K-32K (1024 keys) against
  // 484 / 370 at S = 2048; dsv3 (128 heads, MLA's d = 192 for Q/K, 128 for V) 599 / 404 at S = 4096
  // against 591 / 474.
  static const std::vector<AttentionEfficiencyPoint> kFactors = {{64, 0.73, 0.81}, {128, 1.0, 1.0}, {192, 1.01, 0.85}};  // keys = head dim
  return {0, log_linear(kFactors, &AttentionEfficiencyPoint::keys, &AttentionEfficiencyPoint::forward, head_dim),
          log_linear(kFactors, &AttentionEfficiencyPoint::keys, &AttentionEfficiencyPoint::backward, head_dim)};
}

AttentionEfficiencyPoint GpuSpec::attention_efficiency(double keys, double head_dim) const {
  if (attention_efficiency_curve.empty()) throw ConfigError("gpu '" + name + "' has no attention_efficiency_curve");
  if (!(keys > 0)) throw InputError("attention keys per query=" + number_text(keys) + " must be positive");
  const auto& curve = attention_efficiency_curve;
  // Below the first point a kernel's time per query tile stops shrinking with the keys (setup, the
  // softmax epilogue and the store dominate a few K/V tiles), so its efficiency falls with them.
  const double below = std::min(1.0, keys / curve.front().keys);
  const AttentionEfficiencyPoint dim = attention_head_dim_factor(head_dim);
  return {keys, dim.forward * below * log_linear(curve, &AttentionEfficiencyPoint::keys, &AttentionEfficiencyPoint::forward, keys),
          dim.backward * below * log_linear(curve, &AttentionEfficiencyPoint::keys, &AttentionEfficiencyPoint::backward, keys)};
}

double GpuSpec::peak_tflops(Precision precision) const {
  switch (precision) {
    case Precision::kBf16: return peak_bf16_tflops;
    case Precision::kFp8:
      if (peak_fp8_tflops <= 0) throw ConfigError("gpu '" + name + "' has no FP8 tensor cores (peak_fp8_tflops=0)");
      return peak_fp8_tflops;
    case Precision::kNvfp4:
      if (peak_fp4_tflops <= 0) throw ConfigError("gpu '" + name + "' has no FP4 tensor cores (peak_fp4_tflops=0)");
      return peak_fp4_tflops;
  }
  throw std::logic_error("unhandled precision");
}

void validate(const GpuSpec& g, std::string_view context) {
  std::vector<std::string> errors;
  auto within = [&](std::string_view field, double value, double min, double max) {
    if (!(value >= min && value <= max)) errors.push_back(std::string(field) + "=" + number_text(value) + " must be in [" + number_text(min) + ", " + number_text(max) + "]");
  };
  if (g.name.empty()) errors.push_back("name must not be empty");
  within("peak_bf16_tflops", g.peak_bf16_tflops, kMinRate, kMaxRate);
  if (g.peak_fp8_tflops != 0) within("peak_fp8_tflops", g.peak_fp8_tflops, kMinRate, kMaxRate);  // 0: no FP8 tensor cores
  if (g.peak_fp4_tflops != 0) within("peak_fp4_tflops", g.peak_fp4_tflops, kMinRate, kMaxRate);  // 0: no FP4 tensor cores
  if (g.hbm_bytes <= 0 || g.hbm_bytes > kMaxHbmBytes) {
    errors.push_back("hbm_bytes=" + std::to_string(g.hbm_bytes) + " must be in [1, " + std::to_string(kMaxHbmBytes) + "]");
  }
  within("hbm_bandwidth_gbps", g.hbm_bandwidth_gbps, kMinRate, kMaxRate);
  within("nvlink_bandwidth_gbps", g.nvlink_bandwidth_gbps, kMinRate, kMaxRate);
  within("nic_bandwidth_gbps", g.nic_bandwidth_gbps, kMinRate, kMaxRate);
  if (g.host_link_bandwidth_gbps != 0) within("host_link_bandwidth_gbps", g.host_link_bandwidth_gbps, kMinRate, kMaxRate);  // 0: unknown
  within("gpus_per_node", g.gpus_per_node, 1, kMaxGpusPerNode);
  within("nvlink_latency_ns", g.nvlink_latency_ns, 0, kMaxLatencyNs);
  within("nic_latency_ns", g.nic_latency_ns, 0, kMaxLatencyNs);
  within("kernel_launch_overhead_ns", g.kernel_launch_overhead_ns, 0, kMaxLatencyNs);
  within("moe_sync_gap_ns", g.moe_sync_gap_ns, 0, kMaxLatencyNs);
  within("host_launch_ns", g.host_launch_ns, 0, kMaxLatencyNs);
  check_curve(g.gemm_efficiency_curve, "gemm_efficiency_curve", true, errors);
  check_curve(g.fp8_gemm_efficiency_curve, "fp8_gemm_efficiency_curve", false, errors);
  check_curve(g.fp4_gemm_efficiency_curve, "fp4_gemm_efficiency_curve", false, errors);
  check_points(g.attention_efficiency_curve, "attention_efficiency_curve", false, {"keys", &AttentionEfficiencyPoint::keys}, kMaxAttentionKeys,
               std::array{PointMember<AttentionEfficiencyPoint>{"forward", &AttentionEfficiencyPoint::forward},
                          PointMember<AttentionEfficiencyPoint>{"backward", &AttentionEfficiencyPoint::backward}},
               errors);
  if (!g.fp8_gemm_efficiency_curve.empty() && g.peak_fp8_tflops <= 0) {
    errors.push_back("fp8_gemm_efficiency_curve needs peak_fp8_tflops > 0");
  }
  if (!g.fp4_gemm_efficiency_curve.empty() && g.peak_fp4_tflops <= 0) {
    errors.push_back("fp4_gemm_efficiency_curve needs peak_fp4_tflops > 0");
  }
  if (g.sm_count != 0 && (g.sm_count <= kMaxCommKernelSms || g.sm_count > kMaxSmCount)) {
    errors.push_back("sm_count=" + std::to_string(g.sm_count) + " must be 0 (unknown) or in [" + std::to_string(kMaxCommKernelSms + 1) +
                     ", " + std::to_string(kMaxSmCount) + "]: communication kernels beside compute hold up to " +
                     std::to_string(kMaxCommKernelSms) + " SMs (HybridEP)");
  }
  within("sustained_compute_ratio", g.sustained_compute_ratio, kMinEfficiency, 1);
  within("memory_bandwidth_efficiency", g.memory_bandwidth_efficiency, kMinEfficiency, 1);
  within("collective_efficiency", g.collective_efficiency, kMinEfficiency, 1);
  if (g.alltoall_nvlink_efficiency != 0) within("alltoall_nvlink_efficiency", g.alltoall_nvlink_efficiency, kMinEfficiency, 1);
  if (g.reserved_memory_bytes < 0 || g.reserved_memory_bytes >= g.hbm_bytes) {
    errors.push_back("reserved_memory_bytes=" + std::to_string(g.reserved_memory_bytes) +
                     " must be >= 0 and below hbm_bytes=" + std::to_string(g.hbm_bytes));
  }
  if (errors.empty()) return;
  throw ConfigError(context_prefix(context) + "gpu '" + g.name + "': " + join(errors, "; "));
}

GpuSpec gpu_spec_from_json(const nlohmann::json& json, std::string_view context) {
  static const std::vector<std::string> keys = detail::field_keys(kFields);
  GpuSpec g;
  detail::read_fields(kFields, JsonReader(json, context, KeyNames::spec("gpu"), keys), g);
  validate(g, context);
  return g;
}

GpuSpec parse_gpu_spec(std::string_view json_text, std::string_view context) {
  return gpu_spec_from_json(parse_json_text(json_text, context), context);
}

nlohmann::json to_json(const GpuSpec& g) { return detail::fields_to_json(kFields, g); }

}  // namespace pipelab
