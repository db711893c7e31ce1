// GpuSpec: efficiency interpolation, sanity rules and strict JSON.
#include <pipelab/profiles/gpu_spec.h>

#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include <pipelab/base/error.h>

#include "json_reader.h"

namespace pipelab {
namespace {

const std::vector<std::string> kGpuKeys = {
    "name",
    "peak_bf16_tflops",
    "peak_fp8_tflops",
    "hbm_bytes",
    "hbm_bandwidth_gbps",
    "nvlink_bandwidth_gbps",
    "nic_bandwidth_gbps",
    "gpus_per_node",
    "nvlink_latency_ns",
    "nic_latency_ns",
    "kernel_launch_overhead_ns",
    "gemm_efficiency_curve",
    "memory_bandwidth_efficiency",
    "collective_efficiency",
    "reserved_memory_bytes",
};

const std::vector<std::string> kCurvePointKeys = {"flops", "efficiency"};

std::string num(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

double GpuSpec::gemm_efficiency(double flops) const {
  const auto& curve = gemm_efficiency_curve;
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

double GpuSpec::peak_tflops(std::string_view precision) const {
  if (precision == "bf16") return peak_bf16_tflops;
  if (precision == "fp8") {
    if (peak_fp8_tflops <= 0) throw ConfigError("gpu '" + name + "' has no FP8 tensor cores (peak_fp8_tflops=0)");
    return peak_fp8_tflops;
  }
  throw InputError("precision='" + std::string(precision) + "' must be 'bf16' or 'fp8'");
}

void validate(const GpuSpec& g, std::string_view context) {
  std::vector<std::string> errors;
  auto positive = [&](std::string_view field, double value) {
    if (!(value > 0)) errors.push_back(std::string(field) + "=" + num(value) + " must be positive");
  };
  auto fraction = [&](std::string_view field, double value) {
    if (!(value > 0 && value <= 1)) errors.push_back(std::string(field) + "=" + num(value) + " must be in (0, 1]");
  };
  if (g.name.empty()) errors.push_back("name must not be empty");
  positive("peak_bf16_tflops", g.peak_bf16_tflops);
  if (g.peak_fp8_tflops < 0) errors.push_back("peak_fp8_tflops=" + num(g.peak_fp8_tflops) + " must be >= 0");
  positive("hbm_bytes", static_cast<double>(g.hbm_bytes));
  positive("hbm_bandwidth_gbps", g.hbm_bandwidth_gbps);
  positive("nvlink_bandwidth_gbps", g.nvlink_bandwidth_gbps);
  positive("nic_bandwidth_gbps", g.nic_bandwidth_gbps);
  positive("gpus_per_node", g.gpus_per_node);
  if (g.nvlink_latency_ns < 0) errors.push_back("nvlink_latency_ns must be >= 0");
  if (g.nic_latency_ns < 0) errors.push_back("nic_latency_ns must be >= 0");
  if (g.kernel_launch_overhead_ns < 0) errors.push_back("kernel_launch_overhead_ns must be >= 0");
  if (g.gemm_efficiency_curve.empty()) errors.push_back("gemm_efficiency_curve must have at least one point");
  for (std::size_t i = 0; i < g.gemm_efficiency_curve.size(); ++i) {
    const auto& point = g.gemm_efficiency_curve[i];
    const std::string at = "gemm_efficiency_curve[" + std::to_string(i) + "]";
    if (!(point.flops > 0)) errors.push_back(at + ".flops=" + num(point.flops) + " must be positive");
    if (!(point.efficiency > 0 && point.efficiency <= 1)) {
      errors.push_back(at + ".efficiency=" + num(point.efficiency) + " must be in (0, 1]");
    }
    if (i > 0 && !(point.flops > g.gemm_efficiency_curve[i - 1].flops)) {
      errors.push_back(at + ".flops=" + num(point.flops) + " must be greater than the previous point's");
    }
  }
  fraction("memory_bandwidth_efficiency", g.memory_bandwidth_efficiency);
  fraction("collective_efficiency", g.collective_efficiency);
  if (g.reserved_memory_bytes < 0 || g.reserved_memory_bytes >= g.hbm_bytes) {
    errors.push_back("reserved_memory_bytes=" + std::to_string(g.reserved_memory_bytes) +
                     " must be >= 0 and below hbm_bytes=" + std::to_string(g.hbm_bytes));
  }
  if (errors.empty()) return;
  std::string message = detail::context_prefix(context) + "gpu '" + g.name + "': ";
  for (std::size_t i = 0; i < errors.size(); ++i) message += (i ? "; " : "") + errors[i];
  throw ConfigError(message);
}

GpuSpec gpu_spec_from_json(const nlohmann::json& json, std::string_view context) {
  const detail::JsonReader reader(json, context, "gpu", kGpuKeys);
  GpuSpec g;
  g.name = reader.get_string("name");
  g.peak_bf16_tflops = reader.get_double("peak_bf16_tflops");
  g.peak_fp8_tflops = reader.get_double("peak_fp8_tflops", 0.0);
  g.hbm_bytes = reader.get_int64("hbm_bytes");
  g.hbm_bandwidth_gbps = reader.get_double("hbm_bandwidth_gbps");
  g.nvlink_bandwidth_gbps = reader.get_double("nvlink_bandwidth_gbps");
  g.nic_bandwidth_gbps = reader.get_double("nic_bandwidth_gbps");
  g.gpus_per_node = reader.get_int("gpus_per_node");
  g.nvlink_latency_ns = reader.get_double("nvlink_latency_ns");
  g.nic_latency_ns = reader.get_double("nic_latency_ns");
  g.kernel_launch_overhead_ns = reader.get_double("kernel_launch_overhead_ns");
  const nlohmann::json& curve = reader.get("gemm_efficiency_curve");
  if (!curve.is_array()) reader.fail_type("gemm_efficiency_curve", "an array of {\"flops\", \"efficiency\"}");
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const std::string where = detail::context_prefix(context) + "gemm_efficiency_curve[" + std::to_string(i) + "]";
    const detail::JsonReader point(curve[i], where, "gemm efficiency point", kCurvePointKeys);
    g.gemm_efficiency_curve.push_back({point.get_double("flops"), point.get_double("efficiency")});
  }
  g.memory_bandwidth_efficiency = reader.get_double("memory_bandwidth_efficiency");
  g.collective_efficiency = reader.get_double("collective_efficiency");
  g.reserved_memory_bytes = reader.get_int64("reserved_memory_bytes");
  validate(g, context);
  return g;
}

GpuSpec parse_gpu_spec(std::string_view json_text, std::string_view context) {
  return gpu_spec_from_json(detail::parse_json_text(json_text, context), context);
}

nlohmann::json to_json(const GpuSpec& g) {
  nlohmann::json curve = nlohmann::json::array();
  for (const auto& point : g.gemm_efficiency_curve) {
    curve.push_back({{"flops", point.flops}, {"efficiency", point.efficiency}});
  }
  return {
      {"name", g.name},
      {"peak_bf16_tflops", g.peak_bf16_tflops},
      {"peak_fp8_tflops", g.peak_fp8_tflops},
      {"hbm_bytes", g.hbm_bytes},
      {"hbm_bandwidth_gbps", g.hbm_bandwidth_gbps},
      {"nvlink_bandwidth_gbps", g.nvlink_bandwidth_gbps},
      {"nic_bandwidth_gbps", g.nic_bandwidth_gbps},
      {"gpus_per_node", g.gpus_per_node},
      {"nvlink_latency_ns", g.nvlink_latency_ns},
      {"nic_latency_ns", g.nic_latency_ns},
      {"kernel_launch_overhead_ns", g.kernel_launch_overhead_ns},
      {"gemm_efficiency_curve", curve},
      {"memory_bandwidth_efficiency", g.memory_bandwidth_efficiency},
      {"collective_efficiency", g.collective_efficiency},
      {"reserved_memory_bytes", g.reserved_memory_bytes},
  };
}

}  // namespace pipelab
