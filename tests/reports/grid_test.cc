// Small pieces: the text timeline derived from a Timeline, number formatting, format names.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "csv.h"
#include "format.h"
#include "html.h"
#include "timeline_view.h"
#include "pipelab/base/error.h"
#include "pipelab/reports/render.h"

namespace pipelab::reports {
namespace {

using detail::timeline_text_grid;

TimelineEvent ev(const std::string& action, std::int64_t start, std::int64_t end, Stream s = Stream::Compute) {
  TimelineEvent e;
  e.action = parse_action(action).value();
  e.stream = s;
  e.start_ns = start;
  e.end_ns = end;
  return e;
}

TEST(TextGrid, UniformOneFOneBIsLockStep) {
  // 1F1B, P=2, m=2, F=1, B=2, no communication time.
  Timeline t;
  t.ranks = {{ev("0F0", 0, 1), ev("0F1", 1, 2), ev("0SEND_F1", 2, 2, Stream::Send), ev("0B0", 4, 6), ev("0B1", 7, 9)},
             {ev("1F0", 1, 2), ev("1B0", 2, 4), ev("1F1", 4, 5), ev("1B1", 5, 7)}};
  const auto grid = timeline_text_grid(t);
  const std::vector<std::vector<std::string>> expected{{"0F0", "0F1", ".", "0B0", ".", "0B1"},
                                                       {".", "1F0", "1B0", "1F1", "1B1", "."}};
  EXPECT_EQ(grid, expected);
}

TEST(TextGrid, OverlapUnitsUseCompactLabels) {
  Timeline t;
  t.ranks = {{ev("0F0", 0, 1), ev("(0F1;1B0)OVERLAP_F_B", 1, 3)}};
  EXPECT_EQ(timeline_text_grid(t), (std::vector<std::vector<std::string>>{{"0F0", "0F1&1B0"}}));
}

TEST(TextGrid, EmptyAndZeroLength) {
  EXPECT_TRUE(timeline_text_grid(Timeline{}).empty());
  Timeline t;
  t.ranks = {{ev("0F0", 0, 0), ev("0F1", 0, 0)}, {}};
  const auto grid = timeline_text_grid(t);
  ASSERT_EQ(grid.size(), 2u);
  EXPECT_EQ(grid[0], (std::vector<std::string>{"0F0", "0F1"}));
  EXPECT_EQ(grid[1], (std::vector<std::string>{".", "."}));
}

TEST(Formatting, FixedNeverPrintsNegativeZeroOrNan) {
  EXPECT_EQ(detail::fixed(-0.0001, 2), "0.00");
  EXPECT_EQ(detail::fixed(1.005, 1), "1.0");
  EXPECT_EQ(detail::fixed(std::nan(""), 2), "-");
  EXPECT_EQ(detail::fixed(1.0 / 0.0, 2), "-");
  EXPECT_EQ(detail::decimals_for(0), 2);
  EXPECT_EQ(detail::decimals_for(2084.7, 5), 1);
  EXPECT_EQ(detail::decimals_for(404.5), 1);
  EXPECT_EQ(detail::decimals_for(0.0123), 5);
  EXPECT_EQ(detail::with_commas(1234567), "1,234,567");
  EXPECT_EQ(detail::with_commas(-12), "-12");
  EXPECT_EQ(detail::csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(detail::csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(detail::html_escape("<a href='x'>&"), "&lt;a href=&#39;x&#39;&gt;&amp;");
}

TEST(Formatting, NiceTicks) {
  EXPECT_EQ(detail::nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(detail::nice_ticks(0, 0, 5), std::vector<double>{});
  EXPECT_EQ(detail::nice_ticks(0, 1.3, 3), (std::vector<double>{0, 0.5, 1}));
  EXPECT_STREQ(detail::time_unit_for(123'800'000).ascii, "ms");
  EXPECT_STREQ(detail::time_unit_for(2'084'698'743).ascii, "ms");
  EXPECT_STREQ(detail::time_unit_for(12'000'000'000).ascii, "s");
  EXPECT_STREQ(detail::time_unit_for(60'000).ascii, "us");
  EXPECT_STREQ(detail::time_unit_for(0).ascii, "ns");
}

TEST(Formats, FromPathAndName) {
  EXPECT_EQ(format_from_path("out/report.html"), Format::Html);
  EXPECT_EQ(format_from_path("R.HTM"), Format::Html);
  EXPECT_EQ(format_from_path("pr.md"), Format::Markdown);
  EXPECT_EQ(format_from_path("table.csv"), Format::SummaryCsv);
  EXPECT_EQ(format_from_path("actions.timeline.csv"), Format::TimelineCsv);
  EXPECT_EQ(format_from_path("trace.json"), Format::Trace);
  EXPECT_THROW(format_from_path("report.txt"), InputError);
  EXPECT_THROW(format_from_path("report"), InputError);
  EXPECT_EQ(format_from_name("markdown"), Format::Markdown);
  EXPECT_EQ(format_from_name("timeline-csv"), Format::TimelineCsv);
  for (Format f : {Format::Html, Format::Markdown, Format::SummaryCsv, Format::TimelineCsv, Format::Trace}) {
    EXPECT_EQ(format_from_name(format_name(f)), f);
  }
  try {
    format_from_name("pdf");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("valid formats: html, md, csv, timeline-csv, trace"));
  }
  try {
    format_from_path("report.txt");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("(use .html, .md, .csv, .timeline.csv or .json, or --format "
                                               "html|md|csv|timeline-csv|trace)"));
  }
  EXPECT_THAT(format_names(), ::testing::ElementsAre("html", "md", "markdown", "csv", "timeline-csv", "trace"));
}

TEST(Formats, FidelityThresholdsText) {
  EXPECT_EQ(fidelity_thresholds_text(), "|makespan error| <= 5% and |bubble predicted - measured| <= 0.02");
  EXPECT_EQ(fidelity_thresholds_text(", "), "|makespan error| <= 5%, |bubble predicted - measured| <= 0.02");
}

}  // namespace
}  // namespace pipelab::reports
