// Predicted vs published: every row of calibration/nemo-dgx-h100.csv simulated on the h100-sxm
// preset. Prints the table (published and predicted tokens/s/GPU, error, peak memory of the fullest
// rank) with the median and largest |error|, then times each simulation as a benchmark.
//   build/bench/pipelab_calibration_bench [--calibration FILE] [google-benchmark flags]
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
#include "pipelab/sim/simulation.h"

namespace {

using namespace pipelab;

sim::SimulationRequest request_for(const RunRecord& run) {
  sim::SimulationRequest r;
  r.model = run.model_spec(model_preset(run.model));
  r.gpu = gpu_preset("h100-sxm");
  r.config = run.config(r.model);
  r.schedule = run.schedule();
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void print_table(const std::vector<RunRecord>& runs) {
  std::printf("%-52s %10s %10s %8s %9s  %s\n", "recipe (release model precision GPUs layout)", "published", "predicted",
              "error", "peak_mem", "fits");
  std::printf("%-52s %10s %10s %8s %9s\n", "", "(tok/s/GPU)", "(tok/s/GPU)", "(%)", "(GiB)");
  std::vector<double> errors, fp8_errors, bf16_errors;
  for (const RunRecord& run : runs) {
    try {
      const sim::SimulationOutcome o = sim::simulate_config(request_for(run));
      const double predicted = o.throughput.tokens_per_s_per_gpu;
      const double error = predicted / run.tokens_per_s_per_gpu - 1;
      const double peak = static_cast<double>(*std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end())) / (1 << 30);
      std::printf("%-52s %10.0f %10.0f %+8.1f %9.1f  %s\n", run.label().c_str(), run.tokens_per_s_per_gpu, predicted,
                  100 * error, peak, o.oom ? "OOM" : "yes");
      errors.push_back(std::abs(error));
      (run.precision.starts_with("fp8") ? fp8_errors : bf16_errors).push_back(std::abs(error));
    } catch (const Error& e) {
      std::printf("%-52s %10.0f  refused: %s\n", run.label().c_str(), run.tokens_per_s_per_gpu, e.what());
    }
  }
  auto summary = [](const char* what, const std::vector<double>& v) {
    if (v.empty()) return;
    std::printf("# %s: %zu rows, median |error| %.1f%%, max |error| %.1f%%\n", what, v.size(), 100 * median(v),
                100 * *std::max_element(v.begin(), v.end()));
  };
  summary("all", errors);
  summary("fp8", fp8_errors);
  summary("bf16", bf16_errors);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = std::string(PIPELAB_CALIBRATION_DIR) + "/nemo-dgx-h100.csv";
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    if (std::strcmp(argv[i], "--calibration") == 0 && i + 1 < argc) {
      path = argv[++i];
    } else {
      rest.push_back(argv[i]);
    }
  }
  const std::vector<RunRecord> runs = parse_run_records(read_text_file(path, "calibration set"), path);
  print_table(runs);
  for (const RunRecord& run : runs) {
    benchmark::RegisterBenchmark(("Simulate/" + run.label()).c_str(), [run](benchmark::State& state) {
      const sim::SimulationRequest r = request_for(run);
      for (auto _ : state) benchmark::DoNotOptimize(sim::simulate_config(r).throughput);
    })->Unit(benchmark::kMillisecond);
  }
  int n = static_cast<int>(rest.size());
  benchmark::Initialize(&n, rest.data());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
