// A layout as the launch configuration of the tools that train with it: Megatron-LM flags,
// Megatron-Bridge overrides, a NeMo AutoModel `distributed:` block and a torchtitan TOML. Each
// carries only fields its tool accepts; what the tool cannot express (a schedule it lacks, ETP, a
// split it does not make) is a comment line starting with "# note:" (docs/planning.md, "Recipes").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab::plan {

struct Recipes {
  std::string megatron_lm;      // pretrain_gpt.py flags, one per line ending in " \"
  std::string megatron_bridge;  // Hydra-style overrides, one "group.field=value" per line
  std::string automodel_yaml;   // `distributed:` and `step_scheduler:` blocks
  std::string torchtitan;       // [parallelism], [training] and [activation_checkpoint] tables
};

/// `config` as simulated (vp = chunks per rank of `schedule`), `stage_layers` the decoder layers of
/// each model part.
Recipes make_recipes(const ModelSpec& model, const ParallelConfig& config, std::string_view schedule,
                     const std::vector<int>& stage_layers);

/// PyTorch pipelining's schedule class name for a pipelab schedule ("Interleaved1F1B"), or "" when
/// PyTorch has none (zb-h2, dualpipe). NeMo AutoModel and torchtitan take these names.
std::string_view pytorch_schedule_name(std::string_view schedule);

}  // namespace pipelab::plan
