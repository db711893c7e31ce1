// The result fixtures of tests/data/reports, written by pipelab itself, and the round trips of the
// schema: load_result(to_json(x)) == x and to_json(load_result(j)) == j for each kind.
//
// Each fixture is a small uniform-cost simulation (PP=2; F 10 ms, B 20 ms, I 12 ms, W 8 ms, a P2P
// transfer 0.2 ms, a DP gradient reduction 3 ms; 2 GiB of activations per microbatch and stage, of
// which I frees half; 10 GiB static per rank on a 16 GiB GPU) by the simulator's engine, turned
// into a result by make_timeline_result and compare_timelines and written by write_result_file.
// The run fixture's "measured" side is the same schedule simulated with slower compute. The
// configuration is hand-sized: renderers never recompute, so it only has to be plausible.
//
// A fixture that differs from what pipelab writes now fails here; PIPELAB_UPDATE_GOLDEN=1 rewrites
// the fixtures (then run the tests again with it to rewrite the goldens rendered from them).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <ostream>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/reports/result.h"
#include "pipelab/reports/timeline_result.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/engine.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

constexpr std::int64_t kMs = 1'000'000;
constexpr std::int64_t kGiB = std::int64_t{1} << 30;

struct OpTimes {
  std::int64_t f_ns, b_ns, i_ns, w_ns;
};
constexpr OpTimes kPredicted{10 * kMs, 20 * kMs, 12 * kMs, 8 * kMs};
constexpr OpTimes kMeasured{10'310'000, 20'870'000, 12'400'000, 8'200'000};  // each op a little slower

class FixtureCost : public sim::CostModel {
 public:
  explicit FixtureCost(OpTimes t) : t_(t) {}
  std::int64_t duration_ns(int, const Action& a) const override {
    switch (a.op) {
      case Op::F: return t_.f_ns;
      case Op::B: return t_.b_ns;
      case Op::I: return t_.i_ns;
      case Op::W: return t_.w_ns;
      default: return 0;
    }
  }
  std::int64_t p2p_ns(std::int64_t, int, int) const override { return kMs / 5; }
  std::int64_t boundary_bytes(int) const override { return 64 << 20; }
  double flops(const Action& a) const override { return a.op == Op::B ? 1.6e13 : 8e12; }
  std::int64_t reduce_grad_bytes(int) const override { return kGiB; }
  std::int64_t reduce_grad_ns(int, int) const override { return 3 * kMs; }

 private:
  OpTimes t_;
};

json fixture_config(int microbatches) {
  return {{"model", {{"name", "gpt-tiny"}, {"num_layers", 4}, {"hidden_size", 1024}}},
          {"gpu",
           {{"name", "h100-sxm"}, {"peak_bf16_tflops", 989.4}, {"peak_fp8_tflops", 1978.9}, {"hbm_bytes", 85899345920}}},
          {"parallel",
           {{"tp", 1}, {"pp", 2}, {"vp", 1}, {"cp", 1}, {"ep", 1}, {"dp", 4}, {"gpus", 8}, {"mbs", 1},
            {"gbs", 4 * microbatches}, {"seq_length", 2048}, {"microbatches", microbatches},
            {"sequence_parallel", false}, {"recompute", "none"}, {"distributed_optimizer", true},
            {"precision", "bf16"}, {"stage_layers", {2, 2}}}},
          {"cost_model", "uniform"},
          {"warnings", {"pp=2 with vp=1: interleaving (vp>1) divides the pipeline bubble (pp-1)/m by vp"}}};
}

struct Simulated {
  sim::SimResult result;
  TimelineResult timeline;
};

// One schedule simulated at PP=2, as a TimelineResult of `source` (8 GPUs at 989.4 TFLOPS peak).
Simulated simulate(const std::string& schedule, int microbatches, OpTimes times, bool reduce_grad,
                   const std::string& source, bool hardware_figures = true) {
  Schedule lowered = add_send_recv(make_schedule(schedule, {.pp = 2, .vp = 0, .microbatches = microbatches, .group_size = 0}));
  if (reduce_grad) lowered = add_reduce_grad(lowered);
  sim::SimOptions options;
  options.activations.assign(static_cast<std::size_t>(lowered.shape.stages), sim::StageActivation{2 * kGiB, kGiB, 0});
  Simulated out{.result = sim::simulate(lowered, FixtureCost(times), options)};
  TimelineFacts facts{.source = source,
                      .timeline = out.result.timeline,
                      .static_memory_bytes = {10 * kGiB, 10 * kGiB},
                      .peak_activation_bytes = out.result.peak_activation_bytes,
                      .memory_capacity_bytes = 16 * kGiB,
                      .model_flops = 4e14,
                      .tokens_per_iteration = 32768,
                      .hardware_figures = hardware_figures};
  // As pipelab writes them: the static-memory parts of simulated timelines, no memory series for a
  // measured one.
  if (source == "simulated") facts.static_parts.assign(2, StaticMemoryParts{2 * kGiB, 4 * kGiB, 4 * kGiB});
  if (source != "measured") {
    for (const auto& rank : out.result.memory) {
      auto& steps = facts.activation_steps.emplace_back();
      for (const sim::MemorySample& s : rank) steps.emplace_back(s.time_ns, s.bytes);
    }
  }
  const TimelineMetrics metrics = compute_metrics(facts.timeline);
  const Throughput throughput = compute_throughput(metrics.makespan_ns, facts.model_flops, facts.tokens_per_iteration, 8, 989.4);
  out.timeline = make_timeline_result(std::move(facts), metrics, throughput);
  return out;
}

ReportInput simulate_fixture() {
  ReportInput in{.name = "simulate_1f1b_2r_3mb", .kind = "simulate", .config = fixture_config(3)};
  in.config["schedule"] = "1f1b";
  in.schedules.push_back({.schedule = "1f1b"});
  // As `simulate --cost uniform` writes it: no hardware figures (TFLOPS/GPU and MFU null).
  in.schedules[0].runs.push_back(simulate("1f1b", 3, kPredicted, /*reduce_grad=*/true, "simulated", /*hardware_figures=*/false).timeline);
  return in;
}

ReportInput compare_fixture() {
  ReportInput in{.name = "compare_2r_4mb", .kind = "compare", .config = fixture_config(4)};
  in.config["schedules"] = {"gpipe", "1f1b", "zb-h1", "dualpipe"};
  for (const char* name : {"gpipe", "1f1b", "zb-h1"}) {  // gpipe holds all four microbatches: out of memory
    ScheduleResult s{.schedule = name, .vp = 1, .warnings = in.config["warnings"]};
    s.runs.push_back(simulate(name, 4, kPredicted, /*reduce_grad=*/false, "simulated").timeline);
    in.schedules.push_back(std::move(s));
  }
  in.schedules.push_back({.schedule = "dualpipe", .error = "dualpipe needs microbatches >= 2*pp = 4 per chain pair, got 2"});
  return in;
}

ReportInput run_fixture() {
  ReportInput in{.name = "run_1f1b_2r_3mb", .kind = "run", .config = fixture_config(3)};
  in.config["schedule"] = "1f1b";
  in.config["backend"] = "cpu";
  in.config["transport"] = "inproc";
  const Simulated predicted = simulate("1f1b", 3, kPredicted, false, "predicted");
  const Simulated measured = simulate("1f1b", 3, kMeasured, false, "measured");
  ScheduleResult s{.schedule = "1f1b", .runs = {predicted.timeline, measured.timeline}};
  s.comparison = RunComparison{.fidelity = compare_timelines(predicted.result.timeline, measured.result.timeline),
                               .measured_makespans_ns = {measured.result.timeline.makespan_ns()},
                               .median_iteration = 0};
  s.gradient_check = GradientCheckResult{3.2e-07, true, 1e-05, "part 0 layer 0 w_qkv"};
  in.schedules.push_back(std::move(s));
  return in;
}

struct Fixture {
  const char* file;
  ReportInput (*make)();
};
constexpr Fixture kFixtures[] = {{"simulate_1f1b_2r_3mb.json", simulate_fixture},
                                 {"compare_2r_4mb.json", compare_fixture},
                                 {"run_1f1b_2r_3mb.json", run_fixture}};

class ResultFixture : public ::testing::TestWithParam<Fixture> {};

TEST_P(ResultFixture, IsWhatPipelabWrites) {
  const Fixture& f = GetParam();
  const std::string path = testing::data_path(f.file);
  if (testing::update_golden()) {
    write_result_file(path, f.make());
    std::cout << "updated " << path << "\n";
    return;
  }
  const std::string written = std::string(PIPELAB_BINARY_DIR) + "/test-artifacts/fixtures/" + f.file;
  write_result_file(written, f.make());
  EXPECT_EQ(testing::read_text(written), testing::read_text(path))
      << path << " is not what pipelab writes now (if intended: PIPELAB_UPDATE_GOLDEN=1 ./pipelab_reports_tests)";
}

TEST_P(ResultFixture, StructsRoundTrip) {
  const ReportInput x = GetParam().make();
  EXPECT_EQ(load_result(to_json(x), x.name), x);
}

TEST_P(ResultFixture, FilesRoundTrip) {
  const Fixture& f = GetParam();
  const json j = json::parse(testing::read_text(testing::data_path(f.file)));
  EXPECT_EQ(to_json(load_result(j, "fixture")), j);
  EXPECT_EQ(to_json(load_result(j, "fixture")).dump(1) + "\n", testing::read_text(testing::data_path(f.file)));
}

INSTANTIATE_TEST_SUITE_P(Kinds, ResultFixture, ::testing::ValuesIn(kFixtures),
                         [](const ::testing::TestParamInfo<Fixture>& info) {
                           return std::string(info.param.file).substr(0, std::string(info.param.file).find('_'));
                         });

TEST(WriteResultFile, StreamsTheTimelinesToTheBytesOfTheDocument) {
  // write_result_file streams each timeline into its place in the document; the file must be the
  // document to_json builds, byte for byte: fractional FLOPs, an empty timeline, several timelines.
  ReportInput compare = compare_fixture();
  ASSERT_GE(compare.schedules.size(), 2u);
  compare.schedules[0].runs[0].timeline.ranks[0].front().flops = 1.0 / 3.0;
  compare.schedules[1].runs[0].timeline.ranks.assign(2, {});  // no events
  for (const ReportInput& in : {simulate_fixture(), compare, run_fixture()}) {
    const std::string path = std::string(PIPELAB_BINARY_DIR) + "/test-artifacts/streamed-" + in.kind + ".json";
    write_result_file(path, in);
    EXPECT_EQ(testing::read_text(path), to_json(in).dump(1) + "\n") << in.kind;
  }
}

// The idle split, the in-action communication and a null MFU survive the round trip, and the
// null is written as JSON null (the key stays, so the schema does not change shape).
TEST(ToJson, IdlePartsInActionCommAndNullHardwareFiguresRoundTrip) {
  ReportInput in = simulate_fixture();
  Summary& s = in.schedules[0].runs[0].summary;
  ASSERT_FALSE(s.mfu.has_value());
  ASSERT_GT(s.exposed_dp_comm_ns, 0);
  ASSERT_GT(s.exposed_pp_comm_ns, 0);
  ASSERT_GT(s.pipeline_bubble_ratio, 0);
  s.exposed_tp_comm_ns = 1'250'000;
  s.exposed_ep_comm_ns = 2'500'000;
  s.exposed_cp_comm_ns = 125'000;
  s.exposed_fsdp_comm_ns = 75'000;
  s.stage_imbalance = 0.0625;
  s.other_idle_ns = 12;
  in.schedules[0].runs[0].ranks[1].idle.imbalance_ns = 34;
  const json j = to_json(in);
  EXPECT_TRUE(j["summary"]["mfu"].is_null());
  EXPECT_TRUE(j["summary"]["tflops_per_gpu"].is_null());
  EXPECT_EQ(j["summary"]["exposed_ep_comm_ns"], 2'500'000);
  EXPECT_EQ(j["ranks"][1]["imbalance_ns"], 34);
  EXPECT_EQ(load_result(j, in.name), in);
  // A number where null may stand reads back as the number.
  json numbered = j;
  numbered["summary"]["mfu"] = 0.25;
  EXPECT_EQ(load_result(numbered, in.name).schedules[0].runs[0].summary.mfu, 0.25);
}

// The writer refuses what the loader could not read back.
TEST(ToJson, RejectsShapesTheSchemaHasNot) {
  ReportInput in = simulate_fixture();
  in.kind = "plan";
  EXPECT_THROW(to_json(in), InputError);
  in = simulate_fixture();
  in.schedules.push_back(in.schedules[0]);
  EXPECT_THROW(to_json(in), InputError);
  in = run_fixture();
  in.schedules[0].comparison.reset();
  EXPECT_THROW(to_json(in), InputError);
  in = run_fixture();
  in.schedules[0].runs[1].source = "simulated";
  EXPECT_THROW(to_json(in), InputError);
}

// A percentile the file does not state stays unstated; a gradient check's infinity is JSON null.
TEST(WriteResultFile, AFailedWriteLeavesNoPartialFile) {
  // A run result with two predicted timelines has no one place for each: an error, and no file.
  ReportInput run = run_fixture();
  run.schedules[0].runs.push_back(run.schedules[0].runs.front());
  const std::string path = std::string(PIPELAB_BINARY_DIR) + "/test-artifacts/partial-run.json";
  write_result_file(path, run_fixture());
  EXPECT_THROW(write_result_file(path, run), InputError);
  EXPECT_THROW(to_json(run), InputError);
  // write_file_streamed removes what a failing fill wrote.
  EXPECT_THROW(write_file_streamed(path, "result", [](std::ostream& os) {
                 os << "{\"partial\": ";
                 throw InputError("stop");
               }),
               InputError);
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(ToJson, KeepsWhatTheFileDidNotState) {
  json j = to_json(run_fixture());
  j["comparison"].erase("action_error_p50");
  j["gradient_check"]["max_rel_error"] = nullptr;
  const ReportInput in = load_result(j, "r");
  EXPECT_TRUE(std::isnan(in.schedules[0].comparison->fidelity.action_error_p50));
  EXPECT_TRUE(std::isinf(in.schedules[0].gradient_check->max_rel_error));
  EXPECT_EQ(to_json(in).dump(), j.dump());
}

// A GPU run's CUPTI activity survives the round trip, and is written only when there is some.
TEST(ToJson, DeviceActivityRoundTrips) {
  ReportInput run = run_fixture();
  EXPECT_FALSE(to_json(run).dump().find("device_activity") != std::string::npos);
  run.schedules[0].runs[1].device_activity = {{0, "ampere_sgemm", 10, 250, 0, "0F1"}, {1, "memcpy", 300, 310, 65536, "1B0"}};
  EXPECT_EQ(load_result(to_json(run), run.name), run);
  json bad = to_json(run);
  bad["measured"]["device_activity"][0]["end_ns"] = 1;  // ends before it starts
  EXPECT_THROW(load_result(bad, "bad"), InputError);
}

// A simulated MoE run's phases survive the round trip and are written only when there are some;
// a bad entry is named.
TEST(ToJson, PhasesRoundTrip) {
  ReportInput sim = simulate_fixture();
  EXPECT_EQ(to_json(sim).dump().find("\"phases\""), std::string::npos);
  sim.schedules[0].runs[0].phases = {{Op::F, 0, -1, {{"attention & dense", 6, 0, 0}, {"dispatch", 4, 4, 4}}},
                                     {Op::OverlapFB, 0, 1, {{"F experts | B dispatch", 9, 9, 2}}}};
  sim.schedules[0].runs[0].phase_totals = {{"attention & dense", 18, 0, 0}, {"dispatch", 12, 12, 12}};
  EXPECT_EQ(load_result(to_json(sim), sim.name), sim);
  auto error = [&](const std::function<void(json&)>& edit) {
    json bad = to_json(sim);
    edit(bad["phases"]);
    try {
      load_result(bad, "bad");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_THAT(error([](json& p) { p[0]["phases"][1]["exposed_comm_ns"] = 5; }), HasSubstr("phases[0].phases[1]"));
  EXPECT_THAT(error([](json& p) { p[0]["op"] = "SEND_F"; }), HasSubstr("must be a compute op"));
  EXPECT_THAT(error([](json& p) { p[0]["b_stage"] = 3; }), HasSubstr("OVERLAP_F_B entries only"));
  EXPECT_THAT(error([](json& p) { p[1].erase("b_stage"); }), HasSubstr("b_stage"));
  EXPECT_THAT(error([](json& p) { p[1]["phases"] = json::array(); }), HasSubstr("must not be empty"));
  json bad = to_json(sim);
  bad["phase_totals"][1]["comm_ns"] = -1;
  EXPECT_THROW(load_result(bad, "bad"), InputError);
}

}  // namespace
}  // namespace pipelab::reports
