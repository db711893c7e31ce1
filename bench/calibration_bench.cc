// Predicted vs published: every row of a run table (default calibration/nemo-dgx-h100.csv) simulated
// on one GPU (default the h100-sxm preset). Prints the table (published and predicted tokens/s/GPU,
// error, peak memory of the fullest rank) with the median and largest |error|, then times each
// simulation as a benchmark. The held-out tables (calibration/nemo-dgx-b200.csv, nemo-dgx-gb200.csv,
// a100.csv) run with their GPU: --gpu b200, gb200, a100-80g (docs/calibration.md).
//   build/bench/pipelab_calibration_bench [--calibration FILE] [--gpu NAME|FILE.json] [google-benchmark flags]
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

sim::SimulationRequest request_for(const RunRecord& run, const GpuSpec& gpu) { return sim::run_request(run, gpu); }

void print_table(const std::vector<RunRecord>& runs, const GpuSpec& gpu) {
  std::printf("%-52s %10s %10s %8s %9s  %s\n", "recipe (release model precision GPUs layout)", "published", "predicted",
              "error", "peak_mem", "fits");
  std::printf("%-52s %10s %10s %8s %9s\n", "", "(tok/s/GPU)", "(tok/s/GPU)", "(%)", "(GiB)");
  std::vector<double> errors, fp8_errors, nvfp4_errors, bf16_errors;
  for (const RunRecord& run : runs) {
    try {
      const sim::SimulationOutcome o = sim::simulate_config(request_for(run, gpu));
      const double predicted = o.throughput.tokens_per_s_per_gpu;
      const double error = predicted / run.tokens_per_s_per_gpu - 1;
      const double peak = static_cast<double>(*std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end())) / (1 << 30);
      std::printf("%-52s %10.0f %10.0f %+8.1f %9.1f  %s\n", run.label().c_str(), run.tokens_per_s_per_gpu, predicted,
                  100 * error, peak, o.oom ? "OOM" : "yes");
      errors.push_back(std::abs(error));
      const Precision p = run.gemm_precision();
      (p == Precision::kFp8 ? fp8_errors : p == Precision::kNvfp4 ? nvfp4_errors : bf16_errors).push_back(std::abs(error));
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
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(PIPELAB_CALIBRATION_DIR) + "/nemo-dgx-h100.csv";
  std::string gpu_name = "h100-sxm";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calibration") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else if (std::strcmp(argv[i], "--gpu") == 0 && i + 1 < argc) {
      gpu_name = argv[++i];
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
