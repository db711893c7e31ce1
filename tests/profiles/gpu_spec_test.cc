// Tests for profiles/gpu_spec.cc: efficiency interpolation, strict JSON, sanity rules.
#include <pipelab/profiles/gpu_spec.h>

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pipelab/profiles/presets.h>

#include "error_message.h"

namespace pipelab {
namespace {

using ::pipelab::testing::error_message;
using ::testing::HasSubstr;

GpuSpec two_point_gpu() {
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.gemm_efficiency_curve = {{1e9, 0.2}, {1e11, 0.6}};
  return gpu;
}

TEST(GpuEfficiency, InterpolatesLogLinearlyAndClamps) {
  const GpuSpec gpu = two_point_gpu();
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(1e9), 0.2);
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(1e11), 0.6);
  EXPECT_NEAR(gpu.gemm_efficiency(1e10), 0.4, 1e-12);  // halfway in log10
  EXPECT_NEAR(gpu.gemm_efficiency(std::pow(10.0, 9.5)), 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(1.0), 0.2);
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(1e15), 0.6);
}

// Large GEMMs: 0.65 measured on Blackwell (TE's B300 BF16 profile), 0.70-0.80 estimated elsewhere.
TEST(GpuEfficiency, PresetCurvesRiseToSixtyToEightyPercent) {
  for (const auto& name : gpu_preset_names()) {
    const GpuSpec gpu = gpu_preset(name);
    double previous = 0;
    for (double flops = 1e6; flops <= 1e14; flops *= 3) {
      const double e = gpu.gemm_efficiency(flops);
      EXPECT_GE(e, previous) << name << " at " << flops;
      previous = e;
    }
    EXPECT_LT(gpu.gemm_efficiency(1e7), 0.05) << name;  // tiny GEMMs are latency-bound
    EXPECT_GE(gpu.gemm_efficiency(1e13), 0.6) << name;
    EXPECT_LE(gpu.gemm_efficiency(1e13), 0.8) << name;
  }
}

TEST(GpuSpec, PeakByPrecision) {
  const GpuSpec h100 = gpu_preset("h100-sxm");
  EXPECT_DOUBLE_EQ(h100.peak_tflops(Precision::kBf16), 989.4);
  EXPECT_DOUBLE_EQ(h100.peak_tflops(Precision::kFp8), 1978.9);
  EXPECT_THAT(error_message<ConfigError>([] { gpu_preset("a100-80g").peak_tflops(Precision::kFp8); }),
              HasSubstr("gpu 'a100-80g' has no FP8 tensor cores"));
  EXPECT_THAT(error_message<InputError>([] { parse_precision("fp16"); }),
              HasSubstr("precision='fp16' must be one of: bf16, fp8"));
}

TEST(GpuSpec, LinkConventionIsPerDirection) {
  // NVIDIA quotes total bidirectional NVLink bandwidth: A100 600, H100/H200 900, B200 1800 GB/s.
  EXPECT_DOUBLE_EQ(gpu_preset("a100-80g").nvlink_bandwidth_gbps, 600.0 / 2);
  EXPECT_DOUBLE_EQ(gpu_preset("h100-sxm").nvlink_bandwidth_gbps, 900.0 / 2);
  EXPECT_DOUBLE_EQ(gpu_preset("b200").nvlink_bandwidth_gbps, 1800.0 / 2);
  EXPECT_DOUBLE_EQ(gpu_preset("h100-sxm").nic_bandwidth_gbps, 400.0 / 8);  // 400 Gb/s
  EXPECT_EQ(gpu_preset("gb200").gpus_per_node, 72);
}

TEST(GpuSpec, UsableMemoryExcludesReserve) {
  const GpuSpec gpu = gpu_preset("h100-sxm");
  EXPECT_EQ(gpu.hbm_bytes, 80LL << 30);
  EXPECT_EQ(gpu.usable_memory_bytes(), gpu.hbm_bytes - gpu.reserved_memory_bytes);
}

TEST(GpuSpecJson, RoundTripsEveryPreset) {
  for (const auto& name : gpu_preset_names()) {
    const GpuSpec gpu = gpu_preset(name);
    EXPECT_EQ(gpu_spec_from_json(to_json(gpu), "round trip"), gpu) << name;
  }
}

TEST(GpuSpecJson, ErrorsNameTheKey) {
  nlohmann::json json = to_json(gpu_preset("h100-sxm"));
  json["nvlink_bw"] = 1;
  EXPECT_THAT(error_message<InputError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("g.json: unknown gpu key 'nvlink_bw'"));

  json = to_json(gpu_preset("h100-sxm"));
  json.erase("hbm_bandwidth_gbps");
  EXPECT_THAT(error_message<InputError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("g.json: missing required gpu key 'hbm_bandwidth_gbps'"));

  json = to_json(gpu_preset("h100-sxm"));
  json["hbm_bytes"] = 80.5;
  EXPECT_THAT(error_message<InputError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("gpu key 'hbm_bytes' must be an integer"));

  json = to_json(gpu_preset("h100-sxm"));
  json["gemm_efficiency_curve"][1]["efficiency"] = "high";
  EXPECT_THAT(error_message<InputError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("g.json: gemm_efficiency_curve[1]: gemm efficiency point key 'efficiency' must be a number"));

  json = to_json(gpu_preset("h100-sxm"));
  json.erase("peak_fp8_tflops");  // optional: 0 = no FP8
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("fp8_gemm_efficiency_curve needs peak_fp8_tflops > 0"));
  json.erase("fp8_gemm_efficiency_curve");  // optional too: empty = the BF16 curve
  json.erase("sm_count");
  const GpuSpec no_fp8 = gpu_spec_from_json(json, "g.json");
  EXPECT_EQ(no_fp8.peak_fp8_tflops, 0);
  EXPECT_TRUE(no_fp8.fp8_gemm_efficiency_curve.empty());
  EXPECT_EQ(no_fp8.sm_count, 0);

  // An SM count the communication kernels beside compute would fill (HybridEP holds 32) leaves compute none.
  json = to_json(gpu_preset("h100-sxm"));
  json["sm_count"] = kMaxCommKernelSms;
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("sm_count=32 must be 0 (unknown) or in [33, 65536]: communication kernels beside compute hold up to 32 SMs"));
  json["sm_count"] = kMaxCommKernelSms + 1;
  EXPECT_EQ(gpu_spec_from_json(json, "g.json").sm_count, 33);
}

TEST(GpuSpec, Fp8GemmsUseTheirOwnCurveOrTheBf16One) {
  GpuSpec gpu = gpu_preset("h100-sxm");
  ASSERT_FALSE(gpu.fp8_gemm_efficiency_curve.empty());
  // Measured: FP8 GEMMs saturate later than BF16 ones, and below ~1e10 FLOPs they are no faster (m=256 experts: 314 vs 346 TFLOPS).
  EXPECT_LT(gpu.gemm_efficiency(1e10, Precision::kFp8), gpu.gemm_efficiency(1e10, Precision::kBf16));
  EXPECT_LT(gpu.gemm_efficiency(5e9, Precision::kFp8) * gpu.peak_fp8_tflops,
            gpu.gemm_efficiency(5e9, Precision::kBf16) * gpu.peak_bf16_tflops);
  EXPECT_GT(gpu.gemm_efficiency(1e12, Precision::kFp8) * gpu.peak_fp8_tflops,
            1.8 * gpu.gemm_efficiency(1e12, Precision::kBf16) * gpu.peak_bf16_tflops);
  for (double flops = 1e6; flops < 1e14; flops *= 1.5) {
    EXPECT_LE(gpu.gemm_efficiency(flops, Precision::kFp8), gpu.gemm_efficiency(flops * 1.5, Precision::kFp8));
    EXPECT_LE(gpu.gemm_efficiency(flops, Precision::kFp8), 1.0);
  }
  gpu.fp8_gemm_efficiency_curve.clear();
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(3e10, Precision::kFp8), gpu.gemm_efficiency(3e10));
}

// NVFP4 GEMMs read their own curve against the FP4 peak; without it the FP8 curve, then the BF16 one.
TEST(GpuSpec, Fp4GemmsUseTheirOwnCurveOrFallBack) {
  GpuSpec gpu = gpu_preset("b200");
  ASSERT_FALSE(gpu.fp4_gemm_efficiency_curve.empty());
  EXPECT_DOUBLE_EQ(gpu.peak_tflops(Precision::kNvfp4), 9000);
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(1.1e12, Precision::kNvfp4), 0.582);
  for (double flops = 1e6; flops < 1e14; flops *= 1.5) {
    EXPECT_LE(gpu.gemm_efficiency(flops, Precision::kNvfp4), gpu.gemm_efficiency(flops * 1.5, Precision::kNvfp4));
    EXPECT_LE(gpu.gemm_efficiency(flops, Precision::kNvfp4), 1.0);
  }
  gpu.fp4_gemm_efficiency_curve.clear();
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(3e10, Precision::kNvfp4), gpu.gemm_efficiency(3e10, Precision::kFp8));
  gpu.fp8_gemm_efficiency_curve.clear();
  EXPECT_DOUBLE_EQ(gpu.gemm_efficiency(3e10, Precision::kNvfp4), gpu.gemm_efficiency(3e10));
  EXPECT_THAT(error_message<ConfigError>([] { gpu_preset("h100-sxm").peak_tflops(Precision::kNvfp4); }),
              HasSubstr("gpu 'h100-sxm' has no FP4 tensor cores (peak_fp4_tflops=0)"));
}

TEST(GpuSpecJson, Fp4PeakAndCurveAreOptionalAndChecked) {
  nlohmann::json json = to_json(gpu_preset("gb200"));
  EXPECT_EQ(gpu_spec_from_json(json, "g.json"), gpu_preset("gb200"));
  json["peak_fp4_tflops"] = -1;
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }), HasSubstr("peak_fp4_tflops=-1 must be in"));
  json.erase("peak_fp4_tflops");  // optional: 0 = no FP4 tensor cores
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("fp4_gemm_efficiency_curve needs peak_fp4_tflops > 0"));
  json.erase("fp4_gemm_efficiency_curve");  // optional too: empty = the FP8 curve
  const GpuSpec no_fp4 = gpu_spec_from_json(json, "g.json");
  EXPECT_EQ(no_fp4.peak_fp4_tflops, 0);
  EXPECT_TRUE(no_fp4.fp4_gemm_efficiency_curve.empty());
  json = to_json(gpu_preset("gb200"));
  json["fp4_gemm_efficiency_curve"][2]["efficiency"] = 1.5;
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("fp4_gemm_efficiency_curve[2].efficiency=1.5 must be in [0.001, 1]"));
}

// Blackwell NVFP4 (docs/profiles.md, fp4_gemm_efficiency_curve): B200 and GB200 share a curve from B200
// kernel measurements; B300 and GB300 read it scaled to TE's own B300 measurement.
TEST(GpuSpec, BlackwellFp4CurvesFollowTheirMeasurements) {
  const GpuSpec b200 = gpu_preset("b200");
  EXPECT_EQ(gpu_preset("gb200").fp4_gemm_efficiency_curve, b200.fp4_gemm_efficiency_curve);
  EXPECT_EQ(gpu_preset("gb300").fp4_gemm_efficiency_curve, gpu_preset("b300").fp4_gemm_efficiency_curve);
  EXPECT_DOUBLE_EQ(gpu_preset("gb200").peak_fp4_tflops, 10000);
  EXPECT_DOUBLE_EQ(gpu_preset("b300").peak_fp4_tflops, 13500);
  EXPECT_DOUBLE_EQ(gpu_preset("gb300").peak_fp4_tflops, 15000);
  // B200 kernels: CUTLASS NVFP4 1024x7168x4608 at 3370 TFLOPS; cuBLASLt MXFP4 8192^3 at 5239 TFLOPS.
  EXPECT_NEAR(b200.gemm_efficiency(2.0 * 1024 * 7168 * 4608, Precision::kNvfp4) * 9000, 3370, 10);
  EXPECT_NEAR(b200.gemm_efficiency(2.0 * 8192 * 8192 * 8192, Precision::kNvfp4) * 9000, 5239, 10);
  // TE, B300, the 5B layer pre-quantized: 19.17 TFLOP of NVFP4 GEMMs (15872 tokens; 4096 -> 12288, 4096,
  // 16384 and 16384 -> 4096) in 3.764 ms.
  const GpuSpec b300 = gpu_preset("b300");
  double ms = 0;
  for (const double n_k : {4096.0 * 12288, 4096.0 * 4096, 4096.0 * 16384, 16384.0 * 4096}) {
    const double flops = 2 * 15872 * n_k;
    ms += 3 * flops / (b300.gemm_efficiency(flops, Precision::kNvfp4) * b300.peak_fp4_tflops * 1e12) * 1e3;
  }
  EXPECT_NEAR(ms, 3.764, 0.02);
}

TEST(GpuSpec, AttentionCurveInterpolatesForwardAndBackwardByKeys) {
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.attention_efficiency_curve = {{256, 0.2, 0.1}, {4096, 0.6, 0.5}};
  EXPECT_DOUBLE_EQ(gpu.attention_efficiency(256).forward, 0.2);
  EXPECT_DOUBLE_EQ(gpu.attention_efficiency(4096).backward, 0.5);
  const AttentionEfficiencyPoint mid = gpu.attention_efficiency(1024);  // halfway in log2: 256 -> 1024 -> 4096
  EXPECT_NEAR(mid.forward, 0.4, 1e-12);
  EXPECT_NEAR(mid.backward, 0.3, 1e-12);
  EXPECT_DOUBLE_EQ(gpu.attention_efficiency(64).forward, 0.2 / 4);   // below: a fixed time per query tile
  EXPECT_DOUBLE_EQ(gpu.attention_efficiency(128).backward, 0.1 / 2);
  EXPECT_DOUBLE_EQ(gpu.attention_efficiency(1e9).backward, 0.5);    // and above
  gpu.attention_efficiency_curve.clear();
  EXPECT_THAT(error_message<ConfigError>([&] { gpu.attention_efficiency(1024); }), HasSubstr("has no attention_efficiency_curve"));
}

// The curve is d = 128's; d = 64 runs at cuDNN's measured 0.73 / 0.81 of it, MLA's 192 at 1.01 / 0.85,
// log-linear between, held outside [64, 192].
TEST(GpuSpec, OtherHeadDimsScaleTheAttentionCurve) {
  GpuSpec gpu = gpu_preset("h100-sxm");
  gpu.attention_efficiency_curve = {{256, 0.2, 0.1}, {4096, 0.6, 0.5}};
  EXPECT_DOUBLE_EQ(gpu.attention_efficiency(4096, 128).forward, 0.6);
  EXPECT_NEAR(gpu.attention_efficiency(4096, 192).backward, 0.5 * 0.85, 1e-12);
  EXPECT_NEAR(gpu.attention_efficiency(4096, 256).forward, 0.6 * 1.01, 1e-12);
  EXPECT_NEAR(gpu.attention_efficiency(4096, 64).forward, 0.6 * 0.73, 1e-12);
  EXPECT_NEAR(gpu.attention_efficiency(4096, 64).backward, 0.5 * 0.81, 1e-12);
  EXPECT_NEAR(gpu.attention_efficiency(4096, 32).forward, 0.6 * 0.73, 1e-12);
  const AttentionEfficiencyPoint mid = attention_head_dim_factor(64 * std::sqrt(2.0));  // halfway in log2
  EXPECT_NEAR(mid.forward, (0.73 + 1) / 2, 1e-12);
  EXPECT_NEAR(mid.backward, (0.81 + 1) / 2, 1e-12);
  EXPECT_THAT(error_message<InputError>([] { attention_head_dim_factor(0); }), HasSubstr("head_dim=0 must be positive"));
}

// Presets that share a chip share its attention curve (docs/profiles.md): the Hopper presets one
// measured on H200, B300 GB300's, A800 A100's; H20 has none.
TEST(GpuSpec, PresetAttentionCurvesFollowTheirChips) {
  const auto curve = [](const char* name) { return gpu_preset(name).attention_efficiency_curve; };
  ASSERT_FALSE(curve("h100-sxm").empty());
  EXPECT_EQ(curve("h200"), curve("h100-sxm"));
  EXPECT_EQ(curve("h800"), curve("h100-sxm"));
  EXPECT_EQ(curve("b300"), curve("gb300"));
  EXPECT_EQ(curve("a800"), curve("a100-80g"));
  EXPECT_TRUE(curve("h20").empty());
  for (const auto& name : gpu_preset_names()) {
    const GpuSpec gpu = gpu_preset(name);
    for (std::size_t i = 1; i < gpu.attention_efficiency_curve.size(); ++i) {
      // Longer keys amortise more setup: the forward never falls with them over the measured range.
      EXPECT_GE(gpu.attention_efficiency_curve[i].forward, gpu.attention_efficiency_curve[i - 1].forward) << name << " point " << i;
    }
  }
}

TEST(GpuSpecJson, AttentionCurveIsOptionalAndChecked) {
  nlohmann::json json = to_json(gpu_preset("h100-sxm"));
  json["attention_efficiency_curve"] = nlohmann::json::parse(R"([{"keys": 512, "forward": 0.4, "backward": 0.3},
                                                                 {"keys": 8192, "forward": 0.6, "backward": 0.5}])");
  const GpuSpec gpu = gpu_spec_from_json(json, "g.json");
  ASSERT_EQ(gpu.attention_efficiency_curve.size(), 2u);
  EXPECT_EQ(gpu.attention_efficiency_curve[1], (AttentionEfficiencyPoint{8192, 0.6, 0.5}));
  EXPECT_EQ(gpu_spec_from_json(to_json(gpu), "again"), gpu);

  json["attention_efficiency_curve"][1].erase("backward");
  EXPECT_THAT(error_message<InputError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("g.json: attention_efficiency_curve[1]: missing required attention efficiency point key 'backward'"));
  json["attention_efficiency_curve"][1]["backward"] = 1.5;
  json["attention_efficiency_curve"][1]["keys"] = 100;
  const std::string message = error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); });
  EXPECT_THAT(message, HasSubstr("attention_efficiency_curve[1].backward=1.5 must be in [0.001, 1]"));
  EXPECT_THAT(message, HasSubstr("attention_efficiency_curve[1].keys=100 must be greater than the previous point's"));
  json["attention_efficiency_curve"][0]["keys"] = -1;
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("attention_efficiency_curve[0].keys=-1 must be positive and at most 1e+12"));

  json.erase("attention_efficiency_curve");  // absent: attention is timed on the BF16 GEMM curve
  EXPECT_TRUE(gpu_spec_from_json(json, "g.json").attention_efficiency_curve.empty());
}

TEST(GpuSpecJson, SustainedComputeRatioIsOptionalAndAFraction) {
  nlohmann::json json = to_json(gpu_preset("h100-sxm"));
  EXPECT_DOUBLE_EQ(json.at("sustained_compute_ratio").get<double>(), 0.893);
  json["sustained_compute_ratio"] = 1.2;
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("sustained_compute_ratio=1.2 must be in [0.001, 1]"));
  json.erase("sustained_compute_ratio");  // absent: no power-limit slowdown modelled
  EXPECT_DOUBLE_EQ(gpu_spec_from_json(json, "g.json").sustained_compute_ratio, 1.0);
}

// Blackwell: one FP8 curve from published GEMM measurements (OpenXLA's B200 table, TE's B300 profile;
// docs/profiles.md), read against each preset's own FP8 peak.
TEST(GpuSpec, BlackwellPresetsShareOneMeasuredFp8Curve) {
  const GpuSpec b200 = gpu_preset("b200");
  ASSERT_FALSE(b200.fp8_gemm_efficiency_curve.empty());
  for (const char* name : {"gb200", "b300", "gb300"}) {
    EXPECT_EQ(gpu_preset(name).fp8_gemm_efficiency_curve, b200.fp8_gemm_efficiency_curve) << name;
  }
  // TE, B300, 5B shapes pre-quantized: 19.17 TFLOP per layer in 6.812 ms of FP8 current scaling.
  EXPECT_NEAR(b200.gemm_efficiency(1e12, Precision::kFp8), 19.17e12 / 6.812e-3 / 4500e12, 0.005);
  // XLA's B200 table: below ~4e9 FLOPs an FP8 GEMM is at most ~1.1x as fast as a BF16 one of the same size.
  const auto fp8_over_bf16 = [&](double flops) {
    return b200.gemm_efficiency(flops, Precision::kFp8) * b200.peak_fp8_tflops /
           (b200.gemm_efficiency(flops, Precision::kBf16) * b200.peak_bf16_tflops);
  };
  EXPECT_LT(fp8_over_bf16(2e9), 1.12);
  // TE, B300, the same 5B layer: 13.102 ms in BF16 against 6.812 ms in FP8.
  EXPECT_NEAR(fp8_over_bf16(1e12), 13.102 / 6.812, 0.02);
  for (double flops = 1e6; flops < 1e14; flops *= 1.5) {
    EXPECT_LE(b200.gemm_efficiency(flops, Precision::kFp8), b200.gemm_efficiency(flops * 1.5, Precision::kFp8));
  }
}

// Blackwell: one BF16 curve from the same measurements (XLA's B200 table, BF16 rows; TE's B300 profile,
// BF16; docs/profiles.md), read against each preset's own BF16 peak.
TEST(GpuSpec, BlackwellPresetsShareOneMeasuredBf16Curve) {
  const GpuSpec b200 = gpu_preset("b200");
  for (const char* name : {"gb200", "b300", "gb300"}) {
    EXPECT_EQ(gpu_preset(name).gemm_efficiency_curve, b200.gemm_efficiency_curve) << name;
  }
  // TE, B300, 5B shapes: 19.17 TFLOP per layer in 13.102 ms of BF16.
  EXPECT_NEAR(b200.gemm_efficiency(1e12), 19.17e12 / 13.102e-3 / 2250e12, 0.005);
  // XLA's B200 table, median over the shapes of one FLOP count: 2^30 (43 shapes) and 2^37 (10 shapes).
  EXPECT_NEAR(b200.gemm_efficiency(std::ldexp(1.0, 30)), 0.0715, 0.001);
  EXPECT_NEAR(b200.gemm_efficiency(std::ldexp(1.0, 37)), 0.627, 0.001);
  for (double flops = 1e6; flops < 1e14; flops *= 1.5) {
    EXPECT_LE(b200.gemm_efficiency(flops), b200.gemm_efficiency(flops * 1.5));
    EXPECT_LE(b200.gemm_efficiency(flops), 1.0);
  }
}

// NCCL's all-to-all inside the NVLink domain: its own measured share where a preset has one (Megatron-Core
// MoE's Table 7), else the ring collectives'.
TEST(GpuSpec, AlltoallNvlinkEfficiencyFallsBackToTheCollectives) {
  EXPECT_EQ(gpu_preset("h100-sxm").nvlink_alltoall_efficiency(), 0.72);
  EXPECT_EQ(gpu_preset("gb200").nvlink_alltoall_efficiency(), 0.62);
  const GpuSpec a100 = gpu_preset("a100-80g");
  EXPECT_EQ(a100.alltoall_nvlink_efficiency, 0);
  EXPECT_EQ(a100.nvlink_alltoall_efficiency(), a100.collective_efficiency);
}

TEST(GpuSpecRules, ViolationsNameFieldAndRule) {
  GpuSpec gpu = two_point_gpu();
  gpu.gemm_efficiency_curve = {{1e11, 0.6}, {1e9, 1.5}};
  gpu.collective_efficiency = 0;
  gpu.alltoall_nvlink_efficiency = 1.5;
  gpu.reserved_memory_bytes = gpu.hbm_bytes;
  const std::string message = error_message<ConfigError>([&] { validate(gpu, "g.json"); });
  EXPECT_THAT(message, HasSubstr("g.json: gpu 'h100-sxm': "));
  EXPECT_THAT(message, HasSubstr("gemm_efficiency_curve[1].efficiency=1.5 must be in [0.001, 1]"));
  EXPECT_THAT(message, HasSubstr("gemm_efficiency_curve[1].flops=1e+09 must be greater than the previous point's"));
  EXPECT_THAT(message, HasSubstr("collective_efficiency=0 must be in [0.001, 1]"));
  EXPECT_THAT(message, HasSubstr("alltoall_nvlink_efficiency=1.5 must be in [0.001, 1]"));
  EXPECT_THAT(message, HasSubstr("reserved_memory_bytes=85899345920 must be >= 0 and below hbm_bytes"));
}

// Finite but absurd numbers are refused with their range, not turned into times no clock holds.
TEST(GpuSpecRules, AbsurdFiniteValuesAreRefusedWithTheirRange) {
  struct Case {
    const char* key;
    double value;
    const char* message;
  };
  for (const Case& c : {Case{"peak_bf16_tflops", 1e-300, "peak_bf16_tflops=1e-300 must be in [0.001, 1e+06]"},
                        Case{"nic_latency_ns", 1e300, "nic_latency_ns=1e+300 must be in [0, 1e+09]"},
                        Case{"kernel_launch_overhead_ns", 1e18, "kernel_launch_overhead_ns=1e+18 must be in [0, 1e+09]"},
                        Case{"nvlink_bandwidth_gbps", 1e-300, "nvlink_bandwidth_gbps=1e-300 must be in [0.001, 1e+06]"},
                        Case{"hbm_bandwidth_gbps", -1, "hbm_bandwidth_gbps=-1 must be in [0.001, 1e+06]"}}) {
    nlohmann::json json = to_json(gpu_preset("h100-sxm"));
    json[c.key] = c.value;
    EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }), HasSubstr(c.message)) << c.key;
  }
  nlohmann::json json = to_json(gpu_preset("h100-sxm"));
  json["gemm_efficiency_curve"][0]["efficiency"] = 1e-300;
  EXPECT_THAT(error_message<ConfigError>([&] { gpu_spec_from_json(json, "g.json"); }),
              HasSubstr("gemm_efficiency_curve[0].efficiency=1e-300 must be in [0.001, 1]"));
}

}  // namespace
}  // namespace pipelab
