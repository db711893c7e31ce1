// Preset lookup over the embedded JSON, and loading user files by path.
#include <pipelab/profiles/presets.h>

#include <algorithm>
#include <cctype>
#include <map>

#include <pipelab/base/error.h>
#include <pipelab/base/file_io.h>
#include <pipelab/base/names.h>

#include "embedded_presets.h"

namespace pipelab {
namespace {

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

bool is_json_path(std::string_view text) {
  return text.size() > 5 && lower(text.substr(text.size() - 5)) == ".json";
}

// Parsed once on first use (function-local statics: thread-safe, no init-order fiasco).
template <class Spec>
struct PresetTable {
  std::vector<std::string> names;        // sorted
  std::map<std::string, Spec> specs;     // lower-case name -> spec
  std::map<std::string, std::string_view> texts;
};

template <class Spec, class Parse>
PresetTable<Spec> build_table(std::span<const detail::EmbeddedJson> files, Parse parse) {
  PresetTable<Spec> table;
  for (const auto& file : files) {
    const std::string context = "preset " + std::string(file.name) + ".json";
    Spec spec = parse(file.text, context);
    if (spec.name != file.name) {
      throw ConfigError(context + ": name '" + spec.name + "' must match the file name '" +
                        std::string(file.name) + "'");
    }
    table.names.emplace_back(file.name);
    table.texts.emplace(lower(file.name), file.text);
    table.specs.emplace(lower(file.name), std::move(spec));
  }
  std::sort(table.names.begin(), table.names.end());
  return table;
}

const PresetTable<ModelSpec>& model_table() {
  static const PresetTable<ModelSpec> table =
      build_table<ModelSpec>(detail::embedded_model_presets(), parse_model_spec);
  return table;
}

const PresetTable<GpuSpec>& gpu_table() {
  static const PresetTable<GpuSpec> table =
      build_table<GpuSpec>(detail::embedded_gpu_presets(), parse_gpu_spec);
  return table;
}

template <class Spec>
auto find_preset(const PresetTable<Spec>& table, std::string_view kind, std::string_view name) {
  const auto it = table.specs.find(lower(name));
  if (it == table.specs.end()) {
    throw InputError("unknown " + std::string(kind) + " preset '" + std::string(name) +
                     "'; valid: " + join(table.names) + " (or a path ending in .json)");
  }
  return it;
}

}  // namespace

const std::vector<std::string>& model_preset_names() { return model_table().names; }

ModelSpec model_preset(std::string_view name) { return find_preset(model_table(), "model", name)->second; }

std::string_view model_preset_json(std::string_view name) {
  find_preset(model_table(), "model", name);
  return model_table().texts.at(lower(name));
}

ModelSpec load_model(std::string_view name_or_path) {
  if (!is_json_path(name_or_path)) return model_preset(name_or_path);
  return parse_model_spec(read_text_file(std::string(name_or_path), "model file"), name_or_path);
}

const std::vector<std::string>& gpu_preset_names() { return gpu_table().names; }

GpuSpec gpu_preset(std::string_view name) { return find_preset(gpu_table(), "gpu", name)->second; }

std::string_view gpu_preset_json(std::string_view name) {
  find_preset(gpu_table(), "gpu", name);
  return gpu_table().texts.at(lower(name));
}

GpuSpec load_gpu(std::string_view name_or_path) {
  if (!is_json_path(name_or_path)) return gpu_preset(name_or_path);
  return parse_gpu_spec(read_text_file(std::string(name_or_path), "gpu file"), name_or_path);
}

}  // namespace pipelab
