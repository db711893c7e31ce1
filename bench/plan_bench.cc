// Plan search speed: event-simulated layouts per second for llama3-70b on 1,024 H100s (target
// >= 5,000 on 2 cores, DESIGN.md §8), and the candidates enumerated and screened per second.
#include <benchmark/benchmark.h>

#include "pipelab/plan/plan.h"
#include "pipelab/profiles/presets.h"

namespace {

using namespace pipelab;

void PlanLlama70B(benchmark::State& state) {
  plan::PlanRequest r;
  r.model = model_preset("llama3-70b");
  r.gpu = gpu_preset("h100-sxm");
  r.gpus = static_cast<int>(state.range(0));
  r.gbs = static_cast<int>(state.range(1));
  r.seq_length = 8192;
  r.precision = Precision::kFp8;
  r.threads = static_cast<int>(state.range(2));
  std::int64_t simulated = 0, candidates = 0;
  for (auto _ : state) {
    const plan::PlanOutcome out = plan::run_plan(r);
    simulated += out.evaluated;
    candidates += out.candidates;
    benchmark::DoNotOptimize(out.top.data());
  }
  state.counters["simulated"] = static_cast<double>(simulated) / static_cast<double>(state.iterations());
  state.counters["layouts_per_s"] = benchmark::Counter(static_cast<double>(simulated), benchmark::Counter::kIsRate);
  state.counters["candidates_per_s"] = benchmark::Counter(static_cast<double>(candidates), benchmark::Counter::kIsRate);
}
BENCHMARK(PlanLlama70B)
    ->ArgNames({"gpus", "gbs", "threads"})
    ->Args({1024, 1024, 2})
    ->Iterations(1)
    ->Repetitions(3)
    ->ReportAggregatesOnly(true)
    ->UseRealTime()
    ->Unit(benchmark::kSecond);

}  // namespace

BENCHMARK_MAIN();
