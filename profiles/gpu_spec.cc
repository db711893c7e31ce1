// GpuSpec: efficiency interpolation, sanity rules and strict JSON.
#include <pipelab/profiles/gpu_spec.h>

#include <cmath>

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

}  // namespace

namespace detail {

// The efficiency curve: an array of {"flops", "efficiency"} points.
template <>
struct ValueCodec<std::vector<GemmEfficiencyPoint>> : ObjectListCodec<GemmEfficiencyPoint, kPointFields, "gemm efficiency point"> {};

}  // namespace detail

namespace {

using Field = detail::Field<GpuSpec, std::string, double, std::int64_t, int, std::vector<GemmEfficiencyPoint>>;

// One row per JSON key; drives from_json and to_json. Every key but peak_fp8_tflops is required.
const std::array kFields = {
    Field{"name", &GpuSpec::name, true},
    Field{"peak_bf16_tflops", &GpuSpec::peak_bf16_tflops, true},
    Field{"peak_fp8_tflops", &GpuSpec::peak_fp8_tflops},  // absent = 0: no FP8 tensor cores
    Field{"hbm_bytes", &GpuSpec::hbm_bytes, true},
    Field{"hbm_bandwidth_gbps", &GpuSpec::hbm_bandwidth_gbps, true},
    Field{"nvlink_bandwidth_gbps", &GpuSpec::nvlink_bandwidth_gbps, true},
    Field{"nic_bandwidth_gbps", &GpuSpec::nic_bandwidth_gbps, true},
    Field{"gpus_per_node", &GpuSpec::gpus_per_node, true},
    Field{"nvlink_latency_ns", &GpuSpec::nvlink_latency_ns, true},
    Field{"nic_latency_ns", &GpuSpec::nic_latency_ns, true},
    Field{"kernel_launch_overhead_ns", &GpuSpec::kernel_launch_overhead_ns, true},
    Field{"gemm_efficiency_curve", &GpuSpec::gemm_efficiency_curve, true},
    Field{"fp8_gemm_efficiency_curve", &GpuSpec::fp8_gemm_efficiency_curve},  // absent = the BF16 curve
    Field{"sm_count", &GpuSpec::sm_count},                                    // absent = 0, unknown
    Field{"memory_bandwidth_efficiency", &GpuSpec::memory_bandwidth_efficiency, true},
    Field{"collective_efficiency", &GpuSpec::collective_efficiency, true},
    Field{"reserved_memory_bytes", &GpuSpec::reserved_memory_bytes, true},
};

double curve_efficiency(const std::vector<GemmEfficiencyPoint>& curve, double flops) {
  if (curve.empty()) return 1.0;
  if (flops <= curve.front().flops) return curve.front().efficiency;
  if (flops >= curve.back().flops) return curve.back().efficiency;
  for (std::size_t i = 1; i < curve.size(); ++i) {
    if (flops > curve[i].flops) continue;
    // Log-linear: efficiency grows with the order of magnitude of the GEMM, not its raw size.
    const double t = (std::log(flops) - std::log(curve[i - 1].flops)) /
                     (std::log(curve[i].flops) - std::log(curve[i - 1].flops));
    return curve[i - 1].efficiency + t * (curve[i].efficiency - curve[i - 1].efficiency);
  }
  return curve.back().efficiency;
}

// The ranges of a GPU's numbers (docs/validation.md, "Limits"): each a factor of 1000 or more
// beyond any GPU built, in both directions, so that a finite but absurd value (a peak of 1e-300
// TFLOPS, a latency of 1e300 ns) is refused here instead of turning into times no clock can hold.
constexpr double kMinRate = 1e-3, kMaxRate = 1e6;         // TFLOPS and GB/s
constexpr double kMaxLatencyNs = 1e9;                     // one second per message or launch
constexpr double kMinEfficiency = 1e-3;                   // achieved / peak
constexpr double kMaxGemmFlops = 1e30;                    // an efficiency-curve point
constexpr std::int64_t kMaxHbmBytes = std::int64_t{1} << 50;  // 1 PiB
constexpr int kMaxGpusPerNode = 1 << 16;
constexpr int kMaxSmCount = 1 << 16;
constexpr std::size_t kMaxCurvePoints = 1000;

// A curve's points (1 to kMaxCurvePoints of them when required, else 0 or that many): FLOPs in
// (0, kMaxGemmFlops], strictly increasing, efficiencies in [kMinEfficiency, 1].
void check_curve(const std::vector<GemmEfficiencyPoint>& curve, std::string_view field, bool required, std::vector<std::string>& errors) {
  if ((required && curve.empty()) || curve.size() > kMaxCurvePoints) {
    errors.push_back(std::string(field) + " must have " + (required ? "1" : "0") + " to " + std::to_string(kMaxCurvePoints) +
                     " points, got " + std::to_string(curve.size()));
  }
  for (std::size_t i = 0; i < curve.size() && i < kMaxCurvePoints; ++i) {
    const auto& point = curve[i];
    const std::string at = std::string(field) + "[" + std::to_string(i) + "]";
    if (!(point.flops > 0 && point.flops <= kMaxGemmFlops)) {
      errors.push_back(at + ".flops=" + number_text(point.flops) + " must be positive and at most " + number_text(kMaxGemmFlops));
    }
    if (!(point.efficiency >= kMinEfficiency && point.efficiency <= 1)) {
      errors.push_back(at + ".efficiency=" + number_text(point.efficiency) + " must be in [" + number_text(kMinEfficiency) + ", 1]");
    }
    if (i > 0 && !(point.flops > curve[i - 1].flops)) {
      errors.push_back(at + ".flops=" + number_text(point.flops) + " must be greater than the previous point's");
    }
  }
}

}  // namespace

double GpuSpec::gemm_efficiency(double flops) const { return curve_efficiency(gemm_efficiency_curve, flops); }

double GpuSpec::gemm_efficiency(double flops, Precision precision) const {
  const bool fp8_curve = precision == Precision::kFp8 && !fp8_gemm_efficiency_curve.empty();
  return curve_efficiency(fp8_curve ? fp8_gemm_efficiency_curve : gemm_efficiency_curve, flops);
}

double GpuSpec::peak_tflops(Precision precision) const {
  if (precision == Precision::kBf16) return peak_bf16_tflops;
  if (peak_fp8_tflops <= 0) throw ConfigError("gpu '" + name + "' has no FP8 tensor cores (peak_fp8_tflops=0)");
  return peak_fp8_tflops;
}

void validate(const GpuSpec& g, std::string_view context) {
  std::vector<std::string> errors;
  auto within = [&](std::string_view field, double value, double min, double max) {
    if (!(value >= min && value <= max)) errors.push_back(std::string(field) + "=" + number_text(value) + " must be in [" + number_text(min) + ", " + number_text(max) + "]");
  };
  if (g.name.empty()) errors.push_back("name must not be empty");
  within("peak_bf16_tflops", g.peak_bf16_tflops, kMinRate, kMaxRate);
  if (g.peak_fp8_tflops != 0) within("peak_fp8_tflops", g.peak_fp8_tflops, kMinRate, kMaxRate);  // 0: no FP8 tensor cores
  if (g.hbm_bytes <= 0 || g.hbm_bytes > kMaxHbmBytes) {
    errors.push_back("hbm_bytes=" + std::to_string(g.hbm_bytes) + " must be in [1, " + std::to_string(kMaxHbmBytes) + "]");
  }
  within("hbm_bandwidth_gbps", g.hbm_bandwidth_gbps, kMinRate, kMaxRate);
  within("nvlink_bandwidth_gbps", g.nvlink_bandwidth_gbps, kMinRate, kMaxRate);
  within("nic_bandwidth_gbps", g.nic_bandwidth_gbps, kMinRate, kMaxRate);
  within("gpus_per_node", g.gpus_per_node, 1, kMaxGpusPerNode);
  within("nvlink_latency_ns", g.nvlink_latency_ns, 0, kMaxLatencyNs);
  within("nic_latency_ns", g.nic_latency_ns, 0, kMaxLatencyNs);
  within("kernel_launch_overhead_ns", g.kernel_launch_overhead_ns, 0, kMaxLatencyNs);
  check_curve(g.gemm_efficiency_curve, "gemm_efficiency_curve", true, errors);
  check_curve(g.fp8_gemm_efficiency_curve, "fp8_gemm_efficiency_curve", false, errors);
  if (!g.fp8_gemm_efficiency_curve.empty() && g.peak_fp8_tflops <= 0) {
    errors.push_back("fp8_gemm_efficiency_curve needs peak_fp8_tflops > 0");
  }
  if (g.sm_count < 0 || g.sm_count > kMaxSmCount) {
    errors.push_back("sm_count=" + std::to_string(g.sm_count) + " must be in [0, " + std::to_string(kMaxSmCount) + "] (0 = unknown)");
  }
  within("memory_bandwidth_efficiency", g.memory_bandwidth_efficiency, kMinEfficiency, 1);
  within("collective_efficiency", g.collective_efficiency, kMinEfficiency, 1);
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
