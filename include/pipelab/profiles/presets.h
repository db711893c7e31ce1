// Built-in model and GPU presets. The JSON files under profiles/models and profiles/gpus are compiled
// into the library, so the binary needs no source tree; a path ending in .json loads a user file.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <pipelab/profiles/gpu_spec.h>
#include <pipelab/profiles/model_spec.h>

namespace pipelab {

/// Sorted preset names ("llama3-70b", ...).
const std::vector<std::string>& model_preset_names();
/// A built-in model (name matched case-insensitively); unknown -> InputError listing the valid names.
ModelSpec model_preset(std::string_view name);
/// A path ending in ".json" is read from disk (InputError if unreadable), anything else is a preset.
ModelSpec load_model(std::string_view name_or_path);
/// The embedded JSON text of a preset, as shipped (for `pipelab show`).
std::string_view model_preset_json(std::string_view name);

const std::vector<std::string>& gpu_preset_names();
GpuSpec gpu_preset(std::string_view name);
GpuSpec load_gpu(std::string_view name_or_path);
std::string_view gpu_preset_json(std::string_view name);

}  // namespace pipelab
