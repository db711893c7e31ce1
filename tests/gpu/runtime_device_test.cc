// Device tests of the cuda backend and the GPU drivers: every schedule's gradients equal the
// single-device reference in single-GPU mode (fp32 math: tight; bf16: loose), device-event timing
// agrees with host timing, the F&B unit overlaps on two streams, NCCL round trips, and single-GPU
// mode reports its SM split. Skipped (with the reason) without a usable GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "../runtime/runtime_test_util.h"
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/cuda_run.h"
#include "pipelab/runtime/gradients.h"
#include "pipelab/schedules/metrics.h"

namespace pipelab::runtime {
namespace {

using testing::Case;
using testing::lowered;
using testing::schedule_matrix;
using testing::tiny_model;

#define PIPELAB_SKIP_WITHOUT_GPU()                                  \
  do {                                                              \
    if (auto why = cuda_unavailable()) GTEST_SKIP() << *why;        \
  } while (0)

CudaRunConfig single_gpu(kernels::GemmMath math) {
  CudaRunConfig c;
  c.math = math;
  c.single_gpu = true;
  return c;
}

GradientCheck run_and_check(const Schedule& s, const ModelConfig& model, const CudaRunConfig& config, double tolerance,
                            CudaRunInfo* info = nullptr) {
  RunOptions o;
  o.collect_gradients = true;
  const RunResult r = run_cuda_inprocess(s, model, config, o, info);
  const PartGradients ref = reference_gradients(model, s.shape.stages_per_chain(), s.shape.microbatches);
  return compare_gradients(part_gradients(s.shape, r.stage_gradients), ref, tolerance);
}

class GpuGradientMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(GpuGradientMatrix, SingleGpuModeEqualsTheReference) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const Case c = GetParam();
  const Schedule s = lowered(c.schedule, c.pp, c.vp, c.m);
  for (const ModelConfig& model : {tiny_model(1), tiny_model(2, /*swiglu=*/true)}) {
    const GradientCheck check = run_and_check(s, model, single_gpu(kernels::GemmMath::Fp32), 1e-4);
    EXPECT_TRUE(check.passed) << "max relative error " << check.max_rel_error << " at " << check.worst;
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchedules, GpuGradientMatrix, ::testing::ValuesIn(schedule_matrix()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.label(); });

ModelConfig medium_model() {
  ModelConfig m;
  m.block = kernels::BlockShape{.hidden = 256, .ffn = 1024, .heads = 4, .seq = 128, .mbs = 2, .swiglu = true};
  m.layers_per_stage = 2;
  m.seed = 11;
  return m;
}

TEST(GpuGradients, Bf16MathStaysCloseToTheReference) {
  PIPELAB_SKIP_WITHOUT_GPU();
  for (const char* name : {"1f1b", "zb-v", "dualpipev"}) {
    const Schedule s = lowered(name, 2, name == std::string("1f1b") ? 1 : 2, 4);
    const GradientCheck check = run_and_check(s, medium_model(), single_gpu(kernels::GemmMath::Bf16), 5e-2);
    EXPECT_TRUE(check.passed) << name << ": max relative error " << check.max_rel_error << " at " << check.worst;
  }
}

TEST(GpuGradients, TheCheckFailsOnAWrongReference) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const Schedule s = lowered("1f1b", 2, 1, 4);
  RunOptions o;
  o.collect_gradients = true;
  const RunResult r = run_cuda_inprocess(s, tiny_model(), single_gpu(kernels::GemmMath::Fp32), o);
  const PartGradients wrong = reference_gradients(tiny_model(), 2, 3);  // one microbatch short
  EXPECT_FALSE(compare_gradients(part_gradients(s.shape, r.stage_gradients), wrong, 1e-4).passed);
}

// The cuda backend timed by the host instead of its clock: the executor then synchronizes after
// every action, as it does for the cpu backend.
class HostTimed final : public testing::ForwardingBackend {
 public:
  explicit HostTimed(std::unique_ptr<Backend> inner) : ForwardingBackend(*inner), inner_(std::move(inner)) {}
  DeviceClock* clock() override { return nullptr; }
  double finish_iteration() override { return inner_->finish_iteration(); }

 private:
  std::unique_ptr<Backend> inner_;
};

// Large enough that kernels, not launches, set the pace (each action takes milliseconds).
ModelConfig large_model() {
  ModelConfig m;
  m.block = kernels::BlockShape{.hidden = 1024, .ffn = 4096, .heads = 8, .seq = 1024, .mbs = 1, .swiglu = true};
  m.layers_per_stage = 2;
  m.seed = 13;
  return m;
}

TEST(GpuTiming, DeviceEventsAgreeWithHostTiming) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const Schedule s = lowered("1f1b", 2, 1, 8);
  const ModelConfig model = large_model();
  RunOptions o;
  o.warmup = 2;
  o.iterations = 5;
  const RunResult device = run_cuda_inprocess(s, model, single_gpu(kernels::GemmMath::Bf16), o);
  CudaRankConfig base;
  base.ranks_on_device = 2;
  const RunResult host = run_inprocess(
      s,
      [&](int r) {
        CudaRankConfig c = base;
        c.index_on_device = r;
        return std::make_unique<HostTimed>(std::make_unique<CudaBackend>(model, s.shape, r, c));
      },
      o);
  const Timeline& d = device.iterations[device.median_iteration()];
  const Timeline& h = host.iterations[host.median_iteration()];
  const TimelineMetrics md = compute_metrics(d), mh = compute_metrics(h);
  // The same work timed two ways: within launch and synchronization overheads of each other.
  RecordProperty("device_makespan_us", std::to_string(md.makespan_ns / 1000));
  RecordProperty("host_makespan_us", std::to_string(mh.makespan_ns / 1000));
  EXPECT_GT(md.makespan_ns, 0);
  EXPECT_NEAR(static_cast<double>(md.makespan_ns), static_cast<double>(mh.makespan_ns), 0.25 * static_cast<double>(mh.makespan_ns))
      << "device " << md.makespan_ns << " ns, host " << mh.makespan_ns << " ns";
  // Compute events of one rank do not overlap and lie inside the iteration.
  for (const auto& rank : d.ranks) {
    std::int64_t last_end = 0;
    for (const TimelineEvent& e : rank) {
      if (e.stream != Stream::Compute) continue;
      EXPECT_GE(e.start_ns, last_end - 1000) << to_string(e.action);  // 1 us of event resolution
      EXPECT_GE(e.end_ns, e.start_ns);
      last_end = e.end_ns;
    }
  }
}

TEST(GpuTiming, AnFbUnitSpansBothHalves) {
  PIPELAB_SKIP_WITHOUT_GPU();
  // DualPipeV's steady state is F&B units, their halves on two streams. When both halves are
  // compute-bound they share the rank's SMs, so the unit is not shorter than F + B by much (the
  // overlap pays where a half waits on communication); it must hold both halves' work.
  const Schedule s = lowered("dualpipev", 2, 2, 8);
  RunOptions o;
  o.warmup = 1;
  o.iterations = 3;
  CudaRunConfig c = single_gpu(kernels::GemmMath::Bf16);
  const RunResult r = run_cuda_inprocess(s, large_model(), c, o);
  const Timeline& t = r.iterations[r.median_iteration()];
  std::int64_t f = 0, b = 0, fb = 0;
  int nf = 0, nb = 0, nfb = 0;
  for (const auto& rank : t.ranks) {
    for (const TimelineEvent& e : rank) {
      const std::int64_t d = e.end_ns - e.start_ns;
      if (e.action.op == Op::F) f += d, ++nf;
      if (e.action.op == Op::B) b += d, ++nb;
      if (e.action.op == Op::OverlapFB) fb += d, ++nfb;
    }
  }
  ASSERT_GT(nf, 0);
  ASSERT_GT(nb, 0);
  ASSERT_GT(nfb, 0);
  const double mean_f = static_cast<double>(f) / nf, mean_b = static_cast<double>(b) / nb, mean_fb = static_cast<double>(fb) / nfb;
  RecordProperty("mean_f_us", std::to_string(mean_f / 1e3));
  RecordProperty("mean_b_us", std::to_string(mean_b / 1e3));
  RecordProperty("mean_fb_us", std::to_string(mean_fb / 1e3));
  EXPECT_GE(mean_fb, std::max(mean_f, mean_b) * 0.9) << "F " << mean_f << " ns, B " << mean_b << " ns, F&B " << mean_fb << " ns";
}

TEST(GpuNccl, LoopbackOnOneGpu) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const std::string version = nccl_loopback_check(0, 1 << 20);
  RecordProperty("nccl", version);
  EXPECT_FALSE(version.empty());
}

TEST(GpuNccl, EveryScheduleAcrossGpus) {
  PIPELAB_SKIP_WITHOUT_GPU();
  if (cuda_devices() < 2) GTEST_SKIP() << "NCCL between ranks needs 2 GPUs; " << cuda_devices() << " present";
  const int pp = std::min(cuda_devices(), 4) / 2 * 2;  // even, for DualPipe
  for (const char* name : {"1f1b", "interleaved-1f1b", "zb-h2", "zb-v", "dualpipe", "dualpipev"}) {
    const std::string n = name;
    const int vp = n == "1f1b" || n == "zb-h2" ? 1 : 2;
    const Schedule s = lowered(name, pp, vp, 2 * pp);
    CudaRunConfig c;
    c.math = kernels::GemmMath::Fp32;
    c.transport = CudaTransportKind::Nccl;
    const GradientCheck check = run_and_check(s, tiny_model(), c, 1e-4);
    EXPECT_TRUE(check.passed) << name << ": " << check.max_rel_error << " at " << check.worst;
  }
}

TEST(GpuSingleGpuMode, SaysHowTheSmsAreSplit) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const Schedule s = lowered("1f1b", 2, 1, 4);
  CudaRunInfo info;
  const GradientCheck check = run_and_check(s, tiny_model(), single_gpu(kernels::GemmMath::Fp32), 1e-4, &info);
  EXPECT_TRUE(check.passed);
  ASSERT_EQ(info.placement.size(), 2u);
  for (const std::string& p : info.placement) {
    RecordProperty("placement", p);
    EXPECT_TRUE(p.find("green context") != std::string::npos || p.find("shared with") != std::string::npos) << p;
  }
  EXPECT_TRUE(info.single_gpu);
  EXPECT_EQ(info.transport, "cuda-copy");
  EXPECT_GT(info.sms_per_rank, 0);
  EXPECT_LE(info.sms_per_rank, info.device_sms);
}

TEST(GpuCupti, KernelsAreTiedToTheActionsThatLaunchedThem) {
  PIPELAB_SKIP_WITHOUT_GPU();
  const Schedule s = lowered("zb-v", 2, 2, 4);
  CudaRunConfig c = single_gpu(kernels::GemmMath::Bf16);
  c.cupti = true;
  RunOptions o;
  o.warmup = 1;
  o.iterations = 3;
  const RunResult r = run_cuda_inprocess(s, medium_model(), c, o);
  ASSERT_FALSE(r.device_activity.empty()) << cupti_summary();
  const Timeline& t = r.iterations[r.median_iteration()];
  std::map<std::pair<int, std::string>, const TimelineEvent*> actions;
  for (std::size_t rank = 0; rank < t.ranks.size(); ++rank) {
    for (const TimelineEvent& e : t.ranks[rank]) {
      if (e.stream == Stream::Compute) actions[{static_cast<int>(rank), to_string(e.action)}] = &e;
    }
  }
  std::size_t inside = 0;
  for (const DeviceActivity& a : r.device_activity) {
    const auto it = actions.find({a.rank, a.action});
    ASSERT_NE(it, actions.end()) << a.rank << " " << a.action << " " << a.name;
    EXPECT_GE(a.end_ns, a.start_ns);
    // CUPTI's clock and the device events agree to a few microseconds.
    const TimelineEvent& e = *it->second;
    inside += a.start_ns >= e.start_ns - 50'000 && a.end_ns <= e.end_ns + 50'000;
  }
  RecordProperty("activities", std::to_string(r.device_activity.size()));
  RecordProperty("inside_their_action", std::to_string(inside));
  EXPECT_GE(inside, r.device_activity.size() * 9 / 10);
}

}  // namespace
}  // namespace pipelab::runtime
