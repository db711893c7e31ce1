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
              ElementsAre("deepseek-v3", "gpt-1.5b", "gpt-14.6b", "gpt-28.3b", "gpt-6.2b", "gpt-oss-120b",
                          "gpt3-175b", "gpt3-5b", "llama2-70b", "llama2-7b", "llama3-70b", "llama3-8b",
                          "llama3.1-405b", "mixtral-8x7b", "nemotron-340b", "qwen2.5-7b", "qwen3-235b-a22b",
                          "qwen3-30b-a3b"));
  EXPECT_THAT(gpu_preset_names(), ElementsAre("a100-80g", "a800", "b200", "b300", "gb200", "gb300", "h100-sxm",
                                              "h20", "h200", "h800"));
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
  const std::string gpu = error_message<InputError>([] { gpu_preset("h300"); });
  EXPECT_THAT(gpu, HasSubstr("unknown gpu preset 'h300'; valid: a100-80g, a800, b200, b300, gb200, gb300, "
                             "h100-sxm, h20, h200, h800 (or a path ending in .json)"));
  EXPECT_THAT(gpu, HasSubstr("; aliases: a100, a100-80gb, A100-SXM4-80GB, NVIDIA A100-SXM4-80GB, "));
  EXPECT_THAT(error_message<InputError>([] { gpu_preset("h100-sxn"); }), HasSubstr("did you mean 'h100-sxm'?"));
  EXPECT_THAT(error_message<InputError>([] { gpu_preset("NVIDIA H100 PCIe"); }),
              HasSubstr("unknown gpu preset 'NVIDIA H100 PCIe'; valid: a100-80g"));
}

TEST(Presets, LookupIsCaseInsensitive) {
  EXPECT_EQ(model_preset("Llama3-70B"), model_preset("llama3-70b"));
  EXPECT_EQ(gpu_preset("H100-SXM"), gpu_preset("h100-sxm"));
}

TEST(PresetAliases, GpuNamesUsersType) {
  // Marketing and cloud spellings, the CUDA device names (cudaDeviceProp::name, nvidia-smi) and the
  // Kubernetes GPU label, matched ignoring case with spaces and underscores as dashes.
  for (const char* name : {"h100", "H100", "H100-SXM5-80GB", "H100 SXM", "h100_sxm", "NVIDIA H100 80GB HBM3",
                           "NVIDIA-H100-80GB-HBM3", " NVIDIA H100 80GB HBM3 "}) {
    EXPECT_EQ(gpu_preset(name).name, "h100-sxm") << name;
  }
  for (const char* name : {"a100", "A100-SXM4-80GB", "NVIDIA A100-SXM4-80GB"}) EXPECT_EQ(gpu_preset(name).name, "a100-80g") << name;
  EXPECT_EQ(gpu_preset("NVIDIA A800-SXM4-80GB").name, "a800");
  EXPECT_EQ(gpu_preset("NVIDIA H800").name, "h800");
  EXPECT_EQ(gpu_preset("NVIDIA H20").name, "h20");
  EXPECT_EQ(gpu_preset("NVIDIA H200").name, "h200");
  EXPECT_EQ(gpu_preset("NVIDIA B200").name, "b200");
  EXPECT_EQ(gpu_preset("NVIDIA B300 SXM6 AC").name, "b300");
  EXPECT_EQ(gpu_preset("NVIDIA GB200").name, "gb200");
  EXPECT_EQ(gpu_preset("NVIDIA GB300").name, "gb300");
  EXPECT_EQ(load_gpu("h100"), gpu_preset("h100-sxm"));
  EXPECT_EQ(gpu_preset_json("NVIDIA H100 80GB HBM3"), gpu_preset_json("h100-sxm"));
}

TEST(PresetAliases, EveryAliasLoadsItsPreset) {
  for (const auto& name : gpu_preset_names()) {
    for (const auto& alias : gpu_preset_aliases(name)) EXPECT_EQ(gpu_preset(alias).name, name) << alias;
  }
  for (const auto& name : model_preset_names()) {
    for (const auto& alias : model_preset_aliases(name)) EXPECT_EQ(model_preset(alias).name, name) << alias;
  }
  EXPECT_THAT(gpu_preset_aliases("h100"), ::testing::Contains("NVIDIA H100 80GB HBM3"));
  EXPECT_THAT(gpu_preset_aliases("a800"), ElementsAre("A800-SXM4-80GB", "NVIDIA A800-SXM4-80GB"));
  EXPECT_THAT(model_preset_aliases("qwen2.5-7b"), ElementsAre("Qwen/Qwen2.5-7B"));
  EXPECT_THAT(model_preset_aliases("gpt-1.5b"), ::testing::IsEmpty());
}

TEST(PresetAliases, ModelSpellings) {
  EXPECT_EQ(model_preset("llama-3-70b").name, "llama3-70b");
  EXPECT_EQ(model_preset("Llama3.1-70B").name, "llama3-70b");
  EXPECT_EQ(model_preset("llama_3.1_8b").name, "llama3-8b");
  EXPECT_EQ(model_preset("Nemotron-4-340B").name, "nemotron-340b");
  EXPECT_EQ(load_model("llama-2-70b"), model_preset("llama2-70b"));
  EXPECT_EQ(model_preset("meta-llama/Llama-3.1-70B").name, "llama3-70b");  // Hugging Face ids, as AutoModel names them
  EXPECT_THAT(error_message<InputError>([] { model_preset("llama3-70"); }), HasSubstr("did you mean 'llama3-70b'?"));
}

TEST(PresetAliases, CudaDeviceNames) {
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA A100-SXM4-80GB"), "a100-80g");
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA H200"), "h200");
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA B300 SXM6 AC"), "b300");
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA GB300"), "gb300");
  // Other parts of a family have other peaks or memory: no preset, so MFU asks for --gpu.
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA H100 PCIe"), "");
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA H100 NVL"), "");
  EXPECT_EQ(gpu_preset_for_device_name("NVIDIA A100-SXM4-40GB"), "");
  EXPECT_EQ(gpu_preset_for_device_name(""), "");
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
