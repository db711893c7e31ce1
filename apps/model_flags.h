// The mock-model flags shared by `run` and `profile`: --hidden --ffn --heads --seq --mbs
// --layers-per-stage --swiglu --seed, with Megatron's spellings as aliases.
#pragma once

#include <CLI/CLI.hpp>

#include "pipelab/runtime/backend.h"

namespace pipelab::app {

/// The mock model of `run` and `profile` unless flags say otherwise.
runtime::ModelConfig default_mock_model();

/// Registers the flags with the defaults `model` holds; `model` is filled when the command line is
/// parsed (it must outlive the parse).
void add_model_flags(CLI::App* cmd, runtime::ModelConfig& model);

}  // namespace pipelab::app
