// Tests for profiles/flops.cc: Megatron's formula against independently derived closed forms (exact to
// the FLOP), against parameter counts, and the per-layer pieces summing back to it.
#include <pipelab/profiles/flops.h>

#include <cmath>
#include <cstdint>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <pipelab/profiles/model_spec.h>
#include <pipelab/profiles/presets.h>

#include "error_message.h"

namespace pipelab {
namespace {

using ::pipelab::testing::error_message;
using ::testing::HasSubstr;

constexpr double kTwoTo53 = 9007199254740992.0;  // doubles hold every integer below this exactly

// Converts a FLOP count that must be an exact integer in double range.
std::int64_t exact(double flops) {
  EXPECT_LT(flops, kTwoTo53);
  EXPECT_EQ(flops, std::floor(flops));
  return static_cast<std::int64_t>(flops);
}

TEST(MegatronFlops, Llama70bEqualsGqaSwigluClosedForm) {
  // Megatron's closed form 12*B*s*L*h^2*[(1 + g/n + s/(2h))*(q/h) + (ffn/h)*(3/2)] + 6*B*s*h*V, with the
  // causal-halved s/(2h), multiplied out into integers:
  //   12*B*s*L*h*q*(n+g)/n + 6*B*s*L*s*q + 18*B*s*L*h*ffn + 6*B*s*h*V.
  const ModelSpec m = model_preset("llama3-70b");
  const std::int64_t b = 1, s = 8192, l = m.num_layers, h = m.hidden_size, ffn = m.ffn_hidden_size;
  const std::int64_t n = m.num_attention_heads, g = m.num_query_groups, q = n * m.kv_channels;
  const std::int64_t v = 128256;  // already a multiple of 128: no padding
  ASSERT_EQ(h * q * (n + g) % n, 0);
  const std::int64_t expected = 12 * b * s * l * (h * q * (n + g) / n) + 6 * b * s * l * s * q +
                                18 * b * s * l * h * ffn + 6 * b * s * h * v;
  EXPECT_EQ(exact(megatron_model_flops(m, b, s)), expected);
}

TEST(MegatronFlops, GptEqualsNarayananWithCausalHalving) {
  // Narayanan et al. without recompute (3 passes): 72*B*s*L*h^2*(1 + s/(6h)) + 6*B*s*h*V. The s/(6h)
  // term is QK^T and scores*V over all s keys; causal masking halves it (Megatron 8873b55d), giving
  //   72*B*s*L*h^2*(1 + s/(12h)) + 6*B*s*h*V = 72*B*s*L*h^2 + 6*B*s*L*s*h + 6*B*s*h*V.
  for (const char* name : {"gpt-1.5b", "gpt-6.2b"}) {
    const ModelSpec m = model_preset(name);
    const std::int64_t b = 16, s = m.seq_length, l = m.num_layers, h = m.hidden_size, v = m.vocab_size;
    const std::int64_t expected = 72 * b * s * l * h * h + 6 * b * s * l * s * h + 6 * b * s * h * v;
    EXPECT_EQ(exact(megatron_model_flops(m, b, s)), expected) << name;
  }
}

TEST(MegatronFlops, DenseModelIsSixTimesGemmParamsPlusAttention) {
  // Per token: 6 x (weights that are GEMMs: all parameters but the input embedding and the norms)
  // + causal core attention 6*q*s per layer.
  const ModelSpec m = model_preset("llama3-70b");
  const std::int64_t s = 4096, l = m.num_layers, h = m.hidden_size;
  const std::int64_t gemm_params = m.total_params() - std::int64_t{m.vocab_size} * h - (2 * l + 1) * h;
  const std::int64_t expected = s * (6 * gemm_params + 6 * l * m.query_projection_size() * s);
  EXPECT_EQ(exact(megatron_model_flops(m, 1, s)), expected);
}

TEST(MegatronFlops, DeepSeekV3IsSixTimesActiveGemmParamsPlusAttention) {
  // MoE + MLA + MTP against the parameter counts: per token 6 x (active GEMM weights of the 61 layers
  // and the MTP module, the q/kv LoRA norms that Megatron counts as "+1", MTP norms and eh_proj,
  // output layer once per head) + MLA core attention. Routers and pre-norms are not counted.
  const ModelSpec m = model_preset("deepseek-v3");
  const std::int64_t s = 4096, h = m.hidden_size, n = m.num_attention_heads;
  const std::int64_t expert = 3 * h * m.moe_ffn_hidden_size;
  auto active_gemm = [&](int layer) {
    std::int64_t p = m.layer_params(layer) - 2 * h;  // minus the two RMSNorms
    if (m.is_moe_layer(layer)) p -= (std::int64_t{m.num_experts} - m.moe_router_topk) * expert + h * m.num_experts;
    return p;
  };
  std::int64_t gemm = 0;
  for (int i = 0; i < m.num_layers; ++i) gemm += active_gemm(i);
  const int mtp = m.mtp_num_layers;
  gemm += mtp * (3 * h + 2 * h * h + active_gemm(m.num_layers - 1));
  gemm += std::int64_t{m.vocab_size} * h * (1 + mtp);  // 129280 is a multiple of 128
  const std::int64_t core = 3 * s * n * (m.qk_head_dim + m.qk_pos_emb_head_dim + m.v_head_dim);
  const std::int64_t expected = s * (6 * gemm + (m.num_layers + mtp) * core);
  EXPECT_EQ(exact(megatron_model_flops(m, 1, s)), expected);
}

TEST(MegatronFlops, VocabularyPadding) {
  const ModelSpec llama = model_preset("llama3-70b");
  EXPECT_EQ(padded_vocab_size(llama), 128256);
  EXPECT_EQ(padded_vocab_size(llama, 128 * 8), 129024);
  EXPECT_EQ(padded_vocab_size(model_preset("mixtral-8x7b"), 128 * 8), 32768);
  EXPECT_EQ(padded_vocab_size(model_preset("gpt-1.5b"), 128 * 8), 51200);
  const double delta = megatron_model_flops(llama, 2, 8192, 1024) - megatron_model_flops(llama, 2, 8192);
  EXPECT_DOUBLE_EQ(delta, 6.0 * 2 * 8192 * 8192 * (129024 - 128256));
}

TEST(MegatronFlops, RejectsBadArguments) {
  const ModelSpec m = model_preset("llama3-8b");
  EXPECT_THAT(error_message<InputError>([&] { megatron_model_flops(m, 0, 8192); }),
              HasSubstr("global_batch=0 must be positive"));
  EXPECT_THAT(error_message<InputError>([&] { layer_forward_flops(m, 32, 1, 8192); }),
              HasSubstr("layer=32 must be in [0, num_layers=32)"));
  EXPECT_THAT(error_message<InputError>([&] { padded_vocab_size(m, 0); }),
              HasSubstr("vocab_divisor=0 must be positive"));
}

TEST(LayerFlops, LlamaLayerPieces) {
  const ModelSpec m = model_preset("llama3-8b");
  const double t = 2 * 8192.0;  // mbs 2
  const LayerFlops f = layer_forward_flops(m, 0, 2, 8192);
  EXPECT_DOUBLE_EQ(f.qkv, 2 * t * 4096 * (4096 + 2 * 1024));
  EXPECT_DOUBLE_EQ(f.attention_core, 2 * t * 4096 * 8192);  // causal half of 4*t*q*s
  EXPECT_DOUBLE_EQ(f.attn_out, 2 * t * 4096 * 4096);
  EXPECT_DOUBLE_EQ(f.mlp, 2 * t * 4096 * 14336 * 3);
  EXPECT_EQ(f.router, 0);
  EXPECT_DOUBLE_EQ(f.input_grad(), f.gemm() + 2 * f.attention_core);
  EXPECT_DOUBLE_EQ(f.weight_grad(), f.gemm());
  EXPECT_DOUBLE_EQ(f.backward(), 2 * f.forward());
}

TEST(LayerFlops, SplitOverTensorAndContextParallel) {
  const ModelSpec m = model_preset("qwen3-235b-a22b");
  const LayerFlops one = layer_forward_flops(m, 5, 1, 4096);
  const LayerFlops split = layer_forward_flops(m, 5, 1, 4096, 8, 2);
  EXPECT_DOUBLE_EQ(split.qkv * 16, one.qkv);
  EXPECT_DOUBLE_EQ(split.attention_core * 16, one.attention_core);
  EXPECT_DOUBLE_EQ(split.attn_out * 16, one.attn_out);
  EXPECT_DOUBLE_EQ(split.mlp * 16, one.mlp);
  EXPECT_DOUBLE_EQ(split.router * 16, one.router);
  EXPECT_DOUBLE_EQ(logits_forward_flops(m, 1, 4096, 8, 2) * 16, logits_forward_flops(m, 1, 4096));
}

TEST(LayerFlops, MoeLayersRouteTopKAndShared) {
  const ModelSpec m = model_preset("deepseek-v3");
  const double t = 4096, h = 7168;
  const LayerFlops dense = layer_forward_flops(m, 0, 1, 4096);
  const LayerFlops moe = layer_forward_flops(m, 3, 1, 4096);
  EXPECT_DOUBLE_EQ(dense.mlp, 2 * t * h * 18432 * 3);
  EXPECT_EQ(dense.router, 0);
  EXPECT_DOUBLE_EQ(moe.mlp, 2 * t * h * (2048.0 * 8 * 3 + 2048 * 3));
  EXPECT_DOUBLE_EQ(moe.router, 2 * t * h * 256);
  EXPECT_DOUBLE_EQ(dense.qkv, moe.qkv);
}

TEST(LayerFlops, PiecesSumToMegatronForEveryPreset) {
  // 3 x (forward of every layer, MTP modules and logits), routers excluded, is Megatron's count.
  for (const auto& name : model_preset_names()) {
    const ModelSpec m = model_preset(name);
    const std::int64_t mbs = 2, s = m.seq_length;
    double forward = logits_forward_flops(m, mbs, s) + mtp_forward_flops(m, mbs, s);
    for (int i = 0; i < m.num_layers; ++i) {
      const LayerFlops f = layer_forward_flops(m, i, mbs, s);
      forward += f.forward() - f.router;
    }
    forward -= m.mtp_num_layers * layer_forward_flops(m, m.num_layers - 1, mbs, s).router;
    const double megatron = megatron_model_flops(m, mbs, s);
    EXPECT_NEAR(3 * forward / megatron, 1.0, 1e-12) << name;
  }
}

}  // namespace
}  // namespace pipelab
