// Memory model; see memory_model.h and docs/simulator.md.
#include "pipelab/sim/memory_model.h"

#include <algorithm>
#include <utility>

#include "pipelab/sim/stage_layers.h"

namespace pipelab::sim {

MemoryModel::MemoryModel(std::shared_ptr<const LayerGeometry> geometry, const PipelineShape& shape, MemoryOptions options)
    : geometry_(std::move(geometry)), shape_(shape), options_(options) {
  const LayerGeometry& g = *geometry_;
  const bool full = g.config().recompute == Recompute::kFull;
  for (const LayerRange& range : stage_layers(g.model(), g.config(), shape)) {
    StageActivation act;
    for (int l = range.first; l < range.first + range.count; ++l) {
      act.bytes += layer_activation_bytes(l);
      if (full) {
        // Only the input was kept; I recomputes the layer and must keep the weight stash for W.
        act.freed_by_input_grad += layer_activation_bytes(l);
        act.allocated_by_input_grad += layer_weight_stash_bytes(l);
      } else {
        act.freed_by_input_grad += layer_activation_bytes(l) - layer_weight_stash_bytes(l);
      }
    }
    if (range.has_loss || range.mtp_layers > 0) {
      // fp32 logits kept for each cross-entropy backward (the loss's and each MTP module's); the
      // input-grad frees them. An MTP module also keeps a decoder layer's activations.
      const auto logits = static_cast<std::int64_t>(g.logits_bytes()) * ((range.has_loss ? 1 : 0) + range.mtp_layers);
      act.bytes += logits;
      act.freed_by_input_grad += logits;
      const std::int64_t mtp_layer = range.mtp_layers * layer_activation_bytes(g.model().num_layers - 1);
      act.bytes += mtp_layer;
      act.freed_by_input_grad += mtp_layer;
    }
    stages_.push_back(act);
    params_.push_back(g.stage_params(range));
  }
}

MemoryModel::MemoryModel(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape, MemoryOptions options)
    : MemoryModel(std::make_shared<const LayerGeometry>(model, config), shape, options) {}

std::int64_t MemoryModel::layer_activation_bytes(int layer) const {
  const LayerGeometry& g = *geometry_;
  const ParallelConfig& c = g.config();
  const LayerWidths& w = g.widths(layer);
  const double t = c.tp;
  if (c.recompute == Recompute::kFull) {
    // Only the layer input is kept; the backward recomputes the rest.
    return static_cast<std::int64_t>(g.hidden_state_bytes());
  }
  // Korthikanti §4.1 per token, generalised: attention 11h -> QKV input 2h, Q 2q, K and V 2·value
  // each (MLA counted at the value width), out-proj input 2q, dropout mask h; MLP 19h -> input 2h,
  // up output 2·mlp_up, activation 2·mlp, mask h; norms 4h.
  const double replicated = 4 * w.hidden + 2 * w.hidden + w.hidden + 2 * w.hidden + w.hidden;  // norms, GEMM inputs, masks: 10h
  const double sharded = 2 * w.query + 4 * w.value + 2 * w.query + 2 * w.mlp_up + 2 * w.mlp;
  double per_token = g.sequence_parallel() ? (replicated + sharded) / t : replicated + sharded / t;
  const bool softmax = options_.softmax_stored && c.recompute == Recompute::kNone;
  if (softmax) {
    // 5as per token: softmax output (2 bytes), its dropout mask (1), softmax input for V (2).
    per_token += 5.0 * g.model().num_attention_heads * (static_cast<double>(c.seq_length) / c.cp) / t;
  }
  return static_cast<std::int64_t>(g.tokens() * per_token);
}

std::int64_t MemoryModel::layer_weight_stash_bytes(int layer) const {
  const LayerGeometry& g = *geometry_;
  const LayerWidths& w = g.widths(layer);
  const double t = g.config().tp;
  // Inputs of the weight GEMMs and the gradients of their outputs (32h for GPT: ZB paper Table 1).
  // Without SP the QKV and MLP inputs and the out-proj and down-proj output grads (8h) are full
  // copies on every TP rank, as in layer_activation_bytes.
  const double replicated = 2 * w.hidden + 2 * w.hidden + 2 * w.hidden + 2 * w.hidden;
  const double sharded = 2 * w.query + 2 * w.mlp + 2 * (w.query + 2 * w.value) + 2 * w.mlp_up;
  const auto stash = static_cast<std::int64_t>(g.tokens() * (g.sequence_parallel() ? (replicated + sharded) / t : replicated + sharded / t));
  if (g.config().recompute == Recompute::kFull) return stash;  // rebuilt by I's recompute
  return std::min(stash, layer_activation_bytes(layer));
}

StaticMemory MemoryModel::static_memory(int rank) const {
  const ParallelConfig& c = geometry_->config();
  double dense = 0, expert = 0;
  for (int s : shape_.stages_of_rank(rank)) {
    const GpuParams& p = params_[static_cast<std::size_t>(s)];
    dense += static_cast<double>(p.total - p.experts);
    expert += static_cast<double>(p.experts);
  }
  StaticMemory out;
  const double params = dense + expert;
  out.params_bytes = static_cast<std::int64_t>(params * kBf16Bytes);
  out.grads_bytes = static_cast<std::int64_t>(params * kFp32Bytes);
  // The distributed optimizer shards over the data-parallel ranks of each parameter: DP x CP for
  // dense weights, DP x CP / EP for experts.
  const double dense_shards = c.distributed_optimizer ? static_cast<double>(c.dp) * c.cp : 1;
  const double expert_shards = c.distributed_optimizer ? std::max(1.0, dense_shards / c.ep) : 1;
  out.optimizer_bytes = static_cast<std::int64_t>(3 * kFp32Bytes * (dense / dense_shards + expert / expert_shards));
  return out;
}

}  // namespace pipelab::sim
