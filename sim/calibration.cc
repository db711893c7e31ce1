// Calibration: bounded Nelder-Mead over a GpuSpec's free parameters against measured runs; see
// calibration.h and docs/calibration.md.
#include "pipelab/sim/calibration.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <thread>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::sim {

SimulationRequest run_request(const RunRecord& run, const GpuSpec& gpu) {
  SimulationRequest r;
  r.model = run.model_spec(load_model(run.model));
  r.gpu = gpu;
  r.config = run.config(r.model);
  r.schedule = run.schedule();
  return r;
}

ParamBounds calibration_bounds(CalibrationParam param) {
  switch (param) {
    case CalibrationParam::GemmScale:
    case CalibrationParam::Fp8GemmScale:
    case CalibrationParam::Fp4GemmScale:
    case CalibrationParam::AttentionScale: return {0.25, 4.0};
    case CalibrationParam::CollectiveEfficiency: return {0.3, 1.0};
    case CalibrationParam::KernelLaunchOverheadNs: return {100, 20000};
    case CalibrationParam::MemoryBandwidthEfficiency: return {0.5, 1.0};
    case CalibrationParam::MoeSyncGapNs: return {10e3, 5e6};
    case CalibrationParam::HostLaunchNs: return {1e3, 200e3};
  }
  return {1, 1};
}

std::vector<CalibrationParam> parse_calibration_params(std::string_view comma_list) {
  std::vector<CalibrationParam> out;
  std::size_t at = 0;
  while (at <= comma_list.size()) {
    const std::size_t comma = std::min(comma_list.find(',', at), comma_list.size());
    std::string_view item = comma_list.substr(at, comma - at);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    at = comma + 1;
    if (item.empty()) continue;
    const CalibrationParam p = parse_name(kCalibrationParamNames, "calibration parameter", item);
    if (std::find(out.begin(), out.end(), p) != out.end()) {
      throw InputError("calibration parameter '" + std::string(item) + "' is named twice");
    }
    out.push_back(p);
  }
  if (out.empty()) {
    throw InputError("no calibration parameter named; valid: " + join(names_of(kCalibrationParamNames)));
  }
  return out;
}

double param_value(const GpuSpec& gpu, CalibrationParam param) {
  switch (param) {
    case CalibrationParam::GemmScale:
    case CalibrationParam::Fp8GemmScale:
    case CalibrationParam::Fp4GemmScale:
    case CalibrationParam::AttentionScale: return 1.0;
    case CalibrationParam::CollectiveEfficiency: return gpu.collective_efficiency;
    case CalibrationParam::KernelLaunchOverheadNs: return gpu.kernel_launch_overhead_ns;
    case CalibrationParam::MemoryBandwidthEfficiency: return gpu.memory_bandwidth_efficiency;
    case CalibrationParam::MoeSyncGapNs: return gpu.moe_sync_gap_ns;
    case CalibrationParam::HostLaunchNs: return gpu.host_launch_ns;
  }
  return 0;
}

namespace {

// Every efficiency of a curve through `f` (GEMM points: efficiency; attention points: forward, backward).
template <class F>
void for_each_efficiency(std::vector<GemmEfficiencyPoint>& curve, F f) {
  for (GemmEfficiencyPoint& p : curve) f(p.efficiency);
}
template <class F>
void for_each_efficiency(std::vector<AttentionEfficiencyPoint>& curve, F f) {
  for (AttentionEfficiencyPoint& p : curve) {
    f(p.forward);
    f(p.backward);
  }
}

}  // namespace

GpuSpec with_param(GpuSpec gpu, CalibrationParam param, double value) {
  const auto scale = [value](double& efficiency) { efficiency = std::min(1.0, efficiency * value); };
  switch (param) {
    case CalibrationParam::GemmScale: for_each_efficiency(gpu.gemm_efficiency_curve, scale); break;
    case CalibrationParam::Fp8GemmScale: for_each_efficiency(gpu.fp8_gemm_efficiency_curve, scale); break;
    case CalibrationParam::Fp4GemmScale: for_each_efficiency(gpu.fp4_gemm_efficiency_curve, scale); break;
    case CalibrationParam::AttentionScale: for_each_efficiency(gpu.attention_efficiency_curve, scale); break;
    case CalibrationParam::CollectiveEfficiency: gpu.collective_efficiency = value; break;
    case CalibrationParam::KernelLaunchOverheadNs: gpu.kernel_launch_overhead_ns = value; break;
    case CalibrationParam::MemoryBandwidthEfficiency: gpu.memory_bandwidth_efficiency = value; break;
    case CalibrationParam::MoeSyncGapNs: gpu.moe_sync_gap_ns = value; break;
    case CalibrationParam::HostLaunchNs: gpu.host_launch_ns = value; break;
  }
  return gpu;
}

ErrorSummary summarize_errors(const std::vector<double>& errors) {
  std::vector<double> a;
  for (double e : errors) {
    if (std::isfinite(e)) a.push_back(std::abs(e));
  }
  if (a.empty()) return {};
  std::sort(a.begin(), a.end());
  const std::size_t n = a.size();
  return {n % 2 ? a[n / 2] : (a[n / 2 - 1] + a[n / 2]) / 2, a.back()};
}

namespace {

// 4 significant digits, as a preset file holds them.
double round_significant(double v) {
  if (!(v != 0) || !std::isfinite(v)) return v;
  const double scale = std::pow(10.0, 3 - std::floor(std::log10(std::abs(v))));
  return std::round(v * scale) / scale;
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// The runs that take part, each a ready request, and the parameters' log-space coordinates.
class Fitter {
 public:
  Fitter(const GpuSpec& base, std::vector<CalibrationParam> params, std::vector<SimulationRequest> requests,
         std::vector<double> measured, int threads)
      : base_(base), params_(std::move(params)), requests_(std::move(requests)), measured_(std::move(measured)),
        threads_(threads) {}

  std::size_t dims() const { return params_.size(); }

  // u in [0,1] per parameter <-> the value, log-spaced between the bounds.
  double value_at(std::size_t i, double u) const {
    const ParamBounds b = calibration_bounds(params_[i]);
    return b.lo * std::pow(b.hi / b.lo, std::clamp(u, 0.0, 1.0));
  }
  double u_of(std::size_t i, double value) const {
    const ParamBounds b = calibration_bounds(params_[i]);
    if (!(value > b.lo)) return 0;
    return std::clamp(std::log(value / b.lo) / std::log(b.hi / b.lo), 0.0, 1.0);
  }
  GpuSpec spec_at(const std::vector<double>& u) const {
    GpuSpec g = base_;
    for (std::size_t i = 0; i < params_.size(); ++i) g = with_param(std::move(g), params_[i], value_at(i, u[i]));
    return g;
  }

  /// Predicted tokens/s/GPU of the runs `which` on `gpu` (NaN where the simulation throws).
  std::vector<double> predict(const GpuSpec& gpu, const std::vector<std::size_t>& which) const {
    std::vector<double> out(which.size(), kNaN);
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t k = next++; k < which.size(); k = next++) {
        SimulationRequest r = requests_[which[k]];
        r.gpu = gpu;
        try {
          out[k] = simulate_config(r).throughput.tokens_per_s_per_gpu;
        } catch (const Error&) {
          out[k] = kNaN;
        }
      }
    };
    const std::size_t n = std::min<std::size_t>(std::max(1, threads_), which.size());
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < n; ++t) pool.emplace_back(work);
    work();
    for (std::thread& t : pool) t.join();
    return out;
  }

  /// Mean squared log error of `predicted` against the runs `which`.
  double msle(const std::vector<double>& predicted, const std::vector<std::size_t>& which) const {
    double sum = 0;
    for (std::size_t k = 0; k < which.size(); ++k) {
      if (!(predicted[k] > 0)) return kInf;
      const double e = std::log(predicted[k] / measured_[which[k]]);
      sum += e * e;
    }
    return which.empty() ? 0 : sum / static_cast<double>(which.size());
  }

  struct Result {
    std::vector<double> u;
    double objective = kInf;
    int evaluations = 0;
  };

  /// Bounded Nelder-Mead from `start` over the runs `which` (standard coefficients; points clamped
  /// into the unit box; restarted around the best point until a restart no longer improves it).
  /// Stops when the simplex spans less than `xtol` in every coordinate, or at the budget.
  Result minimize(std::vector<double> start, double step, double xtol, int max_evaluations,
                  const std::vector<std::size_t>& which) const {
    const std::size_t d = dims();
    Result best;
    // The budget is strict: a point past it is not simulated and counts as +inf.
    auto f = [&](std::vector<double>& u) {
      for (double& x : u) x = std::clamp(x, 0.0, 1.0);
      if (best.evaluations >= max_evaluations) return kInf;
      ++best.evaluations;
      return msle(predict(spec_at(u), which), which);
    };
    best.u = start;
    best.objective = f(best.u);
    constexpr double kFtol = 1e-12;
    while (best.evaluations < max_evaluations) {
      // Step 1: a simplex around the best point so far.
      std::vector<std::vector<double>> x(d + 1, best.u);
      std::vector<double> fx(d + 1, best.objective);
      for (std::size_t i = 0; i < d; ++i) {
        x[i + 1][i] += x[i + 1][i] + step <= 1 ? step : -step;
        fx[i + 1] = f(x[i + 1]);
      }
      const double restart_from = best.objective;
      // Step 2: reflect, expand, contract or shrink until the simplex is small or the budget spent.
      while (best.evaluations < max_evaluations) {
        std::vector<std::size_t> order(d + 1);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return fx[a] < fx[b]; });
        std::vector<std::vector<double>> xs;
        std::vector<double> fs;
        for (std::size_t i : order) {
          xs.push_back(x[i]);
          fs.push_back(fx[i]);
        }
        x = std::move(xs);
        fx = std::move(fs);
        double size = 0;
        for (std::size_t i = 1; i <= d; ++i) {
          for (std::size_t j = 0; j < d; ++j) size = std::max(size, std::abs(x[i][j] - x[0][j]));
        }
        // Small enough, or flat: the worst vertex within a millionth of the best objective.
        if (size < xtol || (std::isfinite(fx[d]) && fx[d] - fx[0] <= std::max(kFtol, 1e-6 * fx[0]))) break;
        std::vector<double> centroid(d, 0.0);
        for (std::size_t i = 0; i < d; ++i) {
          for (std::size_t j = 0; j < d; ++j) centroid[j] += x[i][j] / static_cast<double>(d);
        }
        auto along = [&](double t) {
          std::vector<double> p(d);
          for (std::size_t j = 0; j < d; ++j) p[j] = centroid[j] + t * (x[d][j] - centroid[j]);
          return p;
        };
        std::vector<double> r = along(-1.0);
        const double fr = f(r);
        if (fr < fx[0]) {
          std::vector<double> e = along(-2.0);
          const double fe = f(e);
          if (fe < fr) {
            x[d] = e, fx[d] = fe;
          } else {
            x[d] = r, fx[d] = fr;
          }
        } else if (fr < fx[d - 1]) {
          x[d] = r, fx[d] = fr;
        } else {
          std::vector<double> c = fr < fx[d] ? along(-0.5) : along(0.5);
          const double fc = f(c);
          if (fc < std::min(fr, fx[d])) {
            x[d] = c, fx[d] = fc;
          } else {
            for (std::size_t i = 1; i <= d; ++i) {
              for (std::size_t j = 0; j < d; ++j) x[i][j] = x[0][j] + 0.5 * (x[i][j] - x[0][j]);
              fx[i] = f(x[i]);
            }
          }
        }
      }
      const std::size_t at = static_cast<std::size_t>(std::min_element(fx.begin(), fx.end()) - fx.begin());
      if (fx[at] < best.objective) {
        best.u = x[at];
        best.objective = fx[at];
      }
      // Step 3: Nelder-Mead can stall on a collapsed simplex; restart until that stops helping.
      if (!(restart_from - best.objective > std::max(kFtol, 1e-6 * best.objective))) break;
      step = std::max(0.01, step / 2);
    }
    return best;
  }

 private:
  GpuSpec base_;
  std::vector<CalibrationParam> params_;
  std::vector<SimulationRequest> requests_;
  std::vector<double> measured_;
  int threads_ = 1;
};

// Why the runs cannot identify `param` ("" when they can): it must change some prediction.
// Which GEMM precisions the kept runs use.
struct RunPrecisions {
  bool fp8 = false, nvfp4 = false;
};

std::string unidentifiable(const Fitter& probe, const GpuSpec& gpu, CalibrationParam param, RunPrecisions precisions,
                           const std::vector<double>& before, const std::vector<std::size_t>& all) {
  if (param == CalibrationParam::Fp8GemmScale) {
    if (gpu.fp8_gemm_efficiency_curve.empty()) return "the GPU spec has no fp8_gemm_efficiency_curve";
    if (!precisions.fp8) return "no run is FP8";
  }
  if (param == CalibrationParam::Fp4GemmScale) {
    if (gpu.fp4_gemm_efficiency_curve.empty()) return "the GPU spec has no fp4_gemm_efficiency_curve";
    if (!precisions.nvfp4) return "no run is NVFP4";
  }
  if (param == CalibrationParam::AttentionScale && gpu.attention_efficiency_curve.empty()) {
    return "the GPU spec has no attention_efficiency_curve";
  }
  const double v = param_value(gpu, param);
  const ParamBounds b = calibration_bounds(param);
  const double moved = std::clamp(v > 0 ? v * 0.8 : b.hi / 10, b.lo, b.hi);
  const std::vector<double> after = probe.predict(with_param(gpu, param, moved == v ? v * 1.25 : moved), all);
  for (std::size_t k = 0; k < all.size(); ++k) {
    if (std::abs(after[k] / before[k] - 1) > 1e-6) return "";
  }
  return "changes no prediction of these runs";
}

}  // namespace

CalibrationReport calibrate(const std::vector<RunRecord>& runs, const GpuSpec& gpu, const CalibrationOptions& options) {
  validate(gpu, gpu.name);
  CalibrationReport report;
  report.before = gpu;
  report.leave_one_out = options.leave_one_out;
  const int threads = options.threads > 0 ? options.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));

  // Step 1: every run as a request on the given spec; those that do not simulate or fit are excluded.
  std::vector<SimulationRequest> requests;
  std::vector<double> measured;
  std::vector<const RunRecord*> kept;
  std::vector<double> before;
  RunPrecisions precisions;
  for (const RunRecord& run : runs) {
    try {
      SimulationRequest r = run_request(run, gpu);
      const SimulationOutcome o = simulate_config(r);
      if (o.oom) {
        const std::int64_t peak = *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end());
        report.excluded.push_back({run.line, run.label(),
                                   "out of memory: peak " + std::to_string(peak >> 20) + " MiB of " +
                                       std::to_string(o.memory_capacity_bytes >> 20) + " MiB usable"});
        continue;
      }
      precisions.fp8 = precisions.fp8 || r.config.precision == Precision::kFp8;
      precisions.nvfp4 = precisions.nvfp4 || r.config.precision == Precision::kNvfp4;
      before.push_back(o.throughput.tokens_per_s_per_gpu);
      requests.push_back(std::move(r));
      measured.push_back(run.tokens_per_s_per_gpu);
      kept.push_back(&run);
    } catch (const Error& e) {
      std::string why = e.what();  // RunRecord's errors name the run, which the excluded entry does already
      if (const std::string named = "line " + std::to_string(run.line) + " (" + run.label() + "): "; why.starts_with(named)) {
        why.erase(0, named.size());
      }
      report.excluded.push_back({run.line, run.label(), "not simulated: " + why});
    }
  }
  if (kept.empty()) {
    if (runs.empty()) throw InputError("no runs to fit");
    std::string why;
    for (std::size_t i = 0; i < report.excluded.size() && i < 5; ++i) {
      const ExcludedRun& e = report.excluded[i];
      why += "\n  line " + std::to_string(e.line) + " (" + e.label + "): " + e.reason;
    }
    if (report.excluded.size() > 5) why += "\n  and " + std::to_string(report.excluded.size() - 5) + " more";
    throw InputError("no run simulates and fits in memory; nothing to fit:" + why);
  }
  std::vector<std::size_t> all(kept.size());
  std::iota(all.begin(), all.end(), 0);

  // Step 2: the parameters: asked for (each must be identifiable) or every identifiable one.
  const Fitter probe(gpu, {}, requests, measured, threads);
  std::vector<CalibrationParam> params;
  if (options.params.empty()) {
    for (const auto& [param, name] : kCalibrationParamNames) {
      const std::string why = unidentifiable(probe, gpu, param, precisions, before, all);
      if (why.empty()) {
        params.push_back(param);
      } else {
        report.not_fitted.push_back(std::string(name) + ": " + why);
      }
    }
    if (params.empty()) throw InputError("no parameter changes a prediction of these runs; nothing to fit");
  } else {
    for (CalibrationParam param : options.params) {
      const std::string why = unidentifiable(probe, gpu, param, precisions, before, all);
      if (!why.empty()) throw InputError("cannot fit " + std::string(calibration_param_name(param)) + ": " + why);
      params.push_back(param);
    }
  }

  // Step 3: the fit, from the spec's own values.
  const Fitter fitter(gpu, params, requests, measured, threads);
  std::vector<double> start(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) start[i] = fitter.u_of(i, param_value(gpu, params[i]));
  const Fitter::Result fit = fitter.minimize(start, 0.1, 1e-4, std::max(options.max_evaluations, 1), all);
  report.evaluations = fit.evaluations;
  // The written spec holds 4 significant digits; its predictions are the ones reported. A fit that
  // does not improve on the given spec (the start may have been clamped to the bounds) keeps it.
  std::vector<double> values(params.size());
  GpuSpec after = gpu;
  for (std::size_t i = 0; i < params.size(); ++i) {
    values[i] = round_significant(fitter.value_at(i, fit.u[i]));
    after = with_param(std::move(after), params[i], values[i]);
  }
  const auto round = [](double& efficiency) { efficiency = round_significant(efficiency); };
  for_each_efficiency(after.gemm_efficiency_curve, round);
  for_each_efficiency(after.fp8_gemm_efficiency_curve, round);
  for_each_efficiency(after.fp4_gemm_efficiency_curve, round);
  for_each_efficiency(after.attention_efficiency_curve, round);
  std::vector<double> predicted = fitter.predict(after, all);
  report.objective_before = fitter.msle(before, all);
  report.objective_after = fitter.msle(predicted, all);
  const bool kept_given = !(report.objective_after <= report.objective_before);
  if (kept_given) {
    after = gpu;
    predicted = before;
    report.objective_after = report.objective_before;
  }
  // "At a bound": within 1 % of the interval (on the log-linear axis the fit moves on) of either end, where
  // the data push the value; the simplex stops short of the end itself.
  constexpr double kNearBound = 0.01;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const double given = param_value(gpu, params[i]);
    report.params.push_back({params[i], given, kept_given ? given : values[i], calibration_bounds(params[i]),
                             !kept_given && (fit.u[i] <= kNearBound || fit.u[i] >= 1 - kNearBound)});
  }
  after.name = gpu.name.ends_with("-fitted") ? gpu.name : gpu.name + "-fitted";
  validate(after, after.name);
  report.after = after;

  // Step 4: leave-one-out: refit without each run (from the full fit) and predict it.
  std::vector<double> loo(kept.size(), kNaN);
  if (options.leave_one_out && kept.size() > 1) {
    for (std::size_t i = 0; i < kept.size(); ++i) {
      std::vector<std::size_t> others;
      for (std::size_t k : all) {
        if (k != i) others.push_back(k);
      }
      // From the full fit, whose optimum is near: a smaller simplex and a looser tolerance.
      const Fitter::Result f = fitter.minimize(fit.u, 0.02, 1e-3, std::max(options.max_evaluations / 4, 1), others);
      loo[i] = fitter.predict(fitter.spec_at(f.u), {i})[0] / measured[i] - 1;
      if (options.progress) options.progress(static_cast<int>(i) + 1, static_cast<int>(kept.size()));
    }
  }

  std::vector<double> eb, ea;
  for (std::size_t k = 0; k < kept.size(); ++k) {
    CalibratedRun c;
    c.line = kept[k]->line;
    c.label = kept[k]->label();
    c.measured = measured[k];
    c.before = before[k];
    c.after = predicted[k];
    c.error_before = before[k] / measured[k] - 1;
    c.error_after = predicted[k] / measured[k] - 1;
    c.error_loo = loo[k];
    eb.push_back(c.error_before);
    ea.push_back(c.error_after);
    report.runs.push_back(std::move(c));
  }
  report.summary_before = summarize_errors(eb);
  report.summary_after = summarize_errors(ea);
  if (options.leave_one_out) report.summary_loo = summarize_errors(loo);
  return report;
}

nlohmann::json to_json(const CalibrationReport& report) {
  using nlohmann::json;
  auto finite_or_null = [](double v) { return std::isfinite(v) ? json(v) : json(nullptr); };
  auto summary = [&](const ErrorSummary& s) {
    return json{{"median_abs_error", finite_or_null(s.median_abs)}, {"max_abs_error", finite_or_null(s.max_abs)}};
  };
  json params = json::array();
  for (const FittedParam& p : report.params) {
    params.push_back({{"name", calibration_param_name(p.param)},
                      {"before", p.before},
                      {"after", p.after},
                      {"lo", p.bounds.lo},
                      {"hi", p.bounds.hi},
                      {"at_bound", p.at_bound}});
  }
  json runs = json::array();
  for (const CalibratedRun& r : report.runs) {
    runs.push_back({{"line", r.line},
                    {"label", r.label},
                    {"measured_tokens_per_s_per_gpu", r.measured},
                    {"predicted_before", r.before},
                    {"predicted_after", r.after},
                    {"error_before", r.error_before},
                    {"error_after", r.error_after},
                    {"error_loo", finite_or_null(r.error_loo)}});
  }
  json excluded = json::array();
  for (const ExcludedRun& e : report.excluded) excluded.push_back({{"line", e.line}, {"label", e.label}, {"reason", e.reason}});
  json out = {{"format", "pipelab-calibration"},
              {"gpu", report.before.name},
              {"objective", "mean squared log error of tokens/s/GPU"},
              {"objective_before", report.objective_before},
              {"objective_after", report.objective_after},
              {"evaluations", report.evaluations},
              {"params", params},
              {"not_fitted", report.not_fitted},
              {"runs", runs},
              {"excluded", excluded},
              {"summary", {{"before", summary(report.summary_before)}, {"after", summary(report.summary_after)}}},
              {"fitted_gpu", to_json(report.after)}};
  if (report.leave_one_out) out["summary"]["leave_one_out"] = summary(report.summary_loo);
  return out;
}

}  // namespace pipelab::sim
