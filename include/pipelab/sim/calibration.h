// Calibration: fit a GpuSpec's free parameters (GEMM efficiency per precision, collective and memory
// efficiency, per-kernel overhead) to measured runs, so predicted tokens/s/GPU match what a cluster
// achieves; with leave-one-out errors. `pipelab calibrate` and scripts/fit-presets.sh run it.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "pipelab/base/names.h"
#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::sim {

/// The simulation of a run as its recipe ran it: the run's model preset (or model JSON file) with its
/// model.* settings, its resolved layout, and its schedule, on `gpu`. Throws as RunRecord::config does.
SimulationRequest run_request(const RunRecord& run, const GpuSpec& gpu);

/// A free parameter of a GpuSpec that calibration can fit.
enum class CalibrationParam : std::uint8_t {
  GemmScale,                  // multiplies every point of gemm_efficiency_curve (capped at 1)
  Fp8GemmScale,               // the same for fp8_gemm_efficiency_curve
  Fp4GemmScale,               // the same for fp4_gemm_efficiency_curve
  AttentionScale,             // the same for both figures of attention_efficiency_curve
  CollectiveEfficiency,       // GpuSpec::collective_efficiency
  KernelLaunchOverheadNs,     // GpuSpec::kernel_launch_overhead_ns
  MemoryBandwidthEfficiency,  // GpuSpec::memory_bandwidth_efficiency
  MoeSyncGapNs,               // GpuSpec::moe_sync_gap_ns
  HostLaunchNs,               // GpuSpec::host_launch_ns
};

inline constexpr std::array<EnumName<CalibrationParam>, 9> kCalibrationParamNames = {{
    {CalibrationParam::GemmScale, "gemm_scale"},
    {CalibrationParam::Fp8GemmScale, "fp8_gemm_scale"},
    {CalibrationParam::Fp4GemmScale, "fp4_gemm_scale"},
    {CalibrationParam::AttentionScale, "attention_scale"},
    {CalibrationParam::CollectiveEfficiency, "collective_efficiency"},
    {CalibrationParam::KernelLaunchOverheadNs, "kernel_launch_overhead_ns"},
    {CalibrationParam::MemoryBandwidthEfficiency, "memory_bandwidth_efficiency"},
    {CalibrationParam::MoeSyncGapNs, "moe_sync_gap_ns"},
    {CalibrationParam::HostLaunchNs, "host_launch_ns"},
}};

/// The search interval of a parameter; the search runs in log space between the bounds.
struct ParamBounds {
  double lo = 0, hi = 0;
};
ParamBounds calibration_bounds(CalibrationParam param);

inline std::string_view calibration_param_name(CalibrationParam p) { return name_of(kCalibrationParamNames, p); }
/// "gemm_scale,collective_efficiency" -> the parameters; InputError naming the valid names for an
/// unknown or repeated one, or an empty list.
std::vector<CalibrationParam> parse_calibration_params(std::string_view comma_list);

/// The parameter's value on `gpu` (the scales are 1: they are relative to the spec's curves).
double param_value(const GpuSpec& gpu, CalibrationParam param);
/// `gpu` with `param` set to `value` (a scale multiplies the curve, each point capped at 1).
GpuSpec with_param(GpuSpec gpu, CalibrationParam param, double value);

struct CalibrationOptions {
  /// Parameters to fit; empty = every parameter the runs can identify (one that changes some
  /// prediction; fp8_gemm_scale only with FP8 rows and an FP8 curve, fp4_gemm_scale only with NVFP4
  /// rows and an FP4 curve).
  std::vector<CalibrationParam> params;
  bool leave_one_out = false;
  int max_evaluations = 400;  // of the objective (each simulates every run) per fit
  int threads = 0;            // simulating runs in parallel; 0 = hardware concurrency
  /// Called after each leave-one-out refit with (done, total), e.g. for a progress line.
  std::function<void(int, int)> progress;
};

/// One run of the table, simulated before and after the fit. Errors are predicted / measured - 1.
struct CalibratedRun {
  int line = 0;
  std::string label;
  double measured = 0;      // tokens/s/GPU
  double before = 0;        // predicted with the given spec
  double after = 0;         // predicted with the fitted spec
  double error_before = 0;
  double error_after = 0;
  double error_loo = 0;     // predicted by a fit without this run (NaN unless leave-one-out ran)
};

/// A run that takes no part in the fit, and why (not simulated, or out of memory).
struct ExcludedRun {
  int line = 0;
  std::string label;
  std::string reason;
};

struct FittedParam {
  CalibrationParam param;
  double before = 0;
  double after = 0;
  ParamBounds bounds;
  bool at_bound = false;  // the optimum sits on or next to a bound (within 1 % of the interval): the data push it past
};

/// Median and largest |error| over the finite errors; NaN (null in JSON, "-" in text) when there is
/// none, e.g. leave-one-out with a single run.
struct ErrorSummary {
  double median_abs = std::numeric_limits<double>::quiet_NaN();
  double max_abs = std::numeric_limits<double>::quiet_NaN();
};

struct CalibrationReport {
  GpuSpec before;
  GpuSpec after;  // validated; name "<before.name>-fitted"
  std::vector<FittedParam> params;
  std::vector<std::string> not_fitted;  // default parameters left out, each "name: why"
  std::vector<CalibratedRun> runs;
  std::vector<ExcludedRun> excluded;
  double objective_before = 0;  // mean squared log error, ln(predicted / measured)^2
  double objective_after = 0;
  int evaluations = 0;  // of the main fit
  ErrorSummary summary_before, summary_after;
  ErrorSummary summary_loo;  // zero unless leave-one-out ran
  bool leave_one_out = false;
};

/// Fits `options.params` of `gpu` to `runs` (each simulated with its recipe's schedule, as the
/// calibration bench does) by Nelder-Mead on the bounded log-space parameters, minimising the mean
/// squared log error of tokens/s/GPU. Deterministic. Runs that do not simulate or do not fit in memory
/// are excluded and listed. InputError when no run is left, or a parameter asked for cannot be
/// identified by the runs (naming why).
CalibrationReport calibrate(const std::vector<RunRecord>& runs, const GpuSpec& gpu, const CalibrationOptions& options = {});

ErrorSummary summarize_errors(const std::vector<double>& errors);

nlohmann::json to_json(const CalibrationReport& report);

}  // namespace pipelab::sim
