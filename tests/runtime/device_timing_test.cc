// The host side of asynchronous (GPU) backends, on the CPU: device-timed timelines assembled from
// clock markers, buffer fences kept with pooled memory, per-microbatch state rules, the SM split
// of single-GPU mode, the order NCCL must match messages in, and where a GPU run puts its ranks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/cuda_run.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/microbatch_states.h"
#include "pipelab/runtime/null_backend.h"
#include "pipelab/runtime/p2p_plan.h"
#include "pipelab/runtime/run.h"
#include "pipelab/runtime/sm_partition.h"
#include "pipelab/schedules/dependencies.h"
#include "pipelab/schedules/metrics.h"
#include "runtime_test_util.h"

namespace pipelab::runtime {
namespace {

using ::testing::HasSubstr;
using testing::lowered;

// A clock whose markers resolve to fixed "device" times: marker k is at (k + 1) microseconds,
// far from any host time the executor could measure in a test.
class FakeClock final : public DeviceClock {
 public:
  void start_iteration() override {
    ++iterations;
    next = 0;
  }
  Token mark(void*) override { return next++; }
  std::int64_t resolve(Token t) override { return (static_cast<std::int64_t>(t) + 1) * 1'000'000; }
  int iterations = 0;
  Token next = 0;
};

// What a DeviceTimedNull counted. The test owns it: the run owns (and destroys) its backends.
struct DeviceCalls {
  int begun = 0, finished = 0;
};

// A NullBackend that claims to run asynchronously: its actions are timed by FakeClock markers and
// it reports a device loss at the end of each iteration.
class DeviceTimedNull final : public testing::ForwardingBackend {
 public:
  DeviceTimedNull(const PipelineShape& shape, int rank, DeviceCalls* calls = nullptr)
      : ForwardingBackend(inner_), inner_(shape, rank, 64), calls_(calls ? calls : &own_calls_) {}
  DeviceClock* clock() override { return &clock_; }
  DeviceClock::Token begin_action(const Action&) override {
    ++calls_->begun;
    return clock_.mark(nullptr);
  }
  DeviceClock::Token end_action(const Action&) override { return clock_.mark(nullptr); }
  double finish_iteration() override {
    ++calls_->finished;
    return 0.25;
  }
  void synchronize() override { ADD_FAILURE() << "a device-timed backend must not be synchronized per action"; }

 private:
  NullBackend inner_;
  FakeClock clock_;
  DeviceCalls own_calls_;
  DeviceCalls* calls_;
};

TEST(DeviceTiming, ComputeEventsTakeTheirTimesFromTheClockMarkers) {
  const Schedule s = lowered("1f1b", 2, 1, 4);
  std::vector<DeviceCalls> calls(2);
  const RunResult r = run_inprocess(
      s, [&](int rank) { return std::make_unique<DeviceTimedNull>(s.shape, rank, &calls[static_cast<std::size_t>(rank)]); },
      RunOptions{});
  ASSERT_EQ(r.iterations.size(), 1u);
  for (int rank = 0; rank < 2; ++rank) {
    const auto& events = r.iterations[0].ranks[static_cast<std::size_t>(rank)];
    int compute = 0;
    DeviceClock::Token expected = 0;  // markers come in pairs, in list order
    for (const TimelineEvent& e : events) {
      if (e.stream != Stream::Compute) continue;
      ++compute;
      EXPECT_EQ(e.start_ns, (expected + 1) * 1'000'000) << to_string(e.action);
      EXPECT_EQ(e.end_ns, (expected + 2) * 1'000'000) << to_string(e.action);
      expected += 2;
    }
    EXPECT_EQ(compute, 8);  // 4 F + 4 B
    EXPECT_EQ(calls[static_cast<std::size_t>(rank)].begun, 8);
    EXPECT_EQ(calls[static_cast<std::size_t>(rank)].finished, 1);
  }
  // The loss the device reported at the end of the iteration, from both ranks, is the run's.
  EXPECT_DOUBLE_EQ(r.losses[0], 0.5);
}

TEST(DeviceTiming, MetricsOfADeviceTimedTimelineUseTheResolvedTimes) {
  const Schedule s = lowered("gpipe", 2, 1, 2);
  const RunResult r = run_inprocess(
      s, [&](int rank) { return std::make_unique<DeviceTimedNull>(s.shape, rank); }, RunOptions{});
  // Each rank's 4 compute actions use markers 0..7: the last ends at 8 us. (The in-process
  // transport's send and receive events keep their host times, so only compute events are compared.)
  std::int64_t last_end = 0;
  for (const auto& rank : r.iterations[0].ranks) {
    for (const TimelineEvent& e : rank) {
      if (e.stream == Stream::Compute) last_end = std::max(last_end, e.end_ns);
    }
  }
  EXPECT_EQ(last_end, 8'000'000);
}

// Host memory with fences: counts them, so the pool's bookkeeping of a fence per block is visible.
class FencedMemory final : public MemoryResource {
 public:
  void* allocate(std::size_t bytes) override { return host.allocate(bytes); }
  void deallocate(void* p, std::size_t bytes) noexcept override { host.deallocate(p, bytes); }
  bool host_accessible() const override { return true; }
  void* create_fence() override { return reinterpret_cast<void*>(++created); }
  void destroy_fence(void* f) noexcept override { destroyed.push_back(reinterpret_cast<std::intptr_t>(f)); }
  HostMemory host;
  std::intptr_t created = 0;
  std::vector<std::intptr_t> destroyed;
};

TEST(BufferFence, TravelsWithItsMemoryThroughThePool) {
  auto memory = std::make_shared<FencedMemory>();
  {
    BufferPool pool(memory);
    Buffer a = pool.acquire(64);
    Buffer b = pool.acquire(64);
    ASSERT_NE(a.fence(), nullptr);
    ASSERT_NE(a.fence(), b.fence());
    void* const a_data = a.data();
    void* const a_fence = a.fence();
    Buffer moved = std::move(a);
    EXPECT_EQ(moved.fence(), a_fence);
    EXPECT_EQ(a.fence(), nullptr);
    moved.reset();
    Buffer again = pool.acquire(64);  // the free list hands back the same memory with its fence
    EXPECT_EQ(again.data(), a_data);
    EXPECT_EQ(again.fence(), a_fence);
    EXPECT_EQ(memory->created, 2);
  }
  std::sort(memory->destroyed.begin(), memory->destroyed.end());
  EXPECT_EQ(memory->destroyed, (std::vector<std::intptr_t>{1, 2}));
}

TEST(BufferFence, HostMemoryHasNone) {
  BufferPool pool(std::make_shared<HostMemory>());
  EXPECT_EQ(pool.acquire(16).fence(), nullptr);
}

TEST(MicrobatchStates, EnforceTheLifeCycleWithMessagesNamingTheRule) {
  const PipelineShape shape = lowered("1f1b", 2, 1, 2).shape;
  MicrobatchStates st("test", shape, 0);
  EXPECT_THAT([&] { st.require(Op::I, 0, 0); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("I(0, mb 0) before its F")));
  EXPECT_THAT([&] { st.require(Op::W, 0, 0); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("W(0, mb 0) before its I")));
  EXPECT_THAT([&] { st.require(Op::F, 1, 0); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("which rank 0 does not hold")));
  EXPECT_THAT([&] { st.require(Op::F, 0, 5); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("out of range")));
  st.record(Op::F, 0, 0, 100);
  EXPECT_THAT([&] { st.require(Op::F, 0, 0); }, ::testing::ThrowsMessage<ExecutionError>(HasSubstr("F(0, mb 0) ran twice")));
  EXPECT_EQ(st.bytes(), 100);
  st.record(Op::I, 0, 0, 40);  // the stash replaces the forward state
  EXPECT_EQ(st.bytes(), 40);
  EXPECT_THAT(st.held_state(), ::testing::ElementsAre("(stage 0, mb 0): weight-grad stash (its W never ran)"));
  st.record(Op::W, 0, 0);
  EXPECT_EQ(st.bytes(), 0);
  EXPECT_EQ(st.held(), 0);
  EXPECT_TRUE(st.held_state().empty());
}

TEST(SmPartition, SplitsIntoEqualGroupsOfTheGranularity) {
  const SmPartition two = plan_sm_partition(132, 2, 8);  // H100: 132 SMs, groups of 8
  EXPECT_TRUE(two.partitioned);
  EXPECT_EQ(two.sms_per_rank, 64);
  EXPECT_EQ(two.unused_sms, 4);
  const SmPartition four = plan_sm_partition(132, 4, 8);
  EXPECT_EQ(four.sms_per_rank, 32);
  EXPECT_EQ(four.unused_sms, 4);
  const SmPartition one = plan_sm_partition(132, 1, 8);
  EXPECT_FALSE(one.partitioned);
  EXPECT_EQ(one.sms_per_rank, 132);
  const SmPartition too_many = plan_sm_partition(132, 32, 8);  // 4 SMs each < one group of 8
  EXPECT_FALSE(too_many.partitioned);
  EXPECT_THAT(too_many.note, HasSubstr("share every SM"));
  EXPECT_THROW(plan_sm_partition(0, 2, 8), InputError);
}

TEST(P2PPlan, PairTrafficIsInTheSendersOrder) {
  const Schedule s = lowered("1f1b", 2, 1, 3);
  const std::vector<PairTraffic> pairs = pair_traffic(s);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].src, 0);
  EXPECT_EQ(pairs[0].dst, 1);
  ASSERT_EQ(pairs[0].messages.size(), 3u);  // activations of mb 0, 1, 2 for stage 1
  for (int mb = 0; mb < 3; ++mb) {
    EXPECT_EQ(pairs[0].messages[static_cast<std::size_t>(mb)], (MessageKey{Direction::Forward, 1, mb}));
  }
  EXPECT_EQ(pairs[1].src, 1);
  EXPECT_EQ(pairs[1].dst, 0);
  ASSERT_EQ(pairs[1].messages.size(), 3u);  // gradients for stage 0
  EXPECT_EQ(pairs[1].messages[0], (MessageKey{Direction::Backward, 0, 0}));
}

// What the NCCL transport relies on: every message a rank receives is in the traffic of the pair
// from its sender, once — so posting the pair's receives in the sender's order covers them all.
TEST(P2PPlan, EveryReceivedMessageIsInItsPairsTraffic) {
  for (const testing::Case& c : testing::schedule_matrix()) {
    const Schedule s = lowered(c.schedule, c.pp, c.vp, c.m);
    std::map<std::pair<int, int>, std::vector<MessageKey>> received;
    for (int r = 0; r < s.shape.ranks; ++r) {
      for (const Slot& slot : s.ranks[static_cast<std::size_t>(r)]) {
        if (slot && (slot->op == Op::RecvF || slot->op == Op::RecvB)) {
          received[{s.shape.rank_of(peer_stage(*slot)), r}].push_back(message_of(*slot));
        }
      }
    }
    for (const PairTraffic& p : pair_traffic(s)) {
      const auto& got = received[{p.src, p.dst}];
      ASSERT_EQ(got.size(), p.messages.size()) << c.label();
      for (const MessageKey& k : got) {
        EXPECT_EQ(std::count(p.messages.begin(), p.messages.end(), k), 1) << c.label();
      }
    }
  }
}

TEST(P2PPlan, BatchesAreRunsOfConsecutiveCommActions) {
  const Schedule s = lowered("1f1b", 2, 1, 2);
  for (int r = 0; r < 2; ++r) {
    const auto& list = s.ranks[static_cast<std::size_t>(r)];
    std::size_t covered = 0;
    for (const auto& batch : comm_batches(s, r)) {
      ASSERT_FALSE(batch.empty());
      for (std::size_t i = 0; i < batch.size(); ++i) {
        EXPECT_TRUE(is_comm(list[batch[i]]->op));
        if (i > 0) {
          EXPECT_EQ(batch[i], batch[i - 1] + 1);
        }
      }
      // A batch is maximal: the actions around it are not comm actions.
      if (batch.front() > 0) {
        EXPECT_FALSE(list[batch.front() - 1] && is_comm(list[batch.front() - 1]->op));
      }
      if (batch.back() + 1 < list.size()) {
        EXPECT_FALSE(list[batch.back() + 1] && is_comm(list[batch.back() + 1]->op));
      }
      covered += batch.size();
    }
    std::size_t comms = 0;
    for (const Slot& slot : list) comms += slot && is_comm(slot->op);
    EXPECT_EQ(covered, comms);
  }
}

TEST(CudaRunPlan, OneGpuPerRankWhenThereAreEnoughElseSingleGpuMode) {
  const CudaRunPlan eight = plan_cuda_run(4, 8, CudaRunConfig{});
  EXPECT_FALSE(eight.single_gpu);
  EXPECT_EQ(eight.device_of_rank, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(eight.transport, CudaTransportKind::Nccl);
  const CudaRunPlan one = plan_cuda_run(4, 1, CudaRunConfig{});
  EXPECT_TRUE(one.single_gpu);
  EXPECT_EQ(one.device_of_rank, (std::vector<int>{0, 0, 0, 0}));
  EXPECT_EQ(one.transport, CudaTransportKind::Copy);
  CudaRunConfig forced;
  forced.single_gpu = true;
  forced.first_device = 3;
  EXPECT_EQ(plan_cuda_run(2, 8, forced).device_of_rank, (std::vector<int>{3, 3}));
  CudaRunConfig nccl;
  nccl.transport = CudaTransportKind::Nccl;
  EXPECT_THAT([&] { plan_cuda_run(4, 1, nccl); }, ::testing::ThrowsMessage<ConfigError>(HasSubstr("needs one GPU per rank")));
  EXPECT_THAT([&] { plan_cuda_run(2, 0, CudaRunConfig{}); }, ::testing::ThrowsMessage<ConfigError>(HasSubstr("does not exist")));
  EXPECT_EQ(parse_cuda_transport("copy"), CudaTransportKind::Copy);
  EXPECT_THROW(parse_cuda_transport("gloo"), InputError);
}

TEST(CudaBackend, WithoutADeviceItSaysWhy) {
  if (cuda_devices() > 0) GTEST_SKIP() << "a CUDA device is present; tests/gpu covers the backend";
  const std::optional<std::string> why = cuda_unavailable();
  ASSERT_TRUE(why.has_value());
  EXPECT_TRUE(why->find("no CUDA device available (driver:") != std::string::npos ||
              why->find("built without CUDA") != std::string::npos)
      << *why;
  const Schedule s = lowered("1f1b", 2, 1, 2);
  EXPECT_THROW(CudaBackend(testing::tiny_model(), s.shape, 0, CudaRankConfig{}), DeviceError);
  EXPECT_THROW(run_cuda_inprocess(s, testing::tiny_model(), CudaRunConfig{}, RunOptions{}), DeviceError);
}

}  // namespace
}  // namespace pipelab::runtime
