// CSV (both PyTorch flavours) and JSON: round trips for every generator, and located errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "pipelab/base/error.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/validate.h"
#include "schedule_grid.h"

namespace pipelab {
namespace {

class FormatsRoundTrip : public ::testing::TestWithParam<testing::GridCase> {
 protected:
  Schedule make() const {
    const auto& c = GetParam();
    return make_schedule(c.schedule, {c.pp, c.vp, c.microbatches, 0});
  }
};

TEST_P(FormatsRoundTrip, Json) {
  const Schedule s = make();
  auto back = parse_json(to_json_text(s));
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back.value(), s);
}

TEST_P(FormatsRoundTrip, CsvComputeOnly) {
  const Schedule s = make();
  if (s.shape.chains != 1) GTEST_SKIP() << "CSV carries no chains; DualPipe round-trips through JSON";
  auto back = parse_csv(to_csv(s), CsvFormat::ComputeOnly, s.name);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  // The shape is inferred from the cells; the placement is recognised (with one rank, Loop and V
  // are the same map, and Loop is reported).
  EXPECT_EQ(back.value().shape.stage_to_rank, s.shape.stage_to_rank);
  if (s.shape.ranks > 1) {
    EXPECT_EQ(back.value().shape, s.shape);
  }
  EXPECT_EQ(back.value().ranks, s.ranks);
}

TEST_P(FormatsRoundTrip, CsvComputeComms) {
  const Schedule s = make();
  if (s.shape.chains != 1) GTEST_SKIP() << "CSV carries no chains; DualPipe round-trips through JSON";
  const Schedule lowered = add_send_recv(s);
  auto back = parse_csv(to_csv(lowered), CsvFormat::ComputeComms, s.name);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(back.value().ranks, lowered.ranks);
  EXPECT_TRUE(validate(back.value()).ok());
}

INSTANTIATE_TEST_SUITE_P(Grid, FormatsRoundTrip, ::testing::ValuesIn(testing::schedule_grid()),
                         [](const auto& info) { return testing::grid_case_name(info.param); });

TEST(Csv, InfersExplicitPlacement) {
  auto s = parse_csv("0F0,0B0\n1F0,2F0,2B0,1B0\n", CsvFormat::ComputeOnly);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s.value().shape.placement, Placement::Explicit);
  EXPECT_EQ(s.value().shape.stage_to_rank, (std::vector<int>{0, 1, 1}));
}

TEST(Csv, AcceptsQuotedCellsAndCrlf) {
  auto s = parse_csv("\"0F0\",0B0\r\n", CsvFormat::ComputeOnly);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s.value().action_count(), 2u);
}

struct BadCsv {
  const char* text;
  CsvFormat format;
  int line, column;
  const char* expected;
};

class CsvErrors : public ::testing::TestWithParam<BadCsv> {};

TEST_P(CsvErrors, AreLocated) {
  const BadCsv& c = GetParam();
  auto s = parse_csv(c.text, c.format);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().line, c.line) << s.error().to_string();
  EXPECT_EQ(s.error().column, c.column) << s.error().to_string();
  EXPECT_NE(s.error().message.find(c.expected), std::string::npos) << s.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    All, CsvErrors,
    ::testing::Values(BadCsv{"0F0,0B0\n1F0,1Q0\n", CsvFormat::ComputeOnly, 2, 6, "expected an op"},
                      BadCsv{"0F0,0F\n", CsvFormat::ComputeOnly, 1, 7, "expected a microbatch"},
                      BadCsv{"0F0,0SEND_F0\n", CsvFormat::ComputeOnly, 1, 5, "compute_comms"},
                      BadCsv{"0F0,,0B0\n", CsvFormat::ComputeComms, 1, 5, "empty cell"},
                      BadCsv{"", CsvFormat::ComputeOnly, 1, 1, "empty schedule"},
                      BadCsv{"0F0,1UNSHARD\n", CsvFormat::ComputeOnly, 1, 6, "not supported"}));

TEST(Csv, RejectsAStageOnTwoRanks) {
  auto s = parse_csv("0F0,0B0\n0F1,0B1\n", CsvFormat::ComputeOnly);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("stage 0 has compute actions on rank 0 and on rank 1"), std::string::npos);
  EXPECT_EQ(s.error().line, 2);  // the cell of the second rank's action
  EXPECT_EQ(s.error().column, 1);
}

TEST(Json, ReportsSyntaxErrorsWithLineAndColumn) {
  auto s = parse_json("{\n  \"format\": \"pipelab.schedule\",\n  \"version\": 1,,\n}");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().line, 3);
  EXPECT_GT(s.error().column, 1);
  EXPECT_NE(s.error().message.find("malformed JSON"), std::string::npos);
}

struct BadJson {
  const char* text;
  const char* expected;
};

class JsonErrors : public ::testing::TestWithParam<BadJson> {};

TEST_P(JsonErrors, NameTheField) {
  auto s = parse_json(GetParam().text);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find(GetParam().expected), std::string::npos) << s.error().message;
}

INSTANTIATE_TEST_SUITE_P(
    All, JsonErrors,
    ::testing::Values(
        BadJson{"[1,2]", "must be a JSON object"}, BadJson{"{\"format\":\"other\"}", "field \"format\""},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":2,\"ranks\":[]}", "unsupported schedule version 2"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":1,\"stages\":1,"
                "\"microbatches\":1,\"colour\":3}",
                "unknown field \"colour\""},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0Z0\"]],\"pp\":1,\"stages\":1,\"microbatches\":1}",
                "ranks[0][0]"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"stages\":1,\"microbatches\":1}",
                "missing field \"pp\""},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":2,\"stages\":2,\"microbatches\":1}",
                "has 1 lists but \"pp\" is 2"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[7]],\"pp\":1,\"stages\":1,\"microbatches\":1}",
                "must be an action string or null"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":1,\"stages\":1,\"microbatches\":-4}",
                "field \"microbatches\" must be in"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":1,\"stages\":1,"
                "\"microbatches\":1,\"placement\":\"explicit\"}",
                "stage_to_rank\" is required"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":1,\"stages\":1,"
                "\"microbatches\":1,\"placement\":\"u\"}",
                "placement='u' must be one of: loop, v, explicit"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":1,\"stages\":1,"
                "\"microbatches\":1,\"placement\":2}",
                "field \"placement\" must be a string"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"ranks\":[[\"0F0\"]],\"pp\":1,\"stages\":1,"
                "\"microbatche\":1}",
                "(did you mean \"microbatches\"?)"},
        BadJson{"{\"format\":\"pipelab.schedule\",\"version\":1,\"pp\":1e999}", "number overflow"}));

TEST(ParseSchedule, SniffsTheFormat) {
  EXPECT_TRUE(parse_schedule(to_json_text(make_schedule("1f1b", {2, 1, 2, 0})), "x").ok());
  EXPECT_TRUE(parse_schedule("0F0,0B0\n", "x").ok());
  EXPECT_TRUE(parse_schedule(to_csv(add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}))), "x").value().has_comms());
}

// CSV has no column for the chain: DualPipe's schedule is refused, not written as a file the
// validator then rejects.
TEST(Formats, CsvRefusesTwoChains) {
  const Schedule s = make_schedule("dualpipe", {4, 2, 8, 0});
  ASSERT_EQ(s.shape.chains, 2);
  try {
    (void)to_csv(s);
    FAIL() << "to_csv wrote a two-chain schedule";
  } catch (const InputError& e) {
    EXPECT_THAT(std::string(e.what()), ::testing::HasSubstr("write it as JSON"));
  }
}

// Mutations of valid input (a poor man's fuzz pass): the parsers never crash, every rejection says
// what is wrong (located within the text when it has a line), and every accepted schedule survives
// validation and round-trips through JSON unchanged.
TEST(Parsers, SurviveMutatedInput) {
  const std::string csv = to_csv(make_schedule("dualpipev", {2, 2, 4, 0}));
  const std::string json = to_json_text(make_schedule("zb-v", {2, 2, 4, 0}));
  std::uint32_t seed = 12345;
  auto next = [&] { return seed = seed * 1664525u + 1013904223u; };
  const std::string alphabet = "0123456789FBIWSENDRCV_(;),\n\"{}[]: -";
  int accepted = 0, rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = (iter % 2) ? csv : json;
    for (int k = 0; k < 1 + static_cast<int>(next() % 4); ++k) {
      const std::size_t at = next() % text.size();
      text[at] = alphabet[next() % alphabet.size()];
    }
    const auto parsed = parse_schedule(text, "fuzz");
    if (!parsed.ok()) {
      ++rejected;
      const ParseError& e = parsed.error();
      EXPECT_FALSE(e.message.empty()) << text;
      const auto lines = static_cast<int>(std::count(text.begin(), text.end(), '\n')) + 1;
      EXPECT_TRUE(e.line >= 0 && e.line <= lines) << e.to_string();
      EXPECT_TRUE(e.line == 0 || e.column >= 1) << e.to_string();
      continue;
    }
    ++accepted;
    const Validation v = validate(parsed.value());
    for (const Diagnostic& d : v.diagnostics) EXPECT_FALSE(d.rule.empty() || d.message.empty()) << v.report(parsed.value());
    const auto again = parse_json(to_json_text(parsed.value()), "again");
    ASSERT_TRUE(again.ok()) << again.error().to_string() << "\n" << text;
    EXPECT_EQ(again.value(), parsed.value()) << text;
  }
  // Both branches ran, so the checks above were exercised.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 100);
}

TEST(Parsers, RefuseShapesTooLargeToValidate) {
  auto csv = parse_csv("999999999F0\n", CsvFormat::ComputeOnly);
  ASSERT_FALSE(csv.ok());
  EXPECT_NE(csv.error().message.find("exceeds the limit"), std::string::npos);
  auto csv2 = parse_csv("0F999999999,0B999999999\n", CsvFormat::ComputeOnly);
  ASSERT_FALSE(csv2.ok());
  auto json = parse_json(R"({"format":"pipelab.schedule","version":1,"pp":1,"stages":1000000,"microbatches":1000000,"ranks":[["0F0"]]})");
  ASSERT_FALSE(json.ok());
  EXPECT_NE(json.error().message.find("exceeds the limit"), std::string::npos);
}

TEST(Csv, TrailingBlankLinesAddNoRanks) {
  auto s = parse_csv("0F0,0B0\n\n\n", CsvFormat::ComputeOnly);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s.value().shape.ranks, 1);
}

// Fuzz finding (fuzz/regressions/schedule_csv): a row holding only a tab read as one idle cell,
// which to_csv writes as an empty row (no cells); a blank row is now a rank without actions.
TEST(Csv, ABlankRowIsARankWithoutActionsAndRoundTrips) {
  auto s = parse_csv("0F0,0B0\n\t\n1F0\n", CsvFormat::ComputeOnly);
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s.value().ranks.size(), 3u);
  EXPECT_TRUE(s.value().ranks[1].empty());
  auto again = parse_csv(to_csv(s.value()), CsvFormat::ComputeOnly);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value().ranks, s.value().ranks);
  // Idle cells between commas stay idle cells.
  auto idle = parse_csv(" ,\t,0F0\n", CsvFormat::ComputeOnly);
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle.value().ranks[0].size(), 3u);
}

// The limits of docs/validation.md: JSON is not read as CSV, rows and cells are bounded before
// they are stored, and ranks in stage_to_rank must be ranks (2^32+1 wrapped to 1 before).
TEST(Parsers, RefuseInputBeyondTheirLimitsNamingIt) {
  auto json_as_csv = parse_csv("\n  {\"format\": \"pipelab.schedule\"}", CsvFormat::ComputeOnly);
  ASSERT_FALSE(json_as_csv.ok());
  EXPECT_EQ(json_as_csv.error().line, 2);
  EXPECT_EQ(json_as_csv.error().column, 3);
  EXPECT_NE(json_as_csv.error().message.find("this is JSON, not a PyTorch CSV schedule"), std::string::npos);
  auto rows = parse_csv(std::string(1 << 20, '\n') + "0F0", CsvFormat::ComputeOnly);
  ASSERT_FALSE(rows.ok());
  EXPECT_NE(rows.error().message.find("more than 1048576 rows"), std::string::npos);
  auto rank = parse_json(R"({"format":"pipelab.schedule","version":1,"pp":2,"stages":2,"microbatches":1,"placement":"explicit",
    "stage_to_rank":[0,4294967297],"ranks":[["0F0","0B0"],["1F0","1B0"]]})");
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.error().message.find("field \"stage_to_rank\"[1]=4294967297 must be a rank in [0, pp=2)"), std::string::npos);
}

}  // namespace
}  // namespace pipelab
