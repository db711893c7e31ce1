// PyTorch pipelining CSV in both directions (`_dump_csv` / `_load_csv`).
#include <algorithm>
#include <set>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"
#include "pipelab/schedules/formats.h"
#include "shape_inference.h"

namespace pipelab {

std::string to_csv(const Schedule& s) {
  // A row per rank cannot say which chain a stage belongs to: read back, DualPipe's two chains
  // would be one pipeline that breaks the validator's rules.
  if (s.shape.chains != 1) {
    throw InputError(s.name + ": a PyTorch CSV schedule has one chain, this one has " + std::to_string(s.shape.chains) +
                     " (DualPipe); write it as JSON (--format json)");
  }
  std::string out;
  for (const auto& list : s.ranks) {
    for (std::size_t i = 0; i < list.size(); ++i) {
      if (i) out += ',';
      if (list[i]) out += to_string(*list[i]);
    }
    out += '\n';
  }
  return out;
}

Result<Schedule> parse_csv(std::string_view text, CsvFormat format, std::string name) {
  std::vector<std::vector<Slot>> ranks;
  std::vector<std::vector<int>> columns;  // of each slot's cell, for errors about an action
  int line = 1;
  std::size_t i = 0;
  // Trailing newlines end the last row; they do not start empty ones.
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.remove_suffix(1);
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) return ParseError{"empty schedule file", 1, 1};
  if (text[first] == '{' || text[first] == '[') {
    const std::string_view before = text.substr(0, first);
    const auto line_start = before.rfind('\n');
    return ParseError{"this is JSON, not a PyTorch CSV schedule (read it as JSON: --format json or auto)",
                      1 + static_cast<int>(std::count(before.begin(), before.end(), '\n')),
                      static_cast<int>(line_start == std::string_view::npos ? first : first - line_start - 1) + 1};
  }
  std::size_t cells = 0;  // actions and idle steps, bounded before they are stored
  while (i <= text.size()) {
    if (ranks.size() >= static_cast<std::size_t>(limits::kMaxWorldSize)) {
      return ParseError{"more than " + std::to_string(limits::kMaxWorldSize) + " rows (ranks; the limit)", line, 1};
    }
    const std::size_t end = std::min(text.find('\n', i), text.size());
    std::string_view row = text.substr(i, end - i);
    if (!row.empty() && row.back() == '\r') row.remove_suffix(1);
    std::vector<Slot> slots;
    std::vector<int> slot_columns;
    // A blank row is a rank without actions; idle cells exist only between commas, so that to_csv
    // writes every row back as it was read.
    if (row.find_first_not_of(" \t") != std::string_view::npos) {
      std::size_t col = 0;
      while (col <= row.size()) {
        const std::size_t comma = std::min(row.find(',', col), row.size());
        std::string_view cell = row.substr(col, comma - col);
        int column = static_cast<int>(col) + 1;
        // csv.writer quotes cells only when needed; accept quoted cells.
        if (cell.size() >= 2 && cell.front() == '"' && cell.back() == '"') {
          cell = cell.substr(1, cell.size() - 2);
          ++column;
        }
        if (static_cast<long long>(++cells) > kMaxScheduleActions) {
          return ParseError{"more than " + std::to_string(kMaxScheduleActions) + " cells (actions and idle steps; the limit)", line, column};
        }
        slot_columns.push_back(column);
        if (cell.find_first_not_of(" \t") == std::string_view::npos) {
          if (format == CsvFormat::ComputeComms) {
            return ParseError{"empty cell: compute_comms schedules list actions without idle steps", line, column};
          }
          slots.emplace_back(std::nullopt);
        } else {
          Result<Action> a = parse_action(cell);
          if (!a) return ParseError{a.error().message, line, column + std::max(0, a.error().column - 1)};
          if (format == CsvFormat::ComputeOnly && is_comm(a.value().op)) {
            return ParseError{"compute_only schedules may not contain " + std::string(op_name(a.value().op)) +
                                  " (use the compute_comms format)",
                              line, column};
          }
          slots.emplace_back(a.value());
        }
        col = comma + 1;
      }
    }
    ranks.push_back(std::move(slots));
    columns.push_back(std::move(slot_columns));
    i = end + 1;
    ++line;
  }
  return detail::infer_shape(std::move(name), std::move(ranks), columns);
}

CsvFormat sniff_csv_format(std::string_view text) {
  const bool comms = text.find("SEND_") != std::string_view::npos || text.find("RECV_") != std::string_view::npos ||
                     text.find("REDUCE_GRAD") != std::string_view::npos;
  return comms ? CsvFormat::ComputeComms : CsvFormat::ComputeOnly;
}

Result<Schedule> parse_schedule(std::string_view text, std::string name) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '{') return parse_json(text, std::move(name));
  return parse_csv(text, sniff_csv_format(text), std::move(name));
}

}  // namespace pipelab
