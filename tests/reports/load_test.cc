// Loading result JSON: the fixtures load; bad input (wrong format, other versions, missing fields,
// non-result JSON) fails with an error naming the field; empty timelines render in every format.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <limits>

#include "pipelab/base/error.h"
#include "pipelab/reports/render.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::data_path;
using testing::read_text;

json fixture_json(const std::string& name) { return json::parse(read_text(data_path(name))); }

std::string load_error(const json& j, const std::string& name = "bad") {
  try {
    load_result(j, name);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LoadResult, SimulateFixture) {
  const ReportInput in = testing::fixture("simulate_1f1b_2r_3mb.json");
  EXPECT_EQ(in.name, "simulate_1f1b_2r_3mb");
  EXPECT_EQ(in.kind, "simulate");
  ASSERT_EQ(in.schedules.size(), 1u);
  const ScheduleResult& s = in.schedules[0];
  EXPECT_EQ(s.schedule, "1f1b");
  ASSERT_EQ(s.runs.size(), 1u);
  EXPECT_EQ(s.runs[0].source, "simulated");
  EXPECT_EQ(s.runs[0].summary.makespan_ns, 123'800'000);
  EXPECT_EQ(s.runs[0].summary.peak_memory_bytes.size(), 2u);
  EXPECT_EQ(s.runs[0].summary.max_peak_memory_bytes(), 15'032'385'536);
  EXPECT_EQ(s.runs[0].timeline.ranks.size(), 2u);
  EXPECT_EQ(s.runs[0].ranks.size(), 2u);
  EXPECT_EQ(s.runs[0].memory.size(), 2u);
}

TEST(LoadResult, CompareFixtureKeepsTheFailedSchedule) {
  const ReportInput in = testing::fixture("compare_2r_4mb.json");
  ASSERT_EQ(in.schedules.size(), 4u);
  EXPECT_EQ(in.schedules[0].schedule, "gpipe");
  EXPECT_TRUE(in.schedules[0].runs[0].summary.oom);
  EXPECT_TRUE(in.schedules[3].failed());
  EXPECT_THAT(in.schedules[3].error, HasSubstr("dualpipe needs"));
  EXPECT_TRUE(in.schedules[3].runs.empty());
}

TEST(LoadResult, RunFixtureHasPredictedThenMeasured) {
  const ReportInput in = testing::fixture("run_1f1b_2r_3mb.json");
  ASSERT_EQ(in.schedules.size(), 1u);
  ASSERT_EQ(in.schedules[0].runs.size(), 2u);
  EXPECT_EQ(in.schedules[0].runs[0].source, "predicted");
  EXPECT_EQ(in.schedules[0].runs[1].source, "measured");
  EXPECT_TRUE(in.schedules[0].runs[1].memory.empty());
  EXPECT_TRUE(in.schedules[0].comparison.has_value());
  EXPECT_TRUE(in.schedules[0].gradient_check.has_value());
}

TEST(LoadResult, OlderAndNewerVersionsAreRejected) {
  for (int v : {0, 2, 7}) {
    json j = fixture_json("simulate_1f1b_2r_3mb.json");
    j["version"] = v;
    EXPECT_EQ(load_error(j, "r.json"),
              "r.json: unsupported result version " + std::to_string(v) + "; this build reads 1");
  }
}

TEST(LoadResult, VersionMustBeAnInteger) {
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["version"] = "1";
  EXPECT_THAT(load_error(j), HasSubstr("field \"version\" must be an integer"));
  j.erase("version");
  EXPECT_THAT(load_error(j), HasSubstr("missing field \"version\""));
}

TEST(LoadResult, WrongOrMissingFormat) {
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["format"] = "pipelab.schedule";
  EXPECT_THAT(load_error(j), HasSubstr("field \"format\" is \"pipelab.schedule\", expected \"pipelab.result\""));
  j.erase("format");
  EXPECT_THAT(load_error(j), HasSubstr("missing field \"format\""));
}

TEST(LoadResult, NonResultJson) {
  EXPECT_THAT(load_error(json::array({1, 2, 3})), HasSubstr("not a pipelab result"));
  EXPECT_THAT(load_error(json{{"name", "llama3-8b"}, {"num_layers", 32}}), HasSubstr("missing field \"format\""));
  // A schedule file is JSON, but not a result.
  const json schedule = {{"format", "pipelab.schedule"}, {"version", 1}, {"pp", 2}};
  EXPECT_THAT(load_error(schedule), HasSubstr("not a result file"));
}

TEST(LoadResult, UnknownKind) {
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["kind"] = "plan";
  EXPECT_THAT(load_error(j), HasSubstr("field \"kind\" is \"plan\""));
}

TEST(LoadResult, EveryMissingSummaryKeyIsNamed) {
  for (const char* key : {"makespan_ns", "bubble_ratio", "tflops_per_gpu", "mfu", "tokens_per_s_per_gpu",
                          "peak_memory_bytes", "exposed_comm_ns", "memory_capacity_bytes", "oom", "model_flops",
                          "tokens_per_iteration"}) {
    json j = fixture_json("simulate_1f1b_2r_3mb.json");
    j["summary"].erase(key);
    EXPECT_EQ(load_error(j, "s.json"), std::string("s.json: summary: missing field \"") + key + "\"") << key;
  }
}

TEST(LoadResult, WrongTypesAreNamedWithTheirPath) {
  json j = fixture_json("compare_2r_4mb.json");
  j["results"][1]["summary"]["mfu"] = "high";
  EXPECT_EQ(load_error(j, "c.json"), "c.json: results[1].summary.mfu: must be a number (or null)");
  j = fixture_json("compare_2r_4mb.json");
  j["results"][2]["summary"]["peak_memory_bytes"][1] = "x";
  EXPECT_EQ(load_error(j, "c.json"), "c.json: results[2].summary.peak_memory_bytes[1]: must be an integer");
  j = fixture_json("compare_2r_4mb.json");
  j["results"][0]["summary"]["makespan_ns"] = 1.5;
  EXPECT_EQ(load_error(j, "c.json"), "c.json: results[0].summary.makespan_ns: must be an integer");
  j = fixture_json("compare_2r_4mb.json");
  j["results"][0]["summary"]["oom"] = 0;
  EXPECT_EQ(load_error(j, "c.json"), "c.json: results[0].summary.oom: must be true or false");
}

// Integers (summary, ranks, peak_memory_bytes entries, memory samples) go through one check:
// JSON integers, or integral doubles that fit in int64. 1e30 used to be cast to int64 (undefined
// behaviour) and fractions in peak_memory_bytes and samples were truncated silently.
TEST(LoadResult, IntegersMustBeIntegralAndFitInt64) {
  auto with = [](const std::function<void(json&)>& edit) {
    json j = fixture_json("simulate_1f1b_2r_3mb.json");
    edit(j);
    return load_error(j, "s.json");
  };
  const std::string range = "must be an integer of magnitude below 2^63";
  EXPECT_THAT(with([](json& j) { j["summary"]["makespan_ns"] = 1e30; }), HasSubstr("s.json: summary.makespan_ns: " + range));
  EXPECT_THAT(with([](json& j) { j["summary"]["exposed_comm_ns"] = -1e30; }),
              HasSubstr("s.json: summary.exposed_comm_ns: " + range));
  // 2^63 itself does not fit; it is exactly representable as a double.
  EXPECT_THAT(with([](json& j) { j["summary"]["tokens_per_iteration"] = 9223372036854775808.0; }),
              HasSubstr("summary.tokens_per_iteration: " + range));
  EXPECT_THAT(with([](json& j) { j["summary"]["makespan_ns"] = std::numeric_limits<double>::quiet_NaN(); }),
              HasSubstr("s.json: summary.makespan_ns: must be an integer"));
  EXPECT_THAT(with([](json& j) { j["summary"]["makespan_ns"] = std::numeric_limits<double>::infinity(); }),
              HasSubstr("s.json: summary.makespan_ns: must be an integer"));
  // An unsigned JSON integer above int64.
  EXPECT_THAT(with([](json& j) { j["summary"]["memory_capacity_bytes"] = std::uint64_t{1} << 63; }),
              HasSubstr("summary.memory_capacity_bytes: must be an integer below 2^63"));
  EXPECT_EQ(with([](json& j) { j["summary"]["peak_memory_bytes"][1] = 2.5; }),
            "s.json: summary.peak_memory_bytes[1]: must be an integer");
  EXPECT_EQ(with([](json& j) { j["summary"]["peak_memory_bytes"][0] = 1e19; }),
            "s.json: summary.peak_memory_bytes[0]: " + range + " (got 1e+19)");
  EXPECT_EQ(with([](json& j) { j["ranks"][1]["busy_ns"] = 1e300; }), "s.json: ranks[1].busy_ns: " + range + " (got 1e+300)");
  EXPECT_EQ(with([](json& j) { j["memory"][0]["samples"][1][0] = 0.5; }), "s.json: memory[0].samples[1][0]: must be an integer");
  EXPECT_EQ(with([](json& j) { j["memory"][1]["samples"][2][1] = -1e30; }),
            "s.json: memory[1].samples[2][1]: " + range + " (got -1e+30)");
  EXPECT_EQ(with([](json& j) { j["memory"][1]["samples"][0][1] = "10"; }), "s.json: memory[1].samples[0][1]: must be an integer");

  // Integral doubles are accepted, exactly.
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["summary"]["makespan_ns"] = 1.238e8;
  j["summary"]["peak_memory_bytes"][0] = 4611686018427387904.0;  // 2^62
  j["memory"][0]["samples"][1] = json::array({5e6, 1.5e10});
  j["ranks"][0]["busy_ns"] = -0.0;
  const ReportInput in = load_result(j, "s.json");
  EXPECT_EQ(in.schedules[0].runs[0].summary.makespan_ns, 123'800'000);
  EXPECT_EQ(in.schedules[0].runs[0].summary.peak_memory_bytes[0], std::int64_t{1} << 62);
  EXPECT_EQ(in.schedules[0].runs[0].ranks[0].busy_ns, 0);
  const auto& samples = in.schedules[0].runs[0].memory[0].samples;
  EXPECT_NE(std::find(samples.begin(), samples.end(), std::pair<std::int64_t, std::int64_t>{5'000'000, 15'000'000'000}),
            samples.end());
}

// A run's fidelity verdict needs the makespan error and both bubbles: a run without them is
// rejected, naming the field, instead of counting as within the thresholds.
TEST(LoadResult, RunNeedsItsComparisonFigures) {
  json j = fixture_json("run_1f1b_2r_3mb.json");
  j.erase("comparison");
  EXPECT_EQ(load_error(j, "r.json"), "r.json: missing field \"comparison\"");
  j["comparison"] = 3;
  EXPECT_EQ(load_error(j, "r.json"), "r.json: comparison: must be an object");
  for (const char* key : {"makespan_error", "bubble_predicted", "bubble_measured"}) {
    j = fixture_json("run_1f1b_2r_3mb.json");
    j["comparison"].erase(key);
    EXPECT_EQ(load_error(j, "r.json"), std::string("r.json: comparison: missing field \"") + key + "\"") << key;
    j["comparison"][key] = "small";
    EXPECT_EQ(load_error(j, "r.json"), std::string("r.json: comparison.") + key + ": must be a number") << key;
    j["comparison"][key] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(load_error(j, "r.json"), std::string("r.json: comparison.") + key + ": must be a finite number") << key;
  }
  // The per-action percentiles stay optional.
  j = fixture_json("run_1f1b_2r_3mb.json");
  j["comparison"].erase("action_error_p50");
  j["comparison"].erase("action_error_p90");
  EXPECT_NO_THROW(load_result(j, "r.json"));
}

TEST(LoadResult, MissingSectionsAreNamed) {
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j.erase("summary");
  EXPECT_THAT(load_error(j), HasSubstr("missing field \"summary\""));
  j = fixture_json("simulate_1f1b_2r_3mb.json");
  j.erase("timeline");
  EXPECT_THAT(load_error(j), HasSubstr("missing field \"timeline\""));
  j = fixture_json("simulate_1f1b_2r_3mb.json");
  j.erase("config");
  EXPECT_THAT(load_error(j), HasSubstr("missing field \"config\""));
  j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["config"].erase("schedule");
  EXPECT_THAT(load_error(j), HasSubstr("config: missing field \"schedule\""));
  j = fixture_json("compare_2r_4mb.json");
  j["results"][1].erase("summary");
  EXPECT_THAT(load_error(j), HasSubstr("results[1]: missing field \"summary\" (or \"error\""));
  j = fixture_json("compare_2r_4mb.json");
  j["results"][0].erase("schedule");
  EXPECT_THAT(load_error(j), HasSubstr("results[0]: missing field \"schedule\""));
  j = fixture_json("run_1f1b_2r_3mb.json");
  j.erase("measured");
  EXPECT_THAT(load_error(j), HasSubstr("missing field \"measured\""));
  j = fixture_json("run_1f1b_2r_3mb.json");
  j["predicted"]["summary"].erase("bubble_ratio");
  EXPECT_THAT(load_error(j), HasSubstr("predicted.summary: missing field \"bubble_ratio\""));
}

TEST(LoadResult, BadTimelineAndMemoryEntriesAreNamed) {
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["timeline"][3].erase("end_ns");
  EXPECT_THAT(load_error(j), HasSubstr("timeline[3]: missing field \"end_ns\""));
  j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["timeline"][0]["action"] = "0X0";
  EXPECT_THAT(load_error(j), HasSubstr("timeline[0]: field \"action\""));
  j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["memory"][1]["samples"][2] = json::array({1});
  EXPECT_THAT(load_error(j), HasSubstr("memory[1].samples[2]: must be a [time_ns, bytes] pair"));
  j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["ranks"][0].erase("busy_ns");
  EXPECT_THAT(load_error(j), HasSubstr("ranks[0]: missing field \"busy_ns\""));
}

TEST(LoadResult, EntriesThatAreNotObjectsAreNamed) {
  json j = fixture_json("simulate_1f1b_2r_3mb.json");
  j["ranks"][1] = 3;
  EXPECT_EQ(load_error(j, "s.json"), "s.json: ranks[1]: must be an object");
  j = fixture_json("compare_2r_4mb.json");
  j["results"][2]["summary"] = json::array();
  EXPECT_EQ(load_error(j, "c.json"), "c.json: results[2].summary: must be an object");
}

TEST(LoadResultFile, ErrorsNameThePath) {
  try {
    load_result_file(data_path("no_such_file.json"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read"));
  }
  // A non-JSON file.
  try {
    load_result_file(data_path("README.md"));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("README.md: not JSON"));
  }
  // A number beyond double's range is bad input too, not an internal error.
  const std::filesystem::path dir = std::filesystem::path(PIPELAB_BINARY_DIR) / "test-artifacts" / "load";
  std::filesystem::create_directories(dir);
  const std::string huge = (dir / "huge.json").string();
  write_text_file(huge, "{\"format\": \"pipelab.result\", \"version\": 1e999}", "test file");
  try {
    load_result_file(huge);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("huge.json: not JSON (number overflow parsing '1e999')"));
  }
}

// A minimal result: no ranks, no events, all-zero metrics.
json empty_result() {
  return {{"format", "pipelab.result"},
          {"version", 1},
          {"kind", "simulate"},
          {"config", {{"schedule", "1f1b"}}},
          {"summary",
           {{"makespan_ns", 0}, {"bubble_ratio", 0}, {"tflops_per_gpu", 0}, {"mfu", 0}, {"tokens_per_s_per_gpu", 0},
            {"peak_memory_bytes", json::array()}, {"exposed_comm_ns", 0}, {"memory_capacity_bytes", 0},
            {"oom", false}, {"model_flops", 0}, {"tokens_per_iteration", 0}}},
          {"timeline", json::array()}};
}

void expect_renders_cleanly(const std::vector<ReportInput>& inputs) {
  for (Format f : {Format::Html, Format::Markdown, Format::SummaryCsv, Format::TimelineCsv, Format::Trace}) {
    const std::string out = render(inputs, f);
    EXPECT_FALSE(out.empty()) << format_name(f);
    for (const char* bad : {"nan", "NaN", "inf", "Infinity"}) {
      EXPECT_EQ(out.find(bad), std::string::npos) << format_name(f) << " contains " << bad;
    }
  }
}

TEST(EmptyInput, EmptyTimelineRendersEverywhere) {
  const ReportInput in = load_result(empty_result(), "empty");
  expect_renders_cleanly({in});
  const std::string html = render_html({in});
  EXPECT_THAT(html, HasSubstr("empty timeline"));
  EXPECT_TRUE(json::parse(render_chrome_trace({in})).contains("traceEvents"));
}

TEST(EmptyInput, ZeroLengthEventsRender) {
  json j = empty_result();
  j["timeline"] = json::array({{{"rank", 0}, {"action", "0F0"}, {"stream", "compute"}, {"start_ns", 0}, {"end_ns", 0}},
                               {{"rank", 1}, {"action", "1F0"}, {"stream", "compute"}, {"start_ns", 0}, {"end_ns", 0}}});
  j["memory"] = json::array({{{"rank", 0}, {"samples", json::array({json::array({0, 0})})}}});
  j["ranks"] = json::array({{{"rank", 0}, {"busy_ns", 0}, {"idle_ns", 0}, {"comm_ns", 0}, {"exposed_comm_ns", 0}}});
  expect_renders_cleanly({load_result(j, "zero")});
}

TEST(EmptyInput, CompareWithOnlyFailuresAndNoInputs) {
  json j = json::parse(read_text(data_path("compare_2r_4mb.json")));
  j["results"] = json::array({{{"schedule", "dualpipe"}, {"error", "needs m >= 2*pp"}}});
  const ReportInput in = load_result(j, "failed");
  expect_renders_cleanly({in});
  EXPECT_THAT(render_markdown({in}), HasSubstr("No timelines to compare."));
  EXPECT_THAT(render_markdown({in}), HasSubstr("`dualpipe`: needs m >= 2*pp"));
  expect_renders_cleanly({});
}

}  // namespace
}  // namespace pipelab::reports
