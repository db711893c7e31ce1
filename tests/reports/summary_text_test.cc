// The terminal summary of simulate and compare (reports/summary_text.cc): printed from the
// comparison table, so its best schedule is the table's best tokens/s/GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "pipelab/reports/render.h"
#include "table_model.h"
#include "test_support.h"

namespace pipelab::reports {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(SummaryText, RowsInScheduleOrderAndTheTablesBest) {
  const ReportInput compare = testing::fixture("compare_2r_4mb.json");
  const std::string text = render_summary_text({compare});
  const detail::ComparisonTable t = detail::build_comparison({compare});
  const detail::TableRow* best = nullptr;
  for (const detail::TableRow& r : t.rows) {
    if (r.best[detail::kTokens] && !best) best = &r;
  }
  ASSERT_NE(best, nullptr);
  EXPECT_THAT(text, HasSubstr("# best fitting schedule: " + best->label + " ("));
  // One line per schedule, the failed one where it was asked for.
  std::vector<std::string> order;
  for (const ScheduleResult& s : compare.schedules) order.push_back("  " + s.schedule + " ");
  std::size_t at = 0;
  for (const std::string& s : order) {
    const std::size_t found = text.find(s, at);
    ASSERT_NE(found, std::string::npos) << s;
    at = found;
  }
  EXPECT_THAT(text, HasSubstr("  dualpipe  not applicable: "));
  EXPECT_THAT(text, HasSubstr("# memory: 2 of 3 fit in 16.00 GiB; over: gpipe: FAILED"));
}

// The reports' rule: with fewer than two schedules that fit, none is called best.
TEST(SummaryText, NoBestWithFewerThanTwoFitting) {
  const std::string one = render_summary_text({testing::fixture("simulate_1f1b_2r_3mb.json")});
  EXPECT_THAT(one, Not(HasSubstr("best")));
  EXPECT_THAT(one, HasSubstr("# memory: 1 of 1 fits in 16.00 GiB: OK\n"));
  ReportInput none = testing::fixture("compare_2r_4mb.json");
  for (ScheduleResult& s : none.schedules) {
    for (TimelineResult& run : s.runs) run.summary.oom = true;
  }
  EXPECT_THAT(render_summary_text({none}), HasSubstr("# no schedule fits in memory\n"));
  ReportInput failed = testing::fixture("compare_2r_4mb.json");
  failed.schedules.erase(failed.schedules.begin(), failed.schedules.begin() + 3);
  EXPECT_THAT(render_summary_text({failed}), HasSubstr("# no schedule is applicable to this configuration\n"));
}

// A result with phases gets a line of them per schedule, time per rank with the exposed part.
TEST(SummaryText, PhasesPerRank) {
  ReportInput sim = testing::fixture("simulate_1f1b_2r_3mb.json");
  EXPECT_EQ(render_summary_text({sim}).find("MoE phases"), std::string::npos);
  sim.schedules[0].runs[0].phase_totals = {{"attention & dense", 9'000'000, 0, 0}, {"dispatch", 6'000'000, 6'000'000, 6'000'000}};
  EXPECT_THAT(render_summary_text({sim}), HasSubstr("#   1f1b               attention & dense 9.000 ms, dispatch 6.000 ms (exposed 6.000 ms)\n"));
}

// Communication inside compute is listed only where some was exposed: none, no "in compute" clause.
TEST(SummaryText, CommunicationInComputeOnlyWhenNotZero) {
  ReportInput sim = testing::fixture("simulate_1f1b_2r_3mb.json");
  Summary& s = sim.schedules[0].runs[0].summary;
  s.exposed_tp_comm_ns = s.exposed_ep_comm_ns = s.exposed_cp_comm_ns = s.exposed_fsdp_comm_ns = 0;
  EXPECT_THAT(render_summary_text({sim}), Not(HasSubstr("in compute:")));
  s.exposed_ep_comm_ns = 2'000'000;
  EXPECT_THAT(render_summary_text({sim}), HasSubstr("; in compute: EP 2.000 ms"));
  s.exposed_tp_comm_ns = 1'000'000;
  EXPECT_THAT(render_summary_text({sim}), HasSubstr("; in compute: TP 1.000 ms, EP 2.000 ms"));
  // A timeline of two iterations: per iteration, as the table's times.
  sim.config["iterations"] = 2;
  sim.config["optimizer_step"] = "sync";
  EXPECT_THAT(render_summary_text({sim}), HasSubstr("; in compute: TP 0.500 ms, EP 1.000 ms"));
}

// MFU is against the BF16 peak at every precision: past 100 % a footnote says why; under it, none.
TEST(SummaryText, MfuAboveOneHundredPercentIsExplained) {
  ReportInput cmp = testing::fixture("compare_2r_4mb.json");
  EXPECT_THAT(render_summary_text({cmp}), Not(HasSubstr("MFU above 100%")));
  cmp.schedules[1].runs[0].summary.mfu = 1.25;
  EXPECT_THAT(render_summary_text({cmp}), HasSubstr("# MFU above 100%: it is against the GPU's dense BF16 peak at every precision"));
}

}  // namespace
}  // namespace pipelab::reports
