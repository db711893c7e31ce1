// Strict JSON field access and command-line value parsing for the profile kinds.
#include "json_reader.h"

#include <algorithm>
#include <charconv>
#include <limits>

#include <pipelab/base/error.h>

namespace pipelab::detail {
namespace {

std::string type_name(const nlohmann::json& value) {
  if (value.is_number_integer()) return "integer";
  if (value.is_number_float()) return "number";
  return value.type_name();  // "string", "boolean", "array", "object", "null"
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string context_prefix(std::string_view context) {
  return context.empty() ? std::string() : std::string(context) + ": ";
}

std::string join(std::span<const std::string> items, std::string_view separator) {
  std::string out;
  for (const auto& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

std::string closest_key(std::string_view key, std::span<const std::string> known_keys) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, key.size() / 3) + 1;  // close enough to suggest
  for (const auto& known : known_keys) {
    const std::size_t d = edit_distance(key, known);
    if (d < best_distance) {
      best_distance = d;
      best = known;
    }
  }
  return best;
}

JsonReader::JsonReader(const nlohmann::json& object, std::string_view context, std::string_view kind,
                       std::span<const std::string> known_keys)
    : object_(object), context_(context), kind_(kind) {
  if (!object.is_object()) {
    throw InputError(context_prefix(context_) + kind_ + " spec must be a JSON object, got " +
                     type_name(object));
  }
  for (const auto& item : object.items()) {
    const std::string& key = item.key();
    if (std::find(known_keys.begin(), known_keys.end(), key) != known_keys.end()) continue;
    std::string message = context_prefix(context_) + "unknown " + kind_ + " key '" + key + "'";
    if (const std::string near = closest_key(key, known_keys); !near.empty()) {
      message += " (did you mean '" + near + "'?)";
    }
    message += "; valid keys: " + join(known_keys);
    throw InputError(message);
  }
}

bool JsonReader::has(std::string_view key) const { return object_.contains(key); }

const nlohmann::json& JsonReader::get(std::string_view key) const {
  const auto it = object_.find(key);
  if (it == object_.end()) {
    throw InputError(context_prefix(context_) + "missing required " + kind_ + " key '" +
                     std::string(key) + "'");
  }
  return *it;
}

void JsonReader::fail_type(std::string_view key, std::string_view expected) const {
  throw InputError(context_prefix(context_) + kind_ + " key '" + std::string(key) + "' must be " +
                   std::string(expected) + ", got " + type_name(get(key)) + " " + get(key).dump());
}

std::int64_t JsonReader::get_int64(std::string_view key) const {
  const nlohmann::json& value = get(key);
  if (!value.is_number_integer()) fail_type(key, "an integer");
  if (value.is_number_unsigned() &&
      value.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    fail_type(key, "an integer that fits in 64 bits");
  }
  return value.get<std::int64_t>();
}

std::int64_t JsonReader::get_int64(std::string_view key, std::int64_t fallback) const {
  return has(key) ? get_int64(key) : fallback;
}

int JsonReader::get_int(std::string_view key) const {
  const std::int64_t value = get_int64(key);
  if (value < std::numeric_limits<int>::min() || value > std::numeric_limits<int>::max()) {
    fail_type(key, "an integer that fits in 32 bits");
  }
  return static_cast<int>(value);
}

int JsonReader::get_int(std::string_view key, int fallback) const {
  return has(key) ? get_int(key) : fallback;
}

double JsonReader::get_double(std::string_view key) const {
  const nlohmann::json& value = get(key);
  if (!value.is_number()) fail_type(key, "a number");
  return value.get<double>();
}

double JsonReader::get_double(std::string_view key, double fallback) const {
  return has(key) ? get_double(key) : fallback;
}

bool JsonReader::get_bool(std::string_view key, bool fallback) const {
  if (!has(key)) return fallback;
  const nlohmann::json& value = get(key);
  if (!value.is_boolean()) fail_type(key, "true or false");
  return value.get<bool>();
}

std::string JsonReader::get_string(std::string_view key) const {
  const nlohmann::json& value = get(key);
  if (!value.is_string()) fail_type(key, "a string");
  return value.get<std::string>();
}

std::string JsonReader::get_string(std::string_view key, std::string_view fallback) const {
  return has(key) ? get_string(key) : std::string(fallback);
}

nlohmann::json parse_json_text(std::string_view text, std::string_view context) {
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() carries "[json.exception.parse_error.101] parse error at line L, column C: ...".
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    throw InputError(context_prefix(context) + "invalid JSON: " + what);
  }
}

std::string normalize_key(std::string_view key) {
  while (!key.empty() && key.front() == '-') key.remove_prefix(1);
  std::string out(key);
  std::replace(out.begin(), out.end(), '-', '_');
  return out;
}

int parse_int_value(std::string_view key, std::string_view value) {
  int out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
    throw InputError(std::string(key) + "=" + std::string(value) + ": expected an integer");
  }
  return out;
}

double parse_double_value(std::string_view key, std::string_view value) {
  double out = 0;
  const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), out);
  if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
    throw InputError(std::string(key) + "=" + std::string(value) + ": expected a number");
  }
  return out;
}

bool parse_bool_value(std::string_view key, std::string_view value) {
  if (value == "true" || value == "1" || value == "yes" || value == "on") return true;
  if (value == "false" || value == "0" || value == "no" || value == "off") return false;
  throw InputError(std::string(key) + "=" + std::string(value) + ": expected true or false");
}

}  // namespace pipelab::detail
