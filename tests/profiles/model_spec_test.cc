// Tests for profiles/model_spec.cc: strict JSON, derived defaults, sanity rules, overrides, params.
#include <pipelab/profiles/model_spec.h>

#include <cmath>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <pipelab/profiles/presets.h>

#include "error_message.h"

namespace pipelab {
namespace {

using ::pipelab::testing::error_message;
using ::testing::HasSubstr;

nlohmann::json minimal_json() {
  return {{"name", "tiny"},        {"num_layers", 4},   {"hidden_size", 256},
          {"num_attention_heads", 8}, {"vocab_size", 1000}, {"seq_length", 512}};
}

TEST(ModelSpecJson, RoundTripsEveryPreset) {
  for (const auto& name : model_preset_names()) {
    const ModelSpec model = model_preset(name);
    EXPECT_EQ(model_spec_from_json(to_json(model), "round trip"), model) << name;
  }
}

TEST(ModelSpecJson, ToJsonUsesMegatronKeyNames) {
  const nlohmann::json json = to_json(model_preset("llama3-70b"));
  EXPECT_EQ(json.at("num_query_groups"), 8);
  EXPECT_EQ(json.at("untie_embeddings_and_output_weights"), true);
  EXPECT_EQ(json.size(), model_spec_keys().size());
}

TEST(ModelSpecJson, UnknownKeyNamesKeyContextAndSuggestion) {
  nlohmann::json json = minimal_json();
  json.erase("num_layers");
  json["num_layer"] = 4;
  const std::string message =
      error_message<InputError>([&] { model_spec_from_json(json, "my-model.json"); });
  EXPECT_THAT(message, HasSubstr("my-model.json: unknown model key 'num_layer'"));
  EXPECT_THAT(message, HasSubstr("did you mean 'num_layers'?"));
}

TEST(ModelSpecJson, WrongTypeNamesKey) {
  nlohmann::json json = minimal_json();
  json["num_layers"] = "80";
  EXPECT_THAT(error_message<InputError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("m.json: model key 'num_layers' must be an integer, got string \"80\""));
  json["num_layers"] = 80.5;
  EXPECT_THAT(error_message<InputError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("model key 'num_layers' must be an integer, got number 80.5"));
  json = minimal_json();
  json["swiglu"] = 1;
  EXPECT_THAT(error_message<InputError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("model key 'swiglu' must be true or false, got integer 1"));
  json = minimal_json();
  json["normalization"] = false;
  EXPECT_THAT(error_message<InputError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("model key 'normalization' must be a string, got boolean false"));
}

TEST(ModelSpecJson, MissingRequiredKeyIsNamed) {
  nlohmann::json json = minimal_json();
  json.erase("hidden_size");
  EXPECT_THAT(error_message<InputError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("m.json: missing required model key 'hidden_size'"));
}

TEST(ModelSpecJson, NotAnObjectOrNotJson) {
  EXPECT_THAT(error_message<InputError>([] { model_spec_from_json(nlohmann::json::array(), "m.json"); }),
              HasSubstr("m.json: model spec must be a JSON object, got array"));
  EXPECT_THAT(error_message<InputError>([] { parse_model_spec("{\"name\": ", "bad.json"); }),
              HasSubstr("bad.json: invalid JSON: parse error at line 1"));
}

TEST(ModelSpecJson, DerivesMegatronDefaults) {
  const ModelSpec model = model_spec_from_json(minimal_json(), "m.json");
  EXPECT_EQ(model.kv_channels, 256 / 8);
  EXPECT_EQ(model.num_query_groups, 8);
  EXPECT_EQ(model.ffn_hidden_size, 4 * 256);
  EXPECT_EQ(model.moe_ffn_hidden_size, model.ffn_hidden_size);
  EXPECT_EQ(model.normalization, "layernorm");
  EXPECT_TRUE(model.add_bias_linear);

  nlohmann::json swiglu = minimal_json();
  swiglu["hidden_size"] = 4096;
  swiglu["swiglu"] = true;
  // int((4 * 4096 * 2 / 3) / 64) * 64 = 10880, Megatron's SwiGLU default.
  EXPECT_EQ(model_spec_from_json(swiglu, "m.json").ffn_hidden_size, 10880);
}

TEST(ModelSpecRules, ViolationsNameFieldAndRule) {
  nlohmann::json json = minimal_json();
  json["num_query_groups"] = 3;
  EXPECT_THAT(error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("m.json: model 'tiny': num_attention_heads=8 must be divisible by num_query_groups=3"));

  json = minimal_json();
  json["num_attention_heads"] = 7;
  EXPECT_THAT(error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("hidden_size=256 must be divisible by num_attention_heads=7 to derive kv_channels"));

  json = minimal_json();
  json["num_layers"] = 0;
  json["vocab_size"] = -5;
  const std::string both = error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); });
  EXPECT_THAT(both, HasSubstr("num_layers=0 must be positive"));
  EXPECT_THAT(both, HasSubstr("vocab_size=-5 must be positive"));

  json = minimal_json();
  json["normalization"] = "batchnorm";
  EXPECT_THAT(error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("normalization='batchnorm' must be 'rmsnorm' or 'layernorm'"));

  json = minimal_json();
  json["num_experts"] = 8;
  json["moe_router_topk"] = 9;
  EXPECT_THAT(error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("moe_router_topk=9 must be between 1 and num_experts=8"));

  json = minimal_json();
  json["num_experts"] = 8;
  json["num_dense_layers"] = 4;
  EXPECT_THAT(error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("num_experts=8 but no layer is MoE"));

  json = minimal_json();
  json["multi_latent_attention"] = true;
  json["num_query_groups"] = 2;
  EXPECT_THAT(error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); }),
              HasSubstr("multi_latent_attention needs num_query_groups=num_attention_heads=8"));
}

TEST(ModelSpecRules, WindowFieldsAreNonNegative) {
  nlohmann::json json = minimal_json();
  json["window_size"] = -1;
  json["window_attn_skip_freq"] = -2;
  const std::string message = error_message<ConfigError>([&] { model_spec_from_json(json, "m.json"); });
  EXPECT_THAT(message, HasSubstr("window_size=-1 must be >= 0"));
  EXPECT_THAT(message, HasSubstr("window_attn_skip_freq=-2 must be >= 0"));
}

TEST(ModelSpecOverride, SetsMegatronNamedFields) {
  ModelSpec model = model_preset("llama3-70b");
  apply_override(model, "num_layers", "40");
  apply_override(model, "--ffn-hidden-size", "14336");
  apply_override(model, "num-query-groups", "16");
  apply_override(model, "untie_embeddings_and_output_weights", "false");
  apply_override(model, "vocab_size", "32000");
  apply_override(model, "swiglu", "false");
  EXPECT_EQ(model.num_layers, 40);
  EXPECT_EQ(model.ffn_hidden_size, 14336);
  EXPECT_EQ(model.num_query_groups, 16);
  EXPECT_FALSE(model.untie_embeddings_and_output_weights);
  EXPECT_EQ(model.vocab_size, 32000);
  EXPECT_FALSE(model.swiglu);
  EXPECT_EQ(model.kv_channels, 128);  // explicit in the preset and still hidden/heads
}

TEST(ModelSpecOverride, DerivedFieldsFollowSizeChanges) {
  ModelSpec gpt = model_preset("gpt-1.5b");  // MHA, ffn = 4h, kv_channels = h/heads
  apply_override(gpt, "hidden_size", "3072");
  EXPECT_EQ(gpt.kv_channels, 3072 / 24);
  EXPECT_EQ(gpt.ffn_hidden_size, 4 * 3072);
  apply_override(gpt, "num_attention_heads", "32");
  EXPECT_EQ(gpt.num_query_groups, 32);  // stays MHA
  EXPECT_EQ(gpt.kv_channels, 3072 / 32);

  ModelSpec llama = model_preset("llama3-70b");
  apply_override(llama, "num_attention_heads", "32");
  EXPECT_EQ(llama.num_query_groups, 8);  // GQA groups are kept
  EXPECT_EQ(llama.kv_channels, 8192 / 32);
}

TEST(ModelSpecOverride, WindowSizeTakesMegatronTuple) {
  // Megatron's --window-size is tuple_type: "128,0" or "(128, 0)"; the causal right side must be 0.
  ModelSpec model = model_preset("llama3-8b");
  apply_override(model, "--window-size", "(4096, 0)");
  EXPECT_EQ(model.window_size, 4096);
  apply_override(model, "window-size", "128,0");
  EXPECT_EQ(model.window_size, 128);
  apply_override(model, "window_attn_skip_freq", "4");
  EXPECT_EQ(model.window_attn_skip_freq, 4);
  apply_override(model, "window_size", "0");
  EXPECT_EQ(model.window_size, 0);
  EXPECT_THAT(error_message<InputError>([&] { apply_override(model, "window_size", "128,64"); }),
              HasSubstr("window_size=128,64: expected an integer or Megatron's (left, 0); the right side must be 0"));
  EXPECT_THAT(error_message<InputError>([&] { apply_override(model, "window_size", "(a, 0)"); }),
              HasSubstr("window_size=a: expected an integer"));
}

TEST(ModelSpecOverride, ErrorsAreClearAndLeaveModelUnchanged) {
  ModelSpec model = model_preset("llama3-8b");
  const ModelSpec before = model;
  const std::string unknown = error_message<InputError>([&] { apply_override(model, "num_layer", "4"); });
  EXPECT_THAT(unknown, HasSubstr("unknown model field 'num_layer' (did you mean 'num_layers'?)"));
  EXPECT_THAT(unknown, HasSubstr("valid fields: name, num_layers, hidden_size"));
  EXPECT_THAT(error_message<InputError>([&] { apply_override(model, "num_layers", "forty"); }),
              HasSubstr("num_layers=forty: expected an integer"));
  EXPECT_THAT(error_message<InputError>([&] { apply_override(model, "swiglu", "maybe"); }),
              HasSubstr("swiglu=maybe: expected true or false"));
  EXPECT_THAT(error_message<ConfigError>([&] { apply_override(model, "num_query_groups", "3"); }),
              HasSubstr("num_attention_heads=32 must be divisible by num_query_groups=3"));
  EXPECT_EQ(model, before);
}

TEST(ModelSpecLayers, MoeLayerPattern) {
  const ModelSpec deepseek = model_preset("deepseek-v3");
  EXPECT_FALSE(deepseek.is_moe_layer(0));
  EXPECT_FALSE(deepseek.is_moe_layer(2));
  EXPECT_TRUE(deepseek.is_moe_layer(3));
  EXPECT_TRUE(deepseek.is_moe_layer(60));
  EXPECT_EQ(deepseek.num_moe_layers(), 58);

  ModelSpec every_other = model_preset("mixtral-8x7b");
  apply_override(every_other, "moe_layer_freq", "2");
  EXPECT_TRUE(every_other.is_moe_layer(0));
  EXPECT_FALSE(every_other.is_moe_layer(1));
  EXPECT_EQ(every_other.num_moe_layers(), 16);
  EXPECT_EQ(model_preset("llama3-8b").num_moe_layers(), 0);
}

TEST(ModelSpecLayers, WindowAttentionPattern) {
  // gpt-oss: window_size (128, 0) with window_attn_skip_freq 2; Megatron's 1-based layer n is
  // sliding-window iff n % 2 != 0, so 0-based layers 0, 2, 4, ... are windowed (18 of 36).
  const ModelSpec oss = model_preset("gpt-oss-120b");
  EXPECT_TRUE(oss.is_window_attention_layer(0));
  EXPECT_FALSE(oss.is_window_attention_layer(1));
  EXPECT_TRUE(oss.is_window_attention_layer(34));
  EXPECT_FALSE(oss.is_window_attention_layer(35));
  EXPECT_EQ(oss.num_window_attention_layers(), 18);

  ModelSpec every_layer = oss;
  apply_override(every_layer, "window_attn_skip_freq", "0");  // Megatron None: every layer windowed
  EXPECT_EQ(every_layer.num_window_attention_layers(), 36);
  apply_override(every_layer, "window_attn_skip_freq", "4");  // 3 windowed : 1 full
  EXPECT_EQ(every_layer.num_window_attention_layers(), 27);
  EXPECT_FALSE(every_layer.is_window_attention_layer(3));
  apply_override(every_layer, "window_size", "0");  // no window: the frequency has no effect
  EXPECT_EQ(every_layer.num_window_attention_layers(), 0);
  EXPECT_EQ(model_preset("llama3-8b").num_window_attention_layers(), 0);
}

TEST(ModelSpecLayers, QueryProjectionWiderThanHidden) {
  // gpt-oss: 64 heads x 64 = 4096 query width on a 2880 hidden size (kv_channels given, not h/n).
  const ModelSpec oss = model_preset("gpt-oss-120b");
  EXPECT_EQ(oss.query_projection_size(), 4096);
  const std::int64_t h = 2880, q = 4096, kv = 8 * 64;
  // q/k/v and out projections with biases, RMSNorm.
  EXPECT_EQ(oss.attention_params(), h * (q + 2 * kv) + q * h + (q + 2 * kv + h) + h);
}

TEST(ModelSpecParams, QkvBiasOnly) {
  // Qwen2.5: add_qkv_bias without add_bias_linear: biases on q, k, v only (Megatron attention.py:
  // bias = add_bias_linear or add_qkv_bias on linear_qkv).
  const ModelSpec qwen = model_preset("qwen2.5-7b");
  const std::int64_t h = 3584, q = 3584, kv = 4 * 128;
  EXPECT_EQ(qwen.attention_params(), h * (q + 2 * kv) + q * h + (q + 2 * kv) + h);
  EXPECT_EQ(qwen.dense_mlp_params(), 3 * h * 18944 + h);
}

// The calibration-file models and Qwen2.5-7B against their published sizes.
TEST(ModelSpecParams, CalibrationModelsMatchPublishedCounts) {
  auto within = [](double actual, double expected, double tolerance) {
    return std::abs(actual / expected - 1) <= tolerance;
  };
  // GPT-3 paper (Brown et al. 2020) Table 2.1: 175.0B (ours 174.6B).
  EXPECT_TRUE(within(model_preset("gpt3-175b").total_params(), 175.0e9, 0.005));
  // NeMo / Megatron-Bridge GPTConfig5B, named "5B" (ours 5.05B: 4.83B in layers + 0.21B embeddings).
  EXPECT_TRUE(within(model_preset("gpt3-5b").total_params(), 5e9, 0.02));
  // Llama 2 paper (Touvron et al. 2023) sizes 7B / 70B; the exact counts of the released HF
  // checkpoints (sum of tensor sizes) are 6,738,415,616 and 68,976,648,192.
  EXPECT_EQ(model_preset("llama2-7b").total_params(), 6'738'415'616);
  EXPECT_EQ(model_preset("llama2-70b").total_params(), 68'976'648'192);
  // Nemotron-4 340B (NVIDIA 2024; HF model card Nemotron-4-340B-Base: "340 billion parameters"); ours 341.0B.
  EXPECT_TRUE(within(model_preset("nemotron-340b").total_params(), 340e9, 0.005));
  // gpt-oss model card (OpenAI 2025): 116.8B total, 5.1B active per token, the active count taking
  // the unembedding but not the input embedding (attention sinks, 2304 parameters, not modelled).
  const ModelSpec oss = model_preset("gpt-oss-120b");
  EXPECT_TRUE(within(oss.total_params(), 116.8e9, 0.001));
  EXPECT_TRUE(within(oss.active_params() - std::int64_t{oss.vocab_size} * oss.hidden_size, 5.1e9, 0.01));
  // Qwen2.5-7B model card: 7.61B parameters, 6.53B non-embedding.
  const ModelSpec qwen = model_preset("qwen2.5-7b");
  EXPECT_TRUE(within(qwen.total_params(), 7.61e9, 0.002));
  EXPECT_TRUE(within(qwen.total_params() - qwen.embedding_params(), 6.53e9, 0.002));
}

// Published totals: Llama 3 paper / model cards (8.03B, 70.6B, 405B), Mixtral 46.7B/12.9B active,
// Qwen3 30.5B/3.3B and 235B/22B, DeepSeek-V3 671B/37B active (MTP excluded).
TEST(ModelSpecParams, MatchPublishedCounts) {
  auto within = [](double actual, double expected, double tolerance) {
    return std::abs(actual / expected - 1) <= tolerance;
  };
  EXPECT_TRUE(within(model_preset("llama3-8b").total_params(), 8.03e9, 0.01));
  EXPECT_TRUE(within(model_preset("llama3-70b").total_params(), 70.6e9, 0.01));
  EXPECT_TRUE(within(model_preset("llama3.1-405b").total_params(), 405e9, 0.01));
  EXPECT_TRUE(within(model_preset("mixtral-8x7b").total_params(), 46.7e9, 0.01));
  EXPECT_TRUE(within(model_preset("mixtral-8x7b").active_params(), 12.9e9, 0.01));
  EXPECT_TRUE(within(model_preset("qwen3-30b-a3b").total_params(), 30.5e9, 0.01));
  EXPECT_TRUE(within(model_preset("qwen3-30b-a3b").active_params(), 3.3e9, 0.03));
  EXPECT_TRUE(within(model_preset("qwen3-235b-a22b").total_params(), 235e9, 0.01));
  EXPECT_TRUE(within(model_preset("qwen3-235b-a22b").active_params(), 22e9, 0.01));
  EXPECT_TRUE(within(model_preset("deepseek-v3").total_params(), 671e9, 0.01));
  EXPECT_TRUE(within(model_preset("deepseek-v3").active_params(), 37e9, 0.02));
  // DeepSeek-V3: 685B with the MTP module's 14B (which includes its share of embedding and head).
  EXPECT_TRUE(within(model_preset("deepseek-v3").mtp_params(), 11.6e9, 0.01));
}

TEST(ModelSpecParams, GptMatchesNarayananClosedForm) {
  // Narayanan et al. 2021: P = 12lh^2 (1 + 13/(12h) + (V+s)/(12lh)), i.e. 12lh^2 + 13lh + (V+s)h,
  // plus the final LayerNorm (2h) that the paper leaves out.
  for (const char* name : {"gpt-1.5b", "gpt-6.2b", "gpt-14.6b", "gpt-28.3b"}) {
    const ModelSpec m = model_preset(name);
    const std::int64_t l = m.num_layers, h = m.hidden_size, v = m.vocab_size, s = m.seq_length;
    EXPECT_EQ(m.total_params(), 12 * l * h * h + 13 * l * h + (v + s) * h + 2 * h) << name;
    EXPECT_EQ(m.active_params(), m.total_params()) << name;
  }
}

TEST(ModelSpecParams, LlamaLayerBreakdown) {
  const ModelSpec m = model_preset("llama3-8b");
  // q 4096x4096, k and v 4096x1024, o 4096x4096, RMSNorm 4096.
  EXPECT_EQ(m.attention_params(), 4096LL * (4096 + 2 * 1024) + 4096LL * 4096 + 4096);
  EXPECT_EQ(m.dense_mlp_params(), 3LL * 4096 * 14336 + 4096);
  EXPECT_EQ(m.embedding_params(), 2LL * 128256 * 4096);
}

}  // namespace
}  // namespace pipelab
