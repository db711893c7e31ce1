// Built-in model and GPU presets. The JSON files under profiles/models and profiles/gpus are compiled
// into the library, so the binary needs no source tree; a path ending in .json loads a user file.
// A preset is found by its name or an alias ("h100", "NVIDIA H100 80GB HBM3", "llama-3-70b"),
// ignoring case and treating spaces and underscores as dashes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <pipelab/profiles/gpu_spec.h>
#include <pipelab/profiles/model_spec.h>

namespace pipelab {

/// Sorted preset names ("llama3-70b", ...); aliases are not listed.
const std::vector<std::string>& model_preset_names();
/// A built-in model by name or alias; unknown -> InputError listing the valid names and aliases.
ModelSpec model_preset(std::string_view name);
/// A path ending in ".json" is read from disk (InputError if unreadable), anything else is a preset.
ModelSpec load_model(std::string_view name_or_path);
/// The embedded JSON text of a preset, as shipped (for `pipelab show`).
std::string_view model_preset_json(std::string_view name);
/// The aliases of the preset `name` names, as spelled in the alias table (for `pipelab list`).
std::vector<std::string> model_preset_aliases(std::string_view name);

const std::vector<std::string>& gpu_preset_names();
GpuSpec gpu_preset(std::string_view name);
GpuSpec load_gpu(std::string_view name_or_path);
std::string_view gpu_preset_json(std::string_view name);
std::vector<std::string> gpu_preset_aliases(std::string_view name);

/// The GPU preset for the name the CUDA runtime reports (cudaDeviceProp::name, e.g.
/// "NVIDIA H100 80GB HBM3" -> "h100-sxm"), or "" when no preset is that part (e.g. "NVIDIA H100
/// PCIe"). Any preset name or alias is accepted too.
std::string gpu_preset_for_device_name(std::string_view device_name);

}  // namespace pipelab
