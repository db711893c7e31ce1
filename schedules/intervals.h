// Half-open time intervals [start, end) in ns, and the few set operations the timeline metrics
// need (metrics.cc, idle_parts.cc). Internal to schedules/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace pipelab::detail {

using Interval = std::pair<std::int64_t, std::int64_t>;

/// Sorts and merges overlapping intervals in place; empty ones are dropped.
inline void merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.second <= iv.first) continue;
    if (out > 0 && iv.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, iv.second);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

/// Total length of merged intervals.
inline std::int64_t total(const std::vector<Interval>& merged) {
  std::int64_t sum = 0;
  for (const Interval& iv : merged) sum += iv.second - iv.first;
  return sum;
}

/// Length of `a` not covered by `b`; both merged.
inline std::int64_t uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t sum = 0;
  std::size_t j = 0;
  for (const Interval& iv : a) {
    std::int64_t cursor = iv.first;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < iv.second; ++k) {
      if (b[k].first > cursor) sum += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
      if (cursor >= iv.second) break;
    }
    if (cursor < iv.second) sum += iv.second - cursor;
  }
  return sum;
}

/// Length of [from, to) covered by the merged intervals `v`.
inline std::int64_t covered_within(const std::vector<Interval>& v, std::int64_t from, std::int64_t to) {
  if (to <= from) return 0;
  return (to - from) - uncovered({{from, to}}, v);
}

}  // namespace pipelab::detail
