// Tests for profiles/measured_profile.cc: the "pipelab.profile" JSON round-trips, is read strictly,
// and the P2P model is latency + bytes / bandwidth. The sample is tests/data/profiles/sample_profile.json.
#include <pipelab/profiles/measured_profile.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pipelab/base/error.h>

namespace pipelab {
namespace {

using ::testing::HasSubstr;

const std::string kSample = std::string(PIPELAB_TEST_DATA_DIR) + "/profiles/sample_profile.json";

TEST(MeasuredProfile, JsonRoundTrips) {
  const MeasuredProfile p = load_measured_profile(kSample);
  EXPECT_EQ(p.per_stage, (OpTimes{2100, 2500, 1700, 4300, 6500}));
  EXPECT_EQ(p.p2p.samples, (std::vector<P2PSample>{{8, 2000}, {128, 2100}}));
  const nlohmann::json j = to_json(p);
  EXPECT_EQ(j["format"], "pipelab.profile");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(measured_profile_from_json(j, "t"), p);
  EXPECT_EQ(parse_measured_profile(j.dump(), "t"), p);
}

TEST(MeasuredProfile, SavesWhatItLoads) {
  const MeasuredProfile p = load_measured_profile(kSample);
  const std::string path = (std::filesystem::path(::testing::TempDir()) / "pipelab_profile_test" / "p.json").string();
  save_measured_profile(p, path);
  EXPECT_EQ(load_measured_profile(path), p);
}

TEST(MeasuredProfile, IsReadStrictly) {
  const nlohmann::json j = to_json(load_measured_profile(kSample));
  nlohmann::json bad = j;
  bad["per_layer"]["f_nss"] = 1;
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["version"] = 2;
  try {
    measured_profile_from_json(bad, "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unsupported profile version 2"));
  }
  bad = j;
  bad["format"] = "pipelab.result";
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["model"]["hidden"] = 0;
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), ConfigError);
  bad = j;
  bad["per_stage"]["w_ns"] = -1;
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), ConfigError);
  bad = j;
  bad.erase("activation_bytes");
  EXPECT_THROW(measured_profile_from_json(bad, "p.json"), InputError);
  bad = j;
  bad["p2p"]["samples"][1]["ns"] = "fast";
  try {
    measured_profile_from_json(bad, "p.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("p.json: p2p: samples[1]: p2p sample key 'ns' must be an integer"));
  }
  EXPECT_THROW(parse_measured_profile("{", "p.json"), InputError);
}

TEST(MeasuredProfile, P2PTimeIsLatencyPlusBytesOverBandwidth) {
  const P2PProfile p{"mpi", 1000, 2e9, {}};
  EXPECT_EQ(p.time_ns(0), 1000);
  EXPECT_EQ(p.time_ns(2'000'000), 1000 + 1'000'000);
  const P2PProfile handover{"inproc", 300, 0, {}};
  EXPECT_EQ(handover.time_ns(1 << 20), 300);
}

}  // namespace
}  // namespace pipelab
