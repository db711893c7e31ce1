// Profiling and the profiled cost model: the profile measures every op (positive medians), its JSON
// round-trips and is read strictly; ProfiledCost turns it into per-(stage, op) durations that the
// simulator can run a schedule with. No timing is asserted beyond "measured something".
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <thread>

#include "pipelab/base/error.h"
#include "pipelab/profiles/measured_profile.h"
#include "pipelab/runtime/inproc_transport.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/profiler.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/profiled_cost.h"
#include "runtime_test_util.h"

namespace pipelab {
namespace {

using ::testing::HasSubstr;

MeasuredProfile sample_profile() {
  MeasuredProfile p;
  p.device = "test cpu";
  p.hidden = 8;
  p.ffn = 16;
  p.heads = 2;
  p.seq = 4;
  p.mbs = 1;
  p.layers_per_stage = 2;
  p.repeats = 5;
  p.warmup = 1;
  p.per_layer = OpTimes{1000, 1200, 800, 2100, 3000};
  p.per_stage = OpTimes{2100, 2500, 1700, 4300, 6500};
  p.loss_ns = 50;
  p.flops_f = 100;
  p.flops_i = 110;
  p.flops_w = 90;
  p.activation_bytes = 128;
  p.p2p = P2PProfile{"inproc", 2000, 1e9, {{8, 2000}, {128, 2100}}};
  return p;
}

TEST(MeasuredProfile, JsonRoundTrips) {
  const MeasuredProfile p = sample_profile();
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j["format"], "pipelab.profile");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(measured_profile_from_json(j, "t"), p);
  EXPECT_EQ(parse_measured_profile(j.dump(), "t"), p);
}

TEST(MeasuredProfile, IsReadStrictly) {
  nlohmann::json j = to_json(sample_profile());
  nlohmann::json bad = j;
  bad["per_layer"]["f_nss"] = 1;
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["version"] = 2;
  try {
    measured_profile_from_json(bad, "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unsupported profile version 2"));
  }
  bad = j;
  bad["format"] = "pipelab.result";
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["model"]["hidden"] = 0;
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), ConfigError);
  bad = j;
  bad.erase("activation_bytes");
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), InputError);
  EXPECT_THROW(parse_measured_profile("{", "p.json"), InputError);
}

TEST(MeasuredProfile, P2PTimeIsLatencyPlusBytesOverBandwidth) {
  const P2PProfile p{"mpi", 1000, 2e9, {}};
  EXPECT_EQ(p.time_ns(0), 1000);
  EXPECT_EQ(p.time_ns(2'000'000), 1000 + 1'000'000);
  const P2PProfile handover{"inproc", 300, 0, {}};
  EXPECT_EQ(handover.time_ns(1 << 20), 300);
}

TEST(ProfiledCost, UsesStageValuesWhenTheStageSizeMatches) {
  const PipelineShape shape = make_shape(2, 4, 4, Placement::V);
  const sim::ProfiledCost cost(sample_profile(), shape, 2);
  EXPECT_TRUE(cost.uses_stage_values());
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::F, 0, 0)), 2100);
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::F, 3, 0)), 2150);  // last stage: + loss
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::I, 1, 0)), 2500);
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::W, 1, 0)), 1700);
  EXPECT_EQ(cost.duration_ns(1, Action::make(Op::B, 1, 0)), 4300);
  EXPECT_EQ(cost.duration_ns(0, Action::overlap(0, 2, 3, 0)), 6500);
  EXPECT_EQ(cost.duration_ns(0, Action::overlap(3, 2, 2, 0)), 6550);  // F half at the last stage
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::SendF, 0, 0)), 0);
  EXPECT_EQ(cost.p2p_ns(128, 0, 1), 2000 + 128);
  EXPECT_EQ(cost.p2p_ns(128, 1, 1), 0);
  EXPECT_EQ(cost.boundary_bytes(2), 128);
  EXPECT_EQ(cost.flops(Action::make(Op::F, 0, 0)), 200);
  EXPECT_EQ(cost.flops(Action::make(Op::B, 0, 0)), 400);
}

TEST(ProfiledCost, ScalesPerLayerTimesOtherwise) {
  const PipelineShape shape = make_shape(2, 2, 4, Placement::Loop);
  const sim::ProfiledCost cost(sample_profile(), shape, 3);
  EXPECT_FALSE(cost.uses_stage_values());
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::F, 0, 0)), 3000);
  EXPECT_EQ(cost.duration_ns(0, Action::make(Op::W, 0, 0)), 2400);
  EXPECT_EQ(cost.duration_ns(0, Action::overlap(0, 1, 1, 0)), 9000);
  MeasuredProfile empty;
  EXPECT_THROW(sim::ProfiledCost(empty, shape, 1), ConfigError);
  EXPECT_THROW(sim::ProfiledCost(sample_profile(), shape, 0), ConfigError);
}

TEST(ProfiledCost, DrivesTheSimulatorOverEverySchedule) {
  for (const auto& c : testing::schedule_matrix()) {
    SCOPED_TRACE(c.label());
    const Schedule s = testing::lowered(c.schedule, c.pp, c.vp, c.m);
    const sim::ProfiledCost cost(sample_profile(), s.shape, 2);
    const sim::SimResult r = sim::simulate(s, cost);
    const TimelineMetrics m = compute_metrics(r.timeline);
    EXPECT_GT(m.makespan_ns, 0);
    EXPECT_GE(m.bubble_ratio, 0.0);
    EXPECT_LT(m.bubble_ratio, 1.0);
  }
}

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

// Forwards to an endpoint of an InprocWorld, so measure_profile can own "its" transport as it owns
// an MPI one.
class Endpoint final : public runtime::Transport {
 public:
  explicit Endpoint(runtime::Transport& t) : t_(t) {}
  std::string_view name() const override { return t_.name(); }
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  runtime::Clock::time_point barrier(std::chrono::nanoseconds timeout) override { return t_.barrier(timeout); }
  void isend(int dst, const runtime::MessageKey& k, runtime::Buffer b, std::int64_t now) override { t_.isend(dst, k, std::move(b), now); }
  void irecv(int src, const runtime::MessageKey& k, std::size_t bytes, runtime::BufferPool& pool) override { t_.irecv(src, k, bytes, pool); }
  std::optional<runtime::Received> wait_recv(const runtime::MessageKey& k, std::chrono::nanoseconds timeout) override {
    return t_.wait_recv(k, timeout);
  }
  void progress() override { t_.progress(); }
  std::vector<runtime::SendCompletion> flush_sends(std::chrono::nanoseconds timeout) override { return t_.flush_sends(timeout); }
  void cancel_all() noexcept override { t_.cancel_all(); }
  void check_abort() override { t_.check_abort(); }
  void abort(const std::string& message) noexcept override { t_.abort(message); }
  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> d, std::chrono::nanoseconds timeout) override {
    return t_.gather(d, timeout);
  }
  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override { return t_.any_failed(failed, timeout); }

 private:
  runtime::Transport& t_;
};

// The multi-process path of measure_profile (what `pipelab profile/run --transport mpi` run on every
// process), with threads standing in for the processes.
TEST(Profiler, MeasuresAWholeProfileOnEveryRankOfATransport) {
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  runtime::InprocWorld world(shape, runtime::WaitPolicy::Block);
  std::vector<MeasuredProfile> got(2);
  std::vector<std::string> errors(2);
  auto rank = [&](int r, runtime::ProfileOptions o) {
    runtime::P2PProfileOptions p2p;
    p2p.repeats = 3;
    p2p.timeout = std::chrono::seconds(30);
    p2p.transport = [&world, r] { return std::make_unique<Endpoint>(world.transport(r)); };
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
    p2p.transport = [&world, r] { return std::make_unique<Endpoint>(world.transport(r)); };
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
