// HTML report structure, checked with a small element scanner: one g.rank per rank and one
// rect.action per timeline event, the comparison table's units row, best and OOM marks, failures,
// charts, self-containedness, escaping, and aggregation of large timelines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "pipelab/reports/render.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using testing::ancestor;
using testing::boxes_per_rank;
using testing::Element;
using testing::fixture;
using testing::scan_html;
using testing::select;

// The number of timeline events per (schedule, source, rank): what the page must draw.
std::map<std::tuple<std::string, std::string, int>, int> expected_boxes(const std::vector<ReportInput>& inputs) {
  std::map<std::tuple<std::string, std::string, int>, int> out;
  for (const ReportInput& in : inputs) {
    for (const ScheduleResult& s : in.schedules) {
      for (const TimelineResult& run : s.runs) {
        for (std::size_t r = 0; r < run.timeline.ranks.size(); ++r) {
          out[{s.schedule, run.source, static_cast<int>(r)}] = static_cast<int>(run.timeline.ranks[r].size());
        }
      }
    }
  }
  return out;
}

int count_if_attr(const std::vector<Element>& els, const std::vector<int>& idx, const std::string& k, const std::string& v) {
  int n = 0;
  for (int i : idx) n += els[static_cast<std::size_t>(i)].attr(k) == v ? 1 : 0;
  return n;
}

TEST(HtmlReport, SimulateHasOneRowPerRankAndOneBoxPerEvent) {
  const std::vector<ReportInput> in{fixture("simulate_1f1b_2r_3mb.json")};
  const auto els = scan_html(render_html(in));
  const auto svgs = select(els, "svg", "timeline");
  ASSERT_EQ(svgs.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(svgs[0])].attr("data-schedule"), "1f1b");
  EXPECT_EQ(els[static_cast<std::size_t>(svgs[0])].attr("data-ranks"), "2");
  EXPECT_EQ(els[static_cast<std::size_t>(svgs[0])].attr("data-aggregated"), "false");
  EXPECT_EQ(select(els, "g", "rank").size(), 2u);
  EXPECT_EQ(boxes_per_rank(els), expected_boxes(in));
  // Every box carries the tooltip data; compute boxes are coloured by op.
  for (int i : select(els, "rect", "action")) {
    const Element& e = els[static_cast<std::size_t>(i)];
    EXPECT_FALSE(e.attr("data-action").empty());
    EXPECT_FALSE(e.attr("data-start").empty());
    EXPECT_FALSE(e.attr("data-dur").empty());
  }
  EXPECT_EQ(select(els, "rect", "op-F").size(), 6u);
  EXPECT_EQ(select(els, "rect", "op-B").size(), 6u);
  EXPECT_EQ(select(els, "rect", "stream-send").size(), 6u);
  EXPECT_EQ(select(els, "rect", "stream-recv").size(), 6u);
  EXPECT_EQ(select(els, "rect", "stream-collective").size(), 2u);
  // Microbatch numbers fit in these 10-20 ms boxes.
  EXPECT_EQ(select(els, "text", "mb").size(), 12u);
  // A time axis with its unit.
  const auto axes = select(els, "g", "axis");
  ASSERT_EQ(axes.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(axes[0])].attr("data-unit"), "ms");
  EXPECT_GE(select(els, "text", "tick").size(), 5u);
}

// An action with phases gets a strip of one rect.phase per phase, its exposed communication in a
// rect.phase-exposed, and the legend explains them; results without phases draw none.
TEST(HtmlReport, PhaseStripUnderMoeActions) {
  ReportInput sim = fixture("simulate_1f1b_2r_3mb.json");
  EXPECT_EQ(render_html({sim}).find("class=\"phase"), std::string::npos);
  sim.schedules[0].runs[0].phases = {{Op::F, 0, -1, {{"attention & dense", 6'000'000, 0, 0}, {"dispatch", 4'000'000, 4'000'000, 4'000'000}}}};  // ns, as 0F0 runs them
  const std::string html = render_html({sim});
  const auto els = scan_html(html);
  const auto phases = select(els, "rect", "phase");
  ASSERT_EQ(phases.size(), 6u);  // 3 forwards of stage 0
  EXPECT_EQ(count_if_attr(els, phases, "data-phase", "dispatch"), 3);
  const Element& dispatch = els[static_cast<std::size_t>(phases[1])];
  EXPECT_EQ(dispatch.attr("data-of"), "0F0");
  EXPECT_EQ(dispatch.attr("data-dur"), "4000000");  // 0F0 runs 10 ms: 6 + 4 ms
  EXPECT_EQ(dispatch.attr("data-exposed"), "4000000");
  EXPECT_EQ(select(els, "rect", "phase-exposed").size(), 3u);
  EXPECT_THAT(html, HasSubstr("exposed communication</span>"));
  EXPECT_TRUE(select(els, "table", "phases").empty()) << "no totals, no table";

  sim.schedules[0].runs[0].phase_totals = {{"attention & dense", 9'000'000, 0, 0}, {"dispatch", 6'000'000, 6'000'000, 6'000'000}};
  const auto with_totals = scan_html(render_html({sim}));
  ASSERT_EQ(select(with_totals, "table", "phases").size(), 1u);
  int rows = 0;
  for (const Element& e : with_totals) rows += e.tag == "tr" && e.attr("data-phase") == "dispatch" ? 1 : 0;
  EXPECT_EQ(rows, 1);
}

TEST(HtmlReport, HeaderTablesAndCharts) {
  const std::string html = render_html({fixture("compare_2r_4mb.json")});
  const auto els = scan_html(html);
  // Configuration.
  const auto config = select(els, "table", "config");
  ASSERT_EQ(config.size(), 1u);
  EXPECT_THAT(html, HasSubstr("<td>gpt-tiny</td>"));
  EXPECT_THAT(html, HasSubstr("<td>h100-sxm</td>"));
  EXPECT_THAT(html, HasSubstr("tp=1 pp=2 vp=1 cp=1 ep=1 dp=4 (8 GPUs)"));
  EXPECT_THAT(html, HasSubstr("mbs=1 gbs=16 microbatches=4 seq=2048"));
  EXPECT_THAT(html, HasSubstr("gpipe, 1f1b, zb-h1, dualpipe"));
  // Comparison table: header, units row, one row per timeline, footer verdicts.
  ASSERT_EQ(select(els, "table", "comparison").size(), 1u);
  int units_rows = 0;
  for (int i : select(els, "tr", "units")) units_rows += ancestor(els, i, "table", "comparison") >= 0 ? 1 : 0;
  EXPECT_EQ(units_rows, 1);
  const auto rows = select(els, "tr", "result");
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(count_if_attr(els, rows, "data-schedule", "gpipe"), 1);
  // gpipe does not fit: flagged, and never "best".
  const auto oom_rows = select(els, "tr", "oom");
  ASSERT_EQ(oom_rows.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(oom_rows[0])].attr("data-schedule"), "gpipe");
  std::set<std::string> best_metrics;
  for (int i : select(els, "td", "best")) {
    EXPECT_EQ(ancestor(els, i, "tr", "oom"), -1) << "an OOM row is marked best";
    best_metrics.insert(els[static_cast<std::size_t>(i)].attr("data-metric"));
  }
  EXPECT_EQ(best_metrics.size(), 8u) << "every column has a best value";
  EXPECT_EQ(select(els, "span", "oom-badge").size(), 4u);  // table, stats line, both ranks in the per-rank table
  EXPECT_THAT(html, HasSubstr("memory: 2 of 3 fit in 16.00 GiB; over: gpipe: <b>FAILED</b>"));
  // The failed schedule with its error.
  const auto failed = select(els, "li", "failed");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(failed[0])].attr("data-schedule"), "dualpipe");
  EXPECT_THAT(html, HasSubstr("dualpipe needs microbatches &gt;= 2*pp = 4"));
  // Throughput bars, legend, a timeline and a memory chart per schedule that ran.
  EXPECT_EQ(select(els, "rect", "bar").size(), 3u);
  EXPECT_EQ(select(els, "rect", "oom").size(), 1u);
  EXPECT_EQ(select(els, "div", "legend").size(), 1u);
  EXPECT_EQ(select(els, "svg", "timeline").size(), 3u);
  EXPECT_EQ(select(els, "svg", "memory").size(), 3u);
  EXPECT_EQ(select(els, "polyline", "mem-line").size(), 6u);
  EXPECT_EQ(select(els, "line", "capacity").size(), 3u);
  EXPECT_EQ(boxes_per_rank(els), expected_boxes({fixture("compare_2r_4mb.json")}));
  // Zero-bubble boxes: I and W are drawn.
  EXPECT_EQ(select(els, "rect", "op-I").size(), 8u);
  EXPECT_EQ(select(els, "rect", "op-W").size(), 8u);
}

TEST(HtmlReport, RunDrawsMeasuredUnderPredictedOnOneAxis) {
  const std::vector<ReportInput> in{fixture("run_1f1b_2r_3mb.json")};
  const std::string html = render_html(in);
  const auto els = scan_html(html);
  const auto svgs = select(els, "svg", "timeline");
  ASSERT_EQ(svgs.size(), 1u);
  const auto runs = select(els, "g", "run");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(els[static_cast<std::size_t>(runs[0])].attr("data-source"), "predicted");
  EXPECT_EQ(els[static_cast<std::size_t>(runs[1])].attr("data-source"), "measured");
  EXPECT_EQ(select(els, "g", "axis").size(), 1u);
  // Each measured rank row lies below every predicted one.
  double lowest_predicted = 0, highest_measured = 1e9;
  for (int i : select(els, "rect", "lane")) {
    if (els[static_cast<std::size_t>(i)].has_class("comm-lane")) continue;
    const int g = ancestor(els, i, "g", "rank");
    const double y = std::stod(els[static_cast<std::size_t>(i)].attr("y"));
    if (els[static_cast<std::size_t>(g)].attr("data-source") == "predicted") lowest_predicted = std::max(lowest_predicted, y);
    else highest_measured = std::min(highest_measured, y);
  }
  EXPECT_LT(lowest_predicted, highest_measured);
  EXPECT_EQ(boxes_per_rank(els), expected_boxes(in));
  // Predicted vs measured table, from the result's comparison.
  ASSERT_EQ(select(els, "table", "fidelity").size(), 1u);
  EXPECT_THAT(html, HasSubstr("-3.76"));
  EXPECT_THAT(html, HasSubstr("passed (max rel 3.20e-07)"));
  // The measured side has no memory samples: one memory chart (predicted).
  EXPECT_EQ(select(els, "svg", "memory").size(), 1u);
}

TEST(HtmlReport, SelfContained) {
  const std::string html = render_html({fixture("compare_2r_4mb.json"), fixture("run_1f1b_2r_3mb.json")});
  for (const char* remote : {"http://", "https://", "<link", " src=", "@import", "url(http"}) {
    EXPECT_EQ(html.find(remote), std::string::npos) << remote;
  }
  EXPECT_THAT(html, HasSubstr("<style>"));
  EXPECT_THAT(html, HasSubstr("<script>"));
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
}

TEST(HtmlReport, TwoInputsAreLabelled) {
  const auto els = scan_html(render_html({fixture("simulate_1f1b_2r_3mb.json"), fixture("run_1f1b_2r_3mb.json")}));
  const auto config = select(els, "table", "config");
  ASSERT_EQ(config.size(), 1u);
  std::set<std::string> inputs;
  for (int i : select(els, "tr", "result")) inputs.insert(els[static_cast<std::size_t>(i)].attr("data-input"));
  EXPECT_EQ(inputs, (std::set<std::string>{"simulate_1f1b_2r_3mb", "run_1f1b_2r_3mb"}));
  EXPECT_EQ(select(els, "svg", "timeline").size(), 2u);
}

TEST(HtmlReport, TextIsEscaped) {
  json j = json::parse(testing::read_text(testing::data_path("compare_2r_4mb.json")));
  j["results"][3]["error"] = "<script>alert(1)</script> & \"quotes\"";
  j["config"]["model"]["name"] = "<b>model</b>";
  const std::string html = render_html({load_result(j, "x<y")});
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_THAT(html, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt; &amp; &quot;quotes&quot;"));
  EXPECT_THAT(html, HasSubstr("&lt;b&gt;model&lt;/b&gt;"));
  EXPECT_EQ(html.find("x<y"), std::string::npos);
}

// (x, label) of the time-axis ticks of one SVG: in svg.timeline the g.axis texts, in svg.memory the
// texts below the plot (the GiB ticks sit left of it, the legend above).
std::vector<std::pair<std::string, std::string>> time_ticks_of(const std::vector<Element>& els, int svg) {
  const bool memory = els[static_cast<std::size_t>(svg)].has_class("memory");
  std::vector<std::pair<std::string, std::string>> out;
  for (int i : select(els, "text", "tick")) {
    if (ancestor(els, i, "svg", memory ? "memory" : "timeline") != svg) continue;
    const Element& e = els[static_cast<std::size_t>(i)];
    if (memory ? e.attr("y") != "171" : ancestor(els, i, "g", "axis") < 0) continue;
    out.emplace_back(e.attr("x"), e.text);
  }
  return out;
}

// One schedule, one time axis: the timeline and the memory chart map a time to the same x. The
// timeline's range used to include the summary makespan and the memory chart's the last sample,
// each not the other's.
TEST(HtmlReport, MemoryChartUsesTheTimelineAxis) {
  for (const char* edit : {"summary makespan", "late sample"}) {
    json j = json::parse(testing::read_text(testing::data_path("simulate_1f1b_2r_3mb.json")));
    if (std::string(edit) == "summary makespan") {
      j["summary"]["makespan_ns"] = 180'000'000;  // beyond the last event (123.8 ms)
    } else {
      j["memory"][1]["samples"].push_back({150'000'000, 10'737'418'240LL});
    }
    const auto els = scan_html(render_html({load_result(j, "s")}));
    const auto timeline = select(els, "svg", "timeline");
    const auto memory = select(els, "svg", "memory");
    ASSERT_EQ(timeline.size(), 1u);
    ASSERT_EQ(memory.size(), 1u);
    const std::string end = els[static_cast<std::size_t>(timeline[0])].attr("data-end-ns");
    EXPECT_EQ(end, std::string(edit) == "summary makespan" ? "180000000" : "150000000") << edit;
    EXPECT_EQ(els[static_cast<std::size_t>(memory[0])].attr("data-end-ns"), end) << edit;
    const auto ticks = time_ticks_of(els, timeline[0]);
    EXPECT_GE(ticks.size(), 3u) << edit;
    EXPECT_EQ(time_ticks_of(els, memory[0]), ticks) << edit;
  }
}

// The memory chart's tooltip shows the peak the result states (summary, else the rank's row), not
// one derived from the samples; with neither, no peak.
TEST(HtmlReport, MemoryTooltipShowsTheStatedPeak) {
  auto tips = [](const json& j) {
    std::map<std::string, std::string> out;
    const auto els = scan_html(render_html({load_result(j, "s")}));
    for (int i : select(els, "polyline", "mem-line")) {
      out[els[static_cast<std::size_t>(i)].attr("data-rank")] = els[static_cast<std::size_t>(i)].attr("data-tip");
    }
    return out;
  };
  json j = json::parse(testing::read_text(testing::data_path("simulate_1f1b_2r_3mb.json")));
  j["summary"]["peak_memory_bytes"] = json::array({20 * 1073741824LL});  // rank 0 only; samples peak at 14 GiB
  j["ranks"][1]["peak_memory_bytes"] = 13 * 1073741824LL;
  EXPECT_EQ(tips(j), (std::map<std::string, std::string>{{"0", "rank 0: peak memory 20.00 GiB"},
                                                         {"1", "rank 1: peak memory 13.00 GiB"}}));
  j["summary"]["peak_memory_bytes"] = json::array();
  j.erase("ranks");
  EXPECT_EQ(tips(j), (std::map<std::string, std::string>{{"0", "rank 0"}, {"1", "rank 1"}}));
}

// Uniform costs model no memory (every rank's memory figures 0): the per-rank table says "-", not 0.00 GiB.
TEST(HtmlReport, RankTableStatesNoMemoryUnderUniformCosts) {
  auto memory_cells = [](const json& j) {
    const std::string html = render_html({load_result(j, "s")});
    const std::size_t table = html.find("<table class=\"ranks\"");
    const std::string row = html.substr(html.find("<tr data-rank=\"0\">", table));
    return row.substr(0, row.find("</tr>"));
  };
  json j = json::parse(testing::read_text(testing::data_path("simulate_1f1b_2r_3mb.json")));
  EXPECT_THAT(memory_cells(j), HasSubstr(">2.00</td>"));  // weights, as simulated
  for (json& rank : j["ranks"]) {
    for (const char* field : {"params_bytes", "grads_bytes", "optimizer_bytes", "comm_buffers_bytes", "static_memory_bytes",
                              "peak_activation_bytes", "peak_memory_bytes"}) {
      rank[field] = 0;
    }
  }
  j["summary"]["peak_memory_bytes"] = json::array({0, 0});
  const std::string row = memory_cells(j);
  EXPECT_THAT(row, ::testing::Not(HasSubstr(">0.00</td>")));
  EXPECT_THAT(row, HasSubstr("<td class=\"num\">-</td>"));
}

// A synthetic 1F1B-like timeline: P ranks, m microbatches, F 1 ms, B 2 ms, P2P 50 us.
json large_result(int pp, int m) {
  json timeline = json::array();
  for (int r = 0; r < pp; ++r) {
    std::int64_t t = static_cast<std::int64_t>(r) * 1'000'000;
    auto add = [&](const std::string& action, const char* stream, std::int64_t start, std::int64_t dur) {
      timeline.push_back({{"rank", r}, {"action", action}, {"stream", stream}, {"start_ns", start},
                          {"end_ns", start + dur}, {"bytes", 1 << 20}, {"flops", 1e12}});
    };
    for (int mb = 0; mb < m; ++mb) {
      add(std::to_string(r) + "F" + std::to_string(mb), "compute", t, 1'000'000);
      if (r + 1 < pp) add(std::to_string(r) + "SEND_F" + std::to_string(mb), "send", t + 1'000'000, 50'000);
      t += 1'000'000;
      add(std::to_string(r) + "B" + std::to_string(mb), "compute", t, 2'000'000);
      if (r > 0) add(std::to_string(r) + "SEND_B" + std::to_string(mb), "send", t + 2'000'000, 50'000);
      t += 2'000'000;
    }
  }
  json peaks = json::array();
  json memory = json::array();
  for (int r = 0; r < pp; ++r) {
    peaks.push_back(40'000'000'000LL);
    json samples = json::array();
    for (int k = 0; k < 2 * m; ++k) samples.push_back({static_cast<std::int64_t>(k) * 1'500'000, 30'000'000'000LL + (k % 2) * 1'000'000'000LL});
    memory.push_back({{"rank", r}, {"samples", samples}});
  }
  return {{"format", "pipelab.result"},
          {"version", 1},
          {"kind", "simulate"},
          {"config", {{"schedule", "1f1b"}}},
          {"summary",
           {{"makespan_ns", (3LL * m + pp) * 1'000'000}, {"bubble_ratio", 0.01}, {"tflops_per_gpu", 400.0},
            {"mfu", 0.4}, {"tokens_per_s_per_gpu", 1000.0}, {"peak_memory_bytes", peaks}, {"exposed_comm_ns", 0},
            {"memory_capacity_bytes", 80'000'000'000LL}, {"oom", false}, {"model_flops", 1e18},
            {"tokens_per_iteration", 1 << 20}}},
          {"timeline", timeline},
          {"memory", memory}};
}

TEST(HtmlReport, LargeTimelineIsAggregatedAndSmall) {
  const ReportInput in = load_result(large_result(8, 2048), "large");
  const std::string html = render_html({in});
  EXPECT_LT(html.size(), 3u * 1024 * 1024) << "PP=8 m=2048 report is " << html.size() << " bytes";
  const auto els = scan_html(html);
  const auto svgs = select(els, "svg", "timeline");
  ASSERT_EQ(svgs.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(svgs[0])].attr("data-aggregated"), "true");
  EXPECT_EQ(select(els, "g", "rank").size(), 8u);
  const auto bands = select(els, "rect", "band");
  ASSERT_EQ(bands.size(), 8u);
  for (const auto& [key, n] : boxes_per_rank(els)) EXPECT_LE(n, 600) << "rank " << std::get<2>(key);
  // The memory chart shares the broken axis: same range, same ticks, the same break marks.
  const auto memory = select(els, "svg", "memory");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_EQ(els[static_cast<std::size_t>(memory[0])].attr("data-end-ns"), els[static_cast<std::size_t>(svgs[0])].attr("data-end-ns"));
  EXPECT_EQ(time_ticks_of(els, memory[0]), time_ticks_of(els, svgs[0]));
  int breaks_timeline = 0, breaks_memory = 0;
  for (int i : select(els, "path", "break")) {
    breaks_timeline += ancestor(els, i, "svg", "timeline") >= 0 ? 1 : 0;
    breaks_memory += ancestor(els, i, "svg", "memory") >= 0 ? 1 : 0;
  }
  EXPECT_EQ(breaks_timeline, 2);
  EXPECT_EQ(breaks_memory, 2);
  // Every compute action is drawn or counted in its rank's band.
  for (int b : bands) {
    const int g = ancestor(els, b, "g", "rank");
    const int rank = std::stoi(els[static_cast<std::size_t>(g)].attr("data-rank"));
    int drawn_compute = 0;
    for (int i : select(els, "rect", "action")) {
      if (ancestor(els, i, "g", "rank") == g && !els[static_cast<std::size_t>(i)].has_class("stream-send")) ++drawn_compute;
    }
    EXPECT_EQ(drawn_compute + std::stoi(els[static_cast<std::size_t>(b)].attr("data-count")), 2 * 2048) << "rank " << rank;
  }
}

TEST(HtmlReport, MediumTimelineIsDrawnInFull) {
  const ReportInput in = load_result(large_result(4, 256), "medium");
  const auto els = scan_html(render_html({in}));
  EXPECT_EQ(select(els, "rect", "band").size(), 0u);
  EXPECT_EQ(boxes_per_rank(els), expected_boxes({in}));
}

}  // namespace
}  // namespace pipelab::reports
