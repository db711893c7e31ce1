// Calibration fits (sim/calibration.cc): parameters recovered from synthetic runs generated with
// known values, refusals that name the parameter or the row, leave-one-out errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/calibration.h"
#include "pipelab/sim/simulation.h"

namespace pipelab {
namespace {

using sim::CalibrationParam;

// Small Llama 3 8B layouts on one and two nodes: TP and PP traffic over NVLink and the NIC, and
// data-parallel reductions, so GEMM and collective efficiency both shape the predictions.
std::vector<RunRecord> layouts() {
  return parse_run_records(
      "model,precision,gpus,gbs,mbs,seq,tp,pp,cp,vp,ep,fsdp,tokens_per_s_per_gpu\n"
      "llama3-8b,bf16,8,32,1,4096,1,1,1,1,1,0,1\n"
      "llama3-8b,bf16,8,32,1,4096,2,2,1,1,1,0,1\n"
      "llama3-8b,bf16,8,16,1,4096,4,2,1,1,1,0,1\n"
      "llama3-8b,bf16,8,16,1,4096,8,1,1,1,1,0,1\n"
      "llama3-8b,bf16,16,16,1,4096,8,2,1,1,1,0,1\n",
      "synthetic.csv");
}

// The runs with "measured" throughput predicted on `truth`.
std::vector<RunRecord> measured_on(const GpuSpec& truth) {
  std::vector<RunRecord> runs = layouts();
  for (RunRecord& run : runs) {
    run.tokens_per_s_per_gpu = sim::simulate_config(sim::run_request(run, truth)).throughput.tokens_per_s_per_gpu;
  }
  return runs;
}

// The InputError a calibration refuses with, or "no error".
std::string calibrate_error(const std::vector<RunRecord>& runs, const GpuSpec& gpu, const sim::CalibrationOptions& options) {
  try {
    sim::calibrate(runs, gpu, options);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Calibration, RecoversKnownParametersFromSyntheticRuns) {
  const GpuSpec base = gpu_preset("h100-sxm");
  const GpuSpec truth = sim::with_param(sim::with_param(base, CalibrationParam::GemmScale, 0.85),
                                        CalibrationParam::CollectiveEfficiency, 0.55);
  sim::CalibrationOptions options;
  options.params = {CalibrationParam::GemmScale, CalibrationParam::CollectiveEfficiency};
  const sim::CalibrationReport report = sim::calibrate(measured_on(truth), base, options);
  ASSERT_EQ(report.params.size(), 2u);
  EXPECT_NEAR(report.params[0].after, 0.85, 0.85 * 0.005);
  EXPECT_NEAR(report.params[1].after, 0.55, 0.55 * 0.005);
  EXPECT_EQ(report.params[0].before, 1.0);
  EXPECT_EQ(report.params[1].before, base.collective_efficiency);
  EXPECT_GT(report.objective_before, 1e-3);
  EXPECT_LT(report.objective_after, 1e-6);
  EXPECT_LT(report.summary_after.max_abs, 0.002);
  EXPECT_TRUE(report.excluded.empty());
  EXPECT_EQ(report.after.name, "h100-sxm-fitted");
  EXPECT_NO_THROW(validate(report.after));
  // The fitted spec round-trips through the JSON that --gpu FILE reads.
  EXPECT_EQ(parse_gpu_spec(to_json(report.after).dump(), "fitted"), report.after);
}

TEST(Calibration, IsDeterministic) {
  const GpuSpec base = gpu_preset("h100-sxm");
  const std::vector<RunRecord> runs = measured_on(sim::with_param(base, CalibrationParam::GemmScale, 1.1));
  sim::CalibrationOptions one, two;
  one.params = two.params = {CalibrationParam::GemmScale, CalibrationParam::CollectiveEfficiency};
  one.threads = 1;
  two.threads = 2;
  EXPECT_EQ(to_json(sim::calibrate(runs, base, one)).dump(), to_json(sim::calibrate(runs, base, two)).dump());
}

TEST(Calibration, ScalesCapEachCurvePointAtOne) {
  const GpuSpec base = gpu_preset("h100-sxm");
  const GpuSpec scaled = sim::with_param(base, CalibrationParam::GemmScale, 4.0);
  ASSERT_EQ(scaled.gemm_efficiency_curve.size(), base.gemm_efficiency_curve.size());
  for (std::size_t i = 0; i < scaled.gemm_efficiency_curve.size(); ++i) {
    EXPECT_DOUBLE_EQ(scaled.gemm_efficiency_curve[i].efficiency, std::min(1.0, 4 * base.gemm_efficiency_curve[i].efficiency));
  }
  EXPECT_EQ(scaled.fp8_gemm_efficiency_curve, base.fp8_gemm_efficiency_curve);
  EXPECT_NO_THROW(validate(scaled));
}

TEST(Calibration, DefaultFitsWhatTheRunsIdentify) {
  const GpuSpec base = gpu_preset("h100-sxm");
  std::vector<RunRecord> runs = measured_on(base);
  runs.resize(2);
  sim::CalibrationOptions options;
  options.max_evaluations = 20;
  const sim::CalibrationReport report = sim::calibrate(runs, base, options);
  // BF16 runs only: no FP8 scale.
  for (const sim::FittedParam& p : report.params) EXPECT_NE(p.param, CalibrationParam::Fp8GemmScale);
  ASSERT_FALSE(report.not_fitted.empty());
  EXPECT_EQ(report.not_fitted[0], "fp8_gemm_scale: no run is FP8");
  EXPECT_EQ(report.not_fitted[1], "fp4_gemm_scale: the GPU spec has no fp4_gemm_efficiency_curve");
  EXPECT_LE(report.evaluations, 20);
  // Asking for it is refused, naming why.
  options.params = {CalibrationParam::Fp8GemmScale};
  EXPECT_EQ(calibrate_error(runs, base, options), "cannot fit fp8_gemm_scale: no run is FP8");
}

// attention_scale multiplies both figures of every attention point (capped at 1); a spec without the
// curve cannot fit it, and says so.
TEST(Calibration, AttentionScaleNeedsTheSpecsAttentionCurve) {
  GpuSpec base = gpu_preset("h100-sxm");
  ASSERT_FALSE(base.attention_efficiency_curve.empty());
  const GpuSpec doubled = sim::with_param(base, CalibrationParam::AttentionScale, 2.0);
  for (std::size_t i = 0; i < base.attention_efficiency_curve.size(); ++i) {
    EXPECT_DOUBLE_EQ(doubled.attention_efficiency_curve[i].forward, std::min(1.0, 2 * base.attention_efficiency_curve[i].forward));
    EXPECT_DOUBLE_EQ(doubled.attention_efficiency_curve[i].backward, std::min(1.0, 2 * base.attention_efficiency_curve[i].backward));
  }
  std::vector<RunRecord> runs = measured_on(base);
  runs.resize(2);
  sim::CalibrationOptions options;
  options.max_evaluations = 20;
  bool fitted = false;
  for (const sim::FittedParam& p : sim::calibrate(runs, base, options).params) fitted |= p.param == CalibrationParam::AttentionScale;
  EXPECT_TRUE(fitted) << "the default fits it when the runs depend on it";
  base.attention_efficiency_curve.clear();
  options.params = {CalibrationParam::AttentionScale};
  EXPECT_EQ(calibrate_error(runs, base, options), "cannot fit attention_scale: the GPU spec has no attention_efficiency_curve");
}

// fp4_gemm_scale scales the NVFP4 curve; it is fitted only when some run is NVFP4 on a spec with the
// curve, and recovered from runs measured with it moved.
TEST(Calibration, Fp4GemmScaleNeedsNvfp4RunsAndTheCurve) {
  const GpuSpec b200 = gpu_preset("b200");
  const GpuSpec halved = sim::with_param(b200, CalibrationParam::Fp4GemmScale, 0.5);
  for (std::size_t i = 0; i < b200.fp4_gemm_efficiency_curve.size(); ++i) {
    EXPECT_DOUBLE_EQ(halved.fp4_gemm_efficiency_curve[i].efficiency, 0.5 * b200.fp4_gemm_efficiency_curve[i].efficiency);
  }
  std::vector<RunRecord> runs = layouts();
  runs.resize(2);
  sim::CalibrationOptions options;
  options.params = {CalibrationParam::Fp4GemmScale};
  EXPECT_EQ(calibrate_error(runs, b200, options), "cannot fit fp4_gemm_scale: no run is NVFP4");
  for (RunRecord& run : runs) run.precision = "nvfp4";
  GpuSpec no_curve = b200;
  no_curve.fp4_gemm_efficiency_curve.clear();
  EXPECT_EQ(calibrate_error(runs, no_curve, options), "cannot fit fp4_gemm_scale: the GPU spec has no fp4_gemm_efficiency_curve");
  const GpuSpec truth = sim::with_param(b200, CalibrationParam::Fp4GemmScale, 0.8);
  for (RunRecord& run : runs) {
    run.tokens_per_s_per_gpu = sim::simulate_config(sim::run_request(run, truth)).throughput.tokens_per_s_per_gpu;
  }
  const sim::CalibrationReport report = sim::calibrate(runs, b200, options);
  ASSERT_EQ(report.params.size(), 1u);
  EXPECT_NEAR(report.params[0].after, 0.8, 0.01);
}

TEST(Calibration, UnknownParameterNamesTheValidOnes) {
  EXPECT_EQ(sim::parse_calibration_params("gemm_scale, collective_efficiency"),
            (std::vector<CalibrationParam>{CalibrationParam::GemmScale, CalibrationParam::CollectiveEfficiency}));
  auto error_of = [](std::string_view list) {
    try {
      sim::parse_calibration_params(list);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("gemm_scale,nvlink_speed"),
            "calibration parameter='nvlink_speed' must be one of: gemm_scale, fp8_gemm_scale, fp4_gemm_scale, attention_scale, collective_efficiency, "
            "kernel_launch_overhead_ns, memory_bandwidth_efficiency, moe_sync_gap_ns, host_launch_ns");
  EXPECT_EQ(error_of("gemm_scale,gemm_scale"), "calibration parameter 'gemm_scale' is named twice");
  EXPECT_EQ(error_of(" , "), "no calibration parameter named; valid: gemm_scale, fp8_gemm_scale, fp4_gemm_scale, attention_scale, collective_efficiency, "
                             "kernel_launch_overhead_ns, memory_bandwidth_efficiency, moe_sync_gap_ns, host_launch_ns");
}

TEST(Calibration, ExcludesRunsThatDoNotSimulateAndSaysWhy) {
  const GpuSpec base = gpu_preset("h100-sxm");
  std::vector<RunRecord> runs = measured_on(base);
  runs.resize(2);
  RunRecord unknown = runs[0];
  unknown.model = "no-such-model";
  unknown.line = 9;
  runs.push_back(unknown);
  RunRecord too_big = runs[0];  // 70B on one GPU: out of memory
  too_big.model = "llama3-70b";
  too_big.gpus = 1;
  too_big.line = 10;
  runs.push_back(too_big);
  sim::CalibrationOptions options;
  options.params = {CalibrationParam::GemmScale};
  const sim::CalibrationReport report = sim::calibrate(runs, base, options);
  EXPECT_EQ(report.runs.size(), 2u);
  ASSERT_EQ(report.excluded.size(), 2u);
  EXPECT_EQ(report.excluded[0].line, 9);
  EXPECT_TRUE(report.excluded[0].reason.starts_with("not simulated: ")) << report.excluded[0].reason;
  EXPECT_EQ(report.excluded[1].line, 10);
  EXPECT_TRUE(report.excluded[1].reason.starts_with("out of memory: peak ")) << report.excluded[1].reason;
  // Nothing left: refused.
  runs.erase(runs.begin(), runs.begin() + 2);
  EXPECT_THROW(sim::calibrate(runs, base, options), InputError);
  EXPECT_THROW(sim::calibrate({}, base, options), InputError);
}

TEST(Calibration, LeaveOneOutGivesFiniteErrors) {
  const GpuSpec base = gpu_preset("h100-sxm");
  const std::vector<RunRecord> runs = measured_on(sim::with_param(base, CalibrationParam::GemmScale, 0.9));
  sim::CalibrationOptions options;
  options.params = {CalibrationParam::GemmScale};
  options.leave_one_out = true;
  const sim::CalibrationReport report = sim::calibrate(runs, base, options);
  ASSERT_EQ(report.runs.size(), runs.size());
  for (const sim::CalibratedRun& r : report.runs) {
    EXPECT_TRUE(std::isfinite(r.error_loo)) << r.label;
    EXPECT_LT(std::abs(r.error_loo), 0.01) << r.label;  // one exact parameter: every subset finds it
  }
  EXPECT_GT(report.summary_loo.max_abs, 0);
  const nlohmann::json j = to_json(report);
  EXPECT_TRUE(j["summary"].contains("leave_one_out"));
  EXPECT_EQ(j["runs"].size(), runs.size());
}

// With one run there is nothing to leave out: no leave-one-out error, and no summary of one (null), not 0 %.
TEST(Calibration, LeaveOneOutOfOneRunStatesNoError) {
  const GpuSpec base = gpu_preset("h100-sxm");
  std::vector<RunRecord> runs = measured_on(sim::with_param(base, CalibrationParam::GemmScale, 0.9));
  runs.resize(1);
  sim::CalibrationOptions options;
  options.params = {CalibrationParam::GemmScale};
  options.leave_one_out = true;
  const sim::CalibrationReport report = sim::calibrate(runs, base, options);
  EXPECT_FALSE(std::isfinite(report.runs[0].error_loo));
  EXPECT_FALSE(std::isfinite(report.summary_loo.median_abs));
  const nlohmann::json j = to_json(report);
  EXPECT_TRUE(j["summary"]["leave_one_out"]["median_abs_error"].is_null());
  EXPECT_TRUE(j["summary"]["leave_one_out"]["max_abs_error"].is_null());
  EXPECT_TRUE(j["summary"]["after"]["median_abs_error"].is_number());
}

}  // namespace
}  // namespace pipelab
