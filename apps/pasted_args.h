// `--megatron-args "ARGS" | @FILE` pastes the arguments of a Megatron-LM launch script into a
// pipelab command; `--automodel-yaml FILE` does the same for a NeMo AutoModel config, through the
// flags its keys mean (automodel_yaml.h). The text is split like a shell would (quotes, line continuations, comments),
// `--snake_case` is read as `--snake-case`, flags the subcommand knows are kept, and the rest —
// torchrun options, script paths, optimizer and data flags with no effect on a simulation — are
// dropped and listed, never fatal. Flags given on pipelab's own command line win (docs/cli.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

namespace pipelab::app {

/// Splits launch-script text into words: whitespace separates, '...' and "..." quote, a backslash
/// escapes the next character (so `\` + newline joins lines), `#` at a word start comments out the
/// rest of the line. Throws InputError on an unterminated quote.
std::vector<std::string> split_script_words(std::string_view text);

struct ExpandedArgs {
  std::vector<std::string> args;     // the command line with every pasted flag replaced
  std::vector<std::string> ignored;  // pasted words the subcommand does not use, in order
  std::vector<std::string> overridden;  // pasted flags that pipelab's own flags replaced
  std::vector<std::string> superseded;  // pasted flags a later paste of the same flag replaced with another value
};

/// Expands each `--megatron-args VALUE` and `--automodel-yaml FILE` (or `FLAG=VALUE`) in `args` (argv without the
/// program name) for a subcommand that declares them. A Megatron VALUE starting with '@' names a
/// file to read. Throws InputError when a kept flag's value is an unexpanded `$VARIABLE`.
ExpandedArgs expand_pasted_args(const CLI::App& root, const std::vector<std::string>& args);

}  // namespace pipelab::app
