// Predicted vs published: every row of a run table (default calibration/nemo-dgx-h100.csv) simulated
// on one GPU (default the h100-sxm preset). Prints the table (published and predicted tokens/s/GPU,
// error, peak memory of the fullest rank) with the median and largest |error| (all rows, by precision,
// dense and MoE) against issue 10's targets; with --loo, also the fit of `pipelab calibrate` to the
// table and its leave-one-out errors (a few minutes on 2 cores); then times each simulation as a benchmark. The
// held-out tables (calibration/nemo-dgx-b200.csv, nemo-dgx-gb200.csv, a100.csv) run with their GPU:
// --gpu b200, gb200, a100-80g (docs/calibration.md).
//   build/bench/pipelab_calibration_bench [--calibration FILE] [--gpu NAME|FILE.json] [--loo] [google-benchmark flags]
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/calibration.h"
#include "pipelab/sim/simulation.h"

namespace {

using namespace pipelab;

// Issue 10's targets for the calibration set.
constexpr double kMedianTarget = 0.10;
constexpr double kMaxTarget = 0.25;
constexpr double kLooMedianTarget = 0.12;

sim::SimulationRequest request_for(const RunRecord& run, const GpuSpec& gpu) { return sim::run_request(run, gpu); }

void print_table(const std::vector<RunRecord>& runs, const GpuSpec& gpu) {
  std::printf("%-52s %10s %10s %8s %9s  %s\n", "recipe (release model precision GPUs layout)", "published", "predicted",
              "error", "peak_mem", "fits");
  std::printf("%-52s %10s %10s %8s %9s\n", "", "(tok/s/GPU)", "(tok/s/GPU)", "(%)", "(GiB)");
  std::vector<double> errors, fp8_errors, nvfp4_errors, bf16_errors, dense_errors, moe_errors;
  for (const RunRecord& run : runs) {
    try {
      const sim::SimulationRequest request = request_for(run, gpu);
      const sim::SimulationOutcome o = sim::simulate_config(request);
      const double predicted = o.throughput.tokens_per_s_per_gpu;
      const double error = predicted / run.tokens_per_s_per_gpu - 1;
      const double peak = static_cast<double>(*std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end())) / (1 << 30);
      std::printf("%-52s %10.0f %10.0f %+8.1f %9.1f  %s\n", run.label().c_str(), run.tokens_per_s_per_gpu, predicted,
                  100 * error, peak, o.oom ? "OOM" : "yes");
      errors.push_back(std::abs(error));
      const Precision p = run.gemm_precision();
      (p == Precision::kFp8 ? fp8_errors : p == Precision::kNvfp4 ? nvfp4_errors : bf16_errors).push_back(std::abs(error));
      (request.model.is_moe() ? moe_errors : dense_errors).push_back(std::abs(error));
    } catch (const Error& e) {
      std::printf("%-52s %10.0f  refused: %s\n", run.label().c_str(), run.tokens_per_s_per_gpu, e.what());
    }
  }
  auto summary = [](const char* what, const std::vector<double>& v) {
    if (v.empty()) return;
    const sim::ErrorSummary s = sim::summarize_errors(v);
    std::printf("# %s: %zu rows, median |error| %.1f%%, max |error| %.1f%%\n", what, v.size(), 100 * s.median_abs, 100 * s.max_abs);
  };
  summary("all", errors);
  summary("fp8", fp8_errors);
  summary("nvfp4", nvfp4_errors);
  summary("bf16", bf16_errors);
  summary("dense", dense_errors);
  summary("moe", moe_errors);
  if (!errors.empty()) {
    const sim::ErrorSummary all = sim::summarize_errors(errors);
    std::printf("# targets (issue 10, this spec): median |error| <= 10%%: %s; max |error| <= 25%%: %s\n",
                all.median_abs <= kMedianTarget ? "met" : "not met", all.max_abs <= kMaxTarget ? "met" : "not met");
  }
  std::fflush(stdout);
}

// `pipelab calibrate --loo` on the same rows and GPU: the fitted spec's in-sample and leave-one-out
// errors (docs/calibration.md, "Fitting the shipped presets").
void print_fit(const std::vector<RunRecord>& runs, const GpuSpec& gpu) {
  sim::CalibrationOptions options;
  options.leave_one_out = true;
  const sim::CalibrationReport r = sim::calibrate(runs, gpu, options);
  std::printf("# fit (%zu rows, %zu excluded): median / max |error| in-sample %.1f%% / %.1f%%, leave-one-out %.1f%% / %.1f%%\n",
              r.runs.size(), r.excluded.size(), 100 * r.summary_after.median_abs, 100 * r.summary_after.max_abs,
              100 * r.summary_loo.median_abs, 100 * r.summary_loo.max_abs);
  for (const sim::FittedParam& f : r.params) {
    std::printf("#   %-28s %12.4g -> %-12.4g%s\n", std::string(sim::calibration_param_name(f.param)).c_str(), f.before, f.after,
                f.at_bound ? " (at its bound)" : "");
  }
  std::printf("# target (issue 10): leave-one-out median |error| <= 12%%: %s\n", r.summary_loo.median_abs <= kLooMedianTarget ? "met" : "not met");
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(PIPELAB_CALIBRATION_DIR) + "/nemo-dgx-h100.csv";
  std::string gpu_name = "h100-sxm";
  bool loo = false;
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calibration") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (std::strcmp(argv[i], "--gpu") == 0 && i + 1 < argc) {
      gpu_name = argv[++i];
    } else if (std::strcmp(argv[i], "--loo") == 0) {
      loo = true;
    } else {
      rest.push_back(argv[i]);
    }
  }
  const std::vector<RunRecord> runs = parse_run_records(read_text_file(path, "calibration set"), path);
  GpuSpec gpu;
  try {
    gpu = load_gpu(gpu_name);  // a preset name or a GPU JSON file, as `pipelab --gpu` takes
  } catch (const Error& e) {
    std::fprintf(stderr, "pipelab_calibration_bench: --gpu %s: %s\n", gpu_name.c_str(), e.what());
    return 2;
  }
  print_table(runs, gpu);
  if (loo) {
    try {
      print_fit(runs, gpu);
    } catch (const Error& e) {
      std::fprintf(stderr, "pipelab_calibration_bench: --loo: %s\n", e.what());
      return 2;
    }
  }
  for (const RunRecord& run : runs) {
    benchmark::RegisterBenchmark(("Simulate/" + run.label()).c_str(), [run, gpu](benchmark::State& state) {
      const sim::SimulationRequest r = request_for(run, gpu);
      for (auto _ : state) benchmark::DoNotOptimize(sim::simulate_config(r).throughput);
    })->Unit(benchmark::kMillisecond);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
