// Names in messages and files: an enum's names as one table read both ways (value -> name for
// writing, name -> value for parsing), "did you mean" suggestions for a mistyped key, and joining
// names into a list. Header-only.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/base/error.h"

namespace pipelab {

/// A number as messages show it, in %g's form ("1e+300", "0.5", "312").
inline std::string number_text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

/// One row of an enum's name table: `constexpr std::array<EnumName<Stream>, 4> kStreamNames = {{...}}`.
/// A table lists every value once; its order is the order names are listed in messages.
template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

/// The name of `value` ("?" when the table lacks it, which a complete table never does).
template <class E, std::size_t N>
constexpr std::string_view name_of(const std::array<EnumName<E>, N>& table, E value) {
  for (const EnumName<E>& row : table) {
    if (row.value == value) return row.name;
  }
  return "?";
}

/// The value named `name` (exact match), if any.
template <class E, std::size_t N>
constexpr std::optional<E> value_of(const std::array<EnumName<E>, N>& table, std::string_view name) {
  for (const EnumName<E>& row : table) {
    if (row.name == name) return row.value;
  }
  return std::nullopt;
}

/// "a, b, c" (or with another separator).
inline std::string join(std::span<const std::string> items, std::string_view separator = ", ") {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out;
}

/// Every name of a table in table order, for messages and help texts.
template <class E, std::size_t N>
std::vector<std::string> names_of(const std::array<EnumName<E>, N>& table) {
  std::vector<std::string> out;
  for (const EnumName<E>& row : table) out.emplace_back(row.name);
  return out;
}

/// The value named `text`; otherwise InputError "<what>='<text>' must be one of: a, b, c".
template <class E, std::size_t N>
E parse_name(const std::array<EnumName<E>, N>& table, std::string_view what, std::string_view text) {
  if (const std::optional<E> value = value_of(table, text)) return *value;
  throw InputError(std::string(what) + "='" + std::string(text) + "' must be one of: " + join(names_of(table)));
}

namespace detail {

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
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

}  // namespace detail

/// The known name closest to `name` by edit distance, or "" when none is close enough to suggest.
inline std::string closest_name(std::string_view name, std::span<const std::string> known) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(1, name.size() / 3) + 1;
  for (const std::string& candidate : known) {
    const std::size_t d = detail::edit_distance(name, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

}  // namespace pipelab
