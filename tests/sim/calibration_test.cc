// Every published recipe of the calibration set (calibration/nemo-dgx-h100.csv) whose model has a
// preset is expressible and fits in memory: NVIDIA ran it on 80 GB H100s. Likewise every row of the
// held-out tables on other GPUs (nemo-dgx-b200.csv, nemo-dgx-gb200.csv, a100.csv) on its GPU's preset.
// Throughput accuracy is printed by bench/calibration_bench.cc, not asserted here.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/profiles/run_record.h"
#include "pipelab/sim/calibration.h"
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
    const sim::SimulationRequest r = sim::run_request(run, gpu_preset("h100-sxm"));  // every model has a preset
    sim::SimulationOutcome o;
    ASSERT_NO_THROW(o = sim::simulate_config(r)) << run.label();
    const std::int64_t peak = *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end());
    EXPECT_FALSE(o.oom) << run.label() << ": peak " << peak / (1 << 20) << " MiB of " << o.memory_capacity_bytes / (1 << 20);
    ++simulated;
  }
  EXPECT_EQ(simulated, static_cast<int>(runs.size()));
}

// A held-out run table (not fitted to) and the preset of the GPU it was measured on.
struct HeldOutTable {
  const char* file;
  const char* gpu;
  std::size_t min_rows;
};

class HeldOutTables : public ::testing::TestWithParam<HeldOutTable> {};

TEST_P(HeldOutTables, EveryPublishedRunSimulatesAndFits) {
  const HeldOutTable& t = GetParam();
  const std::string path = std::string(PIPELAB_CALIBRATION_DIR) + "/" + t.file;
  std::vector<RunRecord> runs;
  ASSERT_NO_THROW(runs = parse_run_records(read_text_file(path, "held-out table"), path)) << t.file;
  ASSERT_GE(runs.size(), t.min_rows) << t.file;
  const GpuSpec gpu = gpu_preset(t.gpu);
  for (const RunRecord& run : runs) {
    sim::SimulationOutcome o;
    ASSERT_NO_THROW(o = sim::simulate_config(sim::run_request(run, gpu))) << t.file << ": " << run.label();
    const std::int64_t peak = *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end());
    EXPECT_FALSE(o.oom) << t.file << ": " << run.label() << ": peak " << peak / (1 << 20) << " MiB of "
                        << o.memory_capacity_bytes / (1 << 20);
    EXPECT_GT(o.throughput.tokens_per_s_per_gpu, 0) << t.file << ": " << run.label();
  }
}

INSTANTIATE_TEST_SUITE_P(OtherGpus, HeldOutTables,
                         ::testing::Values(HeldOutTable{"nemo-dgx-b200.csv", "b200", 30},
                                           HeldOutTable{"nemo-dgx-gb200.csv", "gb200", 80},
                                           HeldOutTable{"nemo-dgx-gb300.csv", "gb300", 20},
                                           HeldOutTable{"a100.csv", "a100-80g", 4},
                                           HeldOutTable{"megatron-bridge-h100.csv", "h100-sxm", 2},
                                           HeldOutTable{"mcore-moe-paper-h100.csv", "h100-sxm", 2},
                                           HeldOutTable{"mcore-moe-paper-gb200.csv", "gb200", 4},
                                           HeldOutTable{"mcore-moe-paper-gb300.csv", "gb300", 3}),
                         [](const ::testing::TestParamInfo<HeldOutTable>& info) {
                           std::string name(info.param.file);
                           name.resize(name.rfind('.'));
                           std::erase_if(name, [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); });
                           return name;
                         });

TEST(CalibrationSet, RecipeLayoutsAreMegatrons) {
  for (const RunRecord& run : calibration_set()) {
    if (run.model != "llama3.1-405b" && run.model != "deepseek-v3") continue;
    const sim::SimulationOutcome o = sim::simulate_config(sim::run_request(run, gpu_preset("h100-sxm")));
    // 405B with embedding and loss accounted: 126 layers as [1] + [2]*62 + [1] over PP8 x VP8.
    if (run.model == "llama3.1-405b") {
      EXPECT_EQ(o.pipeline_layout, "Et|(tt|)*62tL") << run.label();
    }
    if (run.model == "deepseek-v3") {
      EXPECT_EQ(o.pipeline_layout, "Et|(tt|)*30mL") << run.label();
    }
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
            "runs.csv:2: column precision: must be bf16, fp8[-recipe] or nvfp4, got 'int4'");
  EXPECT_EQ(error_of("llama3-8b,bf16,8,128,1,8192\n"), "runs.csv:2: 6 cells, the header names 13");
  EXPECT_THROW(parse_run_records("", "runs.csv"), InputError);
  EXPECT_EQ(error_of("llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,100,x\n"), "runs.csv:2: 14 cells, the header names 13");
  EXPECT_NE(error_of("llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,100\n").find("no error"), std::string::npos);
}

// A settings item that names no field, holds an unreadable value or repeats a key is a bad cell: a typo
// must not simulate a different run. A value that breaks a rule only with the whole run is judged then.
TEST(RunRecords, BadSettingsNameTheLineAndColumn) {
  const std::string header = "model,precision,gpus,gbs,mbs,seq,tp,pp,cp,vp,ep,fsdp,tokens_per_s_per_gpu,settings\n";
  const std::string row = "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,100,";
  auto error_of = [&](const std::string& settings) {
    try {
      parse_run_records(header + row + settings + "\n", "runs.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error_of("overlap_grad_reduse=false"), ::testing::HasSubstr("runs.csv:2: column settings: unknown parallel field 'overlap_grad_reduse'"));
  EXPECT_EQ(error_of("recompute=sometimes"), "runs.csv:2: column settings: recompute='sometimes' must be one of: none, selective, full");
  EXPECT_EQ(error_of("model.num_layers=abc"), "runs.csv:2: column settings: num_layers=abc: expected an integer");
  EXPECT_THAT(error_of("model.num_layer=4"), ::testing::HasSubstr("runs.csv:2: column settings: unknown model field 'num_layer'"));
  EXPECT_EQ(error_of("recompute=full recompute=none"), "runs.csv:2: column settings: 'recompute' sets a field given before in this cell");
  EXPECT_EQ(error_of("recompute=full recompute_granularity=none"),
            "runs.csv:2: column settings: 'recompute_granularity' sets a field given before in this cell");
  EXPECT_EQ(error_of("model.num_layers=16 model.num-layers=8"),
            "runs.csv:2: column settings: 'model.num-layers' sets a field given before in this cell");
  EXPECT_EQ(error_of("recompute=full model.num-layers=16 tp_comm_overlap=true"), "no error");
}

TEST(RunRecords, IterationTimeGivesTokensPerGpu) {
  const std::string header = "model,precision,gpus,gbs,mbs,seq,tp,pp,cp,vp,ep,fsdp,iteration_s\n";
  // 128 sequences of 8192 tokens over 8 GPUs in 8 s: 16384 tokens/s/GPU.
  const std::vector<RunRecord> runs = parse_run_records(header + "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,8\n", "runs.csv");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_DOUBLE_EQ(runs[0].tokens_per_s_per_gpu, 16384);
  EXPECT_DOUBLE_EQ(runs[0].iteration_s, 8);
  auto error_of = [](const std::string& text) {
    try {
      parse_run_records(text, "runs.csv");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(header + "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,\n"), "runs.csv:2: column iteration_s: is empty; it needs seconds per iteration");
  EXPECT_EQ(error_of(header + "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,-1\n"), "runs.csv:2: column iteration_s: must be positive");
  const std::string both = "model,precision,gpus,gbs,mbs,seq,tp,pp,cp,vp,ep,fsdp,tokens_per_s_per_gpu,iteration_s\n";
  EXPECT_EQ(error_of(both + "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,16384,8\n"), "no error");
  EXPECT_EQ(error_of(both + "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,,8\n"), "no error");
  EXPECT_EQ(error_of(both + "llama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0,12000,8\n"),
            "runs.csv:2: column iteration_s: gives 16384.000000 tokens/s/GPU, more than 2% from tokens_per_s_per_gpu");
  EXPECT_EQ(error_of("model,precision,gpus,gbs,mbs,seq,tp,pp,cp,vp,ep,fsdp\nllama3-8b,bf16,8,128,1,8192,1,1,1,1,1,0\n"),
            "runs.csv:2: column tokens_per_s_per_gpu: the header names neither tokens_per_s_per_gpu nor iteration_s");
}

}  // namespace
}  // namespace pipelab
