// Preset lookup over the embedded JSON (by name or alias), and loading user files by path.
#include <pipelab/profiles/presets.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <span>
#include <stdexcept>

#include <pipelab/base/error.h>
#include <pipelab/base/file_io.h>
#include <pipelab/base/names.h>

#include "embedded_presets.h"

namespace pipelab {
namespace {

/// Another name users type for a preset: a marketing or cloud spelling, the name the CUDA runtime
/// reports (cudaGetDeviceProperties / torch.cuda.get_device_name / nvidia-smi), a Kubernetes GPU
/// label (the device name with dashes, which the lookup key makes equal), or a model's other
/// spelling. Sources: docs/profiles.md "Preset aliases".
struct PresetAlias {
  std::string_view alias;
  std::string_view preset;
};

// The one alias table for each kind. An alias names one part: other variants (PCIe, NVL, 40 GB)
// have different peaks or memory and are not aliases of the SXM presets.
constexpr PresetAlias kGpuAliases[] = {
    {"a100", "a100-80g"},
    {"a100-80gb", "a100-80g"},
    {"A100-SXM4-80GB", "a100-80g"},
    {"NVIDIA A100-SXM4-80GB", "a100-80g"},
    {"A800-SXM4-80GB", "a800"},
    {"NVIDIA A800-SXM4-80GB", "a800"},
    {"h100", "h100-sxm"},
    {"h100-sxm5", "h100-sxm"},
    {"H100-SXM5-80GB", "h100-sxm"},
    {"h100-80gb", "h100-sxm"},
    {"NVIDIA H100 80GB HBM3", "h100-sxm"},
    {"NVIDIA H100 SXM", "h100-sxm"},
    {"h800-sxm", "h800"},
    {"NVIDIA H800", "h800"},
    {"h20-96gb", "h20"},
    {"NVIDIA H20", "h20"},
    {"h200-sxm", "h200"},
    {"h200-141gb", "h200"},
    {"NVIDIA H200", "h200"},
    {"hgx-b200", "b200"},
    {"dgx-b200", "b200"},
    {"NVIDIA B200", "b200"},
    {"hgx-b300", "b300"},
    {"dgx-b300", "b300"},
    {"NVIDIA B300", "b300"},
    {"NVIDIA B300 SXM6 AC", "b300"},
    {"gb200-nvl72", "gb200"},
    {"NVIDIA GB200", "gb200"},
    {"gb300-nvl72", "gb300"},
    {"NVIDIA GB300", "gb300"},
};

// Only where the architecture is the same in every field (Llama 3.1 8B/70B differ from Llama 3 only
// in RoPE scaling and context length; the presets hold the 8K pre-training length).
constexpr PresetAlias kModelAliases[] = {
    {"llama-3-8b", "llama3-8b"},
    {"llama3.1-8b", "llama3-8b"},
    {"llama-3.1-8b", "llama3-8b"},
    {"llama-3-70b", "llama3-70b"},
    {"llama3.1-70b", "llama3-70b"},
    {"llama-3.1-70b", "llama3-70b"},
    {"llama-3.1-405b", "llama3.1-405b"},
    {"llama-2-7b", "llama2-7b"},
    {"llama-2-70b", "llama2-70b"},
    {"gpt-3-175b", "gpt3-175b"},
    {"gpt-3-5b", "gpt3-5b"},
    {"nemotron-4-340b", "nemotron-340b"},
    {"nemotron4-340b", "nemotron-340b"},
    {"mixtral-8x7b-v0.1", "mixtral-8x7b"},
    {"qwen3-30b", "qwen3-30b-a3b"},
    {"qwen3-235b", "qwen3-235b-a22b"},
    // Hugging Face model ids, as NeMo AutoModel configs and torchtitan name them.
    {"meta-llama/Meta-Llama-3-8B", "llama3-8b"},
    {"meta-llama/Llama-3.1-8B", "llama3-8b"},
    {"meta-llama/Meta-Llama-3-70B", "llama3-70b"},
    {"meta-llama/Llama-3.1-70B", "llama3-70b"},
    {"meta-llama/Llama-3.1-405B", "llama3.1-405b"},
    {"meta-llama/Llama-2-7b-hf", "llama2-7b"},
    {"meta-llama/Llama-2-70b-hf", "llama2-70b"},
    {"mistralai/Mixtral-8x7B-v0.1", "mixtral-8x7b"},
    {"Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"},
    {"Qwen/Qwen3-235B-A22B", "qwen3-235b-a22b"},
    {"Qwen/Qwen2.5-7B", "qwen2.5-7b"},
    {"deepseek-ai/DeepSeek-V3", "deepseek-v3"},
    {"openai/gpt-oss-120b", "gpt-oss-120b"},
};

/// The key a name or alias is looked up by: trimmed, lower case, spaces and underscores as dashes
/// ("NVIDIA H100 80GB HBM3" and the Kubernetes label "NVIDIA-H100-80GB-HBM3" are one key).
std::string lookup_key(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) {
    return c == ' ' || c == '_' ? '-' : static_cast<char>(std::tolower(c));
  });
  return out;
}

bool is_json_path(std::string_view text) {
  return text.size() > 5 && lookup_key(text.substr(text.size() - 5)) == ".json";
}

// Parsed once on first use (function-local statics: thread-safe, no init-order fiasco).
template <class Spec>
struct PresetTable {
  std::vector<std::string> names;                           // sorted
  std::map<std::string, Spec> specs;                        // lookup key of the name -> spec
  std::map<std::string, std::string_view> texts;            // lookup key of the name -> shipped JSON
  std::map<std::string, std::string> resolve;               // lookup key of a name or alias -> name's key
  std::map<std::string, std::vector<std::string>> aliases;  // name's key -> its aliases, table order
  std::vector<std::string> all_aliases;                     // table order
};

template <class Spec, class Parse>
PresetTable<Spec> build_table(std::span<const detail::EmbeddedJson> files, Parse parse,
                              std::span<const PresetAlias> aliases) {
  PresetTable<Spec> table;
  for (const auto& file : files) {
    const std::string context = "preset " + std::string(file.name) + ".json";
    Spec spec = parse(file.text, context);
    if (spec.name != file.name) {
      throw ConfigError(context + ": name '" + spec.name + "' must match the file name '" +
                        std::string(file.name) + "'");
    }
    const std::string key = lookup_key(file.name);
    table.names.emplace_back(file.name);
    table.texts.emplace(key, file.text);
    table.specs.emplace(key, std::move(spec));
    table.resolve.emplace(key, key);
  }
  std::sort(table.names.begin(), table.names.end());
  for (const PresetAlias& alias : aliases) {
    // A broken row is a bug in the table above (tests load every alias), not a user error.
    const std::string target = lookup_key(alias.preset);
    if (!table.specs.contains(target)) {
      throw std::logic_error("preset alias '" + std::string(alias.alias) + "' names no preset '" +
                             std::string(alias.preset) + "'");
    }
    if (!table.resolve.emplace(lookup_key(alias.alias), target).second) {
      throw std::logic_error("preset alias '" + std::string(alias.alias) + "' is listed twice or is a preset name");
    }
    table.aliases[target].emplace_back(alias.alias);
    table.all_aliases.emplace_back(alias.alias);
  }
  return table;
}

const PresetTable<ModelSpec>& model_table() {
  static const PresetTable<ModelSpec> table =
      build_table<ModelSpec>(detail::embedded_model_presets(), parse_model_spec, kModelAliases);
  return table;
}

const PresetTable<GpuSpec>& gpu_table() {
  static const PresetTable<GpuSpec> table =
      build_table<GpuSpec>(detail::embedded_gpu_presets(), parse_gpu_spec, kGpuAliases);
  return table;
}

/// The lookup key of the preset `name` names (itself or an alias), or "" when none.
template <class Spec>
std::string preset_key(const PresetTable<Spec>& table, std::string_view name) {
  const auto it = table.resolve.find(lookup_key(name));
  return it == table.resolve.end() ? std::string() : it->second;
}

/// The lookup key of the preset `name` names; InputError listing the names and aliases otherwise.
template <class Spec>
std::string require_preset_key(const PresetTable<Spec>& table, std::string_view kind, std::string_view name) {
  std::string key = preset_key(table, name);
  if (!key.empty()) return key;
  std::vector<std::string> known;
  for (const auto& [candidate, target] : table.resolve) known.push_back(candidate);
  std::string message = "unknown " + std::string(kind) + " preset '" + std::string(name) + "'; valid: " +
                        join(table.names) + " (or a path ending in .json)";
  if (!table.all_aliases.empty()) message += "; aliases: " + join(table.all_aliases);
  if (const std::string near = closest_name(lookup_key(name), known); !near.empty()) {
    message += "; did you mean '" + near + "'?";
  }
  throw InputError(message);
}

template <class Spec>
std::vector<std::string> aliases_of(const PresetTable<Spec>& table, std::string_view kind, std::string_view name) {
  const std::string key = require_preset_key(table, kind, name);
  const auto it = table.aliases.find(key);
  return it == table.aliases.end() ? std::vector<std::string>{} : it->second;
}

}  // namespace

const std::vector<std::string>& model_preset_names() { return model_table().names; }

ModelSpec model_preset(std::string_view name) {
  return model_table().specs.at(require_preset_key(model_table(), "model", name));
}

std::string_view model_preset_json(std::string_view name) {
  return model_table().texts.at(require_preset_key(model_table(), "model", name));
}

std::vector<std::string> model_preset_aliases(std::string_view name) {
  return aliases_of(model_table(), "model", name);
}

ModelSpec load_model(std::string_view name_or_path) {
  if (!is_json_path(name_or_path)) return model_preset(name_or_path);
  return parse_model_spec(read_text_file(std::string(name_or_path), "model file"), name_or_path);
}

const std::vector<std::string>& gpu_preset_names() { return gpu_table().names; }

GpuSpec gpu_preset(std::string_view name) {
  return gpu_table().specs.at(require_preset_key(gpu_table(), "gpu", name));
}

std::string_view gpu_preset_json(std::string_view name) {
  return gpu_table().texts.at(require_preset_key(gpu_table(), "gpu", name));
}

std::vector<std::string> gpu_preset_aliases(std::string_view name) { return aliases_of(gpu_table(), "gpu", name); }

std::string gpu_preset_for_device_name(std::string_view device_name) {
  const std::string key = preset_key(gpu_table(), device_name);
  return key.empty() ? std::string() : gpu_table().specs.at(key).name;
}

GpuSpec load_gpu(std::string_view name_or_path) {
  if (!is_json_path(name_or_path)) return gpu_preset(name_or_path);
  return parse_gpu_spec(read_text_file(std::string(name_or_path), "gpu file"), name_or_path);
}

}  // namespace pipelab
