// Timeline JSON round trip and errors.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace pipelab
