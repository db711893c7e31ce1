// Timeline views of the renderers: box labels, op classes, chunks, the text grid.
#include "timeline_view.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "pipelab/schedules/text_grid.h"

namespace pipelab::reports::detail {

std::string box_label(const Action& a) {
  if (a.op == Op::OverlapFB) return std::to_string(a.mb) + "/" + std::to_string(a.b_mb);
  return std::to_string(a.mb);
}

std::string op_class(Op op) {
  if (op == Op::OverlapFB) return "FB";
  return std::string(op_name(op));
}

std::vector<std::vector<int>> chunk_of_events(const Timeline& t) {
  std::vector<std::vector<int>> out(t.ranks.size());
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    std::vector<int> stages;
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Compute) stages.push_back(e.action.stage);
    }
    std::sort(stages.begin(), stages.end());
    stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
    out[r].reserve(t.ranks[r].size());
    for (const TimelineEvent& e : t.ranks[r]) {
      const auto it = std::lower_bound(stages.begin(), stages.end(), e.action.stage);
      out[r].push_back(it != stages.end() && *it == e.action.stage ? static_cast<int>(it - stages.begin()) : 0);
    }
  }
  return out;
}

std::vector<std::vector<std::string>> timeline_text_grid(const Timeline& t) {
  struct Ev {
    std::int64_t start, end;
    std::size_t rank;
    const TimelineEvent* e;
    int column = -1;
  };
  std::vector<Ev> evs;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Compute) evs.push_back({e.start_ns, e.end_ns, r, &e});
    }
  }
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
    return std::tie(a.start, a.end, a.rank) < std::tie(b.start, b.end, b.rank);
  });
  std::vector<std::size_t> by_end(evs.size());
  for (std::size_t i = 0; i < evs.size(); ++i) by_end[i] = i;
  std::stable_sort(by_end.begin(), by_end.end(), [&](std::size_t a, std::size_t b) { return evs[a].end < evs[b].end; });
  std::vector<int> next_column(t.ranks.size(), 0);
  std::size_t ended = 0;
  int ended_max = -1;  // largest column among events that ended at or before the current start
  int width = 0;
  for (Ev& ev : evs) {
    while (ended < by_end.size() && evs[by_end[ended]].end <= ev.start && evs[by_end[ended]].column >= 0) {
      ended_max = std::max(ended_max, evs[by_end[ended]].column);
      ++ended;
    }
    ev.column = std::max(next_column[ev.rank], ended_max + 1);
    next_column[ev.rank] = ev.column + 1;
    width = std::max(width, ev.column + 1);
  }
  std::vector<std::vector<std::string>> grid(t.ranks.size(), std::vector<std::string>(static_cast<std::size_t>(width), "."));
  for (const Ev& ev : evs) grid[ev.rank][static_cast<std::size_t>(ev.column)] = compact_label(ev.e->action);
  return grid;
}

}  // namespace pipelab::reports::detail
