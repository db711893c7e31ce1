// Timeline JSON round trip and errors.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab {
namespace {

TEST(Timeline, RoundTripsThroughJson) {
  Timeline t;
  t.ranks.resize(2);
  t.ranks[0].push_back({Action::make(Op::F, 0, 0), Stream::Compute, 0, 100, 4096, 1e9});
  t.ranks[0].push_back({Action::make(Op::SendF, 0, 0), Stream::Send, 100, 150, 4096, 0});
  t.ranks[1].push_back({Action::overlap(1, 0, 2, 1), Stream::Compute, 150, 400, 0, 2e9});
  EXPECT_EQ(t.makespan_ns(), 400);
  EXPECT_EQ(timeline_from_json(timeline_to_json(t)), t);
}

TEST(Timeline, ErrorsNameTheRecordAndField) {
  auto j = nlohmann::json::parse(R"([{"rank":0,"action":"0F0","stream":"compute","start_ns":0,"end_ns":5},
                                     {"rank":0,"action":"0F1","stream":"compute","start_ns":9}])");
  try {
    timeline_from_json(j);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "timeline[1]: missing field \"end_ns\"");
  }
  j = nlohmann::json::parse(R"([{"rank":0,"action":"0F0","stream":"gpu","start_ns":0,"end_ns":5}])");
  EXPECT_THROW(timeline_from_json(j), InputError);
  j = nlohmann::json::parse(R"([{"rank":0,"action":"0F0","stream":"compute","start_ns":9,"end_ns":5}])");
  EXPECT_THROW(timeline_from_json(j), InputError);
}

TEST(Timeline, ReadsEventsStrictly) {
  auto message = [](const char* text) {
    try {
      timeline_from_json(nlohmann::json::parse(text));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(R"([{"rank":0,"action":"0F0","stream":"gpu","start_ns":0,"end_ns":5}])"),
            "timeline[0]: field stream='gpu' must be one of: compute, send, recv, collective");
  EXPECT_NE(message(R"([{"rank":0,"action":"0F0","stream":"send","start_ns":0,"end_ns":5,"byte":8}])")
                .find("timeline[0]: unknown field \"byte\" (did you mean \"bytes\"?)"),
            std::string::npos);
  EXPECT_EQ(message(R"([{"rank":-1,"action":"0F0","stream":"send","start_ns":0,"end_ns":5}])"),
            "timeline[0]: field \"rank\" must be in [0, 1048575], got -1");
  EXPECT_EQ(message(R"([{"rank":0,"action":"0F0","stream":"send","start_ns":9,"end_ns":5}])"),
            "timeline[0]: field \"end_ns\" is before start_ns");
}

// Phases tile their event: consecutive spans from its start to its end. When the event is longer than
// the cost model's phases (its compute slowed by a collective beside it), the exposed communication keeps
// the model's figure and the rest stretches; the exposed part stays inside its span.
TEST(LayOutPhases, SpansTileTheEventInProportion) {
  const ActionPhases kind{Op::OverlapFB, 1, 6, {{"a", 300, 0, 0}, {"b", 100, 100, 100}, {"c", 600, 200, 50}}};
  TimelineEvent e{.action = Action::overlap(1, 4, 6, 2), .start_ns = 1000, .end_ns = 3000};
  EXPECT_TRUE(kind.matches(e.action));
  EXPECT_FALSE(kind.matches(Action::overlap(1, 4, 5, 2)));
  EXPECT_FALSE(kind.matches(Action::make(Op::F, 1, 4)));
  // 2,000 ns against the phases' 1,000: exposed 100 + 50 kept, the other 850 stretched to 1,850.
  const std::vector<PhaseSpan> spans = lay_out_phases(e, kind);
  ASSERT_EQ(spans.size(), 3u);
  const double k = 1850.0 / 850;
  EXPECT_EQ(spans[0].start_ns, 1000);
  EXPECT_EQ(spans[0].end_ns, 1000 + std::llround(300 * k));
  EXPECT_EQ(spans[1].start_ns, spans[0].end_ns);
  EXPECT_EQ(spans[1].end_ns, spans[1].start_ns + 100);  // all exposed: not stretched
  EXPECT_EQ(spans[1].exposed_ns, 100);
  EXPECT_EQ(spans[2].start_ns, spans[1].end_ns);
  EXPECT_EQ(spans[2].end_ns, 3000);
  EXPECT_EQ(spans[2].exposed_ns, 50);
  EXPECT_EQ(spans[2].phase->name, "c");
  // Rounding never leaves a gap or passes the end.
  e.end_ns = 1007;
  const std::vector<PhaseSpan> small = lay_out_phases(e, kind);
  for (std::size_t i = 1; i < small.size(); ++i) EXPECT_EQ(small[i].start_ns, small[i - 1].end_ns);
  EXPECT_EQ(small.back().end_ns, 1007);
  for (const PhaseSpan& p : small) EXPECT_LE(p.exposed_ns, p.end_ns - p.start_ns);
  EXPECT_TRUE(lay_out_phases(e, ActionPhases{Op::F, 0, -1, {{"empty", 0, 0, 0}}}).empty());
  const std::vector<ActionPhases> kinds{ActionPhases{Op::F, 0, -1, {}}, kind};
  EXPECT_EQ(find_phases(kinds, Action::overlap(1, 9, 6, 8)), &kinds[1]);
  EXPECT_EQ(find_phases(kinds, Action::make(Op::B, 0, 0)), nullptr);
}

// Totals per phase name: summed over every event of the kind on each rank, then the mean over the
// ranks (a rank without such events counts); other events and streams add nothing.
TEST(PhaseTotals, SumOverEventsMeanOverRanks) {
  const std::vector<ActionPhases> kinds{{Op::F, 0, -1, {{"attention & dense", 6, 0, 0}, {"dispatch", 4, 4, 4}}},
                                        {Op::B, 1, -1, {{"combine", 5, 5, 5}, {"attention & dense", 5, 0, 0}}}};
  Timeline t;
  t.ranks.resize(2);
  t.ranks[0] = {{.action = Action::make(Op::F, 0, 0), .start_ns = 0, .end_ns = 10},
                {.action = Action::make(Op::F, 0, 1), .start_ns = 10, .end_ns = 30},
                {.action = Action::make(Op::SendF, 0, 1), .stream = Stream::Send, .start_ns = 30, .end_ns = 40}};
  t.ranks[1] = {{.action = Action::make(Op::B, 1, 0), .start_ns = 40, .end_ns = 50},
                {.action = Action::make(Op::F, 1, 0), .start_ns = 50, .end_ns = 60}};
  const std::vector<Phase> totals = phase_totals(t, kinds);
  ASSERT_EQ(totals.size(), 3u);
  // Stage 0's forwards: 30 ns for phases of 2 x 10; the exposed dispatch keeps 2 x 4, the attention
  // takes the other 22. Stage 1's backward: 10 ns as its phases. (22 + 5) / 2 = 13.5 rounds to 14.
  EXPECT_EQ(totals[0], (Phase{"attention & dense", 14, 0, 0}));
  EXPECT_EQ(totals[1], (Phase{"dispatch", (4 + 4) / 2, 4, (4 + 4) / 2}));
  EXPECT_EQ(totals[2], (Phase{"combine", 3, 3, 3}));                            // 2.5 rounds to 3
  EXPECT_TRUE(phase_totals(t, {}).empty());
}

}  // namespace
}  // namespace pipelab
