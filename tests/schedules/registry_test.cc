// Registry lookups, aliases, and each generator's constraint errors.
#include <gtest/gtest.h>

#include "pipelab/base/error.h"
#include "pipelab/schedules/registry.h"

namespace pipelab {
namespace {

TEST(Registry, ResolvesAliasesUsersKnow) {
  EXPECT_EQ(find_schedule("interleaved1f1b").name, "interleaved-1f1b");
  EXPECT_EQ(find_schedule("interleaved_1f1b").name, "interleaved-1f1b");
  EXPECT_EQ(find_schedule("Interleaved1F1B").name, "interleaved-1f1b");
  EXPECT_EQ(find_schedule("zero_bubble").name, "zb-h1");
  EXPECT_EQ(find_schedule("ZB1P").name, "zb-h1");
  EXPECT_EQ(find_schedule("zbv").name, "zb-v");
  EXPECT_EQ(find_schedule("v_schedule").name, "zb-v");
  EXPECT_EQ(find_schedule("1F1B").name, "1f1b");
  EXPECT_EQ(find_schedule("GPipe").name, "gpipe");
  EXPECT_EQ(find_schedule("DualPipeV").name, "dualpipev");
  EXPECT_EQ(find_schedule("LoopedBFS").name, "looped-bfs");
}

TEST(Registry, UnknownNameListsValidOnes) {
  try {
    find_schedule("chimera");
    FAIL();
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("unknown schedule \"chimera\""), std::string::npos);
    EXPECT_NE(what.find("gpipe, 1f1b, interleaved-1f1b"), std::string::npos);
    EXPECT_NE(what.find("dualpipev"), std::string::npos);
  }
}

struct BadOptions {
  const char* schedule;
  ScheduleOptions options;
  const char* expected;
};

class ConstraintErrors : public ::testing::TestWithParam<BadOptions> {};

TEST_P(ConstraintErrors, NameTheRule) {
  try {
    make_schedule(GetParam().schedule, GetParam().options);
    FAIL() << "expected ScheduleError";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find(GetParam().expected), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, ConstraintErrors,
    ::testing::Values(
        BadOptions{"dualpipe", {3, 0, 6, 0}, "dualpipe needs an even number of pipeline ranks, got 3"},
        BadOptions{"dualpipe", {4, 0, 9, 0}, "dualpipe needs an even number of microbatches"},
        BadOptions{"dualpipe", {4, 0, 6, 0}, "dualpipe needs microbatches >= 2*pp = 8, got 6"},
        BadOptions{"dualpipev", {4, 0, 6, 0}, "dualpipev needs microbatches >= 2*pp = 8, got 6"},
        BadOptions{"dualpipev", {4, 3, 8, 0}, "dualpipev uses exactly 2 chunks per rank (vp=2), got vp=3"},
        BadOptions{"zb-v", {4, 4, 8, 0}, "zb-v uses exactly 2 chunks per rank"},
        BadOptions{"1f1b", {4, 2, 8, 0}, "use interleaved-1f1b for vp > 1"},
        BadOptions{"gpipe", {4, 2, 8, 0}, "gpipe runs one stage per rank"},
        BadOptions{"zb-h2", {4, 2, 8, 0}, "zb-h2 runs one stage per rank"},
        BadOptions{"interleaved-1f1b", {4, 2, 3, 0}, "interleaved-1f1b needs microbatches >= pp=4 when vp > 1, got 3"},
        BadOptions{"interleaved-1f1b", {4, 2, 6, 0}, "microbatches % group (6 % 4 = 2) to be 0 or >= pp=4"},
        BadOptions{"interleaved-1f1b", {4, 2, 8, 2}, "group size >= pp=4, got 2"},
        BadOptions{"zb-h1", {4, 2, 10, 0}, "zb-h1 needs microbatches % group"},
        BadOptions{"1f1b", {0, 1, 8, 0}, "needs pp >= 1, got 0"},
        BadOptions{"1f1b", {2, 1, 0, 0}, "needs microbatches >= 1, got 0"},
        BadOptions{"interleaved-1f1b", {4096, 8, 1 << 20, 0}, "the limit is 50000000"},
        BadOptions{"zb-v", {4096, 2, 1, 0}, "the limit is 50000000"}));

}  // namespace
}  // namespace pipelab
