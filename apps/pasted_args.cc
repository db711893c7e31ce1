// `--megatron-args` and `--automodel-yaml`: words from a script or a YAML file, then keep what the subcommand knows.
#include "pasted_args.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <pipelab/base/error.h>
#include <pipelab/base/file_io.h>

#include "automodel_yaml.h"

namespace pipelab::app {
namespace {

constexpr std::string_view kMegatronFlag = "--megatron-args";
constexpr std::string_view kAutoModelFlag = "--automodel-yaml";

// The flags whose value is expanded into more flags.
struct PasteFlag {
  std::string_view flag;
  const char* value_hint;
};
constexpr PasteFlag kPasteFlags[] = {{kMegatronFlag, "\"ARGS\" or @FILE"}, {kAutoModelFlag, "a YAML file"}};

bool is_paste_flag(const std::string& word) {
  return std::any_of(std::begin(kPasteFlags), std::end(kPasteFlags), [&](const PasteFlag& p) {
    return word == p.flag || word.starts_with(std::string(p.flag) + "=");
  });
}

bool is_flag_word(const std::string& w) {
  if (w.size() < 2 || w[0] != '-') return false;
  return w[1] == '-' || std::isalpha(static_cast<unsigned char>(w[1]));  // "-1" is a value
}

// Megatron's argparse accepts `--foo_bar` and `--foo-bar` alike; pipelab's flags use dashes.
std::string dashed(std::string flag) {
  const auto end = std::min(flag.find('='), flag.size());
  std::replace(flag.begin() + 2, flag.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
  return flag;
}

const CLI::App* find_subcommand(const CLI::App& root, const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (is_flag_word(a)) continue;
    try {
      return root.get_subcommand(a);
    } catch (const CLI::OptionNotFound&) {
      return nullptr;
    }
  }
  return nullptr;
}

const CLI::Option* option_of(const CLI::App& cmd, const std::string& word) {
  return cmd.get_option_no_throw(word.substr(0, word.find('=')));
}

// How many words after `--flag` are its values: a known option takes what it expects (all that
// follow for a list), an unknown flag every word up to the next flag (nargs='+' in Megatron).
std::size_t values_after(const CLI::Option* opt, const std::vector<std::string>& words, std::size_t i) {
  if (words[i].find('=') != std::string::npos) return 0;
  const int expected = opt == nullptr ? -1 : opt->get_items_expected_max();
  std::size_t n = 0;
  while (i + 1 + n < words.size() && !is_flag_word(words[i + 1 + n])) {
    if (expected >= 0 && static_cast<int>(n) >= expected) break;
    ++n;
  }
  return n;
}

struct Pasted {
  const CLI::Option* option;
  std::vector<std::string> words;  // the flag, then its values
};

}  // namespace

std::vector<std::string> split_script_words(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\\') {
      if (i + 1 < text.size() && text[i + 1] != '\n') {
        word += text[i + 1];
        in_word = true;
      }
      ++i;  // `\` + newline continues the line
    } else if (ch == '\'' || ch == '"') {
      const std::size_t close = text.find(ch, i + 1);
      if (close == std::string_view::npos) {
        throw InputError(std::string(kMegatronFlag) + ": unterminated " + (ch == '"' ? "double" : "single") + " quote");
      }
      word.append(text.substr(i + 1, close - i - 1));
      in_word = true;
      i = close;
    } else if (ch == '#' && !in_word) {
      i = std::min(text.find('\n', i), text.size());
    } else if (std::isspace(static_cast<unsigned char>(ch))) {
      if (in_word) words.push_back(std::move(word));
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(word));
  return words;
}

ExpandedArgs expand_pasted_args(const CLI::App& root, const std::vector<std::string>& args) {
  ExpandedArgs out;
  const CLI::App* cmd = find_subcommand(root, args);
  if (cmd == nullptr || cmd->get_option_no_throw(std::string(kMegatronFlag)) == nullptr) {
    out.args = args;  // not a command that takes pasted arguments: CLI11 reports them as unknown
    return out;
  }
  // Options the user gave pipelab directly; pasted copies of them are dropped.
  std::set<const CLI::Option*> explicit_options;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (is_paste_flag(args[i])) {
      if (args[i].find('=') == std::string::npos) ++i;
    } else if (is_flag_word(args[i])) {
      if (const CLI::Option* opt = option_of(*cmd, args[i])) explicit_options.insert(opt);
    }
  }

  std::vector<Pasted> kept;  // from every paste, in order
  for (std::size_t a = 0; a < args.size(); ++a) {
    const PasteFlag* paste = nullptr;
    std::string value;
    for (const PasteFlag& p : kPasteFlags) {
      if (args[a] == p.flag) {
        if (a + 1 >= args.size()) throw InputError(std::string(p.flag) + " needs a value: " + p.value_hint);
        paste = &p;
        value = args[++a];
      } else if (args[a].starts_with(std::string(p.flag) + "=")) {
        paste = &p;
        value = args[a].substr(p.flag.size() + 1);
      }
    }
    if (paste == nullptr) {
      out.args.push_back(args[a]);
      continue;
    }
    std::vector<std::string> words;
    if (paste->flag == kMegatronFlag) {
      words = split_script_words(value.starts_with('@') ? read_text_file(value.substr(1), "Megatron arguments file") : value);
    } else {
      AutoModelFlags yaml = automodel_yaml_flags(read_text_file(value, "AutoModel YAML file"), value);
      words = std::move(yaml.words);
      out.ignored.insert(out.ignored.end(), yaml.ignored.begin(), yaml.ignored.end());
    }

    for (std::size_t i = 0; i < words.size(); ++i) {
      if (!is_flag_word(words[i]) || !words[i].starts_with("--")) {
        out.ignored.push_back(words[i]);  // launcher, script path, array syntax, stray values
        continue;
      }
      const std::string flag = dashed(words[i]);
      const CLI::Option* opt = is_paste_flag(flag) ? nullptr : option_of(*cmd, flag);
      const std::size_t n = values_after(opt, words, i);
      if (opt == nullptr) {
        out.ignored.push_back(flag.substr(0, flag.find('=')));
      } else {
        Pasted p{opt, {flag}};
        for (std::size_t k = 1; k <= n; ++k) {
          if (words[i + k].find('$') != std::string::npos) {
            throw InputError(std::string(paste->flag) + ": " + flag + " has the unexpanded value '" + words[i + k] +
                             "'; paste the command as the job log prints it, or give the number");
          }
          p.words.push_back(words[i + k]);
        }
        kept.push_back(std::move(p));
      }
      i += n;
    }
  }
  // argparse keeps the last of repeated flags (across pastes too); pipelab's own flags win.
  std::vector<std::string> pasted;
  for (std::size_t i = 0; i < kept.size(); ++i) {
    const bool repeated = std::any_of(kept.begin() + static_cast<std::ptrdiff_t>(i) + 1, kept.end(),
                                      [&](const Pasted& later) { return later.option == kept[i].option; });
    if (explicit_options.contains(kept[i].option)) {
      out.overridden.push_back(kept[i].words.front());
    } else if (!repeated) {
      pasted.insert(pasted.end(), kept[i].words.begin(), kept[i].words.end());
    } else {
      // Said only when the values differ: a script that repeats a flag with its value changes nothing.
      const auto& last = *std::find_if(kept.rbegin(), kept.rend(), [&](const Pasted& p) { return p.option == kept[i].option; });
      const auto values = [](const Pasted& p) {  // --flag=value carries its value in the flag's word
        std::vector<std::string> v(p.words.begin() + 1, p.words.end());
        if (const std::size_t eq = p.words.front().find('='); eq != std::string::npos) v.insert(v.begin(), p.words.front().substr(eq + 1));
        return v;
      };
      if (values(last) != values(kept[i])) {
        std::string words;
        for (const std::string& w : kept[i].words) words += (words.empty() ? "" : " ") + w;
        out.superseded.push_back(words);
      }
    }
  }
  // Right after the subcommand, before the user's own flags: flags apply in command-line order, so
  // an own switch beats a pasted switch of the same field (--no-overlap-grad-reduce after a pasted --overlap-grad-reduce).
  const auto subcommand = std::find(out.args.begin(), out.args.end(), cmd->get_name());
  out.args.insert(subcommand == out.args.end() ? out.args.end() : subcommand + 1, pasted.begin(), pasted.end());
  return out;
}

}  // namespace pipelab::app
