// Which model layers each virtual stage holds. Stages of different chains (DualPipe's two
// directions) that hold the same model part hold the same layers.
#pragma once

#include <vector>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::sim {

struct LayerRange {
  int first = 0;  // first decoder layer (0-based)
  int count = 0;  // decoder layers
  bool has_embedding = false;  // the word (and position) embedding: the model's first part
  bool has_loss = false;       // final norm, LM head and cross-entropy: the model's last part
  int mtp_layers = 0;          // multi-token-prediction modules on this part (with their own logits)
};

/// Per stage. The model is split into shape.stages_per_chain() parts by the configuration's
/// pipeline layout (profiles/pipeline_layout.h: a layout string, stage_layers, first/last or
/// account-for flags, an even or a cost-balanced split). Throws ConfigError naming the rule otherwise.
std::vector<LayerRange> stage_layers(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape);

}  // namespace pipelab::sim
