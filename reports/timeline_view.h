// How the renderers draw a timeline: box labels and CSS classes of actions, the chunk (which of its
// rank's stages) of each event, and the lock-step-like text grid of the Markdown report.
#pragma once

#include <string>
#include <vector>

#include "pipelab/schedules/timeline.h"

namespace pipelab::reports::detail {

/// Short label of an action for boxes: the microbatch ("3"), or "3/1" for an F&B unit.
std::string box_label(const Action& a);
/// CSS class suffix of an op: "F", "B", "I", "W", "FB", "SEND_F", ...
std::string op_class(Op op);
/// The index of each event's stage among the stages its rank computes ("chunk"), per rank.
std::vector<std::vector<int>> chunk_of_events(const Timeline& t);

/// A lock-step-like grid from a timeline's compute events: each event takes the column after every
/// compute event (any rank) that ended before it started, and after its rank's previous event.
/// Cells are compact IR labels, "." where a rank computes nothing in a column.
std::vector<std::vector<std::string>> timeline_text_grid(const Timeline& t);

}  // namespace pipelab::reports::detail
