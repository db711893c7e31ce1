// Memory model; see memory_model.h and docs/simulator.md.
#include "pipelab/sim/memory_model.h"

#include <algorithm>
#include <array>
#include <optional>
#include <utility>

#include "pipelab/sim/cross_entropy.h"
#include "pipelab/sim/stage_layers.h"
#include "pipelab/sim/unfused_attention.h"

namespace pipelab::sim {

double LayerActivation::total() const {
  return norm_inputs + attn_in + mlp_in + masks + qkv + attn_out + softmax + mlp_up_out + mlp_act + moe_dispatched;
}

MemoryModel::MemoryModel(std::shared_ptr<const LayerGeometry> geometry, const PipelineShape& shape, MemoryOptions options)
    : geometry_(std::move(geometry)), shape_(shape), options_(options) {
  const LayerGeometry& g = *geometry_;
  const ParallelConfig& c = g.config();
  const bool full = c.recompute == Recompute::kFull;
  // A layer's bytes depend on the layer only through its kind (MoE or dense, windowed attention or
  // not, its GEMMs in the run's precision or kept in BF16 by first_last_layers_bf16): each kind is sized once.
  struct LayerBytes {
    std::int64_t stored = 0, stash = 0;
  };
  std::array<std::optional<LayerBytes>, 8> kinds;
  const auto layer_bytes = [&](int l) -> const LayerBytes& {
    const ModelSpec& m = g.model();
    const bool own_precision = c.layer_precision(l, m.num_layers) == c.precision;
    std::optional<LayerBytes>& kind = kinds[(own_precision ? 4 : 0) + (m.is_moe_layer(l) ? 2 : 0) + (m.is_window_attention_layer(l) ? 1 : 0)];
    if (!kind) kind = LayerBytes{stored_layer_bytes(l), layer_weight_stash_bytes(l)};
    return *kind;
  };
  for (int l = 0; l < g.model().num_layers; ++l) {
    const GpuParams layer = g.layer_params(l);
    largest_layer_params_ = std::max(largest_layer_params_, layer.total);
    largest_layer_weight_bytes_ = std::max(largest_layer_weight_bytes_, g.weight_bytes(layer));
  }
  for (const LayerRange& range : stage_layers(g.model(), c, shape)) {
    StageActivation act;
    std::int64_t group = 0;  // the current recompute group's activations, as its backward rebuilds them
    std::vector<std::int64_t> offload_window;  // activation offloading: every layer's stored bytes, in order
    for (int i = 0; i < range.count; ++i) {
      const LayerBytes& layer = layer_bytes(range.first + i);
      if (c.cpu_offloading_num_layers > 0) offload_window.push_back(layer.stored);
      if (full && recomputed_in_full(i, range.count)) {
        // Only the input of the layer's recompute group is kept; I recomputes the group and must
        // keep the weight stash for W. The backward re-runs the group's forward and holds all of
        // its layers' activations until it has gone back through them (Megatron checkpoints a
        // uniform group as one call; block, each layer). The group's kept input is the rebuilt first
        // layer's input tensor itself (counted in act.bytes below), not a second copy.
        if (keeps_group_input(i)) group = -static_cast<std::int64_t>(g.hidden_state_bytes());
        group += layer.stored;
        act.recompute_transient = std::max(act.recompute_transient, group);
        if (keeps_group_input(i)) {
          act.bytes += static_cast<std::int64_t>(g.hidden_state_bytes());
          act.freed_by_input_grad += static_cast<std::int64_t>(g.hidden_state_bytes());
          act.largest_layer = std::max(act.largest_layer, static_cast<std::int64_t>(g.hidden_state_bytes()));
        }
        act.allocated_by_input_grad += layer.stash;
      } else if (range.first + i < c.cpu_offloading_num_layers) {
        continue;  // offloaded to host memory (pp = 1: the stage starts at layer 0); below
      } else {
        act.bytes += layer.stored;
        act.freed_by_input_grad += layer.stored - layer.stash;
        act.largest_layer = std::max(act.largest_layer, layer.stored);
      }
    }
    if (!offload_window.empty()) {
      // Activation offloading holds at most K = L - N layer sets: layer j starts once layer j - K's
      // offload has ended (activation_offload.h), so the GPU holds layers [i, i + K) for some i <= N.
      // The last window (the layers never offloaded) is counted above; an earlier one is larger when
      // the early layers are (first_last_layers_bf16, MoE or dense first layers).
      const std::size_t slots = offload_window.size() - static_cast<std::size_t>(c.cpu_offloading_num_layers);
      std::int64_t window = 0, widest = 0;
      for (std::size_t j = 0; j < offload_window.size(); ++j) {
        window += offload_window[j] - (j >= slots ? offload_window[j - slots] : 0);
        if (j + 1 >= slots) widest = std::max(widest, window);
      }
      const std::int64_t kept = window;  // the last window: the layers kept on the GPU
      act.bytes += widest - kept;
      act.freed_by_input_grad += widest - kept;
    }
    if (range.has_loss || range.mtp_layers > 0) {
      // What each cross-entropy keeps for its backward (the loss's and each MTP module's; its
      // implementation's bytes per logit, cross_entropy.h); the input-grad frees it. An MTP module
      // also keeps a decoder layer's activations, or under recompute its inputs.
      const double kept_per_head = g.logits() * cross_entropy_bytes(g.config()).kept;
      const auto logits = static_cast<std::int64_t>(kept_per_head) * ((range.has_loss ? 1 : 0) + range.mtp_layers);
      act.bytes += logits;
      act.freed_by_input_grad += logits;
      // Under full recompute with the uniform method Megatron checkpoints the module
      // (MultiTokenPredictionLayer._checkpointed_forward): it keeps the layer's two inputs (the hidden
      // states and the shifted tokens' embedding) and rebuilds the rest in the backward; under block it
      // does not recompute it.
      // Its glue keeps the two norms' inputs, their concatenation (2h, the projection's input) and the
      // final norm's input: five hidden states.
      const int last = g.model().num_layers - 1;
      const auto hidden = static_cast<std::int64_t>(g.hidden_state_bytes());
      const std::int64_t module = range.mtp_layers > 0 ? stored_layer_bytes(last) + 5 * hidden : 0;
      const std::int64_t stash = range.mtp_layers > 0 ? layer_weight_stash_bytes(last) : 0;
      if (range.mtp_layers > 0 && full && c.recompute_method == RecomputeMethod::kUniform) {
        act.bytes += range.mtp_layers * 2 * hidden;
        act.freed_by_input_grad += range.mtp_layers * 2 * hidden;
        act.recompute_transient = std::max(act.recompute_transient, module);
        act.allocated_by_input_grad += range.mtp_layers * stash;
      } else {
        // As a decoder layer: the input-gradient pass frees all but W's stash.
        act.bytes += range.mtp_layers * module;
        act.freed_by_input_grad += range.mtp_layers * (module - stash);
      }
    }
    stages_.push_back(act);
    params_.push_back(g.stage_params(range));
  }
}

MemoryModel::MemoryModel(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape, MemoryOptions options)
    : MemoryModel(std::make_shared<const LayerGeometry>(model, config), shape, options) {}

bool MemoryModel::recomputed_in_full(int index_in_chunk, int layers_in_chunk) const {
  const ParallelConfig& c = geometry_->config();
  if (c.recompute != Recompute::kFull) return false;
  if (c.recompute_method == RecomputeMethod::kBlock && c.recompute_num_layers > 0) {
    return index_in_chunk < std::min(c.recompute_num_layers, layers_in_chunk);
  }
  return true;  // uniform: every layer, in groups
}

bool MemoryModel::keeps_group_input(int index_in_chunk) const {
  const ParallelConfig& c = geometry_->config();
  const int group = c.recompute_method == RecomputeMethod::kUniform ? std::max(1, c.recompute_num_layers) : 1;
  return index_in_chunk % group == 0;
}

LayerActivation MemoryModel::layer_activation(int layer) const {
  const LayerGeometry& g = *geometry_;
  const ParallelConfig& c = g.config();
  const ModelSpec& m = g.model();
  const LayerWidths& w = g.widths(layer);
  const double t = c.tp;
  const double sp = g.sequence_parallel() ? t : 1;  // what SP divides the replicated tensors by
  const bool moe = m.is_moe_layer(layer);
  // Bytes per element of the saved GEMM inputs: Transformer Engine keeps the FP8 or NVFP4 copies it
  // quantized for the backward when the GEMMs run in FP8 or NVFP4; bf16 otherwise.
  const double gemm_input = quantized_bytes(c.layer_precision(layer, m.num_layers));
  // Korthikanti §4.1 per token, generalised to GQA, SwiGLU and MoE widths (MLA's K at the value
  // width). Replicated over the TP group unless sequence parallel splits them.
  LayerActivation a;
  a.norm_inputs = 4 * w.hidden / sp;             // the two norms' inputs (the residual stream)
  a.attn_in = gemm_input * w.hidden / sp;        // QKV GEMM input (norm1 output)
  a.mlp_in = gemm_input * w.hidden / sp;         // MLP input (norm2 output)
  a.masks = m.hidden_dropout > 0 ? 2 * w.hidden / sp : 0;  // two dropout masks, a byte each
  a.qkv = (2 * w.query + 4 * w.value) / t;       // Q, K, V for the attention backward
  // An unfused backend widens grouped K and V to the query heads (repeat_interleave) for its GEMMs,
  // which keep the widened copies.
  if (c.attention_unfused() && !m.multi_latent_attention) a.qkv += kBf16Bytes * (2 * w.query - w.key - w.value) / t;
  a.attn_out = gemm_input * w.query / t;         // out-projection input
  // A MoE layer's routed experts hold the busiest rank's tokens: moe_busiest_load() x the mean (load
  // imbalance, or the capacity they are padded to); shared experts see every token once.
  const double expert_rows = g.mlp_load(layer);
  a.mlp_up_out = 2 * w.mlp_up / t * expert_rows;          // up (and gate) projection output
  a.mlp_act = gemm_input * w.mlp / t * expert_rows;       // activation: the down projection's input
  // Tokens permuted to the experts: each SP shard's top-k copies, gathered over ETP (etp x the rank's own).
  if (moe) a.moe_dispatched = gemm_input * m.moe_router_topk * w.hidden / t * c.expert_tp() * c.moe_busiest_load();
  if ((options_.softmax_stored || c.attention_unfused()) && !c.recomputes_module("core_attn")) {
    // The scores kept for the backward, per score (unfused_attention.h): with --softmax-stored a fused
    // softmax's (Korthikanti's 5as/h with dropout: the output, the mask, the dropout's output); under an
    // unfused backend its own (the FP32 path keeps more). A sliding-window layer attends to window_size + 1
    // keys at most, but an unfused backend holds every key's score, the window masked.
    const bool windowed = m.is_window_attention_layer(layer);
    double keys = static_cast<double>(c.seq_length) / c.cp;
    if (windowed && !c.attention_unfused()) keys = std::min(keys, m.window_size + 1.0);
    const double per_score = c.attention_unfused() ? unfused_attention_work(m, c, windowed).kept_bytes
                                                   : fused_softmax_kept_bytes(m.attention_dropout > 0);
    a.softmax = per_score * m.num_attention_heads * keys / t;
  }
  // Selective recompute drops what its modules rebuild in the backward (Megatron's
  // --recompute-modules; core_attn by default).
  // core_attn re-runs softmax(QK^T)V from the kept Q, K, V: only the softmax (already absent under
  // any recompute, and with flash attention) goes; its output is the out-projection's saved input.
  if (c.recomputes_module("layernorm")) a.attn_in = a.mlp_in = 0;
  if (c.recomputes_module("mla_up_proj") && m.multi_latent_attention) a.qkv = 0;
  if ((c.recomputes_module("mlp") && !moe) || (c.recomputes_module("moe") && moe)) a.mlp_up_out = a.mlp_act = a.moe_dispatched = 0;
  if (c.recomputes_module("moe_act") && moe) a.mlp_act = 0;
  return a;
}

std::int64_t MemoryModel::layer_activation_bytes(int layer) const {
  const LayerGeometry& g = *geometry_;
  if (g.config().recompute == Recompute::kFull) return static_cast<std::int64_t>(g.hidden_state_bytes());
  return stored_layer_bytes(layer);
}

std::int64_t MemoryModel::stored_layer_bytes(int layer) const {
  return static_cast<std::int64_t>(geometry_->tokens() * layer_activation(layer).total());
}

std::int64_t MemoryModel::layer_weight_stash_bytes(int layer) const {
  const LayerGeometry& g = *geometry_;
  const LayerWidths& w = g.widths(layer);
  const double t = g.config().tp;
  // Inputs of the weight GEMMs and the gradients of their outputs (32h for GPT in bf16: ZB paper
  // Table 1). Without SP the QKV and MLP inputs and the out-proj and down-proj output grads (8h) are
  // full copies on every TP rank, as in layer_activation. When the GEMMs run in FP8 or NVFP4, the
  // weight-gradient GEMM takes both operands quantized (Transformer Engine keeps the column-wise
  // copies it made for it), so the stash holds those: the same bytes per element as the saved inputs.
  const double e = quantized_bytes(g.config().layer_precision(layer, g.model().num_layers));
  // A MoE layer's FC1 input and FC2 output gradient are the routed rows (top-k copies gathered over ETP,
  // on the busiest rank) plus each token once for the shared experts.
  const ModelSpec& m = g.model();
  const ParallelConfig& c = g.config();
  const double mlp_rows = m.is_moe_layer(layer) ? m.moe_router_topk * c.expert_tp() * c.moe_busiest_load() +
                                                       (m.has_shared_experts() ? 1 : 0)
                                                 : 1;
  const double replicated = e * (w.hidden + w.hidden + mlp_rows * (w.hidden + w.hidden));
  const double sharded = e * (w.query + w.mlp + (w.query + 2 * w.value) + w.mlp_up);
  const auto stash = static_cast<std::int64_t>(g.tokens() * (g.sequence_parallel() ? (replicated + sharded) / t : replicated + sharded / t));
  if (g.config().recompute == Recompute::kFull) return stash;  // rebuilt by I's recompute
  return std::min(stash, stored_layer_bytes(layer));
}

MemoryModel::RankParams MemoryModel::rank_params(int rank) const {
  const ParallelConfig& c = geometry_->config();
  RankParams p;
  double weight_bytes = 0;
  for (int s : shape_.stages_of_rank(rank)) {
    const GpuParams& stage = params_[static_cast<std::size_t>(s)];
    p.dense += static_cast<double>(stage.total - stage.experts);
    p.expert += static_cast<double>(stage.experts);
    weight_bytes += geometry_->weight_bytes(stage);
  }
  if (p.dense + p.expert > 0) p.weight_bytes = weight_bytes / (p.dense + p.expert);
  // The data-parallel groups each state is sharded over: DP x CP for dense weights, the expert data
  // parallel ranks for experts; HSDP keeps num_distributed_optimizer_instances replicas of the shards.
  const double instances = c.num_distributed_optimizer_instances;
  p.dense_group = std::max(1.0, static_cast<double>(c.dp) * c.cp / instances);
  p.expert_group = std::max(1.0, static_cast<double>(c.expert_dp()) / instances);
  return p;
}

double MemoryModel::optimizer_params(int rank) const {
  const ParallelConfig& c = geometry_->config();
  return rank_params(rank).held(c.sharding() != Sharding::kNoShard) * (1.0 - c.optimizer_offload_fraction);
}

StaticMemory MemoryModel::static_memory(int rank) const {
  const LayerGeometry& g = *geometry_;
  const ParallelConfig& c = g.config();
  const auto largest_layer = static_cast<double>(largest_layer_params_);
  const RankParams params = rank_params(rank);
  const Sharding sharding = c.sharding();
  const bool shard_params = sharding == Sharding::kOptimGradsParams;
  const bool shard_grads = shard_params || sharding == Sharding::kOptimGrads;
  const bool shard_optimizer = sharding != Sharding::kNoShard;
  auto sharded = [&](bool on) { return params.held(on); };

  StaticMemory out;
  // Weights: bf16, or the FP8 / NVFP4 copy the all-gather moves (--fp8-param-gather, --fp4-param-gather)
  // for the quantized layers.
  const double weight_bytes = params.weight_bytes;
  out.params_bytes = static_cast<std::int64_t>(weight_bytes * sharded(shard_params));
  // Main gradients: the gradient buffer in fp32 or bf16 (grad_reduce_in_fp32).
  const double grad_bytes = c.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes;
  out.grads_bytes = static_cast<std::int64_t>(grad_bytes * sharded(shard_grads));
  // Sharded weights are gathered one layer at a time with the next layer's prefetched (two layers
  // unsharded); sharded gradients are produced whole for the layer being reduce-scattered.
  out.comm_buffers_bytes = static_cast<std::int64_t>((shard_params ? 2 * largest_layer_weight_bytes_ : 0) +
                                                     (shard_grads ? grad_bytes * largest_layer : 0));
  // Optimizer: fp32 main weights and Adam moments (bf16 moments with the precision-aware
  // optimizer), less what is offloaded to the host.
  const double optimizer_bytes = c.use_precision_aware_optimizer ? kFp32Bytes + 2 * kBf16Bytes : 3 * kFp32Bytes;
  out.optimizer_bytes = static_cast<std::int64_t>(optimizer_bytes * sharded(shard_optimizer) * (1.0 - c.optimizer_offload_fraction));
  return out;
}

}  // namespace pipelab::sim
