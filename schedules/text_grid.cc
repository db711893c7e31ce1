// Text grid rendering.
#include "pipelab/schedules/text_grid.h"

#include <algorithm>
#include <sstream>

namespace pipelab {

std::string render_text_grid(const std::string& header_label, const std::vector<std::vector<std::string>>& rows,
                             std::size_t first, std::size_t last) {
  // Per-column widths keep grids with a few long cells (F&B units) compact.
  std::vector<std::size_t> width(last > first ? last - first : 0);
  for (std::size_t c = first; c < last; ++c) width[c - first] = std::to_string(c).size();
  std::size_t longest = 0;
  for (const auto& row : rows) {
    longest = std::max(longest, row.size());
    for (std::size_t c = first; c < std::min(last, row.size()); ++c) width[c - first] = std::max(width[c - first], row[c].size());
  }
  const std::string label_pad = "rank " + std::to_string(rows.size());
  const std::size_t label_width = std::max(header_label.size(), label_pad.size()) + 2;
  std::ostringstream os;
  auto cell = [&](std::size_t c, const std::string& text) {
    const std::size_t w = width[c - first];
    os << text << std::string(w + 1 - std::min(w, text.size()), ' ');
  };
  os << header_label << std::string(label_width - header_label.size(), ' ');
  for (std::size_t c = first; c < last; ++c) cell(c, std::to_string(c));
  os << (last < longest ? "..." : "") << "\n";
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::string label = "rank " + std::to_string(r);
    os << label << std::string(label_width - label.size(), ' ');
    for (std::size_t c = first; c < last; ++c) cell(c, c < rows[r].size() ? rows[r][c] : "");
    os << "\n";
  }
  return os.str();
}

std::string compact_label(const Action& a) {
  if (a.op != Op::OverlapFB) return to_string(a);
  return to_string(a.forward_half()) + "&" + to_string(a.backward_half());
}

std::vector<std::vector<std::string>> slot_texts(const std::vector<std::vector<Slot>>& slots, bool compact) {
  std::vector<std::vector<std::string>> out(slots.size());
  for (std::size_t r = 0; r < slots.size(); ++r) {
    for (const Slot& s : slots[r]) out[r].push_back(s ? (compact ? compact_label(*s) : to_string(*s)) : ".");
  }
  return out;
}

}  // namespace pipelab
