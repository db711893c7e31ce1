// GPU benchmarks, one suite per GPU type (run it on each and keep the JSON:
// `build/bench/pipelab_gpu_bench --benchmark_out=h100.json --benchmark_out_format=json`). Times are
// device-event times (manual time); every benchmark SkipWithError()s without a device.
//   Gemm/size:N/math:M            cuBLAS N x N x N GEMM: M = 0, 1, 2 the block's fp32 storage with
//                                 fp32, tf32 or bf16 math; 3 bf16 storage (the GPU's BF16 rate): TFLOPS
//   BlockOps/hidden:H/seq:S/math:M the mock block's F, I, W and B on one whole GPU (measured through
//                                  the cuda backend and executor, as `pipelab profile` does): TFLOPS
//   Iteration/schedule:K/pp:P      one iteration of a schedule in single-GPU mode (P ranks on
//                                  green-context SM groups, device copies), hidden 1024, 2 layers
//                                  per stage, 4P microbatches: makespan and bubble
#include <benchmark/benchmark.h>

#include <array>
#include <string>

#include "pipelab/kernels/device_block.h"
#include "pipelab/kernels/shape.h"
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/cuda_run.h"
#include "pipelab/runtime/profiler.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"

namespace {

using namespace pipelab;

constexpr std::array<kernels::GemmMath, 3> kMaths{kernels::GemmMath::Fp32, kernels::GemmMath::Tf32, kernels::GemmMath::Bf16};
constexpr std::array<const char*, 8> kSchedules{"gpipe",  "1f1b",   "interleaved-1f1b", "zb-h1",
                                                "zb-h2",  "zb-v",   "dualpipe",         "dualpipev"};

bool skip_without_gpu(benchmark::State& state) {
  if (auto why = runtime::cuda_unavailable()) {
    state.SkipWithError(why->c_str());
    return true;
  }
  return false;
}

void label_device(benchmark::State& state, kernels::GemmMath math) {
  state.SetLabel(runtime::cuda_device_info(0).name + " " + std::string(kernels::gemm_math_name(math)));
}

void Gemm(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const int n = static_cast<int>(state.range(0));
  // math 3: bf16 operands in bf16 storage (what training frameworks run); 0-2: the block's fp32
  // storage with fp32, tf32 or bf16 tensor-core math.
  const bool native = state.range(1) == 3;
  const kernels::GemmMath math = native ? kernels::GemmMath::Bf16 : kMaths.at(static_cast<std::size_t>(state.range(1)));
  double ns = 0;
  for (auto _ : state) {
    ns = kernels::device_gemm_ns(0, n, n, n, math, 20, native);
    state.SetIterationTime(ns * 1e-9);
  }
  state.counters["TFLOPS"] = 2.0 * n * static_cast<double>(n) * n / ns * 1e-3;
  label_device(state, math);
  if (native) state.SetLabel(runtime::cuda_device_info(0).name + " bf16 storage");
}
BENCHMARK(Gemm)
    ->ArgNames({"size", "math"})
    ->ArgsProduct({{1024, 2048, 4096, 8192}, {0, 1, 2, 3}})
    ->UseManualTime()
    ->Iterations(3)
    ->Unit(benchmark::kMillisecond);

void BlockOps(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  runtime::ProfileOptions o;
  o.model.block = kernels::BlockShape{.hidden = static_cast<int>(state.range(0)),
                                      .ffn = 4 * static_cast<int>(state.range(0)),
                                      .heads = static_cast<int>(state.range(0)) / 128,
                                      .seq = static_cast<int>(state.range(1)),
                                      .mbs = 1,
                                      .swiglu = true};
  o.model.layers_per_stage = 1;
  o.repeats = 5;
  o.warmup = 2;
  runtime::CudaProfileOptions c;
  c.math = kMaths.at(static_cast<std::size_t>(state.range(2)));
  MeasuredProfile p;
  for (auto _ : state) {
    p = runtime::measure_cuda_profile(o, c);
    state.SetIterationTime(static_cast<double>(p.per_layer.f_ns + p.per_layer.b_ns) * 1e-9);
  }
  auto tflops = [](double flops, std::int64_t ns) { return ns > 0 ? flops / static_cast<double>(ns) * 1e-3 : 0.0; };
  state.counters["F_TFLOPS"] = tflops(p.flops_f, p.per_layer.f_ns);
  state.counters["I_TFLOPS"] = tflops(p.flops_i, p.per_layer.i_ns);
  state.counters["W_TFLOPS"] = tflops(p.flops_w, p.per_layer.w_ns);
  state.counters["B_TFLOPS"] = tflops(p.flops_i + p.flops_w, p.per_layer.b_ns);
  label_device(state, c.math);
}
BENCHMARK(BlockOps)
    ->ArgNames({"hidden", "seq", "math"})
    ->ArgsProduct({{1024, 4096}, {1024, 4096}, {0, 2}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void Iteration(benchmark::State& state) {
  if (skip_without_gpu(state)) return;
  const std::string name = kSchedules.at(static_cast<std::size_t>(state.range(0)));
  const int pp = static_cast<int>(state.range(1));
  ScheduleOptions so;
  so.pp = pp;
  so.vp = name == "interleaved-1f1b" || name == "zb-v" || name == "dualpipe" || name == "dualpipev" ? 2 : 1;
  so.microbatches = 4 * pp;
  const Schedule s = add_send_recv(make_schedule(name, so));
  runtime::ModelConfig m;
  m.block = kernels::BlockShape{.hidden = 1024, .ffn = 4096, .heads = 8, .seq = 1024, .mbs = 1, .swiglu = true};
  m.layers_per_stage = 2;
  runtime::CudaRunConfig c;
  c.single_gpu = true;
  runtime::RunOptions o;
  o.warmup = 2;
  o.iterations = 5;
  TimelineMetrics metrics;
  for (auto _ : state) {
    const runtime::RunResult r = runtime::run_cuda_inprocess(s, m, c, o);
    const Timeline& t = r.iterations[r.median_iteration()];
    metrics = compute_metrics(t);
    state.SetIterationTime(static_cast<double>(metrics.makespan_ns) * 1e-9);
  }
  state.counters["bubble"] = metrics.bubble_ratio;
  state.SetLabel(name + " " + runtime::cuda_device_info(0).name);
}
BENCHMARK(Iteration)
    ->ArgNames({"schedule", "pp"})
    ->ArgsProduct({{0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}})
    ->UseManualTime()
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
