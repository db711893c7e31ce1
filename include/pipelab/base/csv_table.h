// A small CSV table reader for data files with a header row: `#` lines are comments, cells are
// split on commas (no quoting: the tables pipelab reads hold numbers, names and flag lists), and
// every error names the file, the line and the column by its header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/base/error.h"

namespace pipelab {

class CsvRow {
 public:
  CsvRow(std::string context, int line, std::map<std::string, std::string> cells)
      : context_(std::move(context)), line_(line), cells_(std::move(cells)) {}

  int line() const { return line_; }
  bool has(const std::string& column) const { return cells_.contains(column); }
  /// The cell under `column` ("" when empty).
  const std::string& text(const std::string& column) const { return cells_.at(column); }
  /// An integer cell; `fallback` when empty and a fallback is given, else InputError.
  std::int64_t integer(const std::string& column, std::int64_t fallback = kRequired) const {
    const std::string& t = text(column);
    if (t.empty()) {
      if (fallback == kRequired) fail(column, "is empty; it needs an integer");
      return fallback;
    }
    std::size_t used = 0;
    std::int64_t v = 0;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != t.size()) fail(column, "'" + t + "' is not an integer");
    return v;
  }
  /// A finite number cell (required).
  double number(const std::string& column) const {
    const std::string& t = text(column);
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (t.empty() || used != t.size() || !(v == v) || v > 1e300 || v < -1e300) fail(column, "'" + t + "' is not a finite number");
    return v;
  }
  [[noreturn]] void fail(const std::string& column, const std::string& rule) const {
    throw InputError(context_ + ":" + std::to_string(line_) + ": column " + column + ": " + rule);
  }

  static constexpr std::int64_t kRequired = INT64_MIN;

 private:
  std::string context_;
  int line_;
  std::map<std::string, std::string> cells_;
};

/// Rows of `text` under its first non-comment line, which must name every column in `required`.
inline std::vector<CsvRow> parse_csv_table(std::string_view text, const std::string& context,
                                           const std::vector<std::string>& required) {
  auto split = [](std::string_view line) {
    std::vector<std::string> cells;
    std::size_t at = 0;
    while (true) {
      const std::size_t comma = line.find(',', at);
      std::string cell(line.substr(at, comma == std::string_view::npos ? std::string_view::npos : comma - at));
      while (!cell.empty() && (cell.back() == ' ' || cell.back() == '\r')) cell.pop_back();
      while (!cell.empty() && cell.front() == ' ') cell.erase(cell.begin());
      cells.push_back(std::move(cell));
      if (comma == std::string_view::npos) return cells;
      at = comma + 1;
    }
  };
  std::vector<std::string> header;
  std::vector<CsvRow> rows;
  int line_number = 0;
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line = text.substr(at, end - at);
    at = end + 1;
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos || line.front() == '#') continue;
    std::vector<std::string> cells = split(line);
    if (header.empty()) {
      header = std::move(cells);
      for (const std::string& column : required) {
        if (std::find(header.begin(), header.end(), column) == header.end()) {
          throw InputError(context + ":" + std::to_string(line_number) + ": the header has no column '" + column + "'");
        }
      }
      continue;
    }
    if (cells.size() != header.size()) {
      throw InputError(context + ":" + std::to_string(line_number) + ": " + std::to_string(cells.size()) +
                       " cells, the header names " + std::to_string(header.size()));
    }
    std::map<std::string, std::string> named;
    for (std::size_t i = 0; i < header.size(); ++i) named[header[i]] = std::move(cells[i]);
    rows.emplace_back(context, line_number, std::move(named));
  }
  if (header.empty()) throw InputError(context + ": no header row");
  return rows;
}

}  // namespace pipelab
