// The HTML report's time axis (time_axis.h).
#include "time_axis.h"

#include <algorithm>
#include <cmath>

namespace pipelab::reports::detail {

std::string px(double v) {
  std::string s = fixed(v, 1);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

double TimeAxis::x(double t) const {
  if (end_ns <= 0) return kLeft;
  if (!broken) return kLeft + kPlotWidth * std::clamp(t / end_ns, 0.0, 1.0);
  const double head_w = kPlotWidth * kHeadFrac, band_w = kPlotWidth * kBandFrac;
  const double tail_w = kPlotWidth - head_w - band_w;
  if (t <= head_ns) return kLeft + (head_ns > 0 ? head_w * t / head_ns : 0);
  if (t <= tail_ns) return kLeft + head_w + band_w * (t - head_ns) / (tail_ns - head_ns);
  return kLeft + head_w + band_w + tail_w * std::min(1.0, (t - tail_ns) / std::max(1.0, end_ns - tail_ns));
}

namespace {

// Ticks over [lo_ns, hi_ns] in `unit`, labelled with the decimals their step needs.
std::vector<std::pair<double, std::string>> time_ticks(double lo_ns, double hi_ns, const TimeUnit& unit, int target) {
  const std::vector<double> v = nice_ticks(lo_ns / unit.ns, hi_ns / unit.ns, target);
  int decimals = 0;
  if (v.size() >= 2) decimals = std::max(0, -static_cast<int>(std::floor(std::log10(v[1] - v[0]) + 1e-9)));
  std::vector<std::pair<double, std::string>> out;
  for (double x : v) out.emplace_back(x * unit.ns, fixed(x, decimals));
  return out;
}

}  // namespace

TimeAxis schedule_axis(const ScheduleResult& s) {
  TimeAxis axis;
  std::size_t max_boxes = 0, total_boxes = 0;
  for (const TimelineResult& run : s.runs) {
    axis.end_ns = std::max({axis.end_ns, static_cast<double>(run.timeline.makespan_ns()),
                            static_cast<double>(run.summary.makespan_ns)});
    for (const MemorySeries& m : run.memory) {
      if (!m.samples.empty()) axis.end_ns = std::max(axis.end_ns, static_cast<double>(m.samples.back().first));
    }
    for (const auto& rank : run.timeline.ranks) {
      max_boxes = std::max(max_boxes, rank.size());
      total_boxes += rank.size();
    }
  }
  if (max_boxes > kAggregateBoxesPerRank || total_boxes > kAggregateBoxesTotal) {
    double head = axis.end_ns, tail = 0;
    for (const TimelineResult& run : s.runs) {
      for (const auto& rank : run.timeline.ranks) {
        std::vector<const TimelineEvent*> compute;
        for (const TimelineEvent& e : rank) if (e.stream == Stream::Compute) compute.push_back(&e);
        if (compute.size() <= 2 * kHeadTail) continue;
        std::sort(compute.begin(), compute.end(), [](auto* a, auto* b) { return a->start_ns < b->start_ns; });
        head = std::min(head, static_cast<double>(compute[kHeadTail]->start_ns));
        std::vector<std::int64_t> ends;
        for (auto* e : compute) ends.push_back(e->end_ns);
        std::sort(ends.begin(), ends.end());
        tail = std::max(tail, static_cast<double>(ends[ends.size() - kHeadTail - 1]));
      }
    }
    if (head < tail && head > 0) {
      axis.broken = true;
      axis.head_ns = head;
      axis.tail_ns = tail;
    }
  }
  return axis;
}

std::vector<std::pair<double, std::string>> axis_ticks(const TimeAxis& axis, const TimeUnit& unit) {
  std::vector<std::pair<double, std::string>> ticks;
  if (axis.end_ns <= 0) {
    ticks.emplace_back(0, "0");
  } else if (!axis.broken) {
    ticks = time_ticks(0, axis.end_ns, unit, 10);
  } else {
    ticks = time_ticks(0, axis.head_ns, unit, 5);
    for (auto& tk : time_ticks(axis.tail_ns, axis.end_ns, unit, 5)) ticks.push_back(std::move(tk));
  }
  return ticks;
}

void axis_breaks(std::ostringstream& os, const TimeAxis& axis, double ay) {
  if (!axis.broken) return;
  for (double t : {axis.head_ns, axis.tail_ns}) {
    const double x = axis.x(t);
    os << "<path class=\"break\" d=\"M" << px(x - 4) << " " << px(ay + 5) << " l4 -10 l4 10\"/>";
  }
}

}  // namespace pipelab::reports::detail
