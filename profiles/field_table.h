// Field tables: one row per JSON key (key, member pointer, required) drives reading a profile kind
// from JSON (strictly, through JsonReader), writing it, and setting one field from a command-line
// override, so each field is listed once. A member type's reading, writing and text parsing is its
// ValueCodec: the scalar ones are here; an enum (NamedEnumCodec), a nested object (ObjectCodec) or
// an array of objects (ObjectListCodec) specialises ValueCodec next to its table. Private to profiles/.
#pragma once

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/base/json_reader.h"

namespace pipelab::detail {

/// One JSON key of `T`; `Values` are the member types the table holds.
template <class T, class... Values>
struct Field {
  std::string_view key;
  std::variant<Values T::*...> member;
  bool required = false;
};

// ---- command-line text ------------------------------------------------------------------------


/// "--num-layers" / "num-layers" -> "num_layers".
inline std::string normalize_key(std::string_view key) {
  while (!key.empty() && key.front() == '-') key.remove_prefix(1);
  std::string out(key);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

template <class Number>
Number parse_number(std::string_view key, std::string_view value, std::string_view expected) {
  Number out{};
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
    throw InputError(std::string(key) + "=" + std::string(value) + ": expected " + std::string(expected));
  }
  return out;
}

inline bool parse_bool_value(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
  if (value == "false" || value == "0" || value == "no" || value == "off") return false;
  throw InputError(std::string(key) + "=" + std::string(value) + ": expected true or false");
}

/// InputError "unknown <kind> field '<raw_key>' (did you mean '...'?); valid fields: ..." for an override.
[[noreturn]] inline void throw_unknown_field(std::string_view kind, std::string_view raw_key, std::span<const std::string> keys) {
  std::string message = "unknown " + std::string(kind) + " field '" + std::string(raw_key) + "'";
  if (const std::string near = closest_name(normalize_key(raw_key), keys); !near.empty()) message += " (did you mean '" + near + "'?)";
  throw InputError(message + "; valid fields: " + join(keys));
}

// ---- codecs -----------------------------------------------------------------------------------

/// read(reader, key) -> V (the key is present), write(json object, key, value), and for the types
/// overrides set, parse(key, text) -> V (InputError "<key>=<text>: expected ..." otherwise).
template <class V>
struct ValueCodec;

template <>
struct ValueCodec<int> {
  static int read(const JsonReader& r, std::string_view key) { return r.get_int(key); }
  static void write(nlohmann::json& j, std::string_view key, int v) { j[std::string(key)] = v; }
  static int parse(std::string_view key, std::string_view text) { return parse_number<int>(key, text, "an integer"); }
};

template <>
struct ValueCodec<std::int64_t> {
  static std::int64_t read(const JsonReader& r, std::string_view key) { return r.get_int64(key); }
  static void write(nlohmann::json& j, std::string_view key, std::int64_t v) { j[std::string(key)] = v; }
};

template <>
struct ValueCodec<double> {
  static double read(const JsonReader& r, std::string_view key) { return r.get_double(key); }
  static void write(nlohmann::json& j, std::string_view key, double v) { j[std::string(key)] = v; }
  static double parse(std::string_view key, std::string_view text) { return parse_number<double>(key, text, "a number"); }
};

template <>
struct ValueCodec<bool> {
  static bool read(const JsonReader& r, std::string_view key) { return r.get_bool(key); }
  static void write(nlohmann::json& j, std::string_view key, bool v) { j[std::string(key)] = v; }
  static bool parse(std::string_view key, std::string_view text) { return parse_bool_value(key, text); }
};

template <>
struct ValueCodec<std::string> {
  static std::string read(const JsonReader& r, std::string_view key) { return r.get_string(key); }
  static void write(nlohmann::json& j, std::string_view key, const std::string& v) { j[std::string(key)] = v; }
  static std::string parse(std::string_view, std::string_view text) { return std::string(text); }
};

/// Unset = "derive it": absent from the JSON when unset.
template <>
struct ValueCodec<std::optional<bool>> {
  static std::optional<bool> read(const JsonReader& r, std::string_view key) { return r.get_bool(key); }
  static void write(nlohmann::json& j, std::string_view key, const std::optional<bool>& v) {
    if (v.has_value()) j[std::string(key)] = *v;
  }
  static std::optional<bool> parse(std::string_view key, std::string_view text) { return parse_bool_value(key, text); }
};

/// An enum with a name table: JSON and command lines carry its name, parsed by `Parse`
/// (InputError naming the valid names), written by to_string.
template <class E, E (*Parse)(std::string_view)>
struct NamedEnumCodec {
  static E read(const JsonReader& r, std::string_view key) { return r.get_parsed(key, Parse); }
  static void write(nlohmann::json& j, std::string_view key, E v) { j[std::string(key)] = std::string(to_string(v)); }
  static E parse(std::string_view, std::string_view text) { return Parse(text); }
};

// ---- tables -----------------------------------------------------------------------------------

template <class Table>
std::vector<std::string> field_keys(const Table& table) {
  std::vector<std::string> out;
  for (const auto& field : table) out.emplace_back(field.key);
  return out;
}

template <class Table>
const typename Table::value_type* find_field(const Table& table, std::string_view key) {
  for (const auto& field : table) {
    if (field.key == key) return &field;
  }
  return nullptr;
}

/// Reads every field of `table` present in `reader`'s object into `out`; a missing required field
/// throws, a missing optional one keeps `out`'s value (the type's default).
template <class Table, class T>
void read_fields(const Table& table, const JsonReader& reader, T& out) {
  for (const auto& field : table) {
    if (!reader.has(field.key)) {
      if (field.required) reader.get(field.key);  // throws "missing ..."
      continue;
    }
    std::visit(
        [&](auto member) {
          using V = std::remove_cvref_t<decltype(out.*member)>;
          out.*member = ValueCodec<V>::read(reader, field.key);
        },
        field.member);
  }
}

template <class Table, class T>
nlohmann::json fields_to_json(const Table& table, const T& in) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& field : table) {
    std::visit(
        [&](auto member) {
          using V = std::remove_cvref_t<decltype(in.*member)>;
          ValueCodec<V>::write(out, field.key, in.*member);
        },
        field.member);
  }
  return out;
}

/// Reads the object under `key` through `table` into `out`; `kind` names it in messages, whose
/// context is "<context>: <key>".
template <class Table, class T>
void read_object(const JsonReader& r, std::string_view key, const Table& table, std::string_view kind, T& out) {
  read_fields(table, JsonReader(r.get(key), r.where(key), KeyNames::spec(kind), field_keys(table)), out);
}

/// A string usable as a template argument: ObjectCodec<P2PProfile, kP2PFields, "p2p">.
template <std::size_t N>
struct FixedName {
  char text[N];
  constexpr FixedName(const char (&name)[N]) { std::copy_n(name, N, text); }  // NOLINT: implicit by design
  constexpr std::string_view view() const { return {text, N - 1}; }
};

/// A member that is an object of its own in JSON, read and written through its own table; `Kind`
/// names it in messages.
template <class T, const auto& Table, FixedName Kind>
struct ObjectCodec {
  static T read(const JsonReader& r, std::string_view key) {
    T out;
    read_object(r, key, Table, Kind.view(), out);
    return out;
  }
  static void write(nlohmann::json& j, std::string_view key, const T& value) { j[std::string(key)] = fields_to_json(Table, value); }
};

/// A member that is a JSON array of objects, each read and written through `Table`; an element's
/// messages have the context "<context>: <key>[i]".
template <class Element, const auto& Table, FixedName Kind>
struct ObjectListCodec {
  static std::vector<Element> read(const JsonReader& r, std::string_view key) {
    const std::vector<std::string> keys = field_keys(Table);
    const nlohmann::json& list = r.get(key);
    if (!list.is_array()) r.fail_type(key, "an array of {\"" + join(keys, "\", \"") + "\"}");
    std::vector<Element> out(list.size());
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string where = r.where(std::string(key) + "[" + std::to_string(i) + "]");
      read_fields(Table, JsonReader(list[i], where, KeyNames::spec(Kind.view()), keys), out[i]);
    }
    return out;
  }
  static void write(nlohmann::json& j, std::string_view key, const std::vector<Element>& list) {
    nlohmann::json out = nlohmann::json::array();
    for (const Element& element : list) out.push_back(fields_to_json(Table, element));
    j[std::string(key)] = std::move(out);
  }
};

/// Sets one field from command-line text (InputError when the text does not parse).
template <class Field, class T>
void set_field(const Field& field, T& out, std::string_view text) {
  std::visit(
      [&](auto member) {
        using V = std::remove_cvref_t<decltype(out.*member)>;
        out.*member = ValueCodec<V>::parse(field.key, text);
      },
      field.member);
}

}  // namespace pipelab::detail
