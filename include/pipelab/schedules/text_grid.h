// Plain-text rank x column grids for terminals and Markdown code blocks: the lock-step view of
// `pipelab show` and the position grid of validation reports.
#pragma once

#include <string>
#include <vector>

#include "pipelab/schedules/schedule.h"

namespace pipelab {

/// Fixed-width columns: a header row numbering columns [first, last), then one row per rank.
/// Missing cells print blank.
std::string render_text_grid(const std::string& header_label, const std::vector<std::vector<std::string>>& rows,
                             std::size_t first, std::size_t last);

/// Cell texts of slots: the IR text, "." for an idle slot. `compact` writes F&B units as
/// `0F7&7B3` instead of `(0F7;7B3)OVERLAP_F_B`.
std::vector<std::vector<std::string>> slot_texts(const std::vector<std::vector<Slot>>& slots, bool compact = false);

/// `0F7&7B3` for an F&B unit, the IR text otherwise.
std::string compact_label(const Action& a);

}  // namespace pipelab
