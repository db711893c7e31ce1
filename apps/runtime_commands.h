// The runtime subcommands: `pipelab profile` (measure op and P2P costs into a profile JSON) and
// `pipelab run` (execute a schedule on a backend, predict it from the profile, compare).
#pragma once

#include <memory>

#include <CLI/CLI.hpp>

#include "pipelab/runtime/backend.h"

namespace pipelab::app {

void add_run_command(CLI::App& root, int& exit_code);
void add_profile_command(CLI::App& root, int& exit_code);

/// The mock-model flags shared by run and profile: --hidden --ffn --heads --seq --mbs
/// --layers-per-stage --swiglu --seed. Filled when the command line is parsed.
std::shared_ptr<runtime::ModelConfig> add_model_flags(CLI::App* cmd);

}  // namespace pipelab::app
