// What the pasted-argument fuzz targets (pasted_args, automodel_yaml) do with the command line
// they produce: parse it as `pipelab simulate` would (CLI11 over simulate's config flags) and
// resolve model, GPU and parallel config, so the flag arithmetic (world size, batch sizes,
// overrides) runs with every value the input can hold. A CLI11 parse error is a refusal (main()
// prints it and exits 2); --model or --gpu naming a JSON file is skipped, so no file is read.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config_flags.h"
#include "fuzz_support.h"

namespace pipelab::fuzz {

/// The root command with simulate's config flags filling `flags`.
inline void add_simulate_command(CLI::App& root, app::ConfigFlags& flags) {
  app::add_config_flags(root.add_subcommand("simulate", "simulate"), flags);
}

/// Parses `args` (argv without the program name) with `root` and resolves `flags`; throws only
/// InputError (and its subclasses) on bad values.
inline void parse_and_resolve(CLI::App& root, const app::ConfigFlags& flags, const std::vector<std::string>& args) {
  try {
    root.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError&) {
    return;
  }
  if (flags.model.ends_with(".json") || flags.gpu.ends_with(".json")) return;
  (void)app::resolve_flags(flags);
}

}  // namespace pipelab::fuzz
