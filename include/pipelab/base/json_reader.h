// JsonReader: strict reading of JSON input, the one way pipelab reads it. An unknown key (with a
// "did you mean" suggestion), a missing key or a value of the wrong type is an InputError naming
// the key and where the input came from. Nested objects and arrays are read through child readers
// (JsonReader::object, JsonReader::array, JsonArrayReader) whose messages carry the JSON path
// ("results[2].summary"). Also JSON text -> document, with the line and column of a syntax error.
// Header-only; users link nlohmann_json.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"
#include "pipelab/base/names.h"
#include "pipelab/base/result.h"

namespace pipelab {

/// "<context>: ", or "" when context is empty.
inline std::string context_prefix(std::string_view context) {
  return context.empty() ? std::string() : std::string(context) + ": ";
}

/// How a reader's messages name its object and its keys. pipelab has three families:
///  - specs (profiles/): "model spec must be a JSON object", "unknown model key 'x'",
///    "missing required model key 'x'", "model key 'x' must be an integer, got string \"8\"";
///  - file formats (schedules/): "a schedule file must be a JSON object", "unknown field \"x\"",
///    "missing field \"x\"", "field \"x\" must be an integer, got string \"8\"";
///  - nested formats (reports/) name a value by its JSON path and say what it must be:
///    "results[1].summary.mfu: must be a number", "results[1].summary: missing field \"mfu\"",
///    "comparison: must be an object"; a value is shown only when it is out of range.
class KeyNames {
 public:
  /// Profile specs; `kind` is "model", "gpu", "parallel", ...
  static KeyNames spec(std::string_view kind) {
    return KeyNames(std::string(kind) + " spec", std::string(kind) + " key", '\'', "missing required ", "keys", false);
  }
  /// File formats; `object` says what the object is ("a schedule file", "a timeline event").
  static KeyNames fields(std::string_view object) {
    return KeyNames(std::string(object), "field", '"', "missing ", "fields", false);
  }
  /// Nested formats, read through child readers that carry the path.
  static KeyNames paths() { return KeyNames("", "field", '"', "missing ", "fields", true); }

  std::string object() const { return object_; }
  /// `model key 'x'` or `field "x"`.
  std::string key(std::string_view k) const { return noun_ + " " + quote_ + std::string(k) + quote_; }
  std::string noun() const { return noun_; }
  /// Whether a message names a key by its path ("summary.mfu: ...") rather than by key() after the
  /// object's path ("summary: field \"mfu\" ...").
  bool by_path() const { return by_path_; }
  std::string missing(std::string_view k) const { return missing_ + key(k); }
  std::string not_object(std::string_view type) const {
    return by_path_ ? "must be an object" : object_ + " must be a JSON object, got " + std::string(type);
  }
  std::string unknown(std::string_view k, std::span<const std::string> known) const {
    std::string message = "unknown " + key(k);
    if (const std::string near = closest_name(k, known); !near.empty()) message += " (did you mean " + quote_ + near + quote_ + "?)";
    return message + "; valid " + plural_ + ": " + join(known);
  }

 private:
  KeyNames(std::string object, std::string noun, char quote, std::string missing, std::string plural, bool by_path)
      : object_(std::move(object)),
        noun_(std::move(noun)),
        quote_(1, quote),
        missing_(std::move(missing)),
        plural_(std::move(plural)),
        by_path_(by_path) {}

  std::string object_, noun_, quote_, missing_, plural_;
  bool by_path_;
};

class JsonReader;
class JsonArrayReader;

namespace detail {

/// What JsonReader (an object's members, by key) and JsonArrayReader (an array's elements, by
/// index) share: where their value sits (the input's name and the JSON path inside it) and the
/// typed reads of a member, so that every check and its message is written once.
class JsonNode {
 public:
  /// The JSON value this reader reads.
  const nlohmann::json& value() const { return value_; }

  /// "<context>: <path>: <problem>" (the parts that are not empty), e.g. a rule the whole object breaks.
  [[noreturn]] void fail(std::string_view problem) const { throw InputError(prefix() + std::string(problem)); }

 protected:
  using Step = std::variant<std::string_view, std::size_t>;  // a member's key or an element's index

  JsonNode(const nlohmann::json& value, std::string context, std::string path, KeyNames names)
      : value_(value), context_(std::move(context)), path_(std::move(path)), names_(std::move(names)) {}

  std::string prefix() const { return context_prefix(context_) + (path_.empty() ? std::string() : path_ + ": "); }

  /// The JSON path of a member: "summary.mfu", "samples[2]".
  std::string child_path(Step step) const {
    if (const std::size_t* index = std::get_if<std::size_t>(&step)) return path_ + "[" + std::to_string(*index) + "]";
    const std::string key(std::get<std::string_view>(step));
    return path_.empty() ? key : path_ + "." + key;
  }

  /// How a message starts that is about one member: "<context>: summary.mfu: " by path (always for an
  /// element), "<context>: model key 'x' " by key.
  std::string subject(Step step) const {
    if (names_.by_path() || std::holds_alternative<std::size_t>(step)) return context_prefix(context_) + child_path(step) + ": ";
    return prefix() + names_.key(std::get<std::string_view>(step)) + " ";
  }

  /// "<subject>must be <expected>", showing the value: always by key (", got string \"x\""), by path
  /// only when it is `out_of_range` (" (got 1e+19)").
  [[noreturn]] void reject(const nlohmann::json& member, Step step, std::string_view expected, bool out_of_range = false) const {
    std::string message = subject(step) + "must be " + std::string(expected);
    if (!names_.by_path()) {
      message += ", got " + type_name(member) + " " + shown(member);
    } else if (out_of_range) {
      message += " (got " + shown(member) + ")";
    }
    throw InputError(message);
  }

  /// A JSON integer below 2^63 in magnitude; with `integral_numbers` also a finite number without a
  /// fraction (1e9, as other writers may write a count), so that the conversion is exact.
  std::int64_t read_int64(const nlohmann::json& member, Step step, bool integral_numbers) const {
    if (member.is_number_unsigned()) {
      if (member.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        reject(member, step, "an integer below 2^63", true);
      }
      return static_cast<std::int64_t>(member.get<std::uint64_t>());
    }
    if (member.is_number_integer()) return member.get<std::int64_t>();
    if (!integral_numbers || !member.is_number_float()) reject(member, step, "an integer");
    const double d = member.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) reject(member, step, "an integer");
    constexpr double kTwoTo63 = 9223372036854775808.0;
    if (!(std::abs(d) < kTwoTo63)) reject(member, step, "an integer of magnitude below 2^63", true);
    return static_cast<std::int64_t>(d);
  }
  double read_double(const nlohmann::json& member, Step step) const {
    if (!member.is_number()) reject(member, step, "a number");
    return member.get<double>();
  }
  bool read_bool(const nlohmann::json& member, Step step) const {
    if (!member.is_boolean()) reject(member, step, "true or false");
    return member.get<bool>();
  }
  std::string read_string(const nlohmann::json& member, Step step) const {
    if (!member.is_string()) reject(member, step, "a string");
    return member.get<std::string>();
  }

  static std::string type_name(const nlohmann::json& value) {
    if (value.is_number_integer()) return "integer";
    if (value.is_number_float()) return "number";
    return value.type_name();  // "string", "boolean", "array", "object", "null"
  }
  /// The value as JSON, cut to 60 characters.
  static std::string shown(const nlohmann::json& value) {
    std::string text = value.dump();
    return text.size() > 60 ? text.substr(0, 57) + "..." : text;
  }

  const nlohmann::json& value_;
  std::string context_;
  std::string path_;  // "" for the input's top level
  KeyNames names_;
};

}  // namespace detail

class JsonReader : public detail::JsonNode {
 public:
  /// Throws InputError when `object` is not a JSON object or holds a key outside `known_keys`.
  /// The reader refers to `object`, which must outlive it.
  JsonReader(const nlohmann::json& object, std::string_view context, KeyNames names, std::span<const std::string> known_keys)
      : JsonReader(object, std::string(context), "", std::move(names), known_keys) {}
  /// A reader that accepts any key, for formats whose readers skip what they do not know.
  JsonReader(const nlohmann::json& object, std::string_view context, KeyNames names)
      : JsonReader(object, std::string(context), "", std::move(names), std::nullopt) {}

  bool has(std::string_view key) const { return value_.contains(key); }

  /// The raw value of a required key.
  const nlohmann::json& get(std::string_view key) const {
    const auto it = value_.find(key);
    if (it == value_.end()) fail(names_.missing(key));
    return *it;
  }

  // Required forms throw "missing ..." when the key is absent; the others return `fallback`.
  std::int64_t get_int64(std::string_view key) const { return read_int64(get(key), key, false); }
  std::int64_t get_int64(std::string_view key, std::int64_t fallback) const { return has(key) ? get_int64(key) : fallback; }
  /// An int64 written as a JSON integer or as an integral number (1e9, 2.0).
  std::int64_t get_integral(std::string_view key) const { return read_int64(get(key), key, true); }
  std::int64_t get_integral(std::string_view key, std::int64_t fallback) const { return has(key) ? get_integral(key) : fallback; }
  int get_int(std::string_view key) const {
    const std::int64_t value = get_int64(key);
    if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) fail_type(key, "an integer that fits in 32 bits");
    return static_cast<int>(value);
  }
  int get_int(std::string_view key, int fallback) const { return has(key) ? get_int(key) : fallback; }
  double get_double(std::string_view key) const { return read_double(get(key), key); }
  double get_double(std::string_view key, double fallback) const { return has(key) ? get_double(key) : fallback; }
  bool get_bool(std::string_view key) const { return read_bool(get(key), key); }
  bool get_bool(std::string_view key, bool fallback) const { return has(key) ? get_bool(key) : fallback; }
  std::string get_string(std::string_view key) const { return read_string(get(key), key); }
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

  /// A reader of the object under a required key, naming its keys as this one does and accepting
  /// any key; its messages carry the path ("results[1].summary: missing field \"mfu\"").
  JsonReader object(std::string_view key) const;
  /// A reader of the array under a required key; `expected` says what it must be ("an array of integers").
  JsonArrayReader array(std::string_view key, std::string_view expected) const;

  /// The context for a reader of a value inside this object: "<context>: <path>".
  std::string where(std::string_view path) const { return context_prefix(context_) + child_path(path); }

  /// "<context>: <key> must be <expected>, got <type> <value>" (by path: "<context>: <path>.<key>: must be <expected>").
  [[noreturn]] void fail_type(std::string_view key, std::string_view expected) const { reject(get(key), key, expected); }
  /// "<context>: <key> <problem>" (by path: "<context>: <path>.<key>: <problem>"), e.g.
  /// fail_key("rank", "must be a non-negative integer").
  [[noreturn]] void fail_key(std::string_view key, std::string_view problem) const {
    throw InputError(subject(key) + std::string(problem));
  }

 private:
  friend class JsonArrayReader;

  JsonReader(const nlohmann::json& object, std::string context, std::string path, KeyNames names,
             std::optional<std::span<const std::string>> known_keys)
      : JsonNode(object, std::move(context), std::move(path), std::move(names)) {
    if (!object.is_object()) fail(names_.not_object(type_name(object)));
    if (!known_keys) return;
    for (const auto& item : object.items()) {
      if (std::find(known_keys->begin(), known_keys->end(), item.key()) == known_keys->end()) {
        fail(names_.unknown(item.key(), *known_keys));
      }
    }
  }
};

/// Reads a JSON array element by element; a message names the element by its path
/// ("memory[1].samples[2][1]: must be an integer"). Made by JsonReader::array.
class JsonArrayReader : public detail::JsonNode {
 public:
  std::size_t size() const { return value_.size(); }
  const nlohmann::json& get(std::size_t i) const { return value_.at(i); }

  /// Element `i` as an object (any keys) or as an array; "<path>[i]: must be ..." when it is not.
  JsonReader object(std::size_t i) const {
    if (!get(i).is_object()) reject(get(i), i, "an object");
    return JsonReader(get(i), context_, child_path(i), names_, std::nullopt);
  }
  JsonArrayReader array(std::size_t i, std::string_view expected) const {
    if (!get(i).is_array()) reject(get(i), i, expected);
    return JsonArrayReader(get(i), context_, child_path(i), names_);
  }

  std::int64_t get_integral(std::size_t i) const { return read_int64(get(i), i, true); }
  double get_double(std::size_t i) const { return read_double(get(i), i); }
  std::string get_string(std::size_t i) const { return read_string(get(i), i); }

  /// Every element, read as get_integral, get_double or get_string would.
  std::vector<std::int64_t> integrals() const { return each([&](std::size_t i) { return get_integral(i); }); }
  std::vector<double> doubles() const { return each([&](std::size_t i) { return get_double(i); }); }
  std::vector<std::string> strings() const { return each([&](std::size_t i) { return get_string(i); }); }
  /// Every element read as an object by `read(const JsonReader&)`, in order.
  template <class Read>
  auto objects(Read read) const {
    return each([&](std::size_t i) { return read(object(i)); });
  }

 private:
  friend class JsonReader;

  JsonArrayReader(const nlohmann::json& array, std::string context, std::string path, KeyNames names)
      : JsonNode(array, std::move(context), std::move(path), std::move(names)) {}

  template <class ReadOne>
  auto each(ReadOne read_one) const -> std::vector<std::invoke_result_t<ReadOne, std::size_t>> {
    std::vector<std::invoke_result_t<ReadOne, std::size_t>> out;
    out.reserve(size());
    for (std::size_t i = 0; i < size(); ++i) out.push_back(read_one(i));
    return out;
  }
};

inline JsonReader JsonReader::object(std::string_view key) const {
  const nlohmann::json& member = get(key);
  if (!member.is_object()) reject(member, key, "an object");
  return JsonReader(member, context_, child_path(key), names_, std::nullopt);
}

inline JsonArrayReader JsonReader::array(std::string_view key, std::string_view expected) const {
  const nlohmann::json& member = get(key);
  if (!member.is_array()) reject(member, key, expected);
  return JsonArrayReader(member, context_, child_path(key), names_);
}

namespace detail {

/// The first place where `text` nests arrays and objects deeper than limits::kMaxJsonDepth, as a
/// located error; nothing when it does not. A scan of the bytes (strings skipped), so input is
/// refused before any of it is parsed and nothing that reads or prints the document recurses deeper.
inline std::optional<ParseError> json_nesting_error(std::string_view text) {
  int depth = 0, line = 1, column = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    ++column;
    if (c == '\n') {
      ++line;
      column = 0;
    } else if (in_string) {
      if (c == '\\') {
        ++i;
        ++column;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limits::kMaxJsonDepth) {
        return ParseError{"arrays and objects nested deeper than " + std::to_string(limits::kMaxJsonDepth) +
                              " levels (the limit for JSON input)",
                          line, column};
      }
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace detail

/// Whether a key given twice in one object is an error (files people write: specs, configs, schedules)
/// or the last one is kept (result files pipelab writes, which are large and never repeat a key: the
/// check makes parsing several times slower).
enum class DuplicateKeys { kRefuse, kKeepLast };

/// Parses JSON text without throwing. A syntax error carries its line and column (1-based) and a
/// message "parse error at line L, column C: ..."; so does nesting deeper than
/// limits::kMaxJsonDepth; other failures (a number out of range, a repeated key) carry no location.
inline Result<nlohmann::json> parse_json_document(std::string_view text, DuplicateKeys duplicates = DuplicateKeys::kRefuse) {
  if (std::optional<ParseError> deep = detail::json_nesting_error(text)) {
    deep->message = "at line " + std::to_string(deep->line) + ", column " + std::to_string(deep->column) + ": " + deep->message;
    return *std::move(deep);
  }
  // A key given twice in one object is refused: which value wins differs between JSON readers (this
  // parser keeps the last), so a file that relies on it does not say what it means.
  std::vector<std::vector<std::string>> open_objects;  // the keys seen so far in each enclosing object
  std::optional<std::string> duplicate;
  const nlohmann::json::parser_callback_t note_keys = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end) {
      open_objects.pop_back();
    } else if (event == Event::key && !open_objects.empty()) {
      std::vector<std::string>& keys = open_objects.back();
      const auto& key = parsed.get_ref<const std::string&>();
      if (std::find(keys.begin(), keys.end(), key) != keys.end()) {
        if (!duplicate) duplicate = key;
      } else {
        keys.push_back(key);
      }
    }
    return true;
  };
  try {
    nlohmann::json document = duplicates == DuplicateKeys::kRefuse ? nlohmann::json::parse(text.begin(), text.end(), note_keys)
                                                                   : nlohmann::json::parse(text.begin(), text.end());
    if (duplicate) return ParseError{"key '" + *duplicate + "' appears twice in one object; give each key once"};
    return document;
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
inline nlohmann::json parse_json_text(std::string_view text, std::string_view context,
                                      DuplicateKeys duplicates = DuplicateKeys::kRefuse) {
  Result<nlohmann::json> document = parse_json_document(text, duplicates);
  if (!document) throw InputError(context_prefix(context) + "invalid JSON: " + document.error().message);
  return std::move(document).value();
}

}  // namespace pipelab
