// Stage -> layer ranges.
#include "pipelab/sim/stage_layers.h"

#include "pipelab/base/error.h"

namespace pipelab::sim {

std::vector<LayerRange> stage_layers(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape) {
  const int parts = shape.stages_per_chain();
  if (parts % config.pp != 0) {
    throw ConfigError("the schedule's " + std::to_string(parts) + " model parts are not a multiple of pp=" + std::to_string(config.pp));
  }
  // Reuse the config's split rule with one chunk per part.
  ParallelConfig per_part = config;
  per_part.vp = parts / config.pp;
  const std::vector<int> counts = layers_per_stage(per_part, model);
  std::vector<LayerRange> by_part(static_cast<std::size_t>(parts));
  int first = 0;
  for (int k = 0; k < parts; ++k) {
    by_part[static_cast<std::size_t>(k)] = {first, counts[static_cast<std::size_t>(k)], k == 0, k == parts - 1};
    first += counts[static_cast<std::size_t>(k)];
  }
  std::vector<LayerRange> out(static_cast<std::size_t>(shape.stages));
  for (int s = 0; s < shape.stages; ++s) out[static_cast<std::size_t>(s)] = by_part[static_cast<std::size_t>(shape.part_of_stage(s))];
  return out;
}

}  // namespace pipelab::sim
