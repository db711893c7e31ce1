// Memory per GPU (docs/metrics.md, "Memory"): static (bf16 weights, fp32 gradients, fp32 master
// weights + Adam moments, sharded over DP x CP by the distributed optimizer) and activations per
// in-flight microbatch from Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
// Transformer Models", §4), generalised to GQA, SwiGLU and MoE widths, with TP/SP/CP and the
// selective/full recompute variants. An input-grad (I) frees all but what its weight-grad (W)
// needs; W frees the rest (the ZB paper's M_B / M_W split).
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
  std::int64_t params_bytes = 0;     // bf16 weights
  std::int64_t grads_bytes = 0;      // fp32 main gradients
  std::int64_t optimizer_bytes = 0;  // fp32 master weights + Adam m and v (sharded if distributed)
  std::int64_t total() const { return params_bytes + grads_bytes + optimizer_bytes; }
};

class MemoryModel {
 public:
  /// Shares `geometry` with the cost model of the same simulation.
  MemoryModel(std::shared_ptr<const LayerGeometry> geometry, const PipelineShape& shape, MemoryOptions options = {});
  /// A memory model on its own; `config` must be resolved.
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

 private:
  std::shared_ptr<const LayerGeometry> geometry_;
  PipelineShape shape_;
  MemoryOptions options_;
  std::vector<StageActivation> stages_;
  std::vector<GpuParams> params_;  // per stage
};

}  // namespace pipelab::sim
