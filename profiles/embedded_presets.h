// The preset JSON files compiled into the library. The definitions are generated at build time by
// embed_presets.cmake from profiles/models/*.json and profiles/gpus/*.json (listed in CMakeLists.txt).
#pragma once

#include <span>
#include <string_view>

namespace pipelab::detail {

struct EmbeddedJson {
  std::string_view name;  // file stem, e.g. "llama3-70b"
  std::string_view text;  // file contents
};

std::span<const EmbeddedJson> embedded_model_presets();
std::span<const EmbeddedJson> embedded_gpu_presets();

}  // namespace pipelab::detail
