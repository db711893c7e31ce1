// ModelSpec: a transformer architecture in Megatron-LM's vocabulary (dense, GQA, sliding-window
// attention, MoE, MLA, MTP), its strict JSON form, command-line overrides and parameter counts.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace pipelab {

/// A model architecture. Field names and defaults follow Megatron-LM's arguments (`--num-layers` ->
/// num_layers). After from_json/validate every derived default is filled in (kv_channels,
/// num_query_groups, ffn_hidden_size, moe_ffn_hidden_size), so consumers never see "0 = default".
struct ModelSpec {
  std::string name;

  // --- dense transformer ---
  int num_layers = 0;
  int hidden_size = 0;
  int ffn_hidden_size = 0;       // dense MLP width (per expert width is moe_ffn_hidden_size)
  int num_attention_heads = 0;
  int num_query_groups = 0;      // = num_attention_heads for MHA
  int kv_channels = 0;           // head dim; default hidden_size / num_attention_heads
  int vocab_size = 0;            // tokenizer vocabulary, unpadded
  int seq_length = 0;            // default training sequence length (tokens)
  bool swiglu = false;           // gated MLP: 3 GEMMs (h->2f, f->h) instead of 2
  bool untie_embeddings_and_output_weights = false;
  std::string normalization = "layernorm";                // "layernorm" | "rmsnorm"
  std::string position_embedding_type = "learned_absolute";  // "learned_absolute" | "rope" | "none"
  bool add_bias_linear = true;   // biases on the linear layers (GPT yes, Llama no)
  bool add_qkv_bias = false;     // biases on the QKV projection only (Qwen2/2.5); implied by add_bias_linear
  bool qk_layernorm = false;     // per-head norm on Q and K (Qwen3)
  // Dropout probabilities (Megatron's defaults are 0.1; Llama-family recipes set 0): a layer keeps
  // its dropout masks for the backward only when the probability is above zero.
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;

  // --- sliding-window attention (gpt-oss) ---
  int window_size = 0;           // earlier tokens a query sees besides itself (Megatron (W, 0)); 0 = full causal
  int window_attn_skip_freq = 0; // with a window, 1-based layer n is full attention iff n % freq == 0; 0 = none

  // --- mixture of experts (num_experts = 0: dense) ---
  int num_experts = 0;
  int moe_router_topk = 2;
  int moe_ffn_hidden_size = 0;                    // per-expert width; default ffn_hidden_size
  int moe_shared_expert_intermediate_size = 0;    // total width of the shared experts, 0 = none
  int moe_layer_freq = 1;        // layer i (past the dense prefix) is MoE iff i % moe_layer_freq == 0
  int num_dense_layers = 0;      // leading dense layers (DeepSeek first_k_dense_replace)
  int moe_router_num_groups = 0;  // group-limited routing: experts in this many contiguous groups (0 = off)
  int moe_router_group_topk = 0;  // each token picks experts from this many groups (DeepSeek-V3: 4 of 8 nodes)

  // --- multi-latent attention (DeepSeek-V2/V3) ---
  bool multi_latent_attention = false;
  int q_lora_rank = 0;           // 0 = no query compression
  int kv_lora_rank = 512;
  int qk_head_dim = 128;
  int qk_pos_emb_head_dim = 64;  // decoupled RoPE dims per head
  int v_head_dim = 128;

  // --- multi-token prediction (DeepSeek-V3) ---
  int mtp_num_layers = 0;

  bool operator==(const ModelSpec&) const = default;

  bool is_moe() const { return num_experts > 0; }
  bool has_shared_experts() const { return moe_shared_expert_intermediate_size > 0; }
  /// True if layer `layer` (0-based, < num_layers) has an MoE MLP.
  bool is_moe_layer(int layer) const;
  int num_moe_layers() const;
  /// True if layer `layer` (0-based, < num_layers) uses sliding-window attention (Megatron's
  /// is_layer_window_attention with the 1-based layer number layer + 1).
  bool is_window_attention_layer(int layer) const;
  int num_window_attention_layers() const;
  /// Query projection width (heads x head dim); for MLA, heads x (qk_head_dim + qk_pos_emb_head_dim).
  std::int64_t query_projection_size() const;

  // Parameter counts (unpadded vocabulary; biases and norm weights included).
  std::int64_t attention_params() const;  // projections + pre-attention norm
  std::int64_t dense_mlp_params() const;  // dense MLP + pre-MLP norm
  std::int64_t moe_mlp_params() const;    // all experts + shared experts + router + pre-MLP norm
  std::int64_t layer_params(int layer) const;
  std::int64_t embedding_params() const;  // word (+ learned position) embedding + untied output layer
  std::int64_t mtp_params() const;        // MTP modules (their embedding/output are shared)
  /// Main model: layers + embeddings + final norm; MTP modules excluded (as DeepSeek's "671B").
  std::int64_t total_params() const;
  /// Parameters one token touches: total minus the experts it is not routed to.
  std::int64_t active_params() const;
};

/// Throws ConfigError listing every broken sanity rule; `context` (file or preset) prefixes the message.
void validate(const ModelSpec& model, std::string_view context = {});

/// Strict JSON: unknown keys, wrong types and missing required keys throw InputError naming the key and
/// `context`; defaults are filled in and the result is validated (ConfigError).
ModelSpec model_spec_from_json(const nlohmann::json& json, std::string_view context);
/// Parses JSON text (InputError on malformed JSON) then model_spec_from_json.
ModelSpec parse_model_spec(std::string_view json_text, std::string_view context);
/// Every field, with the same key names; model_spec_from_json(to_json(m)) == m.
nlohmann::json to_json(const ModelSpec& model);

/// Sets one field from a command-line string, e.g. ("num_layers", "40") or ("num-layers", "40").
/// Fields that held the value Megatron derives from the old sizes follow the change (kv_channels =
/// hidden/heads, num_query_groups = heads for MHA, ffn_hidden_size = Megatron's default width).
/// Unknown key or unparsable value -> InputError; a result that breaks a rule -> ConfigError.
void apply_override(ModelSpec& model, std::string_view key, std::string_view value);

/// The keys model JSON and apply_override accept.
const std::vector<std::string>& model_spec_keys();

}  // namespace pipelab
