// Runtime benchmarks (target: executor overhead <= 1% of iteration time for actions >= 1 ms,
// i.e. <= 10 us per action). Times are the measured iterations' makespans (manual time), so thread
// start-up of the in-process driver is not counted.
//   ExecutorOverhead/pp:P/m:M      null backend, no compute: executor time per action on the
//                                  busiest rank (per_action_us) = bookkeeping + hand-over latency
//   ExecutorVsIdeal/f_us:F         null backend spinning F, I=W=F/2 per action: measured makespan
//                                  over the simulator's makespan for the same times (overhead_pct)
//   CpuIteration/schedule          a real iteration of the mock model (hidden 128, 2 layers/stage)
#include <benchmark/benchmark.h>

#include <algorithm>

#include "pipelab/runtime/null_backend.h"
#include "pipelab/runtime/run.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/uniform_cost.h"

namespace {

using namespace pipelab;

std::size_t busiest_rank_actions(const Schedule& s) {
  std::size_t most = 0;
  for (const auto& list : s.ranks) {
    most = std::max<std::size_t>(most, static_cast<std::size_t>(std::count_if(list.begin(), list.end(), [](const Slot& x) {
                                   return x.has_value();
                                 })));
  }
  return most;
}

void ExecutorOverhead(benchmark::State& state) {
  const int pp = static_cast<int>(state.range(0));
  const int m = static_cast<int>(state.range(1));
  const Schedule s = add_send_recv(make_schedule("1f1b", {pp, 1, m, 0}));
  runtime::RunOptions o;
  o.warmup = 2;
  o.iterations = 50;
  const std::size_t actions = busiest_rank_actions(s);
  double total_s = 0, total_actions = 0;
  for (auto _ : state) {
    const runtime::RunResult r = runtime::run_inprocess(
        s, [&](int rank) { return std::make_unique<runtime::NullBackend>(s.shape, rank, 4096); }, o);
    double sum = 0;
    for (const Timeline& t : r.iterations) sum += static_cast<double>(t.makespan_ns()) * 1e-9;
    state.SetIterationTime(sum);
    total_s += sum;
    total_actions += static_cast<double>(actions) * static_cast<double>(r.iterations.size());
  }
  state.counters["actions_per_iteration"] = static_cast<double>(actions);
  state.counters["per_action_us"] = total_actions > 0 ? total_s / total_actions * 1e6 : 0;
}
BENCHMARK(ExecutorOverhead)
    ->ArgNames({"pp", "m"})
    ->Args({1, 64})
    ->Args({2, 8})
    ->Args({2, 64})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

void ExecutorVsIdeal(benchmark::State& state) {
  const std::int64_t f_ns = state.range(0) * 1000;
  const Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 8, 0}));
  const runtime::NullTimes times{f_ns, f_ns / 2, f_ns / 2};
  sim::UniformTimes u;
  u.f_ns = f_ns;
  u.i_ns = f_ns / 2;
  u.w_ns = f_ns / 2;
  const std::int64_t ideal = sim::simulate(s, sim::UniformCost(u)).timeline.makespan_ns();
  runtime::RunOptions o;
  o.warmup = 1;
  o.iterations = 5;
  double measured_sum = 0, n = 0;
  for (auto _ : state) {
    const runtime::RunResult r = runtime::run_inprocess(
        s, [&](int rank) { return std::make_unique<runtime::NullBackend>(s.shape, rank, 4096, times); }, o);
    double sum = 0;
    for (const Timeline& t : r.iterations) {
      sum += static_cast<double>(t.makespan_ns()) * 1e-9;
      measured_sum += static_cast<double>(t.makespan_ns());
      n += 1;
    }
    state.SetIterationTime(sum);
  }
  state.counters["ideal_ms"] = static_cast<double>(ideal) * 1e-6;
  state.counters["overhead_pct"] = n > 0 ? (measured_sum / n / static_cast<double>(ideal) - 1.0) * 100.0 : 0;
}
BENCHMARK(ExecutorVsIdeal)->ArgNames({"f_us"})->Arg(100)->Arg(1000)->UseManualTime()->Unit(benchmark::kMillisecond);

void CpuIteration(benchmark::State& state, const char* name) {
  const Schedule s = add_send_recv(make_schedule(name, {2, 0, 8, 0}));
  runtime::ModelConfig model;
  model.block = kernels::BlockShape{.hidden = 128, .ffn = 512, .heads = 4, .seq = 64, .mbs = 2, .swiglu = false};
  model.layers_per_stage = 2;
  runtime::RunOptions o;
  o.warmup = 1;
  o.iterations = 3;
  for (auto _ : state) {
    const runtime::RunResult r = runtime::run_cpu_inprocess(s, model, o);
    double sum = 0;
    for (const Timeline& t : r.iterations) sum += static_cast<double>(t.makespan_ns()) * 1e-9;
    state.SetIterationTime(sum / static_cast<double>(r.iterations.size()));
  }
}
BENCHMARK_CAPTURE(CpuIteration, 1f1b, "1f1b")->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(2);
BENCHMARK_CAPTURE(CpuIteration, zb_v, "zb-v")->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(2);

}  // namespace
