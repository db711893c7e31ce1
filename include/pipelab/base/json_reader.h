// JsonReader: strict reading of one JSON object, the one way pipelab reads JSON input. An unknown
// key (with a "did you mean" suggestion), a missing key or a value of the wrong type is an
// InputError naming the key and where the input came from. Also JSON text -> document, with the
// line and column of a syntax error. Header-only; users link nlohmann_json.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/base/names.h"
#include "pipelab/base/result.h"

namespace pipelab {

/// "<context>: ", or "" when context is empty.
inline std::string context_prefix(std::string_view context) {
  return context.empty() ? std::string() : std::string(context) + ": ";
}

/// How a reader's messages name its object and its keys. pipelab has two families:
///  - specs (profiles/): "model spec must be a JSON object", "unknown model key 'x'",
///    "missing required model key 'x'", "model key 'x' must be an integer";
///  - file formats (schedules/): "a schedule file must be a JSON object", "unknown field \"x\"",
///    "missing field \"x\"", "field \"x\" must be an integer".
class KeyNames {
 public:
  /// Profile specs; `kind` is "model", "gpu", "parallel", ...
  static KeyNames spec(std::string_view kind) {
    return KeyNames(std::string(kind) + " spec", std::string(kind) + " key", '\'', "missing required ", "keys");
  }
  /// File formats; `object` says what the object is ("a schedule file", "a timeline event").
  static KeyNames fields(std::string_view object) { return KeyNames(std::string(object), "field", '"', "missing ", "fields"); }

  std::string object() const { return object_; }
  /// `model key 'x'` or `field "x"`.
  std::string key(std::string_view k) const { return noun_ + " " + quote_ + std::string(k) + quote_; }
  std::string noun() const { return noun_; }
  std::string missing(std::string_view k) const { return missing_ + key(k); }
  std::string unknown(std::string_view k, std::span<const std::string> known) const {
    std::string message = "unknown " + key(k);
    if (const std::string near = closest_name(k, known); !near.empty()) message += " (did you mean " + quote_ + near + quote_ + "?)";
    return message + "; valid " + plural_ + ": " + join(known);
  }

 private:
  KeyNames(std::string object, std::string noun, char quote, std::string missing, std::string plural)
      : object_(std::move(object)), noun_(std::move(noun)), quote_(1, quote), missing_(std::move(missing)), plural_(std::move(plural)) {}

  std::string object_, noun_, quote_, missing_, plural_;
};

class JsonReader {
 public:
  /// Throws InputError when `object` is not a JSON object or holds a key outside `known_keys`.
  /// The reader refers to `object`, which must outlive it.
  JsonReader(const nlohmann::json& object, std::string_view context, KeyNames names, std::span<const std::string> known_keys)
      : object_(object), context_(context), names_(std::move(names)) {
    if (!object.is_object()) fail(names_.object() + " must be a JSON object, got " + type_name(object));
    for (const auto& item : object.items()) {
      if (std::find(known_keys.begin(), known_keys.end(), item.key()) == known_keys.end()) {
        fail(names_.unknown(item.key(), known_keys));
      }
    }
  }

  bool has(std::string_view key) const { return object_.contains(key); }

  /// The raw value of a required key.
  const nlohmann::json& get(std::string_view key) const {
    const auto it = object_.find(key);
    if (it == object_.end()) fail(names_.missing(key));
    return *it;
  }

  // Required forms throw "missing ..." when the key is absent; the others return `fallback`.
  std::int64_t get_int64(std::string_view key) const {
    const nlohmann::json& value = get(key);
    if (!value.is_number_integer()) fail_type(key, "an integer");
    if (value.is_number_unsigned() && value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      fail_type(key, "an integer that fits in 64 bits");
    }
    return value.get<std::int64_t>();
  }
  std::int64_t get_int64(std::string_view key, std::int64_t fallback) const { return has(key) ? get_int64(key) : fallback; }
  int get_int(std::string_view key) const {
    const std::int64_t value = get_int64(key);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) fail_type(key, "an integer that fits in 32 bits");
    return static_cast<int>(value);
  }
  int get_int(std::string_view key, int fallback) const { return has(key) ? get_int(key) : fallback; }
  double get_double(std::string_view key) const {
    const nlohmann::json& value = get(key);
    if (!value.is_number()) fail_type(key, "a number");
    return value.get<double>();
  }
  double get_double(std::string_view key, double fallback) const { return has(key) ? get_double(key) : fallback; }
  bool get_bool(std::string_view key) const {
    const nlohmann::json& value = get(key);
    if (!value.is_boolean()) fail_type(key, "true or false");
    return value.get<bool>();
  }
  bool get_bool(std::string_view key, bool fallback) const { return has(key) ? get_bool(key) : fallback; }
  std::string get_string(std::string_view key) const {
    const nlohmann::json& value = get(key);
    if (!value.is_string()) fail_type(key, "a string");
    return value.get<std::string>();
  }
  std::string get_string(std::string_view key, std::string_view fallback) const {
    return has(key) ? get_string(key) : std::string(fallback);
  }

  /// A required string key turned into a value by `parse` (e.g. parse_name over an enum's table);
  /// an InputError from `parse` is re-thrown with this reader's context: "p.json: parallel key
  /// recompute='most' must be one of: none, selective, full".
  template <class Parse>
  auto get_parsed(std::string_view key, Parse parse) const {
    const std::string text = get_string(key);
    try {
      return parse(std::string_view(text));
    } catch (const InputError& e) {
      fail(names_.noun() + " " + e.what());
    }
  }

  /// The context for a reader of a value inside this object: "<context>: <path>".
  std::string where(std::string_view path) const { return context_prefix(context_) + std::string(path); }

  /// "<context>: <key> must be <expected>, got <type> <value>".
  [[noreturn]] void fail_type(std::string_view key, std::string_view expected) const {
    std::string value = get(key).dump();
    if (value.size() > 60) value = value.substr(0, 57) + "...";
    fail_key(key, "must be " + std::string(expected) + ", got " + type_name(get(key)) + " " + value);
  }
  /// "<context>: <key> <problem>", e.g. fail_key("rank", "must be a non-negative integer").
  [[noreturn]] void fail_key(std::string_view key, std::string_view problem) const { fail(names_.key(key) + " " + std::string(problem)); }

 private:
  [[noreturn]] void fail(const std::string& message) const { throw InputError(context_prefix(context_) + message); }

  static std::string type_name(const nlohmann::json& value) {
    if (value.is_number_integer()) return "integer";
    if (value.is_number_float()) return "number";
    return value.type_name();  // "string", "boolean", "array", "object", "null"
  }

  const nlohmann::json& object_;
  std::string context_;
  KeyNames names_;
};

/// Parses JSON text without throwing. A syntax error carries its line and column (1-based) and a
/// message "parse error at line L, column C: ..."; other failures (a number out of range) carry
/// no location.
inline Result<nlohmann::json> parse_json_document(std::string_view text) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    // e.byte is the 1-based offset just past the offending character.
    const std::size_t end = std::min(text.size(), e.byte > 0 ? static_cast<std::size_t>(e.byte - 1) : std::size_t{0});
    int line = 1, column = 1;
    for (std::size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return ParseError{std::move(what), line, column};
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return ParseError{std::move(what)};
  }
}

/// Parses JSON text; InputError "<context>: invalid JSON: parse error at line L, column C: ..." on failure.
inline nlohmann::json parse_json_text(std::string_view text, std::string_view context) {
  Result<nlohmann::json> document = parse_json_document(text);
  if (!document) throw InputError(context_prefix(context) + "invalid JSON: " + document.error().message);
  return std::move(document).value();
}

}  // namespace pipelab
