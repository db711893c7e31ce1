// Fuzz target: a pasted Megatron launch script (`simulate --megatron-args TEXT`): word splitting
// (split_script_words), expansion against simulate's flags (expand_pasted_args), then the parse
// and flag resolution of flag_checks.h. Files are never read: a TEXT of @FILE is skipped.
#include "flag_checks.h"
#include "fuzz_support.h"
#include "pasted_args.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  const std::string text(fuzz::as_text(data, size));
  if (text.starts_with('@')) return 0;
  fuzz::refusing_bad_input([&] {
    const std::vector<std::string> words = app::split_script_words(text);
    for (const std::string& w : words) fuzz::require(!w.empty() || text.find_first_of("'\"") != std::string::npos, "only quotes make empty words");
    CLI::App root{"fuzz"};
    app::ConfigFlags flags;
    fuzz::add_simulate_command(root, flags);
    const app::ExpandedArgs expanded = app::expand_pasted_args(root, {"simulate", "--megatron-args", text});
    fuzz::require(!expanded.args.empty() && expanded.args.front() == "simulate", "the subcommand stays first");
    fuzz::parse_and_resolve(root, flags, expanded.args);
  });
  return 0;
}
