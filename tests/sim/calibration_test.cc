// Every published recipe of the calibration set (calibration/nemo-dgx-h100.csv) whose model has a
// preset is expressible and fits in memory: NVIDIA ran it on 80 GB H100s. Throughput accuracy is
// printed by bench/calibration_bench.cc, not asserted here.
#include <gtest/gtest.h>

#include <algorithm>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/simulation.h"

namespace pipelab {
namespace {

std::vector<RunRecord> calibration_set() {
  const std::string path = std::string(PIPELAB_CALIBRATION_DIR) + "/nemo-dgx-h100.csv";
  return parse_run_records(read_text_file(path, "calibration set"), path);
}

TEST(CalibrationSet, EveryPublishedRecipeSimulatesAndFits) {
  const std::vector<RunRecord> runs = calibration_set();
  ASSERT_GE(runs.size(), 25u);
  int simulated = 0;
  for (const RunRecord& run : runs) {
    sim::SimulationRequest r;
    r.model = run.model_spec(model_preset(run.model));  // every model of the set has a preset
    r.gpu = gpu_preset("h100-sxm");
    r.config = run.config(r.model);
    r.schedule = run.schedule();
    sim::SimulationOutcome o;
    ASSERT_NO_THROW(o = sim::simulate_config(r)) << run.label();
    const std::int64_t peak = *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end());
    EXPECT_FALSE(o.oom) << run.label() << ": peak " << peak / (1 << 20) << " MiB of " << o.memory_capacity_bytes / (1 << 20);
    ++simulated;
  }
  EXPECT_EQ(simulated, static_cast<int>(runs.size()));
}

TEST(CalibrationSet, RecipeLayoutsAreMegatrons) {
  for (const RunRecord& run : calibration_set()) {
    if (run.model != "llama3.1-405b" && run.model != "deepseek-v3") continue;
    sim::SimulationRequest r;
    r.model = run.model_spec(model_preset(run.model));
    r.gpu = gpu_preset("h100-sxm");
    r.config = run.config(r.model);
    r.schedule = run.schedule();
    const sim::SimulationOutcome o = sim::simulate_config(r);
    // 405B with embedding and loss accounted: 126 layers as [1] + [2]*62 + [1] over PP8 x VP8.
    if (run.model == "llama3.1-405b") EXPECT_EQ(o.pipeline_layout, "Et|(tt|)*62tL") << run.label();
    if (run.model == "deepseek-v3") EXPECT_EQ(o.pipeline_layout, "Et|(tt|)*30mL") << run.label();
  }
}

TEST(RunRecords, BadCellsNameTheLineAndColumn) {
  const std::string header = "model,precision,gpus,gbs,mbs,seq,tp,pp,cp,vp,ep,fsdp,tokens_per_s_per_gpu\n";
  auto error_of = [&](const std::string& row) {
    try {
      parse_run_records(header + row, "runs.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of("llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,fast\n"),
            "runs.csv:2: column tokens_per_s_per_gpu: 'fast' is not a finite number");
  EXPECT_EQ(error_of("llama3-8b,bf16,8,128,0,8192,1,1,1,1,1,0,100\n"), "runs.csv:2: column mbs: must be in [1, 16777216], got 0");
  EXPECT_EQ(error_of("llama3-8b,int4,8,128,1,8192,1,1,1,1,1,0,100\n"),
            "runs.csv:2: column precision: must be bf16 or fp8[-recipe], got 'int4'");
  EXPECT_EQ(error_of("llama3-8b,bf16,8,128,1,8192\n"), "runs.csv:2: 6 cells, the header names 13");
  EXPECT_THROW(parse_run_records("", "runs.csv"), InputError);
  EXPECT_EQ(error_of("llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,100,x\n"), "runs.csv:2: 14 cells, the header names 13");
  EXPECT_NE(error_of("llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,100\n").find("no error"), std::string::npos);
}

}  // namespace
}  // namespace pipelab
