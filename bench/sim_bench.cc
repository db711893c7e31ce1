// Simulator speed: actions simulated per second on one core, and one large
// configuration simulated end to end. Targets: >= 10 M actions/s; 16,384-GPU llama3.1-405b < 100 ms.
#include <benchmark/benchmark.h>

#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/simulation.h"
#include "pipelab/sim/uniform_cost.h"

namespace {

using namespace pipelab;

void simulate_schedule(benchmark::State& state, const char* name) {
  const int pp = static_cast<int>(state.range(0));
  const int vp = static_cast<int>(state.range(1));
  const int m = static_cast<int>(state.range(2));
  // Build and lower outside the timed loop: this measures the event engine.
  const Schedule lowered = add_send_recv(make_schedule(name, {pp, vp, m, 0}));
  sim::UniformTimes t;
  t.comm_ns = 10;
  const sim::UniformCost cost(t);
  const auto actions = static_cast<double>(lowered.action_count());
  for (auto _ : state) {
    sim::SimResult r = sim::simulate(lowered, cost);
    benchmark::DoNotOptimize(r.timeline.ranks.data());
  }
  state.counters["actions"] = actions;
  state.counters["actions_per_s"] = benchmark::Counter(actions * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

void SimulateInterleaved(benchmark::State& state) { simulate_schedule(state, "interleaved-1f1b"); }
void SimulateDualPipeV(benchmark::State& state) { simulate_schedule(state, "dualpipev"); }
void SimulateZbV(benchmark::State& state) { simulate_schedule(state, "zb-v"); }

BENCHMARK(SimulateInterleaved)->ArgNames({"pp", "vp", "mb"})->Args({8, 2, 64})->Args({64, 4, 512})->Unit(benchmark::kMillisecond);
BENCHMARK(SimulateDualPipeV)->ArgNames({"pp", "vp", "mb"})->Args({8, 2, 64})->Args({64, 2, 512})->Unit(benchmark::kMillisecond);
BENCHMARK(SimulateZbV)->ArgNames({"pp", "vp", "mb"})->Args({64, 2, 512})->Unit(benchmark::kMillisecond);

// Schedule generation + lowering, the rest of the per-configuration cost.
void BuildAndLower(benchmark::State& state) {
  for (auto _ : state) {
    Schedule s = add_send_recv(make_schedule("interleaved-1f1b", {64, 4, 512, 0}));
    benchmark::DoNotOptimize(s.ranks.data());
  }
}
BENCHMARK(BuildAndLower)->Unit(benchmark::kMillisecond);

// Llama 3.1 405B as trained on 16,384 H100s (TP8, PP16, DP128; 126 layers with the first and last
// stage one layer short), global batch 2048 x 8192 tokens: the whole simulate path.
void EndToEndLlama405B(benchmark::State& state) {
  sim::SimulationRequest r;
  r.model = model_preset("llama3.1-405b");
  r.gpu = gpu_preset("h100-sxm");
  r.config.tp = 8;
  r.config.pp = 16;
  r.config.dp = 128;
  r.config.mbs = 1;
  r.config.gbs = 2048;
  r.config.stage_layers = {7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7};
  r.config.recompute = Recompute::kFull;
  r.config = resolve(r.config, r.model);
  r.schedule = "1f1b";
  for (auto _ : state) {
    sim::SimulationOutcome o = sim::simulate_config(r);
    benchmark::DoNotOptimize(o.metrics.makespan_ns);
  }
}
BENCHMARK(EndToEndLlama405B)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
