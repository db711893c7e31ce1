// Memory per GPU (docs/metrics.md, "Memory"): static (weights, main gradients, fp32 master weights
// + Adam moments, each sharded over the data-parallel ranks as the sharding strategy says: the
// distributed optimizer, ZeRO-2, FSDP; HSDP replicas; FP8 weights with --fp8-param-gather; bf16
// moments with the precision-aware optimizer; optimizer offload) and activations per in-flight
// microbatch from Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
// Models", §4), generalised to GQA, SwiGLU and MoE widths, with TP/SP/CP, FP8-saved GEMM inputs, and
// Megatron's recompute variants (selective modules; full uniform or block with recompute_num_layers).
// An input-grad (I) frees all but what its weight-grad (W) needs; W frees the rest (the ZB paper's
// M_B / M_W split).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/layer_geometry.h"

namespace pipelab::sim {

struct MemoryOptions {
  /// Keep Korthikanti's 5as/h term (softmax and its dropout mask stored). False models fused /
  /// flash attention, which stores neither; selective recompute drops it too.
  bool softmax_stored = false;
};

struct StaticMemory {
  std::int64_t params_bytes = 0;     // bf16 (or FP8) weights, sharded under FSDP
  std::int64_t grads_bytes = 0;      // main gradients, fp32 or bf16, sharded from ZeRO-2 on
  std::int64_t optimizer_bytes = 0;  // fp32 master weights + Adam moments (sharded if distributed)
  std::int64_t comm_buffers_bytes = 0;  // FSDP: the gathered weights and unreduced gradients of the layers in flight
  std::int64_t total() const { return params_bytes + grads_bytes + optimizer_bytes + comm_buffers_bytes; }
};

/// One layer's activations per token on one GPU, in bytes, by what they are (Korthikanti et al.
/// 2022 §4.1, generalised): what selective recompute drops is visible per part.
struct LayerActivation {
  double norm_inputs = 0;     // the two norms' inputs (residual stream)
  double attn_in = 0;         // QKV GEMM input (norm1 output)
  double mlp_in = 0;          // MLP input (norm2 output)
  double masks = 0;           // dropout masks
  double qkv = 0;             // Q, K, V
  double attn_out = 0;        // out-projection input
  double softmax = 0;         // stored softmax (no flash attention)
  double mlp_up_out = 0;      // up (and gate) projection output
  double mlp_act = 0;         // activation, the down projection's input
  double moe_dispatched = 0;  // tokens permuted to the experts (top-k copies)
  double total() const;
};

class MemoryModel {
 public:
  /// Shares `geometry` with the cost model of the same simulation.
  MemoryModel(std::shared_ptr<const LayerGeometry> geometry, const PipelineShape& shape, MemoryOptions options = {});
  /// A memory model on its own; `config` must be resolved.
  MemoryModel(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape, MemoryOptions options = {});

  /// Activation bytes one microbatch leaves on one GPU for one transformer layer (under full
  /// recompute: its kept input).
  std::int64_t layer_activation_bytes(int layer) const;
  /// Per token, by part, after selective recompute.
  LayerActivation layer_activation(int layer) const;
  /// What W needs after I (inputs and output-gradients of the weight GEMMs); under full
  /// recompute I rebuilds it from the kept input.
  std::int64_t layer_weight_stash_bytes(int layer) const;
  /// Per stage, for the simulator: one microbatch's bytes and the share I frees.
  const std::vector<StageActivation>& stage_activations() const { return stages_; }
  /// Weights, gradients and optimizer state of the stages a pipeline rank holds.
  StaticMemory static_memory(int rank) const;
  /// Parameters the optimizer of pipeline rank `rank` updates on the GPU: its stages' weights,
  /// sharded as the optimizer state is (distributed optimizer, FSDP), less the offloaded share.
  double optimizer_params(int rank) const;

 private:
  /// Full recompute: whether the layer at `index_in_chunk` of a chunk of `layers_in_chunk` is
  /// recomputed (uniform: all; block: the first recompute_num_layers), and whether it keeps its
  /// group's input (uniform groups of recompute_num_layers).
  bool recomputed_in_full(int index_in_chunk, int layers_in_chunk) const;
  bool keeps_group_input(int index_in_chunk) const;
  /// Rank `rank`'s stages' parameters on one GPU, dense and expert, and the data-parallel groups a
  /// sharded state divides them by.
  struct RankParams {
    double dense = 0, expert = 0, dense_group = 1, expert_group = 1;
    double weight_bytes = kBf16Bytes;  // per parameter, the mean over the rank's (LayerGeometry::weight_bytes)
    double held(bool sharded) const { return sharded ? dense / dense_group + expert / expert_group : dense + expert; }
  };
  RankParams rank_params(int rank) const;
  /// What a layer keeps when it is not recomputed in full (selective recompute applied).
  std::int64_t stored_layer_bytes(int layer) const;

  std::shared_ptr<const LayerGeometry> geometry_;
  PipelineShape shape_;
  MemoryOptions options_;
  std::vector<StageActivation> stages_;
  std::vector<GpuParams> params_;  // per stage
  std::int64_t largest_layer_params_ = 0;  // per GPU: what FSDP gathers at once
  double largest_layer_weight_bytes_ = 0;  // ... and its weights' bytes (LayerGeometry::weight_bytes)
};

}  // namespace pipelab::sim
