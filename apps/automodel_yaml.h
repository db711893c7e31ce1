// NeMo AutoModel training YAML → pipelab flags. AutoModel describes parallelism in a
// `distributed:` block (strategy, tp/pp/cp/ep/dp sizes, activation checkpointing, a `pipeline:`
// sub-block with PyTorch's schedule names) and batches in `step_scheduler:`; this maps each key it
// models to the pipelab flag with the same meaning, so `--automodel-yaml FILE` goes through the
// same path as `--megatron-args` (pasted_args.h) and flags on the command line still win.
// Keys documented in docs/cli.md; sources: NeMo AutoModel's distributed-config parser.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace pipelab::app {

struct AutoModelFlags {
  std::vector<std::string> words;    // pipelab flags and values, e.g. {"--tp", "2", "--use-torch-fsdp2"}
  std::vector<std::string> ignored;  // dotted keys read but not modelled, e.g. "distributed.moe.wrap_outer_model"
};

/// Reads a whole AutoModel config, or only its `distributed:` block. Throws InputError naming the
/// file, the line and the key on a YAML syntax error, a value of the wrong kind or an unknown strategy.
AutoModelFlags automodel_yaml_flags(std::string_view yaml_text, std::string_view context);

}  // namespace pipelab::app
