// Executor semantics on the null backend: per-rank order equals the schedule's, every consumer got
// its producer's buffer (routing stamps), dependencies are honoured across ranks, comm events match
// the SEND/RECV actions; and the failure paths: watchdog, error propagation, leak detection.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <stdexcept>
#include <tuple>

#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/null_backend.h"
#include "pipelab/runtime/run.h"
#include "pipelab/schedules/dependencies.h"
#include "runtime_test_util.h"

namespace pipelab::runtime {
namespace {

using ::testing::HasSubstr;
using testing::Case;
using testing::lowered;
using testing::schedule_matrix;

constexpr std::size_t kBytes = 64;

BackendFactory null_factory(const Schedule& s, NullTimes times = {}) {
  return [&s, times](int rank) { return std::make_unique<NullBackend>(s.shape, rank, kBytes, times); };
}

std::vector<Action> compute_actions(const std::vector<Slot>& list) {
  std::vector<Action> out;
  for (const Slot& slot : list) {
    if (slot && is_compute(slot->op)) out.push_back(*slot);
  }
  return out;
}

int count_op(const std::vector<Slot>& list, Op op) {
  int n = 0;
  for (const Slot& slot : list) n += slot && slot->op == op ? 1 : 0;
  return n;
}

class ExecutorMatrix : public ::testing::TestWithParam<Case> {};

TEST_P(ExecutorMatrix, RunsEachRanksListInOrderAndHonoursDependencies) {
  const Case c = GetParam();
  const Schedule s = lowered(c.schedule, c.pp, c.vp, c.m);
  RunOptions o;
  o.warmup = 1;
  o.iterations = 2;
  const RunResult r = run_inprocess(s, null_factory(s), o);  // routing stamps are checked inside
  ASSERT_EQ(r.iterations.size(), 2u);
  for (const Timeline& t : r.iterations) {
    ASSERT_EQ(t.ranks.size(), static_cast<std::size_t>(c.pp));
    // Where each compute action (or the unit holding it) ended, for the cross-rank check.
    std::map<std::tuple<int, int, int>, std::int64_t> end_of;  // (signal, stage, mb) -> end
    for (std::size_t rank = 0; rank < t.ranks.size(); ++rank) {
      std::vector<Action> ran;
      std::int64_t last_end = 0;
      int sends = 0, recvs = 0;
      for (const TimelineEvent& e : t.ranks[rank]) {
        if (e.stream == Stream::Send) ++sends;
        if (e.stream == Stream::Recv) ++recvs;
        if (e.stream != Stream::Compute) continue;
        EXPECT_GE(e.start_ns, last_end) << "compute events overlap on rank " << rank;
        EXPECT_GE(e.end_ns, e.start_ns);
        last_end = e.end_ns;
        ran.push_back(e.action);
        for (const SignalKey& k : completions(e.action)) {
          end_of[{static_cast<int>(k.signal), k.stage, k.mb}] = e.end_ns;
        }
      }
      EXPECT_EQ(ran, compute_actions(s.ranks[rank])) << "rank " << rank;
      EXPECT_EQ(sends, count_op(s.ranks[rank], Op::SendF) + count_op(s.ranks[rank], Op::SendB)) << "rank " << rank;
      EXPECT_EQ(recvs, count_op(s.ranks[rank], Op::RecvF) + count_op(s.ranks[rank], Op::RecvB)) << "rank " << rank;
    }
    // Every compute action started after the compute it depends on ended (one shared clock).
    for (std::size_t rank = 0; rank < t.ranks.size(); ++rank) {
      for (const TimelineEvent& e : t.ranks[rank]) {
        if (e.stream != Stream::Compute) continue;
        for (const SignalKey& k : prerequisites(e.action, s.shape, CommMode::Implicit)) {
          const auto it = end_of.find({static_cast<int>(k.signal), k.stage, k.mb});
          ASSERT_NE(it, end_of.end()) << describe(k);
          if (e.action.op == Op::OverlapFB && k.stage == e.action.stage && k.mb == e.action.mb) continue;
          EXPECT_GE(e.start_ns, it->second) << to_string(e.action) << " on rank " << rank << " started before " << describe(k);
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllSchedules, ExecutorMatrix, ::testing::ValuesIn(schedule_matrix()),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.label(); });

TEST(Executor, BackendSeesTheComputeOrderOfTheSchedule) {
  const Schedule s = lowered("zb-v", 2, 2, 4);
  std::vector<NullBackend*> backends(2);
  RunOptions o;
  o.iterations = 1;
  o.collect_gradients = true;
  std::vector<std::vector<Action>> calls(2);
  o.executor.before_action = [&](int rank, std::size_t, const Action&) {
    if (backends[static_cast<std::size_t>(rank)] != nullptr) calls[static_cast<std::size_t>(rank)] = backends[static_cast<std::size_t>(rank)]->calls();
  };
  run_inprocess(
      s,
      [&](int rank) {
        auto b = std::make_unique<NullBackend>(s.shape, rank, kBytes);
        backends[static_cast<std::size_t>(rank)] = b.get();
        return b;
      },
      o);
  for (int rank = 0; rank < 2; ++rank) {
    // calls() as seen before the last action: all compute actions but possibly the last one.
    const std::vector<Action> expected = compute_actions(s.ranks[static_cast<std::size_t>(rank)]);
    const auto& got = calls[static_cast<std::size_t>(rank)];
    ASSERT_LE(got.size(), expected.size());
    ASSERT_GE(got.size() + 1, expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "rank " << rank << " call " << i;
  }
}

TEST(Executor, SpinningBackendGivesNonZeroBusyTime) {
  const Schedule s = lowered("1f1b", 2, 1, 4);
  RunOptions o;
  const RunResult r = run_inprocess(s, null_factory(s, NullTimes{20'000, 20'000, 10'000}), o);
  for (const auto& rank : r.iterations[0].ranks) {
    for (const TimelineEvent& e : rank) {
      if (e.stream == Stream::Compute) {
        EXPECT_GE(e.duration_ns(), 20'000) << to_string(e.action);
      }
    }
  }
}

TEST(Executor, RejectsAScheduleWithoutCommunication) {
  const Schedule s = make_schedule("1f1b", {2, 1, 4, 0});
  EXPECT_THROW(run_inprocess(s, null_factory(s), {}), ScheduleError);
}

// ---- failure paths -----------------------------------------------------------------------------

// Removes the first action of `op` on `rank` and, with `truncate`, everything after it.
Schedule without(const Schedule& s, int rank, Op op, bool truncate = false) {
  Schedule out = s;
  auto& list = out.ranks[static_cast<std::size_t>(rank)];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] && list[i]->op == op) {
      list.erase(list.begin() + static_cast<long>(i), truncate ? list.end() : list.begin() + static_cast<long>(i) + 1);
      return out;
    }
  }
  ADD_FAILURE() << "no " << op_name(op) << " on rank " << rank;
  return out;
}

TEST(Watchdog, NamesTheStuckActionAndWhatItWaitsFor) {
  const Schedule s = without(lowered("gpipe", 2, 1, 2), 0, Op::SendF, /*truncate=*/true);
  RunOptions o;
  o.validate = false;
  o.executor.check_state = false;  // rank 0 leaves its activation unsent and finishes
  o.executor.timeout = std::chrono::milliseconds(200);
  try {
    run_inprocess(s, null_factory(s), o);
    FAIL() << "expected a watchdog timeout";
  } catch (const WatchdogTimeout& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 at position"));
    EXPECT_THAT(e.what(), HasSubstr("(1F0)"));
    EXPECT_THAT(e.what(), HasSubstr("SEND_F(0, mb 0) posted"));
    EXPECT_THAT(e.what(), HasSubstr("from rank 0"));
  }
}

TEST(ErrorPropagation, FirstErrorIsReportedOthersStopAndBuffersAreFreed) {
  for (const char* name : {"1f1b", "zb-v", "dualpipev"}) {
    SCOPED_TRACE(name);
    const Schedule s = lowered(name, 3, 0, 6);
    testing::OwnedNullBackends owned(s, kBytes);
    RunOptions o;
    o.iterations = 2;
    o.executor.timeout = std::chrono::seconds(60);  // a rank that did not stop would surface as a timeout
    std::atomic<int> calls{0};
    o.executor.before_action = [&](int rank, std::size_t pos, const Action& a) {
      if (rank == 1 && pos == 9 && calls++ == 0) throw std::runtime_error("injected failure in " + to_string(a));
    };
    try {
      run_inprocess(s, owned.factory(), o);
      FAIL() << "expected the injected error";
    } catch (const PeerAborted& e) {
      FAIL() << "a peer's abort was reported instead of the first error: " << e.what();
    } catch (const std::runtime_error& e) {
      EXPECT_THAT(e.what(), HasSubstr("injected failure"));
    }
    owned.expect_released();
  }
}

// A null backend whose F of microbatch 2 throws: a std::invalid_argument, or with `device_error`
// an ExecutionError (as a device or transport layer would).
struct Failing final : public Backend {
  NullBackend inner;
  bool device_error;
  Failing(const Schedule& s, int rank, bool device) : inner(s.shape, rank, kBytes), device_error(device) {}
  std::string_view name() const override { return "failing"; }
  BufferPool& pool() override { return inner.pool(); }
  std::size_t activation_bytes() const override { return kBytes; }
  const std::vector<int>& stages() const override { return inner.stages(); }
  void load_input(int mb, Buffer& a) override { inner.load_input(mb, a); }
  void forward(int st, int mb, Buffer& a) override {
    if (mb == 2 && device_error) throw ExecutionError("device lost");
    if (mb == 2) throw std::invalid_argument("kernel exploded");
    inner.forward(st, mb, a);
  }
  double loss(int st, int mb, Buffer& a) override { return inner.loss(st, mb, a); }
  void backward_input(int st, int mb, Buffer& g) override { inner.backward_input(st, mb, g); }
  void backward_weight(int st, int mb) override { inner.backward_weight(st, mb); }
  void backward(int st, int mb, Buffer& g) override { inner.backward(st, mb, g); }
  double flops(const Action&) const override { return 0; }
  void zero_grads() override {}
  std::vector<kernels::BlockGrads> gradients(int) const override { return {}; }
  std::int64_t state_bytes() const override { return inner.state_bytes(); }
  std::int64_t static_bytes() const override { return 0; }
  std::vector<std::string> held_state() const override { return inner.held_state(); }
  void discard_state() override { inner.discard_state(); }
};

TEST(ErrorPropagation, BackendErrorsCarryTheRankAndAction) {
  const Schedule s = lowered("1f1b", 2, 1, 4);
  for (const bool device_error : {false, true}) {
    SCOPED_TRACE(device_error ? "ExecutionError" : "std::invalid_argument");
    try {
      run_inprocess(
          s,
          [&](int r) -> std::unique_ptr<Backend> {
            if (r == 1) return std::make_unique<Failing>(s, r, device_error);
            return std::make_unique<NullBackend>(s.shape, r, kBytes);
          },
          {});
      FAIL() << "expected an error";
    } catch (const PeerAborted& e) {
      FAIL() << "a peer's abort was reported instead of the backend's error: " << e.what();
    } catch (const ExecutionError& e) {
      // An ExecutionError of the backend is wrapped like any other error, not passed through bare.
      EXPECT_THAT(e.what(), HasSubstr("rank 1 at position"));
      EXPECT_THAT(e.what(), HasSubstr("(1F2): "));
      EXPECT_THAT(e.what(), HasSubstr(device_error ? "device lost" : "kernel exploded"));
    }
  }
}

TEST(StateCheck, ARepeatedIAtTheLastStageSaysItsLossGradientWasConsumed) {
  Schedule s = lowered("zb-h1", 2, 1, 4);
  auto& list = s.ranks[1];  // stage 1: the last stage
  const auto first_i = std::find_if(list.begin(), list.end(), [](const Slot& a) { return a && a->op == Op::I; });
  ASSERT_NE(first_i, list.end());
  list.insert(first_i + 1, *first_i);
  RunOptions o;
  o.validate = false;
  try {
    run_inprocess(s, null_factory(s), o);
    FAIL() << "expected a schedule error";
  } catch (const ScheduleError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 at position"));
    EXPECT_THAT(e.what(), HasSubstr("needs the loss gradient of (stage 1, mb 0), which an earlier I/B of it already consumed"));
  }
}

TEST(StateCheck, ADroppedWeightGradIsAnError) {
  const Schedule s = without(lowered("zb-h1", 2, 1, 4), 1, Op::W);
  RunOptions o;
  o.validate = false;
  try {
    run_inprocess(s, null_factory(s), o);
    FAIL() << "expected the leftover stash to be reported";
  } catch (const ExecutionError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 ended the iteration with state left over"));
    EXPECT_THAT(e.what(), HasSubstr("weight-grad stash (its W never ran)"));
  }
}

TEST(StateCheck, AConsumerWithoutItsRecvIsAScheduleError) {
  const Schedule s = without(lowered("1f1b", 2, 1, 2), 1, Op::RecvF);
  RunOptions o;
  o.validate = false;
  o.executor.timeout = std::chrono::milliseconds(500);
  try {
    run_inprocess(s, null_factory(s), o);
    FAIL() << "expected a schedule error";
  } catch (const ScheduleError& e) {
    EXPECT_THAT(e.what(), HasSubstr("no RECV_F for it was posted"));
  }
}

// Peak memory means what the simulator's does, the memory of microbatches in progress: a loaded
// input counts only once its F consumed it, so 1F1B's peak does not grow with the microbatches
// (counting every input from the start of the iteration made rank 0's peak m x activation).
TEST(PeakMemory, CountsAnInputOnlyOnceItsForwardConsumedIt) {
  std::vector<std::int64_t> peaks;
  for (const int m : {4, 8, 16}) {
    const Schedule s = lowered("1f1b", 2, 1, m);
    RunOptions o;
    o.iterations = 2;
    const RunResult r = run_inprocess(s, null_factory(s), o);
    ASSERT_EQ(r.peak_state_bytes.size(), 2u);
    peaks.push_back(r.peak_state_bytes[0]);
    // Null backend: state_bytes counts held microbatches (1F1B at PP 2: at most 2 on rank 0), plus
    // at most one activation-sized buffer per microbatch in flight.
    EXPECT_LE(r.peak_state_bytes[0], 2 + 2 * static_cast<std::int64_t>(kBytes)) << "m=" << m;
    EXPECT_GT(r.peak_state_bytes[0], 0);
  }
  EXPECT_EQ(peaks[0], peaks[1]);
  EXPECT_EQ(peaks[1], peaks[2]);
}

TEST(RunResult, MedianIterationPicksTheMiddleMakespan) {
  RunResult r;
  for (std::int64_t end : {50, 10, 30, 40, 20}) {
    Timeline t;
    t.ranks.resize(1);
    t.ranks[0].push_back(TimelineEvent{Action::make(Op::F, 0, 0), Stream::Compute, 0, end, 0, 0});
    r.iterations.push_back(t);
  }
  EXPECT_EQ(r.median_iteration(), 2u);  // makespan 30
}

}  // namespace
}  // namespace pipelab::runtime
