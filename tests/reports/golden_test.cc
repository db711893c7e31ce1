// Golden files: Markdown and CSV output of the fixtures, byte for byte. Regenerate only on purpose:
// PIPELAB_UPDATE_GOLDEN=1 ./pipelab_reports_tests, then review the diff (tests/data/reports/README.md).
#include <gtest/gtest.h>

#include "pipelab/reports/render.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using testing::expect_golden;
using testing::fixture;

// The compare fixture again, as if measured on another GPU type: side-by-side inputs.
ReportInput other_gpu() {
  nlohmann::json j = nlohmann::json::parse(testing::read_text(testing::data_path("compare_2r_4mb.json")));
  j["config"]["gpu"]["name"] = "a100-80g";
  j["config"]["gpu"]["peak_bf16_tflops"] = 312;
  j["config"]["gpu"].erase("peak_fp8_tflops");
  for (auto& r : j["results"]) {
    if (!r.contains("summary")) continue;
    r["summary"]["makespan_ns"] = r["summary"]["makespan_ns"].get<std::int64_t>() * 3;
    r["summary"]["tflops_per_gpu"] = r["summary"]["tflops_per_gpu"].get<double>() / 3;
    r["summary"]["mfu"] = r["summary"]["tflops_per_gpu"].get<double>() / 312;
    r["summary"]["tokens_per_s_per_gpu"] = r["summary"]["tokens_per_s_per_gpu"].get<double>() / 3;
  }
  return load_result(j, "a100");
}

TEST(GoldenMarkdown, Simulate) { expect_golden(render_markdown({fixture("simulate_1f1b_2r_3mb.json")}), "simulate.md"); }

TEST(GoldenMarkdown, CompareWithFailureAndOom) {
  expect_golden(render_markdown({fixture("compare_2r_4mb.json")}), "compare.md");
}

TEST(GoldenMarkdown, Run) { expect_golden(render_markdown({fixture("run_1f1b_2r_3mb.json")}), "run.md"); }

TEST(GoldenMarkdown, TwoInputsSideBySide) {
  expect_golden(render_markdown({fixture("compare_2r_4mb.json"), other_gpu()}), "two_inputs.md");
}

// A result with phase totals gets a "MoE phases" table: one row per phase, its time, communication
// and exposed part in ms; results without them get none.
TEST(MarkdownPhases, OneRowPerPhase) {
  ReportInput sim = fixture("simulate_1f1b_2r_3mb.json");
  EXPECT_EQ(render_markdown({sim}).find("## MoE phases"), std::string::npos);
  sim.schedules[0].runs[0].phase_totals = {{"attention & dense", 9'000'000, 0, 0}, {"dispatch", 6'000'000, 6'000'000, 1'500'000}};
  const std::string md = render_markdown({sim});
  ASSERT_NE(md.find("## MoE phases"), std::string::npos);
  std::istringstream lines(md.substr(md.find("## MoE phases")));
  std::vector<std::string> dispatch;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("| dispatch") != std::string::npos) dispatch.push_back(line);
  }
  ASSERT_EQ(dispatch.size(), 1u);
  EXPECT_NE(dispatch[0].find("6.000 |"), std::string::npos) << dispatch[0];
  EXPECT_NE(dispatch[0].find("1.500 |"), std::string::npos) << dispatch[0];
}

TEST(GoldenCsv, SummaryOfAllFixtures) {
  expect_golden(render_summary_csv({fixture("simulate_1f1b_2r_3mb.json"), fixture("compare_2r_4mb.json"),
                                    fixture("run_1f1b_2r_3mb.json")}),
                "summary.csv");
}

TEST(GoldenCsv, TimelineOfSimulate) {
  expect_golden(render_timeline_csv({fixture("simulate_1f1b_2r_3mb.json")}), "simulate.timeline.csv");
}

TEST(GoldenCsv, TimelineOfRun) { expect_golden(render_timeline_csv({fixture("run_1f1b_2r_3mb.json")}), "run.timeline.csv"); }

TEST(SummaryCsv, EveryRowHasTheHeadersFieldCount) {
  const std::string csv = render_summary_csv({fixture("simulate_1f1b_2r_3mb.json"), fixture("compare_2r_4mb.json"),
                                              fixture("run_1f1b_2r_3mb.json")});
  std::istringstream ss(csv);
  std::string line;
  std::size_t expected = 0, rows = 0;
  while (std::getline(ss, line)) {
    // No field of the fixtures holds a quoted comma, so counting commas counts fields.
    std::size_t fields = 1;
    bool quoted = false;
    for (char c : line) {
      if (c == '"') quoted = !quoted;
      if (c == ',' && !quoted) ++fields;
    }
    if (rows++ == 0) expected = fields;
    EXPECT_EQ(fields, expected) << line;
  }
  EXPECT_EQ(rows, 1u + 1 + 4 + 2);  // header, simulate, compare (3 ok + 1 error), run (predicted, measured)
}

// A fixed-vp schedule of a comparison runs with its own chunks per rank: the vp cell says so, as
// the terminal table and the result's `vp` do, not the configuration's --vp.
TEST(SummaryCsv, VpIsEachSchedulesOwn) {
  ReportInput compare = fixture("compare_2r_4mb.json");
  ASSERT_GE(compare.schedules.size(), 2u);
  compare.schedules[0].vp = 7;
  const std::string csv = render_summary_csv({compare});
  std::istringstream ss(csv);
  std::string header, first;
  std::getline(ss, header);
  std::getline(ss, first);
  auto cell = [](const std::string& line, std::size_t index) {
    std::size_t start = 0;
    for (std::size_t i = 0; i < index; ++i) start = line.find(',', start) + 1;
    return line.substr(start, line.find(',', start) - start);
  };
  ASSERT_EQ(cell(header, 10), "vp");
  EXPECT_EQ(cell(first, 2), compare.schedules[0].schedule);
  EXPECT_EQ(cell(first, 10), "7");
}

TEST(RenderDeterminism, SameInputSameBytes) {
  const std::vector<ReportInput> in{fixture("compare_2r_4mb.json"), fixture("run_1f1b_2r_3mb.json")};
  for (Format f : {Format::Html, Format::Markdown, Format::SummaryCsv, Format::TimelineCsv, Format::Trace}) {
    EXPECT_EQ(render(in, f), render(in, f)) << format_name(f);
  }
}

}  // namespace
}  // namespace pipelab::reports
