// Strict field access shared by the profile JSON kinds: an unknown key, a wrong type or a missing key
// becomes an InputError naming the key, the kind ("model", "gpu", "parallel") and where it came from.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipelab::detail {

class JsonReader {
 public:
  /// Throws if `object` is not a JSON object or holds a key outside `known_keys`.
  JsonReader(const nlohmann::json& object, std::string_view context, std::string_view kind,
             std::span<const std::string> known_keys);

  bool has(std::string_view key) const;
  // Required forms throw "missing required <kind> key"; the others return `fallback` when absent.
  std::int64_t get_int64(std::string_view key) const;
  std::int64_t get_int64(std::string_view key, std::int64_t fallback) const;
  int get_int(std::string_view key) const;
  int get_int(std::string_view key, int fallback) const;
  double get_double(std::string_view key) const;
  double get_double(std::string_view key, double fallback) const;
  bool get_bool(std::string_view key, bool fallback) const;
  std::string get_string(std::string_view key) const;
  std::string get_string(std::string_view key, std::string_view fallback) const;
  /// The raw value of a required key.
  const nlohmann::json& get(std::string_view key) const;

  [[noreturn]] void fail_type(std::string_view key, std::string_view expected) const;

 private:
  const nlohmann::json& object_;
  std::string context_;
  std::string kind_;
};

/// Parses JSON text; InputError "<context>: invalid JSON: ..." on failure.
nlohmann::json parse_json_text(std::string_view text, std::string_view context);

/// The known key closest to `key` by edit distance, or "" if none is close.
std::string closest_key(std::string_view key, std::span<const std::string> known_keys);

/// "a, b, c".
std::string join(std::span<const std::string> items, std::string_view separator = ", ");

/// "--num-layers" / "num-layers" -> "num_layers".
std::string normalize_key(std::string_view key);

/// Command-line value parsing; InputError "<key>=<value>: expected ..." on failure.
int parse_int_value(std::string_view key, std::string_view value);
double parse_double_value(std::string_view key, std::string_view value);
bool parse_bool_value(std::string_view key, std::string_view value);

/// "<context>: " or "" when context is empty.
std::string context_prefix(std::string_view context);

}  // namespace pipelab::detail
