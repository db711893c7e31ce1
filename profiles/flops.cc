// Megatron's model-FLOPs formula and the per-layer forward FLOPs that add up to it.
#include <pipelab/profiles/flops.h>

#include <string>

#include <pipelab/base/error.h>
#include <pipelab/profiles/model_spec.h>

namespace pipelab {
namespace {

// Token-linear attention FLOPs per token per forward pass (projections), as 2 x weight elements.
double attention_projection_flops_per_token(const ModelSpec& m) {
  const double h = m.hidden_size;
  const double n = m.num_attention_heads;
  if (m.multi_latent_attention) {
    const double qk = m.qk_head_dim + m.qk_pos_emb_head_dim;
    // Megatron counts the q/kv LoRA norms as one extra "column" (+1).
    const double q_term = m.q_lora_rank > 0 ? m.q_lora_rank * (h + n * qk + 1) : h * n * qk;
    return 2 * (q_term + m.kv_lora_rank * (h + n * (m.qk_head_dim + m.v_head_dim) + 1) +
                h * m.qk_pos_emb_head_dim);
  }
  const double q = static_cast<double>(m.query_projection_size());  // may exceed h (gpt-oss: 4096 > 2880)
  const double kv = static_cast<double>(m.num_query_groups) * m.kv_channels;
  return 2 * h * (q + 2 * kv);
}

double attention_out_flops_per_token(const ModelSpec& m) {
  const double h = m.hidden_size;
  if (m.multi_latent_attention) return 2.0 * m.num_attention_heads * m.v_head_dim * h;
  return 2.0 * static_cast<double>(m.query_projection_size()) * h;
}

// Keys a query attends to on average, as Megatron counts them: s/2 under the causal mask (Megatron-LM
// training.py); in a sliding-window layer W = window_size + 1 keys (the window and the query itself)
// once the window is full, averaged over the sequence: (W(W+1)/2 + (s-W)W)/s = W - W(W-1)/(2s)
// (Megatron-Bridge flop_utils.py, whose count falls back to s/2 when W >= s).
double mean_keys_per_query(const ModelSpec& m, bool windowed, double s) {
  const double window = m.window_size + 1.0;
  if (!windowed || window >= s) return s / 2;
  return window - window * (window - 1) / (2 * s);
}

// Core attention per token: QK^T and scores x V over `keys` keys.
double attention_core_flops_per_token(const ModelSpec& m, double keys) {
  const double n = m.num_attention_heads;
  if (m.multi_latent_attention) {
    return 2 * (keys * n * (m.qk_head_dim + m.qk_pos_emb_head_dim) + keys * n * m.v_head_dim);
  }
  return 2 * (static_cast<double>(m.query_projection_size()) * keys * 2);
}

double mlp_flops_per_token(const ModelSpec& m, bool moe) {
  const double h = m.hidden_size;
  const double gated = m.swiglu ? 3 : 2;
  if (!moe) return 2 * h * m.ffn_hidden_size * gated;
  return 2 * h * (static_cast<double>(m.moe_ffn_hidden_size) * m.moe_router_topk * gated +
                  static_cast<double>(m.moe_shared_expert_intermediate_size) * gated);
}

LayerFlops layer_flops(const ModelSpec& m, int layer, double tokens, double s, double split) {
  const bool moe = m.is_moe_layer(layer);
  LayerFlops f;
  f.qkv = tokens * attention_projection_flops_per_token(m) / split;
  f.attention_core =
      tokens * attention_core_flops_per_token(m, mean_keys_per_query(m, m.is_window_attention_layer(layer), s)) / split;
  f.attn_out = tokens * attention_out_flops_per_token(m) / split;
  f.mlp = tokens * mlp_flops_per_token(m, moe) / split;
  f.router = moe ? tokens * 2.0 * m.hidden_size * m.num_experts / split : 0;
  return f;
}

void require_positive(std::string_view what, std::int64_t value) {
  if (value <= 0) throw InputError(std::string(what) + "=" + std::to_string(value) + " must be positive");
}

void require_layer(const ModelSpec& m, int layer) {
  if (layer < 0 || layer >= m.num_layers) {
    throw InputError("layer=" + std::to_string(layer) + " must be in [0, num_layers=" + std::to_string(m.num_layers) + ")");
  }
}

}  // namespace

std::int64_t padded_vocab_size(const ModelSpec& model, int vocab_divisor) {
  require_positive("vocab_divisor", vocab_divisor);
  return (std::int64_t{model.vocab_size} + vocab_divisor - 1) / vocab_divisor * vocab_divisor;
}

double megatron_model_flops(const ModelSpec& m, std::int64_t global_batch, std::int64_t seq_length,
                            int vocab_divisor) {
  require_positive("global_batch", global_batch);
  require_positive("seq_length", seq_length);
  const double h = m.hidden_size;
  const double s = static_cast<double>(seq_length);
  // MTP modules count as extra layers shaped like the last layer.
  const int mtp = m.mtp_num_layers;
  const bool last_is_moe = m.is_moe_layer(m.num_layers - 1);
  const bool last_is_windowed = m.is_window_attention_layer(m.num_layers - 1);
  const double moe_layers = m.num_moe_layers() + (last_is_moe ? mtp : 0);
  const double dense_layers = m.num_layers - m.num_moe_layers() + (last_is_moe ? 0 : mtp);
  const double windowed_layers = m.num_window_attention_layers() + (last_is_windowed ? mtp : 0);
  const double layers = m.num_layers + mtp;

  // Per token, forward only (x2 for FMA already inside); x3 below for forward + dgrad + wgrad.
  const double per_token =
      dense_layers * mlp_flops_per_token(m, false) + moe_layers * mlp_flops_per_token(m, true) +
      layers * (attention_projection_flops_per_token(m) + attention_out_flops_per_token(m)) +
      (layers - windowed_layers) * attention_core_flops_per_token(m, mean_keys_per_query(m, false, s)) +
      windowed_layers * attention_core_flops_per_token(m, mean_keys_per_query(m, true, s)) +
      mtp * 2 * (3 * h + 2 * h * h) +                                                   // MTP norms + eh proj
      2 * h * static_cast<double>(padded_vocab_size(m, vocab_divisor)) * (mtp + 1);  // logits
  return 3 * static_cast<double>(global_batch) * s * per_token;
}

LayerFlops layer_forward_flops(const ModelSpec& m, int layer, std::int64_t mbs, std::int64_t seq_length,
                               int tp, int cp) {
  require_layer(m, layer);
  require_positive("mbs", mbs);
  require_positive("seq_length", seq_length);
  require_positive("tp", tp);
  require_positive("cp", cp);
  const double s = static_cast<double>(seq_length);
  return layer_flops(m, layer, static_cast<double>(mbs) * s, s, static_cast<double>(tp) * cp);
}

double attended_keys_per_query(const ModelSpec& m, int layer, std::int64_t seq_length) {
  require_layer(m, layer);
  require_positive("seq_length", seq_length);
  return mean_keys_per_query(m, m.is_window_attention_layer(layer), static_cast<double>(seq_length));
}

double logits_forward_flops(const ModelSpec& m, std::int64_t mbs, std::int64_t seq_length, int tp, int cp,
                            int vocab_divisor) {
  require_positive("mbs", mbs);
  require_positive("seq_length", seq_length);
  require_positive("tp", tp);
  require_positive("cp", cp);
  const double tokens = static_cast<double>(mbs) * static_cast<double>(seq_length);
  return tokens * 2.0 * m.hidden_size * static_cast<double>(padded_vocab_size(m, vocab_divisor)) / (tp * cp);
}

double mtp_glue_forward_flops(const ModelSpec& m, std::int64_t mbs, std::int64_t seq_length, int tp, int cp) {
  const double h = m.hidden_size;
  const double tokens = static_cast<double>(mbs) * static_cast<double>(seq_length);
  return tokens * 2 * (3 * h + 2 * h * h) / (tp * cp);  // enorm/hnorm/final norm + eh_proj
}

double mtp_forward_flops(const ModelSpec& m, std::int64_t mbs, std::int64_t seq_length, int tp, int cp,
                         int vocab_divisor) {
  if (m.mtp_num_layers == 0) return 0;
  const LayerFlops layer = layer_forward_flops(m, m.num_layers - 1, mbs, seq_length, tp, cp);
  const double logits = logits_forward_flops(m, mbs, seq_length, tp, cp, vocab_divisor);
  return m.mtp_num_layers * (layer.forward() + mtp_glue_forward_flops(m, mbs, seq_length, tp, cp) + logits);
}

}  // namespace pipelab
