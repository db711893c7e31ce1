// Pins the shipped h100-sxm preset's prediction for every row of the calibration set, so a change
// to the cost model, a preset or a recipe row shows up as a diff of this file, on purpose or not.
// After an intended change, regenerate and review the diff (and docs/calibration.md's table):
//   PIPELAB_UPDATE_GOLDEN=1 ./pipelab_sim_tests --gtest_filter='CalibrationGolden.*'
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "pipelab/base/file_io.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/calibration.h"
#include "pipelab/sim/simulation.h"

namespace pipelab {
namespace {

// label,tokens_per_s_per_gpu per row, to 6 significant digits: well above the run-to-run and
// compiler-to-compiler noise of the double arithmetic, well below any modelling change.
std::string predictions() {
  const std::string path = std::string(PIPELAB_CALIBRATION_DIR) + "/nemo-dgx-h100.csv";
  std::string out = "# predicted tokens/s/GPU on the shipped h100-sxm preset, per row of calibration/nemo-dgx-h100.csv\n";
  for (const RunRecord& run : parse_run_records(read_text_file(path, "calibration set"), path)) {
    const sim::SimulationOutcome o = sim::simulate_config(sim::run_request(run, gpu_preset("h100-sxm")));
    char value[32];
    std::snprintf(value, sizeof value, "%.6g", o.throughput.tokens_per_s_per_gpu);
    out += run.label() + "," + value + "\n";
  }
  return out;
}

TEST(CalibrationGolden, ShippedPresetPredictionsArePinned) {
  const std::string path = std::string(PIPELAB_TEST_DATA_DIR) + "/sim/h100_calibration_predictions.csv";
  const std::string now = predictions();
  if (const char* update = std::getenv("PIPELAB_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    write_text_file(path, now, "golden file");
    GTEST_SKIP() << "updated " << path;
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << "missing golden file " << path << " (run with PIPELAB_UPDATE_GOLDEN=1 to create it)";
  EXPECT_EQ(now, read_text_file(path, "golden file")) << path;
}

}  // namespace
}  // namespace pipelab
