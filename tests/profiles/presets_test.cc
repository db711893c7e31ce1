// Tests for profiles/presets.cc: every embedded preset loads and is valid, lookups, loading by path.
#include <pipelab/profiles/presets.h>
#include <pipelab/base/file_io.h>

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "error_message.h"

namespace pipelab {
namespace {

using ::pipelab::testing::error_message;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::filesystem::path kSourceDir = PIPELAB_PROFILES_SOURCE_DIR;

TEST(Presets, NamesAreTheShippedFiles) {
  EXPECT_THAT(model_preset_names(),
              ElementsAre("deepseek-v3", "gpt-1.5b", "gpt-14.6b", "gpt-28.3b", "gpt-6.2b", "llama3-70b",
                          "llama3-8b", "llama3.1-405b", "mixtral-8x7b", "qwen3-235b-a22b", "qwen3-30b-a3b"));
  EXPECT_THAT(gpu_preset_names(), ElementsAre("a100-80g", "b200", "gb200", "h100-sxm", "h200"));
}

TEST(Presets, EveryModelLoadsAndPassesItsRules) {
  for (const auto& name : model_preset_names()) {
    const ModelSpec model = model_preset(name);
    EXPECT_EQ(model.name, name);
    EXPECT_NO_THROW(validate(model)) << name;
    EXPECT_GT(model.total_params(), 0) << name;
  }
}

TEST(Presets, EveryGpuLoadsAndPassesItsRules) {
  for (const auto& name : gpu_preset_names()) {
    const GpuSpec gpu = gpu_preset(name);
    EXPECT_EQ(gpu.name, name);
    EXPECT_NO_THROW(validate(gpu)) << name;
  }
}

TEST(Presets, EmbeddedTextMatchesSourceFiles) {
  // The build embeds profiles/{models,gpus}/*.json; a stale embedding would differ from the file.
  for (const auto& name : model_preset_names()) {
    EXPECT_EQ(model_preset_json(name), read_text_file((kSourceDir / "models" / (name + ".json")).string(), "model"));
  }
  for (const auto& name : gpu_preset_names()) {
    EXPECT_EQ(gpu_preset_json(name), read_text_file((kSourceDir / "gpus" / (name + ".json")).string(), "gpu"));
  }
}

TEST(Presets, UnknownNameListsValidOnes) {
  const std::string message = error_message<InputError>([] { model_preset("llama4"); });
  EXPECT_THAT(message, HasSubstr("unknown model preset 'llama4'; valid: deepseek-v3, gpt-1.5b"));
  EXPECT_THAT(message, HasSubstr("(or a path ending in .json)"));
  EXPECT_THAT(error_message<InputError>([] { gpu_preset("h100"); }),
              HasSubstr("unknown gpu preset 'h100'; valid: a100-80g, b200, gb200, h100-sxm, h200"));
}

TEST(Presets, LookupIsCaseInsensitive) {
  EXPECT_EQ(model_preset("Llama3-70B"), model_preset("llama3-70b"));
  EXPECT_EQ(gpu_preset("H100-SXM"), gpu_preset("h100-sxm"));
}

TEST(Presets, LoadByNameOrPath) {
  EXPECT_EQ(load_model("llama3-8b"), model_preset("llama3-8b"));
  EXPECT_EQ(load_gpu("h200"), gpu_preset("h200"));

  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / "pipelab_presets_test";
  std::filesystem::create_directories(dir);
  const std::filesystem::path model_path = dir / "my-model.json";
  write_text_file(model_path.string(), R"({"name": "mine", "num_layers": 2, "hidden_size": 64,
      "num_attention_heads": 4, "vocab_size": 100, "seq_length": 128})");
  const ModelSpec mine = load_model(model_path.string());
  EXPECT_EQ(mine.name, "mine");
  EXPECT_EQ(mine.kv_channels, 16);

  const std::filesystem::path gpu_path = dir / "my-gpu.JSON";
  write_text_file(gpu_path.string(), gpu_preset_json("a100-80g"));
  EXPECT_EQ(load_gpu(gpu_path.string()), gpu_preset("a100-80g"));

  const std::filesystem::path bad_path = dir / "bad.json";
  write_text_file(bad_path.string(), R"({"name": "bad", "num_layers": "two"})");
  EXPECT_THAT(error_message<InputError>([&] { load_model(bad_path.string()); }),
              HasSubstr(bad_path.string() + ": model key 'num_layers' must be an integer"));

  EXPECT_THAT(error_message<InputError>([&] { load_model((dir / "missing.json").string()); }),
              HasSubstr("cannot open model file '" + (dir / "missing.json").string() + "'"));
}

TEST(Presets, PublishedArchitectures) {
  const ModelSpec llama70 = model_preset("llama3-70b");
  EXPECT_EQ(llama70.num_layers, 80);
  EXPECT_EQ(llama70.hidden_size, 8192);
  EXPECT_EQ(llama70.ffn_hidden_size, 28672);
  EXPECT_EQ(llama70.num_attention_heads, 64);
  EXPECT_EQ(llama70.num_query_groups, 8);
  EXPECT_EQ(llama70.vocab_size, 128256);
  EXPECT_EQ(llama70.seq_length, 8192);
  EXPECT_TRUE(llama70.swiglu);
  EXPECT_TRUE(llama70.untie_embeddings_and_output_weights);

  // Zero Bubble paper (Qi et al., ICLR 2024) Table 3.
  const ModelSpec gpt = model_preset("gpt-6.2b");
  EXPECT_EQ(gpt.num_layers, 30);
  EXPECT_EQ(gpt.hidden_size, 4096);
  EXPECT_EQ(gpt.num_attention_heads, 32);
  EXPECT_EQ(gpt.seq_length, 1024);
  EXPECT_FALSE(gpt.swiglu);
  EXPECT_FALSE(gpt.untie_embeddings_and_output_weights);

  const ModelSpec deepseek = model_preset("deepseek-v3");
  EXPECT_TRUE(deepseek.multi_latent_attention);
  EXPECT_EQ(deepseek.num_experts, 256);
  EXPECT_EQ(deepseek.num_dense_layers, 3);
  EXPECT_EQ(deepseek.mtp_num_layers, 1);
}

}  // namespace
}  // namespace pipelab
