// Fuzz target: a pasted Megatron launch script (`simulate --megatron-args TEXT`): word splitting
// (split_script_words), expansion against simulate's flags (expand_megatron_args), CLI11 parsing of
// the result, and resolve_flags, so the flag arithmetic (world size, batch sizes, overrides) is
// driven with every value the text can hold. Files are never read: a TEXT of @FILE is skipped,
// as are --model/--gpu values that name JSON files.
#include <CLI/CLI.hpp>

#include "config_flags.h"
#include "fuzz_support.h"
#include "megatron_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  const std::string text(fuzz::as_text(data, size));
  if (text.starts_with('@')) return 0;
  fuzz::refusing_bad_input([&] {
    const std::vector<std::string> words = app::split_script_words(text);
    for (const std::string& w : words) fuzz::require(!w.empty() || text.find_first_of("'\"") != std::string::npos, "only quotes make empty words");
    CLI::App root{"fuzz"};
    app::ConfigFlags flags;
    app::add_config_flags(root.add_subcommand("simulate", "simulate"), flags);
    const app::ExpandedArgs expanded = app::expand_megatron_args(root, {"simulate", "--megatron-args", text});
    fuzz::require(!expanded.args.empty() && expanded.args.front() == "simulate", "the subcommand stays first");
    try {
      std::vector<std::string> reversed(expanded.args.rbegin(), expanded.args.rend());
      root.parse(reversed);
    } catch (const CLI::ParseError&) {
      return;  // a bad flag value: main() prints CLI11's message and exits 2
    }
    if (flags.model.ends_with(".json") || flags.gpu.ends_with(".json")) return;
    (void)app::resolve_flags(flags);
  });
  return 0;
}
