// Run-time faults end every rank with a named error in bounded time (docs/validation.md, "Run-time
// faults"): a transport error on one rank, a rank that dies of an exception that is not a
// std::exception, a peer that stops answering (the watchdog), and a mock model that does not fit
// the host's memory (refused before anything is allocated). The MPI cases (a process that exits
// mid-iteration) are in mpi_test.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>

#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/null_backend.h"
#include "pipelab/runtime/run.h"
#include "pipelab/runtime/run_support.h"
#include "runtime_test_util.h"

namespace pipelab::runtime {
namespace {

using ::testing::HasSubstr;
using testing::lowered;

constexpr std::size_t kBytes = 64;
using Seconds = std::chrono::duration<double>;

// Rank `rank`'s link fails at its `nth` send (0-based), as a reset NIC or a dead NCCL communicator
// would: the transport throws ExecutionError.
class FailingLink final : public testing::ForwardingTransport {
 public:
  FailingLink(Transport& inner, int nth) : ForwardingTransport(inner), nth_(nth) {}
  void isend(int dst, const MessageKey& k, Buffer b, std::int64_t now) override {
    if (sends_++ == nth_) throw ExecutionError("transport: link to rank " + std::to_string(dst) + " reset while sending " + describe(k));
    ForwardingTransport::isend(dst, k, std::move(b), now);
  }

 private:
  int nth_;
  int sends_ = 0;
};

TEST(RuntimeFaults, ATransportErrorOnOneRankEndsEveryRankWithThatError) {
  for (const char* name : {"1f1b", "zb-v", "dualpipev"}) {
    SCOPED_TRACE(name);
    const Schedule s = lowered(name, 3, 0, 6);
    testing::OwnedNullBackends owned(s, kBytes);
    RunOptions o;
    o.iterations = 2;
    o.executor.timeout = std::chrono::seconds(60);  // ending by the watchdog would take a minute
    const auto start = std::chrono::steady_clock::now();
    try {
      run_inprocess(
          s, owned.factory(), o,
          [](int rank, Transport& inproc, Backend&) -> std::unique_ptr<Transport> {
            if (rank == 1) return std::make_unique<FailingLink>(inproc, 3);
            return std::make_unique<testing::ForwardingTransport>(inproc);
          });
      FAIL() << "expected the transport error";
    } catch (const PeerAborted& e) {
      FAIL() << "a peer's abort was reported instead of the transport error: " << e.what();
    } catch (const ExecutionError& e) {
      EXPECT_THAT(e.what(), HasSubstr("rank 1 at position"));
      EXPECT_THAT(e.what(), HasSubstr("transport: link to rank"));
    }
    EXPECT_LT(Seconds(std::chrono::steady_clock::now() - start).count(), 10.0) << "the ranks waited for their watchdog";
    owned.expect_released();
  }
}

TEST(RuntimeFaults, ARankThatDiesOfANonStandardExceptionStopsItsPeers) {
  const Schedule s = lowered("1f1b", 2, 1, 4);
  RunOptions o;
  o.executor.timeout = std::chrono::seconds(60);
  o.executor.before_action = [](int rank, std::size_t pos, const Action&) {
    if (rank == 1 && pos == 4) throw 42;  // not a std::exception: nothing but catch (...) sees it
  };
  const auto start = std::chrono::steady_clock::now();
  bool died = false;
  try {
    run_inprocess(s, [&](int r) { return std::make_unique<NullBackend>(s.shape, r, kBytes); }, o);
  } catch (const int&) {
    died = true;  // the dead rank's own exception is the one rethrown, not its peer's PeerAborted
  }
  EXPECT_TRUE(died);
  EXPECT_LT(Seconds(std::chrono::steady_clock::now() - start).count(), 10.0) << "the peer waited for its watchdog";
}

TEST(RuntimeFaults, APeerThatNeverSendsEndsEveryRankThroughTheWatchdogInBoundedTime) {
  Schedule s = lowered("1f1b", 2, 1, 4);
  auto& list = s.ranks[0];
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (list[i] && list[i]->op == Op::SendF && list[i]->mb == 2) {
      list.erase(list.begin() + static_cast<long>(i), list.end());  // rank 0 goes silent mid-iteration
      break;
    }
  }
  RunOptions o;
  o.validate = false;
  o.executor.check_state = false;
  o.executor.timeout = std::chrono::milliseconds(300);
  const auto start = std::chrono::steady_clock::now();
  try {
    run_inprocess(s, [&](int r) { return std::make_unique<NullBackend>(s.shape, r, kBytes); }, o);
    FAIL() << "expected a watchdog timeout";
  } catch (const WatchdogTimeout& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank 1 at position"));
    EXPECT_THAT(e.what(), HasSubstr("SEND_F(0, mb 2) posted"));
  }
  EXPECT_LT(Seconds(std::chrono::steady_clock::now() - start).count(), 10.0);
}

TEST(RuntimeFaults, AMockModelLargerThanTheHostIsRefusedBeforeAllocating) {
  if (physical_memory_bytes() == 0) GTEST_SKIP() << "the OS does not report physical memory";
  ModelConfig model = testing::tiny_model();
  model.block = kernels::BlockShape{.hidden = 65536, .ffn = 262144, .heads = 64, .seq = 4096, .mbs = 16, .swiglu = false};
  const Schedule s = lowered("gpipe", 2, 1, 4);
  EXPECT_GT(cpu_run_memory_bytes(s, model, 0, 2), static_cast<double>(physical_memory_bytes()));
  try {
    run_cpu_inprocess(s, model, {});
    FAIL() << "expected the run to be refused";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("run: the mock model needs about"));
    EXPECT_THAT(e.what(), HasSubstr("GiB of physical memory"));
  }
  ProfileOptions p;
  p.model = model;
  EXPECT_THROW(measure_compute(p), InputError);
}

TEST(RuntimeFaults, TheHostMemoryEstimateCountsTheMicrobatchesARankHolds) {
  const ModelConfig model = testing::tiny_model();
  // GPipe holds every microbatch of a rank before its first backward; 1F1B at most pp of them.
  const double gpipe = cpu_run_memory_bytes(lowered("gpipe", 2, 1, 8), model, 0, 1);
  const double one_f_one_b = cpu_run_memory_bytes(lowered("1f1b", 2, 1, 8), model, 0, 1);
  EXPECT_GT(gpipe, one_f_one_b);
  EXPECT_GT(one_f_one_b, 0);
}

}  // namespace
}  // namespace pipelab::runtime
