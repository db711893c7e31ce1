// Per-GPU numbers of a layout; see layer_geometry.h.
#include "pipelab/sim/layer_geometry.h"

#include "pipelab/base/error.h"
#include "pipelab/profiles/flops.h"

namespace pipelab::sim {

LayerGeometry::LayerGeometry(const ModelSpec& model, const ParallelConfig& config) : model_(model), config_(config) {
  if (config.dp < 1 || config.seq_length < 1) {
    throw ConfigError("the cost and memory models need a resolved config (dp, seq_length); call resolve() first");
  }
  tokens_ = static_cast<double>(config.mbs) * config.seq_length / config.cp;
  sequence_parallel_ = config.tp > 1 && config.sequence_parallel_enabled();
  sp_split_ = sequence_parallel_ ? config.tp : 1;
  vocab_divisor_ = megatron_vocab_divisor(config.tp);
  vocab_per_gpu_ = static_cast<double>(padded_vocab_size(model, vocab_divisor_)) / config.tp;
  dense_ = widths_of(false);
  moe_ = widths_of(true);
}

LayerWidths LayerGeometry::widths_of(bool moe) const {
  const ModelSpec& m = model_;
  LayerWidths w;
  w.hidden = m.hidden_size;
  w.query = static_cast<double>(m.query_projection_size());
  w.key = m.multi_latent_attention ? static_cast<double>(m.num_attention_heads) * m.qk_head_dim
                                   : static_cast<double>(m.num_query_groups) * m.kv_channels;
  w.value = m.multi_latent_attention ? static_cast<double>(m.num_attention_heads) * m.v_head_dim
                                     : static_cast<double>(m.num_query_groups) * m.kv_channels;
  w.mlp = moe ? static_cast<double>(m.moe_router_topk) * m.moe_ffn_hidden_size + m.moe_shared_expert_intermediate_size
              : m.ffn_hidden_size;
  w.mlp_up = m.swiglu ? 2 * w.mlp : w.mlp;
  return w;
}

double LayerGeometry::mlp_load(int layer) const {
  if (!model_.is_moe_layer(layer)) return 1;
  const double shared = model_.moe_shared_expert_intermediate_size / moe_.mlp;
  return shared + (1 - shared) * config_.moe_busiest_load();
}

GpuParams LayerGeometry::layer_params(int layer) const {
  const ModelSpec& m = model_;
  std::int64_t experts = 0;
  if (m.is_moe_layer(layer)) {
    experts = static_cast<std::int64_t>(m.num_experts) * (m.swiglu ? 3 : 2) * m.hidden_size * m.moe_ffn_hidden_size;
  }
  const std::int64_t rest = m.layer_params(layer) - experts;
  // Routed experts split over EP and expert tensor parallelism (etp, tp by default), not over tp: with
  // etp=1 each rank holds its local experts whole (Megatron's MoE parallel folding).
  const std::int64_t expert_share = experts / (static_cast<std::int64_t>(config_.ep) * config_.expert_tp());
  const std::int64_t total = rest / config_.tp + expert_share;
  // The layer's norms and router go with its linear weights (under 0.1 % of a layer).
  const bool quantized = config_.param_gather_bytes() < kBf16Bytes && config_.layer_precision(layer, m.num_layers) != Precision::kBf16;
  return {total, expert_share, quantized ? total : 0};
}

double LayerGeometry::weight_bytes(const GpuParams& params) const {
  const auto quantized = static_cast<double>(params.quantized);
  return quantized * config_.param_gather_bytes() + (static_cast<double>(params.total) - quantized) * kBf16Bytes;
}

GpuParams LayerGeometry::stage_params(const LayerRange& range) const {
  GpuParams params;
  for (int l = range.first; l < range.first + range.count; ++l) {
    const GpuParams layer = layer_params(l);
    params.total += layer.total;
    params.experts += layer.experts;
    params.quantized += layer.quantized;
  }
  const auto vocab = static_cast<std::int64_t>(vocab_per_gpu_ * model_.hidden_size);
  params.total += (range.has_embedding ? vocab : 0) + (range.has_loss ? vocab : 0);
  if (range.mtp_layers > 0) {
    // MTP modules: their decoder layer (shaped as the last one, its experts split over EP like any
    // MoE layer's; BF16: Megatron builds it outside the FP8/FP4 parameter context), norms and
    // projection; and copies of the shared embedding and output weights when the module sits apart
    // from them (a standalone MTP stage).
    const GpuParams layer = layer_params(model_.num_layers - 1);
    const std::int64_t rest = model_.mtp_params() / std::max(1, model_.mtp_num_layers) - model_.layer_params(model_.num_layers - 1);
    params.total += range.mtp_layers * (layer.total + rest / config_.tp);
    params.experts += range.mtp_layers * layer.experts;
    params.total += (range.has_embedding ? 0 : vocab) + (range.has_loss ? 0 : vocab);
  }
  return params;
}

}  // namespace pipelab::sim
