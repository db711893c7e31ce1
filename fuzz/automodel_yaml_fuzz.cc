// Fuzz target: a NeMo AutoModel YAML config (`simulate --automodel-yaml FILE`): yaml-cpp's parse,
// the key tables of automodel_yaml_flags, then the flags it yields parsed and resolved as
// flag_checks.h does (they go through the same path as pasted Megatron arguments).
#include "automodel_yaml.h"
#include "flag_checks.h"
#include "fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  fuzz::refusing_bad_input([&] {
    const app::AutoModelFlags yaml = app::automodel_yaml_flags(fuzz::as_text(data, size), "fuzz.yaml");
    std::vector<std::string> args = {"simulate"};
    args.insert(args.end(), yaml.words.begin(), yaml.words.end());
    CLI::App root{"fuzz"};
    app::ConfigFlags flags;
    fuzz::add_simulate_command(root, flags);
    fuzz::parse_and_resolve(root, flags, args);
  });
  return 0;
}
