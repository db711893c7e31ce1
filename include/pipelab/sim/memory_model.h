// Memory per GPU (docs/metrics.md, "Memory"): static (bf16 weights, fp32 gradients, fp32 master
// weights + Adam moments, sharded over DP x CP by the distributed optimizer) and activations per
// in-flight microbatch from Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4), generalised to GQA, SwiGLU and MoE widths, with TP/SP/CP and the
// selective/full recompute variants. An input-grad (I) frees all but what its weight-grad (W)
// needs; W frees the rest (the ZB paper's M_B / M_W split).
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/sim/engine.h"

namespace pipelab::sim {

struct MemoryOptions {
  /// Keep Korthikanti's 5as/h term (softmax and its dropout mask stored). False models fused /
  /// flash attention, which stores neither; selective recompute drops it too.
  bool softmax_stored = false;
};

struct StaticMemory {
  std::int64_t params_bytes = 0;     // bf16 weights
  std::int64_t grads_bytes = 0;      // fp32 main gradients
  std::int64_t optimizer_bytes = 0;  // fp32 master weights + Adam m and v (sharded if distributed)
  std::int64_t total() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

class MemoryModel {
 public:
  MemoryModel(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape, MemoryOptions options = {});

  /// Activation bytes one microbatch leaves on one GPU for one transformer layer.
  std::int64_t layer_activation_bytes(int layer) const;
  /// What W needs after I (inputs and output-gradients of the weight GEMMs); under full
  /// recompute I rebuilds it from the kept input.
  std::int64_t layer_weight_stash_bytes(int layer) const;
  /// Per stage, for the simulator: one microbatch's bytes and the share I frees.
  const std::vector<StageActivation>& stage_activations() const { return stages_; }
  /// Weights, gradients and optimizer state of the stages a pipeline rank holds.
  StaticMemory static_memory(int rank) const;
  /// Parameters of one stage held by one GPU (after TP/EP sharding).
  std::int64_t stage_params_per_gpu(int stage) const;

 private:
  std::int64_t layer_params_per_gpu(int layer, std::int64_t* expert_params) const;

  struct StageParams {
    std::int64_t total = 0;    // per GPU
    std::int64_t experts = 0;  // of which MoE experts (sharded differently by the optimizer)
  };

  ModelSpec model_;
  ParallelConfig config_;
  PipelineShape shape_;
  MemoryOptions options_;
  std::vector<StageActivation> stages_;
  std::vector<StageParams> params_;
};

}  // namespace pipelab::sim
