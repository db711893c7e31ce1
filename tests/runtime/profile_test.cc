// Profiling: the profile measures every op (positive medians) and point-to-point messages, on
// threads or on every rank of a transport. No timing is asserted beyond "measured something"
// (tests/profiles has the profile JSON, tests/sim the profiled cost model).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <thread>

#include "pipelab/base/error.h"
#include "pipelab/profiles/measured_profile.h"
#include "pipelab/runtime/inproc_transport.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/profiler.h"
#include "runtime_test_util.h"

namespace pipelab {
namespace {

using ::testing::HasSubstr;

TEST(Profiler, MeasuresEveryOpOfATinyModel) {
  runtime::ProfileOptions o;
  o.model = testing::tiny_model(2);
  o.repeats = 3;
  o.warmup = 1;
  o.min_warmup = std::chrono::milliseconds(0);
  o.core = -1;
  const MeasuredProfile p = runtime::measure_compute(o);
  EXPECT_EQ(p.concurrency, 1);
  EXPECT_EQ(p.backend, "cpu");
  EXPECT_EQ(p.hidden, 8);
  EXPECT_EQ(p.layers_per_stage, 2);
  for (const OpTimes& t : {p.per_layer, p.per_stage}) {
    EXPECT_GT(t.f_ns, 0);
    EXPECT_GT(t.i_ns, 0);
    EXPECT_GT(t.w_ns, 0);
    EXPECT_GT(t.b_ns, 0);
    EXPECT_GT(t.fb_ns, 0);
  }
  EXPECT_GT(p.flops_f, 0);
  EXPECT_EQ(p.activation_bytes, 8 * 4 * 1 * 4);
  EXPECT_TRUE(p.p2p.transport.empty());
  EXPECT_EQ(measured_profile_from_json(to_json(p), "x"), p);
}

TEST(Profiler, MeasuresOnSeveralCoresAtOnce) {
  runtime::ProfileOptions o;
  o.model = testing::tiny_model(1);
  o.repeats = 2;
  o.warmup = 0;
  o.min_warmup = std::chrono::milliseconds(0);
  o.concurrency = 2;
  const MeasuredProfile p = runtime::measure_compute(o);
  EXPECT_EQ(p.concurrency, std::min(2, runtime::hardware_cores()));
  EXPECT_GT(p.per_stage.f_ns, 0);
  EXPECT_EQ(p.per_stage, p.per_layer);  // one layer per stage: measured once
  o.concurrency = 0;
  EXPECT_THROW(runtime::measure_compute(o), InputError);
}

TEST(Profiler, MeasuresInProcessPointToPoint) {
  const std::vector<std::int64_t> sizes = runtime::p2p_sizes(4096);
  EXPECT_EQ(sizes, (std::vector<std::int64_t>{8, 4096, 16384}));
  const P2PProfile p = runtime::measure_inproc_p2p(sizes, 5);
  EXPECT_EQ(p.transport, "inproc");
  ASSERT_EQ(p.samples.size(), 3u);
  EXPECT_GT(p.latency_ns, 0);
  EXPECT_GE(p.bandwidth_bytes_per_s, 0);
}

runtime::ProfileOptions tiny_profile_options() {
  runtime::ProfileOptions o;
  o.model = testing::tiny_model(1);
  o.repeats = 2;
  o.warmup = 0;
  o.min_warmup = std::chrono::milliseconds(0);
  o.core = -1;
  return o;
}

// The line through the P2P samples: a real slope gives latency + bytes / bandwidth; a slope flatter
// than any bandwidth a profile may state (noise on an in-process hand-over: 7.8e17 B/s was seen on a
// busy machine) is no link, so the profile says latency only, and stays loadable.
TEST(Profiler, P2PLineFitKeepsTheBandwidthLoadable) {
  P2PProfile link;
  link.samples = {{1'000, 2'000}, {1'000'000, 1'001'000}, {10'000'000, 10'001'000}};  // 1 GB/s, 1 µs
  runtime::fit_p2p_line(link);
  EXPECT_NEAR(link.bandwidth_bytes_per_s, 1e9, 2e7);
  EXPECT_NEAR(static_cast<double>(link.latency_ns), 1'000, 100);

  P2PProfile handover;
  handover.samples = {{1'000, 900}, {1'000'000, 901}, {100'000'000, 902}};  // +2 ns over 1e8 bytes
  runtime::fit_p2p_line(handover);
  EXPECT_EQ(handover.bandwidth_bytes_per_s, 0);
  EXPECT_EQ(handover.latency_ns, 901);
}

TEST(Profiler, MeasuresAWholeProfileInProcess) {
  runtime::P2PProfileOptions p2p;
  p2p.repeats = 3;
  const MeasuredProfile p = runtime::measure_profile(tiny_profile_options(), p2p);
  EXPECT_GT(p.per_stage.f_ns, 0);
  EXPECT_EQ(p.p2p.transport, "inproc");
  EXPECT_EQ(p.p2p.samples.size(), runtime::p2p_sizes(p.activation_bytes).size());
  p2p.enabled = false;  // a one-rank run
  EXPECT_TRUE(runtime::measure_profile(tiny_profile_options(), p2p).p2p.transport.empty());
}

// The multi-process path of measure_profile (what `pipelab profile/run --transport mpi` run on every
// process), with threads standing in for the processes; measure_profile owns "its" transport, a
// forwarder to an InprocWorld endpoint, as it owns an MPI one.
TEST(Profiler, MeasuresAWholeProfileOnEveryRankOfATransport) {
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  runtime::InprocWorld world(shape, runtime::WaitPolicy::Block);
  std::vector<MeasuredProfile> got(2);
  std::vector<std::string> errors(2);
  auto rank = [&](int r, runtime::ProfileOptions o) {
    runtime::P2PProfileOptions p2p;
    p2p.repeats = 3;
    p2p.timeout = std::chrono::seconds(30);
    p2p.transport = [&world, r] { return std::make_unique<testing::ForwardingTransport>(world.transport(r)); };
    try {
      got[static_cast<std::size_t>(r)] = runtime::measure_profile(o, p2p);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
  };
  std::thread t1(rank, 1, tiny_profile_options());
  rank(0, tiny_profile_options());
  t1.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  EXPECT_EQ(got[0].concurrency, 1);  // one core per process
  EXPECT_GT(got[0].per_stage.f_ns, 0);
  EXPECT_EQ(got[0].p2p.transport, "inproc");
  EXPECT_EQ(got[0].p2p.samples.size(), 3u);
}

TEST(Profiler, ARankThatFailsToProfileStopsTheOthers) {
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  runtime::InprocWorld world(shape, runtime::WaitPolicy::Block);
  std::vector<std::string> errors(2);
  auto rank = [&](int r, runtime::ProfileOptions o) {
    runtime::P2PProfileOptions p2p;
    p2p.transport = [&world, r] { return std::make_unique<testing::ForwardingTransport>(world.transport(r)); };
    try {
      runtime::measure_profile(o, p2p);
    } catch (const std::exception& e) {
      errors[static_cast<std::size_t>(r)] = e.what();
    }
  };
  runtime::ProfileOptions bad = tiny_profile_options();
  bad.repeats = 0;
  std::thread t1(rank, 1, bad);
  rank(0, tiny_profile_options());  // would wait an hour at the barrier if rank 1 did not tell it
  t1.join();
  EXPECT_THAT(errors[1], HasSubstr("repeats=0 must be >= 1"));
  EXPECT_THAT(errors[0], HasSubstr("rank 1 failed"));
}

}  // namespace
}  // namespace pipelab
