// The comparison table model (reports/table_model.h) that HTML and Markdown both print: best-value
// marks (only among at least two rows that fit in memory), footer verdicts (text without the
// OK/FAILED word, which the renderers add), the fidelity rows (computed once, a missing figure never
// within the thresholds), the config helpers, and the input labels of write.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "config_view.h"
#include "html.h"
#include "table_model.h"
#include "pipelab/reports/render.h"
#include "pipelab/reports/write.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using testing::data_path;
using testing::read_text;
using namespace detail;

json compare_json() { return json::parse(read_text(data_path("compare_2r_4mb.json"))); }

// Results of the compare fixture kept by schedule name (gpipe is OOM; 1f1b and zb-h1 fit).
json compare_with(std::initializer_list<const char*> schedules) {
  json j = compare_json();
  json kept = json::array();
  for (const json& r : j["results"]) {
    for (const char* s : schedules) {
      if (r["schedule"] == s) kept.push_back(r);
    }
  }
  j["results"] = kept;
  return j;
}

// A result of N consecutive iterations (`--iterations N`): the table's iteration time and exposed
// communication are per iteration, (makespan + the last optimizer step) / N, as its throughput is.
TEST(ComparisonTable, TimesArePerIterationAcrossIterations) {
  json j = compare_with({"1f1b"});
  const ComparisonTable one = build_comparison({load_result(j, "c")});
  j["config"]["iterations"] = 2;
  j["config"]["optimizer_step"] = "overlap";
  const ReportInput two_in = load_result(j, "c");
  const ComparisonTable two = build_comparison({two_in});
  ASSERT_EQ(two.rows.size(), 1u);
  const Summary& m = two.rows[0].run->summary;
  EXPECT_DOUBLE_EQ(two.rows[0].value[kIterationTime], static_cast<double>(m.makespan_ns + m.optimizer_step_ns) / 1e6 / 2);
  EXPECT_DOUBLE_EQ(two.rows[0].value[kIterationTime], one.rows[0].value[kIterationTime] / 2);
  EXPECT_DOUBLE_EQ(two.rows[0].value[kExposedComm], one.rows[0].value[kExposedComm] / 2);
  EXPECT_EQ(config_iterations(two_in.config), 2);
  EXPECT_EQ(config_iterations(json::object()), 1);
  // A run result's `iterations` counts measured iterations, of which its timeline is one.
  EXPECT_EQ(config_iterations(json{{"iterations", 5}, {"backend", "cpu"}}), 1);
  bool stated = false;
  for (const ConfigRow& row : config_rows({two_in})) stated = stated || (row.label == "iterations" && row.values[0].starts_with("2 (optimizer step overlap)"));
  EXPECT_TRUE(stated);
}

// A compare result's vp 0 means "each schedule's own": the configuration table says so, not vp=0.
TEST(ConfigRows, VpZeroIsPerSchedule) {
  json j = compare_json();
  j["config"]["parallel"]["vp"] = 0;
  bool stated = false;
  for (const ConfigRow& row : config_rows({load_result(j, "c")})) {
    if (row.label == "parallel layout") {
      EXPECT_THAT(row.values[0], HasSubstr("vp=per schedule"));
      EXPECT_THAT(row.values[0], Not(HasSubstr("vp=0")));
      stated = true;
    }
  }
  EXPECT_TRUE(stated);
}

int best_marks(const ComparisonTable& t) {
  int n = 0;
  for (const TableRow& r : t.rows) {
    for (bool b : r.best) n += b ? 1 : 0;
  }
  return n;
}

TEST(BestValues, MarkedAmongRowsThatFitWhenAtLeastTwoDo) {
  const ReportInput in = load_result(compare_json(), "c");
  const ComparisonTable t = build_comparison({in});
  ASSERT_EQ(t.rows.size(), 3u);
  for (const TableRow& r : t.rows) {
    for (int c = 0; c < kNumMetrics; ++c) {
      if (r.oom) {
        EXPECT_FALSE(r.best[c]) << r.label << " column " << c;
      }
    }
  }
  for (int c = 0; c < kNumMetrics; ++c) {
    EXPECT_TRUE(t.rows[1].best[c] || t.rows[2].best[c]) << "column " << c << " has no best value";
  }
}

// One row fits and one does not: fewer than two rows fit, so nothing is best (docs/metrics.md).
// The lone fitting row used to be marked in every column.
TEST(BestValues, NoneWhenOnlyOneRowFits) {
  const ReportInput in = load_result(compare_with({"gpipe", "1f1b"}), "c");
  const ComparisonTable t = build_comparison({in});
  ASSERT_EQ(t.rows.size(), 2u);
  ASSERT_TRUE(t.rows[0].oom);
  ASSERT_FALSE(t.rows[1].oom);
  EXPECT_EQ(best_marks(t), 0);
  std::istringstream md(render_markdown({in}));
  for (std::string line; std::getline(md, line);) {
    if (line.rfind("| gpipe", 0) == 0 || line.rfind("| 1f1b", 0) == 0) {
      EXPECT_THAT(line, Not(HasSubstr("**")));
    }
  }
  EXPECT_EQ(testing::select(testing::scan_html(render_html({in})), "td", "best").size(), 0u);
}

// No row fits: nothing is best. Every row used to become eligible, so an OOM row was marked best.
TEST(BestValues, NoneWhenNoRowFits) {
  json j = compare_json();
  for (json& r : j["results"]) {
    if (r.contains("summary")) r["summary"]["oom"] = true;
  }
  const ReportInput in = load_result(j, "c");
  const ComparisonTable t = build_comparison({in});
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(best_marks(t), 0);
  EXPECT_EQ(testing::select(testing::scan_html(render_html({in})), "td", "best").size(), 0u);
}

TEST(BestValues, GroupedBySource) {
  // A run has one predicted and one measured row: two groups of one, so nothing is best.
  const ComparisonTable t = build_comparison({testing::fixture("run_1f1b_2r_3mb.json")});
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(best_marks(t), 0);
}

// The table keeps its own inputs: built from a temporary and copied, its rows still point at live
// results. It used to point into the caller's vector (a heap-use-after-free under ASan).
TEST(ComparisonTable, OwnsItsInputs) {
  ComparisonTable copy;
  {
    const ComparisonTable t = build_comparison({load_result(compare_json(), "c"), testing::fixture("run_1f1b_2r_3mb.json")});
    copy = t;
  }
  ASSERT_EQ(copy.inputs->size(), 2u);
  ASSERT_FALSE(copy.rows.empty());
  for (const TableRow& r : copy.rows) {
    EXPECT_GE(r.input, copy.inputs->data());
    EXPECT_LT(r.input, copy.inputs->data() + copy.inputs->size());
    EXPECT_EQ(r.schedule->schedule + (r.run->source == "simulated" ? "" : " (" + r.run->source + ")"), r.label);
  }
  ASSERT_EQ(copy.failed.size(), 1u);
  EXPECT_EQ(copy.failed[0].input->name, "c");
  ASSERT_EQ(copy.fidelity.size(), 1u);
  EXPECT_EQ(copy.fidelity[0].input->name, "run_1f1b_2r_3mb");
}

TEST(Footer, VerdictTextLeavesTheWordToTheRenderers) {
  const ReportInput compare = load_result(compare_json(), "c");
  const ReportInput run = testing::fixture("run_1f1b_2r_3mb.json");
  const ComparisonTable t = build_comparison({compare, run});
  ASSERT_EQ(t.footer.size(), 3u);
  EXPECT_FALSE(t.footer[0].judged);  // the count line
  EXPECT_TRUE(t.footer[1].judged);
  EXPECT_FALSE(t.footer[1].ok);      // gpipe is OOM
  EXPECT_TRUE(t.footer[2].judged);
  EXPECT_TRUE(t.footer[2].ok);
  for (const Verdict& v : t.footer) {
    EXPECT_THAT(v.text, Not(::testing::EndsWith("OK")));
    EXPECT_THAT(v.text, Not(::testing::EndsWith("FAILED")));
  }
  EXPECT_STREQ(verdict_word(t.footer[1]), "FAILED");
  EXPECT_STREQ(verdict_word(t.footer[2]), "OK");
  const std::string md = render_markdown({compare, run});
  EXPECT_THAT(md, HasSubstr("- " + t.footer[0].text + "\n"));
  EXPECT_THAT(md, HasSubstr("- " + t.footer[1].text + ": **FAILED**\n"));
  EXPECT_THAT(md, HasSubstr("- " + t.footer[2].text + ": **OK**\n"));
  const std::string html = render_html({compare, run});
  EXPECT_THAT(html, HasSubstr("class=\"verdict failed\">" + html_escape(t.footer[1].text) + ": <b>FAILED</b></td>"));
  EXPECT_THAT(html, HasSubstr("class=\"verdict ok\">" + html_escape(t.footer[2].text) + ": <b>OK</b></td>"));
}

TEST(Fidelity, ComputedOnceIntoTheTable) {
  const ReportInput run = testing::fixture("run_1f1b_2r_3mb.json");
  const ComparisonTable t = build_comparison({testing::fixture("simulate_1f1b_2r_3mb.json"), run});
  ASSERT_EQ(t.fidelity.size(), 1u);
  EXPECT_EQ(t.fidelity[0].input->name, run.name);
  EXPECT_EQ(t.fidelity[0].schedule, "1f1b");
  EXPECT_EQ(t.fidelity[0].makespan_error, "-3.76");
  EXPECT_EQ(t.fidelity[0].bubble_predicted, "25.50");
  EXPECT_EQ(t.fidelity[0].bubble_measured, "25.48");
  EXPECT_TRUE(t.fidelity[0].within);
}

// load() rejects a run without its comparison figures; an input built by hand that still lacks
// one (NaN) must fail the verdict. A run without makespan_error used to count as within the thresholds.
TEST(Fidelity, MissingFigureIsNeverWithin) {
  for (double FidelityReport::*figure :
       {&FidelityReport::makespan_error, &FidelityReport::bubble_predicted, &FidelityReport::bubble_measured}) {
    ReportInput run = testing::fixture("run_1f1b_2r_3mb.json");
    run.schedules[0].comparison->fidelity.*figure = std::nan("");
    const std::string key = figure == &FidelityReport::makespan_error     ? "makespan_error"
                            : figure == &FidelityReport::bubble_predicted ? "bubble_predicted"
                                                                          : "bubble_measured";
    const ComparisonTable t = build_comparison({run});
    ASSERT_EQ(t.fidelity.size(), 1u) << key;
    EXPECT_FALSE(t.fidelity[0].within) << key;
    ASSERT_EQ(t.footer.size(), 3u);
    EXPECT_FALSE(t.footer[2].ok) << key;
    EXPECT_THAT(t.footer[2].text, HasSubstr("0 of 1 runs within")) << key;
  }
  ReportInput run = testing::fixture("run_1f1b_2r_3mb.json");
  run.schedules[0].comparison.reset();
  const ComparisonTable t = build_comparison({run});
  ASSERT_EQ(t.fidelity.size(), 1u);
  EXPECT_FALSE(t.fidelity[0].within);
  EXPECT_EQ(t.fidelity[0].makespan_error, "-");
  EXPECT_EQ(t.fidelity[0].bubble_predicted, "-");
  EXPECT_EQ(t.fidelity[0].bubble_measured, "-");
}

TEST(Fidelity, ThresholdsDecide) {
  ReportInput run = testing::fixture("run_1f1b_2r_3mb.json");
  FidelityReport& f = run.schedules[0].comparison->fidelity;
  f.makespan_error = 0.051;
  EXPECT_FALSE(build_comparison({run}).fidelity[0].within);
  f.makespan_error = -0.05;
  EXPECT_TRUE(build_comparison({run}).fidelity[0].within);
  f.bubble_measured = 0.2;  // predicted 0.255
  EXPECT_FALSE(build_comparison({run}).fidelity[0].within);
}

TEST(Config, NameAndGpus) {
  EXPECT_EQ(config_name(json{{"gpu", {{"name", "h100"}}}}, "gpu"), "h100");
  EXPECT_EQ(config_name(json{{"gpu", "b200"}}, "gpu"), "b200");
  EXPECT_EQ(config_name(json{{"gpu", 3}}, "gpu"), "");
  EXPECT_EQ(config_name(json::object(), "model"), "");
  EXPECT_EQ(config_gpus(json{{"parallel", {{"gpus", 16}, {"world", 8}}}}), "16");
  EXPECT_EQ(config_gpus(json{{"parallel", {{"world", 8}}}}), "8");
  EXPECT_EQ(config_gpus(json{{"parallel", json::object()}}), "");
}

TEST(InputLabels, OneScheme) {
  EXPECT_THAT(input_labels({"h100", "b200"}), ElementsAre("h100", "b200"));
  EXPECT_THAT(input_labels({""}), ElementsAre("result"));
  EXPECT_THAT(input_labels({"", "", ""}), ElementsAre("result 1", "result 2", "result 3"));
  EXPECT_THAT(input_labels({"", "named"}), ElementsAre("result 1", "named"));
  // Repeated names fall back: to the given fallbacks, else "result N".
  EXPECT_THAT(input_labels({"result", "other", "result"}, {"a/result.json", "b/other.json", "c/result.json"}),
              ElementsAre("a/result.json", "other", "c/result.json"));
  EXPECT_THAT(input_labels({"x", "x"}), ElementsAre("result 1", "result 2"));
  EXPECT_THAT(input_labels({"x", "x"}, {"p"}), ElementsAre("p", "result 2"));
  EXPECT_TRUE(input_labels({}).empty());
}

TEST(InputLabels, WriteReportUsesThem) {
  const ReportInput same = load_result(compare_json(), "same"), h100 = load_result(compare_json(), "h100"),
                    unnamed = load_result(compare_json(), "");
  const std::string out = std::string(PIPELAB_BINARY_DIR) + "/test-artifacts/labels/two.csv";
  write_report({same, same}, out, "");
  std::string text = read_text(out);
  EXPECT_THAT(text, HasSubstr("\nresult 1,compare,gpipe"));
  EXPECT_THAT(text, HasSubstr("\nresult 2,compare,gpipe"));
  write_report({h100, unnamed}, out, "");
  text = read_text(out);
  EXPECT_THAT(text, HasSubstr("\nh100,compare,gpipe"));
  EXPECT_THAT(text, HasSubstr("\nresult 2,compare,gpipe"));
}

}  // namespace
}  // namespace pipelab::reports
