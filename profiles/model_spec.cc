// ModelSpec: field table, strict JSON, overrides, sanity rules and parameter counts.
#include <pipelab/profiles/model_spec.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <limits>

#include <nlohmann/json.hpp>

#include <pipelab/base/error.h>
#include <pipelab/base/json_reader.h>

#include "field_table.h"

namespace pipelab {
namespace {

using Field = detail::Field<ModelSpec, int, bool, std::string, double>;

// One row per JSON key, in documentation order; drives from_json, to_json and apply_override.
const std::array kFields = {
    Field{"name", &ModelSpec::name, true},
    Field{"num_layers", &ModelSpec::num_layers, true},
    Field{"hidden_size", &ModelSpec::hidden_size, true},
    Field{"ffn_hidden_size", &ModelSpec::ffn_hidden_size},
    Field{"num_attention_heads", &ModelSpec::num_attention_heads, true},
    Field{"num_query_groups", &ModelSpec::num_query_groups},
    Field{"kv_channels", &ModelSpec::kv_channels},
    Field{"vocab_size", &ModelSpec::vocab_size, true},
    Field{"seq_length", &ModelSpec::seq_length, true},
    Field{"swiglu", &ModelSpec::swiglu},
    Field{"untie_embeddings_and_output_weights", &ModelSpec::untie_embeddings_and_output_weights},
    Field{"normalization", &ModelSpec::normalization},
    Field{"position_embedding_type", &ModelSpec::position_embedding_type},
    Field{"add_bias_linear", &ModelSpec::add_bias_linear},
    Field{"add_qkv_bias", &ModelSpec::add_qkv_bias},
    Field{"qk_layernorm", &ModelSpec::qk_layernorm},
    Field{"hidden_dropout", &ModelSpec::hidden_dropout},
    Field{"attention_dropout", &ModelSpec::attention_dropout},
    Field{"window_size", &ModelSpec::window_size},
    Field{"window_attn_skip_freq", &ModelSpec::window_attn_skip_freq},
    Field{"num_experts", &ModelSpec::num_experts},
    Field{"moe_router_topk", &ModelSpec::moe_router_topk},
    Field{"moe_ffn_hidden_size", &ModelSpec::moe_ffn_hidden_size},
    Field{"moe_shared_expert_intermediate_size", &ModelSpec::moe_shared_expert_intermediate_size},
    Field{"moe_layer_freq", &ModelSpec::moe_layer_freq},
    Field{"num_dense_layers", &ModelSpec::num_dense_layers},
    Field{"moe_router_num_groups", &ModelSpec::moe_router_num_groups},
    Field{"moe_router_group_topk", &ModelSpec::moe_router_group_topk},
    Field{"multi_latent_attention", &ModelSpec::multi_latent_attention},
    Field{"q_lora_rank", &ModelSpec::q_lora_rank},
    Field{"kv_lora_rank", &ModelSpec::kv_lora_rank},
    Field{"qk_head_dim", &ModelSpec::qk_head_dim},
    Field{"qk_pos_emb_head_dim", &ModelSpec::qk_pos_emb_head_dim},
    Field{"v_head_dim", &ModelSpec::v_head_dim},
    Field{"mtp_num_layers", &ModelSpec::mtp_num_layers},
};

// Megatron's default when --ffn-hidden-size is not given (arguments.py): 4h, or 2/3 of that rounded
// down to a multiple of 64 with SwiGLU.
// Computed in 64 bits and capped at INT_MAX, so an absurd hidden_size reaches validate() (which
// names it) instead of overflowing here.
int default_ffn_hidden_size(int hidden_size, bool swiglu) {
  const std::int64_t ffn = swiglu ? static_cast<std::int64_t>((4.0 * hidden_size * 2 / 3) / 64) * 64 : std::int64_t{4} * hidden_size;
  return static_cast<int>(std::clamp<std::int64_t>(ffn, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

std::int64_t norm_params(const ModelSpec& m, std::int64_t width) {
  return m.normalization == "rmsnorm" ? width : 2 * width;  // LayerNorm has a bias
}

std::int64_t gated_factor(const ModelSpec& m) { return m.swiglu ? 3 : 2; }

// One MLP of width `ffn` (an expert or the dense MLP), without its norm.
std::int64_t mlp_block_params(const ModelSpec& m, std::int64_t ffn) {
  const std::int64_t h = m.hidden_size;
  std::int64_t params = gated_factor(m) * h * ffn;
  if (m.add_bias_linear) params += (m.swiglu ? 2 : 1) * ffn + h;
  return params;
}

std::string str(std::int64_t v) { return std::to_string(v); }

// Megatron's --window-size is a tuple "(left, right)" or "left,right"; a causal decoder's right side
// is 0, so the field keeps the left size. Plain integers pass through.
std::string window_size_text(std::string_view value) {
  std::string text;
  for (const char c : value) {
    if (c != '(' && c != ')' && c != ' ') text += c;
  }
  const std::size_t comma = text.find(',');
  if (comma == std::string::npos) return text;
  const std::string right = text.substr(comma + 1);
  if (right != "0") {
    throw InputError("window_size=" + std::string(value) + ": expected an integer or Megatron's (left, 0); the right "
                     "side must be 0 (a causal decoder sees no later tokens)");
  }
  return text.substr(0, comma);
}

}  // namespace

bool ModelSpec::is_moe_layer(int layer) const {
  return num_experts > 0 && layer >= num_dense_layers && moe_layer_freq > 0 &&
         layer % moe_layer_freq == 0;
}

int ModelSpec::num_moe_layers() const {
  int count = 0;
  for (int i = 0; i < num_layers; ++i) count += is_moe_layer(i) ? 1 : 0;
  return count;
}

bool ModelSpec::is_window_attention_layer(int layer) const {
  if (window_size <= 0) return false;
  return window_attn_skip_freq <= 0 || (layer + 1) % window_attn_skip_freq != 0;
}

int ModelSpec::num_window_attention_layers() const {
  int count = 0;
  for (int i = 0; i < num_layers; ++i) count += is_window_attention_layer(i) ? 1 : 0;
  return count;
}

std::int64_t ModelSpec::query_projection_size() const {
  if (multi_latent_attention) {
    return std::int64_t{num_attention_heads} * (qk_head_dim + qk_pos_emb_head_dim);
  }
  return std::int64_t{num_attention_heads} * kv_channels;
}

std::int64_t ModelSpec::attention_params() const {
  const std::int64_t h = hidden_size;
  const std::int64_t n = num_attention_heads;
  std::int64_t params = norm_params(*this, h);
  if (multi_latent_attention) {
    // DeepSeek-V2 MLA: q down/up (or one q projection), kv down + shared RoPE key, kv up, out proj.
    const std::int64_t qk = qk_head_dim + qk_pos_emb_head_dim;
    params += q_lora_rank > 0 ? h * q_lora_rank + norm_params(*this, q_lora_rank) + q_lora_rank * n * qk
                              : h * n * qk;
    params += h * (kv_lora_rank + qk_pos_emb_head_dim) + norm_params(*this, kv_lora_rank) +
              std::int64_t{kv_lora_rank} * n * (qk_head_dim + v_head_dim);
    params += n * v_head_dim * h;
    if (add_bias_linear) params += h;
    return params;
  }
  const std::int64_t q = n * kv_channels;
  const std::int64_t kv = std::int64_t{num_query_groups} * kv_channels;
  params += h * (q + 2 * kv) + q * h;
  if (add_bias_linear || add_qkv_bias) params += q + 2 * kv;
  if (add_bias_linear) params += h;
  if (qk_layernorm) params += 2 * norm_params(*this, kv_channels);
  return params;
}

std::int64_t ModelSpec::dense_mlp_params() const {
  return norm_params(*this, hidden_size) + mlp_block_params(*this, ffn_hidden_size);
}

std::int64_t ModelSpec::moe_mlp_params() const {
  const std::int64_t h = hidden_size;
  std::int64_t params = norm_params(*this, h) + h * num_experts;  // norm + router
  params += std::int64_t{num_experts} * mlp_block_params(*this, moe_ffn_hidden_size);
  if (has_shared_experts()) {
    params += mlp_block_params(*this, moe_shared_expert_intermediate_size);
  }
  return params;
}

std::int64_t ModelSpec::layer_params(int layer) const {
  return attention_params() + (is_moe_layer(layer) ? moe_mlp_params() : dense_mlp_params());
}

std::int64_t ModelSpec::embedding_params() const {
  const std::int64_t h = hidden_size;
  std::int64_t params = std::int64_t{vocab_size} * h;
  if (position_embedding_type == "learned_absolute") params += std::int64_t{seq_length} * h;
  if (untie_embeddings_and_output_weights) params += std::int64_t{vocab_size} * h;
  return params;
}

std::int64_t ModelSpec::mtp_params() const {
  if (mtp_num_layers == 0) return 0;
  // DeepSeek-V3 MTP module: enorm + hnorm, eh_proj 2h -> h, one transformer layer, final norm.
  const std::int64_t h = hidden_size;
  const std::int64_t module =
      3 * norm_params(*this, h) + 2 * h * h + layer_params(num_layers - 1);
  return mtp_num_layers * module;
}

std::int64_t ModelSpec::total_params() const {
  std::int64_t params = embedding_params() + norm_params(*this, hidden_size);  // + final norm
  for (int i = 0; i < num_layers; ++i) params += layer_params(i);
  return params;
}

std::int64_t ModelSpec::active_params() const {
  const std::int64_t idle_experts = std::int64_t{num_experts} - moe_router_topk;
  return total_params() -
         num_moe_layers() * idle_experts * mlp_block_params(*this, moe_ffn_hidden_size);
}

const std::vector<std::string>& model_spec_keys() {
  static const std::vector<std::string> keys = detail::field_keys(kFields);
  return keys;
}

namespace {

// Upper bounds of the sizes (docs/validation.md, "Limits"), far beyond any published model; with
// them every parameter count below fits in int64 (the largest product, layers x experts x
// 3 x hidden x expert width, stays under 2^62), so total_params() can be checked against
// kMaxParams instead of overflowing.
constexpr std::int64_t kMaxLayers = 4096, kMaxHidden = 1 << 17, kMaxFfn = 1 << 19, kMaxHeads = 1 << 12,
                       kMaxHeadDim = 1 << 14, kMaxVocab = 1 << 24, kMaxSeq = 1 << 24, kMaxExperts = 1 << 12,
                       kMaxLoraRank = 1 << 17, kMaxMtpLayers = 64;
constexpr double kMaxParams = 1e15;  // a thousand times the largest published model

struct SizeLimit {
  std::string_view field;
  int ModelSpec::* member;
  std::int64_t max;
};
const std::array kSizeLimits = {
    SizeLimit{"num_layers", &ModelSpec::num_layers, kMaxLayers},
    SizeLimit{"hidden_size", &ModelSpec::hidden_size, kMaxHidden},
    SizeLimit{"ffn_hidden_size", &ModelSpec::ffn_hidden_size, kMaxFfn},
    SizeLimit{"num_attention_heads", &ModelSpec::num_attention_heads, kMaxHeads},
    SizeLimit{"num_query_groups", &ModelSpec::num_query_groups, kMaxHeads},
    SizeLimit{"kv_channels", &ModelSpec::kv_channels, kMaxHeadDim},
    SizeLimit{"vocab_size", &ModelSpec::vocab_size, kMaxVocab},
    SizeLimit{"seq_length", &ModelSpec::seq_length, kMaxSeq},
    SizeLimit{"window_size", &ModelSpec::window_size, kMaxSeq},
    SizeLimit{"window_attn_skip_freq", &ModelSpec::window_attn_skip_freq, kMaxLayers},
    SizeLimit{"num_experts", &ModelSpec::num_experts, kMaxExperts},
    SizeLimit{"moe_router_topk", &ModelSpec::moe_router_topk, kMaxExperts},
    SizeLimit{"moe_ffn_hidden_size", &ModelSpec::moe_ffn_hidden_size, kMaxFfn},
    SizeLimit{"moe_shared_expert_intermediate_size", &ModelSpec::moe_shared_expert_intermediate_size, kMaxFfn},
    SizeLimit{"moe_layer_freq", &ModelSpec::moe_layer_freq, kMaxLayers},
    SizeLimit{"num_dense_layers", &ModelSpec::num_dense_layers, kMaxLayers},
    SizeLimit{"moe_router_num_groups", &ModelSpec::moe_router_num_groups, kMaxExperts},
    SizeLimit{"moe_router_group_topk", &ModelSpec::moe_router_group_topk, kMaxExperts},
    SizeLimit{"q_lora_rank", &ModelSpec::q_lora_rank, kMaxLoraRank},
    SizeLimit{"kv_lora_rank", &ModelSpec::kv_lora_rank, kMaxLoraRank},
    SizeLimit{"qk_head_dim", &ModelSpec::qk_head_dim, kMaxHeadDim},
    SizeLimit{"qk_pos_emb_head_dim", &ModelSpec::qk_pos_emb_head_dim, kMaxHeadDim},
    SizeLimit{"v_head_dim", &ModelSpec::v_head_dim, kMaxHeadDim},
    SizeLimit{"mtp_num_layers", &ModelSpec::mtp_num_layers, kMaxMtpLayers},
};

}  // namespace

void validate(const ModelSpec& m, std::string_view context) {
  std::vector<std::string> errors;
  for (const SizeLimit& limit : kSizeLimits) {
    if (m.*limit.member > limit.max) {
      errors.push_back(std::string(limit.field) + "=" + str(m.*limit.member) + " must be at most " + str(limit.max));
    }
  }
  const bool sizes_in_range = errors.empty();
  auto positive = [&](std::string_view field, std::int64_t value) {
    if (value <= 0) errors.push_back(std::string(field) + "=" + str(value) + " must be positive");
  };
  auto non_negative = [&](std::string_view field, std::int64_t value) {
    if (value < 0) errors.push_back(std::string(field) + "=" + str(value) + " must be >= 0");
  };
  if (m.name.empty()) errors.push_back("name must not be empty");
  for (const auto& [field, p] : {std::pair{"hidden_dropout", m.hidden_dropout}, std::pair{"attention_dropout", m.attention_dropout}}) {
    if (!(p >= 0 && p < 1)) errors.push_back(std::string(field) + "=" + std::to_string(p) + " must be in [0, 1)");
  }
  positive("num_layers", m.num_layers);
  positive("hidden_size", m.hidden_size);
  positive("ffn_hidden_size", m.ffn_hidden_size);
  positive("num_attention_heads", m.num_attention_heads);
  positive("num_query_groups", m.num_query_groups);
  positive("kv_channels", m.kv_channels);
  positive("vocab_size", m.vocab_size);
  positive("seq_length", m.seq_length);
  if (m.num_attention_heads > 0 && m.num_query_groups > 0 &&
      m.num_attention_heads % m.num_query_groups != 0) {
    errors.push_back("num_attention_heads=" + str(m.num_attention_heads) +
                     " must be divisible by num_query_groups=" + str(m.num_query_groups));
  }
  if (m.normalization != "rmsnorm" && m.normalization != "layernorm") {
    errors.push_back("normalization='" + m.normalization + "' must be 'rmsnorm' or 'layernorm'");
  }
  if (m.position_embedding_type != "learned_absolute" && m.position_embedding_type != "rope" &&
      m.position_embedding_type != "none") {
    errors.push_back("position_embedding_type='" + m.position_embedding_type +
                     "' must be 'learned_absolute', 'rope' or 'none'");
  }
  non_negative("num_experts", m.num_experts);
  if (m.num_experts > 0) {
    if (m.moe_router_topk < 1 || m.moe_router_topk > m.num_experts) {
      errors.push_back("moe_router_topk=" + str(m.moe_router_topk) + " must be between 1 and num_experts=" +
                       str(m.num_experts));
    }
    positive("moe_ffn_hidden_size", m.moe_ffn_hidden_size);
    non_negative("moe_shared_expert_intermediate_size", m.moe_shared_expert_intermediate_size);
    positive("moe_layer_freq", m.moe_layer_freq);
    non_negative("num_dense_layers", m.num_dense_layers);
    non_negative("moe_router_num_groups", m.moe_router_num_groups);
    non_negative("moe_router_group_topk", m.moe_router_group_topk);
    if (m.moe_router_num_groups > 0) {
      if (m.num_experts % m.moe_router_num_groups != 0) {
        errors.push_back("moe_router_num_groups=" + str(m.moe_router_num_groups) + " must divide num_experts=" + str(m.num_experts));
      }
      if (m.moe_router_group_topk < 1 || m.moe_router_group_topk > m.moe_router_num_groups) {
        errors.push_back("moe_router_group_topk=" + str(m.moe_router_group_topk) + " must be between 1 and moe_router_num_groups=" +
                         str(m.moe_router_num_groups));
      }
    } else if (m.moe_router_group_topk > 0) {
      errors.push_back("moe_router_group_topk=" + str(m.moe_router_group_topk) + " needs moe_router_num_groups > 0");
    }
    if (sizes_in_range && m.num_layers > 0 && m.moe_layer_freq > 0 && m.num_dense_layers >= 0 && m.num_moe_layers() == 0) {
      errors.push_back("num_experts=" + str(m.num_experts) + " but no layer is MoE (num_dense_layers=" +
                       str(m.num_dense_layers) + ", moe_layer_freq=" + str(m.moe_layer_freq) +
                       ", num_layers=" + str(m.num_layers) + ")");
    }
  }
  if (m.multi_latent_attention) {
    non_negative("q_lora_rank", m.q_lora_rank);
    positive("kv_lora_rank", m.kv_lora_rank);
    positive("qk_head_dim", m.qk_head_dim);
    non_negative("qk_pos_emb_head_dim", m.qk_pos_emb_head_dim);
    positive("v_head_dim", m.v_head_dim);
    if (m.num_query_groups != m.num_attention_heads) {
      errors.push_back("multi_latent_attention needs num_query_groups=num_attention_heads=" +
                       str(m.num_attention_heads) + " (MLA has no grouped queries), got " +
                       str(m.num_query_groups));
    }
  }
  non_negative("window_size", m.window_size);
  non_negative("window_attn_skip_freq", m.window_attn_skip_freq);
  non_negative("mtp_num_layers", m.mtp_num_layers);
  // Every size is in range and positive where it must be, so the counts cannot overflow.
  if (errors.empty() && static_cast<double>(m.total_params()) > kMaxParams) {
    errors.push_back("the model has " + str(m.total_params()) + " parameters, more than the limit of 1e15");
  }
  if (errors.empty()) return;

  throw ConfigError(context_prefix(context) + "model '" + m.name + "': " + join(errors, "; "));
}

ModelSpec model_spec_from_json(const nlohmann::json& json, std::string_view context) {
  const JsonReader reader(json, context, KeyNames::spec("model"), model_spec_keys());
  ModelSpec m;
  detail::read_fields(kFields, reader, m);
  // Megatron's derived defaults.
  if (!reader.has("ffn_hidden_size")) m.ffn_hidden_size = default_ffn_hidden_size(m.hidden_size, m.swiglu);
  if (!reader.has("num_query_groups")) m.num_query_groups = m.num_attention_heads;
  if (!reader.has("kv_channels") && m.num_attention_heads > 0) {
    if (m.hidden_size % m.num_attention_heads != 0) {
      throw ConfigError(context_prefix(context) + "model '" + m.name + "': hidden_size=" +
                        str(m.hidden_size) + " must be divisible by num_attention_heads=" +
                        str(m.num_attention_heads) + " to derive kv_channels (or give kv_channels)");
    }
    m.kv_channels = m.hidden_size / m.num_attention_heads;
  }
  if (!reader.has("moe_ffn_hidden_size")) m.moe_ffn_hidden_size = m.ffn_hidden_size;
  validate(m, context);
  return m;
}

ModelSpec parse_model_spec(std::string_view json_text, std::string_view context) {
  return model_spec_from_json(parse_json_text(json_text, context), context);
}

nlohmann::json to_json(const ModelSpec& m) { return detail::fields_to_json(kFields, m); }

namespace {
// Overrides come from Megatron command lines, which spell some values differently:
// --window-size takes "128,0", --normalization takes "RMSNorm".
std::string canonical_value(const std::string& key, std::string_view value) {
  if (key == "window_size") return window_size_text(value);
  std::string text(value);
  if (key == "normalization" || key == "position_embedding_type") {
    for (char& ch : text) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  }
  return text;
}
}  // namespace

void apply_override(ModelSpec& model, std::string_view raw_key, std::string_view value) {
  const std::string key = detail::normalize_key(raw_key);
  const Field* field = detail::find_field(kFields, key);
  if (field == nullptr) detail::throw_unknown_field("model", raw_key, model_spec_keys());
  ModelSpec m = model;
  detail::set_field(*field, m, canonical_value(key, value));

  // Values that were Megatron's derivation from the old sizes follow the new sizes.
  const bool sizes_changed = key == "hidden_size" || key == "num_attention_heads" || key == "swiglu";
  if (sizes_changed) {
    if (model.num_attention_heads > 0 && model.kv_channels == model.hidden_size / model.num_attention_heads &&
        m.num_attention_heads > 0 && m.hidden_size % m.num_attention_heads == 0) {
      m.kv_channels = m.hidden_size / m.num_attention_heads;
    }
    if (model.num_query_groups == model.num_attention_heads) m.num_query_groups = m.num_attention_heads;
    if (model.ffn_hidden_size == default_ffn_hidden_size(model.hidden_size, model.swiglu)) {
      m.ffn_hidden_size = default_ffn_hidden_size(m.hidden_size, m.swiglu);
    }
  }
  if ((sizes_changed || key == "ffn_hidden_size") && model.moe_ffn_hidden_size == model.ffn_hidden_size) {
    m.moe_ffn_hidden_size = m.ffn_hidden_size;
  }
  validate(m, "override " + key + "=" + std::string(value));
  model = std::move(m);
}

}  // namespace pipelab
