// Stage -> layer ranges, from the configuration's pipeline layout.
#include "pipelab/sim/stage_layers.h"

#include "pipelab/base/error.h"
#include "pipelab/profiles/pipeline_layout.h"

namespace pipelab::sim {

std::vector<LayerRange> stage_layers(const ModelSpec& model, const ParallelConfig& config, const PipelineShape& shape) {
  const int parts = shape.stages_per_chain();
  if (parts % config.pp != 0) {
    throw ConfigError("the schedule's " + std::to_string(parts) + " model parts are not a multiple of pp=" + std::to_string(config.pp));
  }
  const PipelineLayout layout = resolve_pipeline_layout(config, model, parts).layout;
  std::vector<LayerRange> by_part(static_cast<std::size_t>(parts));
  int first = 0;
  for (int k = 0; k < parts; ++k) {
    const StageLayout& s = layout.stages[static_cast<std::size_t>(k)];
    by_part[static_cast<std::size_t>(k)] = {first, s.decoders(), s.has(LayerKind::Embedding), s.has(LayerKind::Loss),
                                            s.count(LayerKind::Mtp)};
    first += s.decoders();
  }
  std::vector<LayerRange> out(static_cast<std::size_t>(shape.stages));
  for (int s = 0; s < shape.stages; ++s) out[static_cast<std::size_t>(s)] = by_part[static_cast<std::size_t>(shape.part_of_stage(s))];
  return out;
}

}  // namespace pipelab::sim
