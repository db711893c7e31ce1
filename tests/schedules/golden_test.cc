// Reference vectors re-derived from PyTorch's ScheduleZBVZeroBubble and ScheduleDualPipeV
// (torch/distributed/pipelining/schedules.py; P=2, m=4) reproduced exactly, and golden CSV files
// for every schedule in tests/data/schedules/<name>_<pp>r_<vp>v_<m>mb.csv (PyTorch's format; DualPipe,
// whose two chains CSV cannot carry, as .json).
// Regenerate the files only on purpose: PIPELAB_UPDATE_GOLDEN=1 ./pipelab_schedules_tests.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "pipelab/base/file_io.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/registry.h"

namespace pipelab {
namespace {

TEST(ReferenceVectors, ZbVTwoRanksFourMicrobatches) {
  const Schedule s = make_schedule("zb-v", {2, 2, 4, 0});
  EXPECT_EQ(to_csv(s),
            "0F0,0F1,0F2,3F0,3I0,3W0,3F1,3I1,3W1,0F3,0I0,0W0,3F2,3I2,3W2,0I1,0W1,3F3,3I3,3W3,0I2,0W2,0I3,0W3\n"
            ",1F0,2F0,1F1,2F1,2I0,2W0,1F2,1I0,1W0,2F2,2I1,2W1,1F3,1I1,1W1,2F3,2I2,2W2,1I2,2I3,1I3,1W2,2W3,1W3\n");
}

TEST(ReferenceVectors, DualPipeVTwoRanksFourMicrobatches) {
  const Schedule s = make_schedule("dualpipev", {2, 2, 4, 0});
  EXPECT_EQ(to_csv(s),
            "0F0,0F1,0F2,3F0,3I0,3W0,3F1,(0F3;3B1)OVERLAP_F_B,(3F2;0B0)OVERLAP_F_B,3B2,(3F3;0B1)OVERLAP_F_B,3B3,0I2,0W2,"
            "0I3,0W3\n"
            "1F0,2F0,1F1,2F1,1F2,2B0,(2F2;1B0)OVERLAP_F_B,(1F3;2B1)OVERLAP_F_B,(2F3;1B1)OVERLAP_F_B,2B2,1B2,2I3,1I3,2W3,"
            "1W3\n");
}

struct GoldenCase {
  const char* schedule;
  int pp, vp, m;
};

class GoldenCsv : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenCsv, MatchesFile) {
  const GoldenCase& c = GetParam();
  const Schedule s = make_schedule(c.schedule, {c.pp, c.vp, c.m, 0});
  // CSV has no chains: DualPipe's two are pinned as JSON.
  const bool json = s.shape.chains != 1;
  const std::string path = std::string(PIPELAB_TEST_DATA_DIR) + "/schedules/" + c.schedule + "_" + std::to_string(c.pp) +
                           "r_" + std::to_string(c.vp) + "v_" + std::to_string(c.m) + "mb" + (json ? ".json" : ".csv");
  const std::string csv = json ? to_json_text(s) : to_csv(s);
  if (const char* update = std::getenv("PIPELAB_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    write_text_file(path, csv, "golden file");
    GTEST_SKIP() << "updated " << path;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing golden file " << path << " (run with PIPELAB_UPDATE_GOLDEN=1 to create it)";
  EXPECT_EQ(csv, read_text_file(path, "golden file")) << path;
}

INSTANTIATE_TEST_SUITE_P(All, GoldenCsv,
                         ::testing::Values(GoldenCase{"gpipe", 4, 1, 8}, GoldenCase{"1f1b", 4, 1, 8},
                                           GoldenCase{"interleaved-1f1b", 4, 2, 8}, GoldenCase{"looped-bfs", 4, 2, 8},
                                           GoldenCase{"zb-h1", 4, 1, 8}, GoldenCase{"zb-h1", 4, 2, 8},
                                           GoldenCase{"zb-h2", 4, 1, 8}, GoldenCase{"zb-v", 4, 2, 8},
                                           GoldenCase{"dualpipe", 4, 2, 8}, GoldenCase{"dualpipev", 4, 2, 8}),
                         [](const auto& info) {
                           std::string n = std::string(info.param.schedule) + "_v" + std::to_string(info.param.vp);
                           for (char& ch : n) if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace pipelab
