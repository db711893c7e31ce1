// Action text form: PyTorch spelling, round trip, and precise parse errors.
#include <gtest/gtest.h>

#include "pipelab/schedules/action.h"

namespace pipelab {
namespace {

TEST(ActionText, MatchesPyTorchSpelling) {
  EXPECT_EQ(to_string(Action::make(Op::F, 2, 0)), "2F0");
  EXPECT_EQ(to_string(Action::make(Op::I, 1, 3)), "1I3");
  EXPECT_EQ(to_string(Action::make(Op::W, 0, 1)), "0W1");
  EXPECT_EQ(to_string(Action::make(Op::B, 3, 2)), "3B2");
  EXPECT_EQ(to_string(Action::make(Op::SendF, 1, 0)), "1SEND_F0");
  EXPECT_EQ(to_string(Action::make(Op::RecvB, 2, 3)), "2RECV_B3");
  EXPECT_EQ(to_string(Action::overlap(0, 3, 3, 1)), "(0F3;3B1)OVERLAP_F_B");
  EXPECT_EQ(to_string(Action::make(Op::ReduceGrad, 2, 0)), "2REDUCE_GRAD");
}

TEST(ActionText, RoundTripsEveryOp) {
  for (int op = 0; op < kNumOps; ++op) {
    const Op o = static_cast<Op>(op);
    const Action a = o == Op::OverlapFB ? Action::overlap(12, 7, 3, 100)
                                        : Action::make(o, 12, o == Op::ReduceGrad ? 0 : 345);
    auto parsed = parse_action(to_string(a));
    ASSERT_TRUE(parsed.ok()) << to_string(a) << ": " << parsed.error().to_string();
    EXPECT_EQ(parsed.value(), a);
  }
}

TEST(ActionText, AcceptsSurroundingWhitespace) {
  auto a = parse_action("  2F10 \r");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a.value(), Action::make(Op::F, 2, 10));
}

struct BadAction {
  const char* text;
  const char* expected;  // substring of the error
};

class ActionParseErrors : public ::testing::TestWithParam<BadAction> {};

TEST_P(ActionParseErrors, NameTheProblem) {
  auto a = parse_action(GetParam().text);
  ASSERT_FALSE(a.ok()) << GetParam().text;
  EXPECT_NE(a.error().message.find(GetParam().expected), std::string::npos) << a.error().message;
  EXPECT_GT(a.error().column, 0);
}

INSTANTIATE_TEST_SUITE_P(
    All, ActionParseErrors,
    ::testing::Values(BadAction{"", "empty action"}, BadAction{"F0", "expected a stage number"},
                      BadAction{"2X0", "expected an op"}, BadAction{"2F", "expected a microbatch number"},
                      BadAction{"2F0x", "unexpected trailing"}, BadAction{"1UNSHARD", "not supported"},
                      BadAction{"0REDUCE_GRAD3", "takes no microbatch"}, BadAction{"(0F3;3B1", "expected ')'"},
                      BadAction{"(0F3,3B1)OVERLAP_F_B", "expected ';'"}, BadAction{"(0F3;3B1)", "expected OVERLAP_F_B"},
                      BadAction{"(0I3;3B1)OVERLAP_F_B", "pairs one F"}, BadAction{"99999999999F0", "too large"},
                      BadAction{"-1F0", "expected a stage number"}));

}  // namespace
}  // namespace pipelab
