// The time axis of the HTML report's SVG charts: one per schedule, shared by its timeline and
// memory charts so that one time is one x in both. Large timelines get a broken axis (head | band |
// tail) whose middle is summarised. Also the chart geometry the axis maps into.
#pragma once

#include <cstddef>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "format.h"
#include "pipelab/reports/result.h"

namespace pipelab::reports::detail {

// --- geometry of every chart -----------------------------------------------------------------
inline constexpr double kSvgWidth = 1200;
inline constexpr double kLeft = 96;  // rank labels
inline constexpr double kRight = 18;
inline constexpr double kPlotWidth = kSvgWidth - kLeft - kRight;

// Large timelines: beyond this many boxes on a rank (or in all), draw the first and last
// kHeadTail compute actions per rank in full and summarise the middle as a band.
inline constexpr std::size_t kAggregateBoxesPerRank = 3000;
inline constexpr std::size_t kAggregateBoxesTotal = 40000;
inline constexpr std::size_t kHeadTail = 64;

/// SVG coordinates with one decimal, trailing ".0" dropped.
std::string px(double v);

/// Time -> x: linear, or broken into head | band | tail for aggregated timelines.
struct TimeAxis {
  double end_ns = 0;                // right edge
  bool broken = false;
  double head_ns = 0, tail_ns = 0;  // broken: [0, head] and [tail, end] drawn; (head, tail) banded
  static constexpr double kHeadFrac = 0.44, kBandFrac = 0.12;

  double x(double t) const;
  /// Whether an event is drawn in full (not summarised in the band).
  bool drawn(const TimelineEvent& e) const { return !broken || e.start_ns < head_ns || e.end_ns > tail_ns; }
};

/// The axis of one schedule: it ends at the latest timeline end, summary makespan or memory sample
/// of any run, and is broken when the timelines are large enough to be aggregated.
TimeAxis schedule_axis(const ScheduleResult& s);

/// Tick positions (ns) and labels of an axis in `unit`: ten over a linear axis, five each side of a
/// break.
std::vector<std::pair<double, std::string>> axis_ticks(const TimeAxis& axis, const TimeUnit& unit);

/// The break marks of a broken axis drawn at height `ay`.
void axis_breaks(std::ostringstream& os, const TimeAxis& axis, double ay);

}  // namespace pipelab::reports::detail
