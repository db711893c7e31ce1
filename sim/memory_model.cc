// Memory model; see memory_model.h and docs/metrics.md.
#include "pipelab/sim/memory_model.h"

#include <algorithm>

#include "pipelab/profiles/flops.h"
#include "pipelab/sim/stage_layers.h"

namespace pipelab::sim {
namespace {

constexpr double kBf16 = 2, kFp32 = 4;

// Widths of a layer's tensors, in elements per token (before TP sharding).
struct Widths {
  double h, q, kv, f_act, f_up;
};

Widths widths(const ModelSpec& m, int layer) {
  Widths w{};
  w.h = m.hidden_size;
  w.q = static_cast<double>(m.query_projection_size());
  w.kv = m.multi_latent_attention ? static_cast<double>(m.num_attention_heads) * m.v_head_dim
                                  : static_cast<double>(m.num_query_groups) * m.kv_channels;
  // MLP width one token activates: the dense MLP, or top-k routed experts plus the shared ones.
  const double f = m.is_moe_layer(layer)
                       ? static_cast<double>(m.moe_router_topk) * m.moe_ffn_hidden_size + m.moe_shared_expert_intermediate_size
                       : m.ffn_hidden_size;
  w.f_act = f;
  w.f_up = m.swiglu ? 2 * f : f;
  return w;
}

}  // namespace

MemoryModel::MemoryModel(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape, MemoryOptions options)
    : model_(model), config_(config), shape_(shape), options_(options) {
  const auto ranges = stage_layers(model, config, shape);
  const double tokens = static_cast<double>(config.mbs) * config.seq_length / config.cp;
  const double vocab_per_gpu = static_cast<double>(padded_vocab_size(model, 128 * config.tp)) / config.tp;
  const bool full = config.recompute == Recompute::kFull;
  for (const LayerRange& range : ranges) {
    StageActivation act;
    StageParams params;
    for (int l = range.first; l < range.first + range.count; ++l) {
      act.bytes += layer_activation_bytes(l);
      if (full) {
        // Only the input was kept; I recomputes the layer and must keep the weight stash for W.
        act.freed_by_input_grad += layer_activation_bytes(l);
        act.allocated_by_input_grad += layer_weight_stash_bytes(l);
      } else {
        act.freed_by_input_grad += layer_activation_bytes(l) - layer_weight_stash_bytes(l);
      }
      std::int64_t experts = 0;
      params.total += layer_params_per_gpu(l, &experts);
      params.experts += experts;
    }
    const auto vocab = static_cast<std::int64_t>(vocab_per_gpu * model.hidden_size);
    // The embedding on the first part; the LM head (or the tied copy Megatron keeps) on the last.
    params.total += (range.has_embedding ? vocab : 0) + (range.has_output ? vocab : 0);
    if (range.has_output) {
      // fp32 logits kept for the cross-entropy backward; the input-grad frees them.
      const auto logits = static_cast<std::int64_t>(tokens * vocab_per_gpu * kFp32);
      act.bytes += logits;
      act.freed_by_input_grad += logits;
    }
    stages_.push_back(act);
    params_.push_back(params);
  }
}

std::int64_t MemoryModel::layer_activation_bytes(int layer) const {
  const Widths w = widths(model_, layer);
  const double tokens = static_cast<double>(config_.mbs) * config_.seq_length / config_.cp;
  const double t = config_.tp;
  const bool sp = config_.tp > 1 && config_.sequence_parallel_enabled();
  if (config_.recompute == Recompute::kFull) {
    // Only the layer input is kept; the backward recomputes the rest.
    return static_cast<std::int64_t>(tokens * kBf16 * w.h / (sp ? t : 1));
  }
  // Korthikanti §4.1 per token, generalised: attention 11h -> QKV input 2h, Q 2q, K 2kv, V 2kv,
  // out-proj input 2q, dropout mask h; MLP 19h -> input 2h, up output 2f_up, activation 2f_act,
  // mask h; norms 4h.
  const double replicated = 4 * w.h + 2 * w.h + w.h + 2 * w.h + w.h;  // norms, GEMM inputs, masks: 10h
  const double sharded = 2 * w.q + 4 * w.kv + 2 * w.q + 2 * w.f_up + 2 * w.f_act;
  double per_token = sp ? (replicated + sharded) / t : replicated + sharded / t;
  const bool softmax = options_.softmax_stored && config_.recompute == Recompute::kNone;
  if (softmax) {
    // 5as per token: softmax output (2 bytes), its dropout mask (1), softmax input for V (2).
    per_token += 5.0 * model_.num_attention_heads * (static_cast<double>(config_.seq_length) / config_.cp) / t;
  }
  return static_cast<std::int64_t>(tokens * per_token);
}

std::int64_t MemoryModel::layer_weight_stash_bytes(int layer) const {
  const Widths w = widths(model_, layer);
  const double tokens = static_cast<double>(config_.mbs) * config_.seq_length / config_.cp;
  const double t = config_.tp;
  const bool sp = config_.tp > 1 && config_.sequence_parallel_enabled();
  // Inputs of the weight GEMMs and the gradients of their outputs (32h for GPT: ZB paper Table 1).
  // Without SP the QKV and MLP inputs and the out-proj and down-proj output grads (8h) are full
  // copies on every TP rank, as in layer_activation_bytes.
  const double replicated = 2 * w.h + 2 * w.h + 2 * w.h + 2 * w.h;
  const double sharded = 2 * w.q + 2 * w.f_act + 2 * (w.q + 2 * w.kv) + 2 * w.f_up;
  const auto stash = static_cast<std::int64_t>(tokens * (sp ? (replicated + sharded) / t : replicated + sharded / t));
  if (config_.recompute == Recompute::kFull) return stash;  // rebuilt by I's recompute
  return std::min(stash, layer_activation_bytes(layer));
}

std::int64_t MemoryModel::layer_params_per_gpu(int layer, std::int64_t* expert_params) const {
  const ModelSpec& m = model_;
  std::int64_t experts = 0;
  if (m.is_moe_layer(layer)) {
    experts = static_cast<std::int64_t>(m.num_experts) * (m.swiglu ? 3 : 2) * m.hidden_size * m.moe_ffn_hidden_size;
  }
  const std::int64_t rest = m.layer_params(layer) - experts;
  const std::int64_t expert_share = experts / (static_cast<std::int64_t>(config_.ep) * config_.tp);
  if (expert_params) *expert_params = expert_share;
  return rest / config_.tp + expert_share;
}

std::int64_t MemoryModel::stage_params_per_gpu(int stage) const { return params_[static_cast<std::size_t>(stage)].total; }

StaticMemory MemoryModel::static_memory(int rank) const {
  double dense = 0, expert = 0;
  for (int s : shape_.stages_of_rank(rank)) {
    const StageParams& p = params_[static_cast<std::size_t>(s)];
    dense += static_cast<double>(p.total - p.experts);
    expert += static_cast<double>(p.experts);
  }
  StaticMemory out;
  const double params = dense + expert;
  out.params_bytes = static_cast<std::int64_t>(params * kBf16);
  out.grads_bytes = static_cast<std::int64_t>(params * kFp32);
  // The distributed optimizer shards over the data-parallel ranks of each parameter: DP x CP for
  // dense weights, DP x CP / EP for experts.
  const double dense_shards = config_.distributed_optimizer ? static_cast<double>(config_.dp) * config_.cp : 1;
  const double expert_shards = config_.distributed_optimizer ? std::max(1.0, dense_shards / config_.ep) : 1;
  out.optimizer_bytes = static_cast<std::int64_t>(3 * kFp32 * (dense / dense_shards + expert / expert_shards));
  return out;
}

}  // namespace pipelab::sim
