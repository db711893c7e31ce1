// Chrome trace JSON: the schema Perfetto and chrome://tracing read (complete "X" events with
// microsecond ts/dur, process/thread name metadata), pid = rank, tid = stream, IR names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "pipelab/reports/render.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;
using testing::fixture;

void expect_schema(const json& trace) {
  ASSERT_TRUE(trace.is_object());
  ASSERT_TRUE(trace.contains("traceEvents"));
  ASSERT_TRUE(trace["traceEvents"].is_array());
  for (const json& e : trace["traceEvents"]) {
    ASSERT_TRUE(e.is_object());
    ASSERT_TRUE(e.contains("ph") && e["ph"].is_string()) << e.dump();
    ASSERT_TRUE(e.contains("name") && e["name"].is_string()) << e.dump();
    ASSERT_TRUE(e.contains("pid") && e["pid"].is_number_integer()) << e.dump();
    ASSERT_TRUE(e.contains("tid") && e["tid"].is_number_integer()) << e.dump();
    const std::string ph = e["ph"];
    if (ph == "X") {
      ASSERT_TRUE(e.contains("ts") && e["ts"].is_number()) << e.dump();
      ASSERT_TRUE(e.contains("dur") && e["dur"].is_number()) << e.dump();
      EXPECT_GE(e["dur"].get<double>(), 0);
      ASSERT_TRUE(e.contains("cat") && e["cat"].is_string());
      ASSERT_TRUE(e["args"].is_object());
      // A GPU run's CUPTI activity, or a simulated MoE run's phases: detail under an action.
      const bool device = e["cat"] == "kernel" || e["cat"] == "memcpy" || e["cat"] == "phase";
      for (const char* k : {"stage", "microbatch", "bytes", "flops"}) {
        if (!device || (std::string(k) == "bytes" && e["cat"] != "phase")) {
          EXPECT_TRUE(e["args"].contains(k)) << k;
        }
      }
      if (device) {
        EXPECT_TRUE(e["args"].contains("action"));
      }
      if (e["cat"] == "phase") {
        EXPECT_TRUE(e["args"].contains("comm_ns"));
        EXPECT_TRUE(e["args"].contains("exposed_comm_ns"));
      }
    } else {
      EXPECT_EQ(ph, "M") << e.dump();
      ASSERT_TRUE(e["args"].is_object());
    }
  }
}

TEST(ChromeTrace, SimulateSchema) {
  const ReportInput in = fixture("simulate_1f1b_2r_3mb.json");
  const json trace = json::parse(render_chrome_trace({in}));
  expect_schema(trace);
  std::size_t events = 0;
  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") process_names[e["pid"]] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] != "X") continue;
    ++events;
  }
  EXPECT_EQ(events, 2u * 6 + 12 + 2);  // compute, send/recv, REDUCE_GRAD
  EXPECT_EQ(process_names, (std::map<int, std::string>{{0, "rank 0"}, {1, "rank 1"}}));
  EXPECT_EQ(thread_names[std::make_pair(0, 0)], "compute");
  EXPECT_EQ(thread_names[std::make_pair(0, 1)], "send");
  EXPECT_EQ(thread_names[std::make_pair(0, 2)], "recv");
  EXPECT_EQ(thread_names[std::make_pair(0, 3)], "collective");
}

TEST(ChromeTrace, EventsMatchTheTimeline) {
  const ReportInput in = fixture("simulate_1f1b_2r_3mb.json");
  const json trace = json::parse(render_chrome_trace({in}));
  const Timeline& t = in.schedules[0].runs[0].timeline;
  std::multiset<std::tuple<int, int, std::string, double, double>> expected, actual;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const TimelineEvent& e : t.ranks[r]) {
      expected.insert({static_cast<int>(r), static_cast<int>(e.stream), to_string(e.action), e.start_ns / 1e3,
                       (e.end_ns - e.start_ns) / 1e3});
    }
  }
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    actual.insert({e["pid"].get<int>(), e["tid"].get<int>(), e["name"].get<std::string>(), e["ts"].get<double>(),
                   e["dur"].get<double>()});
  }
  EXPECT_EQ(actual, expected);
  // The IR name and args of one event.
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "1B2") {
      EXPECT_EQ(e["cat"], "B");
      EXPECT_EQ(e["args"]["stage"], 1);
      EXPECT_EQ(e["args"]["microbatch"], 2);
      EXPECT_EQ(e["args"]["flops"], 1.6e13);
    }
  }
}

TEST(ChromeTrace, CompareAndRunGetOnePidBlockPerTimeline) {
  const json trace = json::parse(render_chrome_trace({fixture("compare_2r_4mb.json"), fixture("run_1f1b_2r_3mb.json")}));
  expect_schema(trace);
  EXPECT_EQ(trace["otherData"]["pid_stride"], 1000);
  std::map<int, std::string> names;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
  }
  const std::map<int, std::string> expected{
      {0, "compare_2r_4mb gpipe rank 0"},        {1, "compare_2r_4mb gpipe rank 1"},
      {1000, "compare_2r_4mb 1f1b rank 0"},      {1001, "compare_2r_4mb 1f1b rank 1"},
      {2000, "compare_2r_4mb zb-h1 rank 0"},     {2001, "compare_2r_4mb zb-h1 rank 1"},
      {3000, "run_1f1b_2r_3mb 1f1b predicted rank 0"}, {3001, "run_1f1b_2r_3mb 1f1b predicted rank 1"},
      {4000, "run_1f1b_2r_3mb 1f1b measured rank 0"},  {4001, "run_1f1b_2r_3mb 1f1b measured rank 1"}};
  EXPECT_EQ(names, expected);
}

TEST(ChromeTrace, OverlapUnitsCarryBothHalves) {
  json j = {{"format", "pipelab.result"},
            {"version", 1},
            {"kind", "simulate"},
            {"config", {{"schedule", "dualpipev"}}},
            {"summary",
             {{"makespan_ns", 100}, {"bubble_ratio", 0}, {"tflops_per_gpu", 0}, {"mfu", 0}, {"tokens_per_s_per_gpu", 0},
              {"peak_memory_bytes", json::array()}, {"exposed_comm_ns", 0}, {"memory_capacity_bytes", 0},
              {"oom", false}, {"model_flops", 0}, {"tokens_per_iteration", 0}}},
            {"timeline", json::array({{{"rank", 0}, {"action", "(0F3;3B1)OVERLAP_F_B"}, {"stream", "compute"},
                                       {"start_ns", 0}, {"end_ns", 100}}})}};
  const json trace = json::parse(render_chrome_trace({load_result(j, "fb")}));
  bool found = false;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    found = true;
    EXPECT_EQ(e["name"], "(0F3;3B1)OVERLAP_F_B");
    EXPECT_EQ(e["args"]["b_stage"], 3);
    EXPECT_EQ(e["args"]["b_microbatch"], 1);
  }
  EXPECT_TRUE(found);
}

// A GPU run's kernels and copies (--cupti) go on one more thread of the measured ranks, named after
// the kernel, with the enclosing action.
TEST(ChromeTrace, DeviceActivityGoesUnderItsRank) {
  ReportInput run = fixture("run_1f1b_2r_3mb.json");
  run.schedules[0].runs[1].device_activity = {{1, "sm90_gemm_bf16", 1000, 4000, 0, "1F0"},
                                              {0, "memcpy", 500, 700, 4096, "0B0"}};
  const json trace = json::parse(render_chrome_trace({run}));
  expect_schema(trace);
  std::map<std::string, json> kernels;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 4) kernels[e["name"]] = e;
  }
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels["sm90_gemm_bf16"]["pid"], 1001);  // measured block, rank 1
  EXPECT_EQ(kernels["sm90_gemm_bf16"]["args"]["action"], "1F0");
  EXPECT_DOUBLE_EQ(kernels["sm90_gemm_bf16"]["dur"].get<double>(), 3.0);
  EXPECT_EQ(kernels["memcpy"]["cat"], "memcpy");
  EXPECT_EQ(kernels["memcpy"]["pid"], 1000);
}

// A simulated MoE run's phases go on a "phases" thread of each rank, tiling every action of
// their kind.
TEST(ChromeTrace, PhasesTileTheirActionsOnTheirOwnThread) {
  ReportInput sim = fixture("simulate_1f1b_2r_3mb.json");
  sim.schedules[0].runs[0].phases = {{Op::F, 0, -1, {{"attention & dense", 6'000'000, 0, 0}, {"dispatch", 4'000'000, 4'000'000, 4'000'000}}}};  // ns, as 0F0 runs them
  const json trace = json::parse(render_chrome_trace({sim}));
  expect_schema(trace);
  std::vector<json> phases;
  bool named = false;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] == "X" && e["tid"] == 5) phases.push_back(e);
    if (e["ph"] == "M" && e["tid"] == 5 && e["name"] == "thread_name") named = named || e["args"]["name"] == "phases";
  }
  EXPECT_TRUE(named);
  ASSERT_EQ(phases.size(), 6u);  // 3 forwards of stage 0, 2 phases each
  // 0F0 runs 0-10 ms: 6 ms, then 4 ms of exposed dispatch.
  EXPECT_EQ(phases[0]["name"], "attention & dense");
  EXPECT_EQ(phases[0]["args"]["action"], "0F0");
  EXPECT_EQ(phases[0]["pid"], 0);
  EXPECT_DOUBLE_EQ(phases[0]["dur"].get<double>(), 6000.0);
  EXPECT_EQ(phases[1]["name"], "dispatch");
  EXPECT_DOUBLE_EQ(phases[1]["ts"].get<double>(), 6000.0);
  EXPECT_EQ(phases[1]["args"]["exposed_comm_ns"], 4'000'000);
}

}  // namespace
}  // namespace pipelab::reports
