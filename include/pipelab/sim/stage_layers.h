// Which model layers each virtual stage holds. Stages of different chains (DualPipe's two
// directions) that hold the same model part hold the same layers.
#pragma once

#include <vector>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::sim {

struct LayerRange {
  int first = 0;  // first layer (0-based)
  int count = 0;
  bool has_embedding = false;  // the model's first part
  bool has_output = false;     // the model's last part: final norm, LM head, loss (and MTP)
};

/// Per stage. The model is split into shape.stages_per_chain() parts, evenly or by
/// config.stage_layers (which must then have one entry per part). Throws ConfigError otherwise.
std::vector<LayerRange> stage_layers(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape);

}  // namespace pipelab::sim
