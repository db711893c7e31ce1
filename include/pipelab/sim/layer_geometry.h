// LayerGeometry: what one GPU of a stage's TP x CP group holds and moves per microbatch, worked out
// once from ModelSpec x ParallelConfig: tokens, whether sequence parallelism divides them, the
// per-token widths of each layer (the activated MoE width included), the padded vocabulary, the
// parameters per GPU, and the data-type sizes. The analytic cost model and the memory model read
// these numbers from one shared instance, so they cannot disagree.
//
// It lives in sim/ rather than profiles/ because it carries the simulator's modelling choices
// (bf16 activations and gradients, fp32 logits and optimizer state, what SP divides), not facts of
// the model or the layout.
#pragma once

#include <cstdint>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/sim/stage_layers.h"

namespace pipelab::sim {

inline constexpr int kBf16Bytes = 2;  // weights, activations, gradients on the wire
inline constexpr int kFp32Bytes = 4;  // main gradients, master weights, Adam moments, amaxes

/// Per-token widths of one layer's tensors, in elements, before tensor-parallel sharding.
struct LayerWidths {
  double hidden = 0;  // h
  double query = 0;   // heads x kv_channels (MLA: heads x (qk_head_dim + qk_pos_emb_head_dim))
  double key = 0;     // query groups x kv_channels (MLA: heads x qk_head_dim)
  double value = 0;   // query groups x kv_channels (MLA: heads x v_head_dim)
  double mlp = 0;     // the MLP width a token activates: the dense MLP, or top-k experts + shared experts
  double mlp_up = 0;  // the up projection's output: 2 x mlp with SwiGLU (gate and up), else mlp
};

/// Parameters one GPU holds, after TP and EP sharding.
struct GpuParams {
  std::int64_t total = 0;
  std::int64_t experts = 0;    // of which MoE experts (the distributed optimizer shards them over dp*cp/ep)
  std::int64_t quantized = 0;  // of which kept and all-gathered in FP8/NVFP4 (LayerGeometry::weight_bytes)
};

class LayerGeometry {
 public:
  /// `config` must be resolved (dp and seq_length set); ConfigError otherwise.
  LayerGeometry(const ModelSpec& model, const ParallelConfig& config);

  const ModelSpec& model() const { return model_; }
  const ParallelConfig& config() const { return config_; }

  /// Bytes of `params`' weights as the model keeps them and the parameter all-gather moves them: the
  /// quantized layers' at ParallelConfig::param_gather_bytes under fp8/fp4_param_gather, the rest
  /// (embedding, output layer, layers kept in BF16) at BF16, as Megatron keeps them.
  double weight_bytes(const GpuParams& params) const;
  /// Tokens of one microbatch on one GPU: mbs x seq_length / cp (before sequence parallelism).
  double tokens() const { return tokens_; }
  /// Sequence parallelism in effect: tp > 1 and enabled.
  bool sequence_parallel() const { return sequence_parallel_; }
  /// What sequence parallelism divides the activations outside the TP region by: tp, or 1 without it.
  double sp_split() const { return sp_split_; }
  /// bf16 bytes of one layer's input (or output) activation per microbatch: what crosses a pipeline
  /// boundary, and what full recompute keeps per layer.
  double hidden_state_bytes() const { return tokens_ / sp_split_ * model_.hidden_size * kBf16Bytes; }

  /// Megatron's vocabulary padding divisor (128 x tp) and the padded vocabulary per GPU (÷ tp).
  int vocab_divisor() const { return vocab_divisor_; }
  double vocab_per_gpu() const { return vocab_per_gpu_; }
  /// Logits of one microbatch on one GPU: tokens x the padded vocabulary per GPU (what the loss's
  /// cross-entropy moves and keeps per logit: cross_entropy.h).
  double logits() const { return tokens_ * vocab_per_gpu_; }

  const LayerWidths& widths(int layer) const { return model_.is_moe_layer(layer) ? moe_ : dense_; }
  /// The MLP rows the busiest EP rank works on, relative to an even split: 1 for a dense layer; for a
  /// MoE layer the shared experts' share of its width plus the routed share x moe_busiest_load().
  double mlp_load(int layer) const;
  /// A layer's parameters per GPU: dense weights ÷ tp, experts ÷ (ep x tp).
  GpuParams layer_params(int layer) const;
  /// A stage's parameters per GPU: its layers, plus the embedding on the model's first part and the
  /// LM head (or the tied copy Megatron keeps) on its last.
  GpuParams stage_params(const LayerRange& range) const;

 private:
  LayerWidths widths_of(bool moe) const;

  ModelSpec model_;
  ParallelConfig config_;
  double tokens_ = 0;
  bool sequence_parallel_ = false;
  double sp_split_ = 1;
  int vocab_divisor_ = 0;
  double vocab_per_gpu_ = 0;
  LayerWidths dense_, moe_;
};

}  // namespace pipelab::sim
