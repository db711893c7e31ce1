// The HTML report's SVG charts (svg_charts.h).
#include "svg_charts.h"

#include <algorithm>
#include <cmath>

#include "html.h"
#include "timeline_view.h"

namespace pipelab::reports::detail {
namespace {

// Lanes of a timeline: per rank a compute lane over a communication lane.
constexpr double kComputeH = 20;    // compute lane
constexpr double kCommGap = 2;
constexpr double kCommH = 12;       // comm lane: send, recv, collective sub-lanes (4 each)
constexpr double kSubLaneH = kCommH / 3;
constexpr double kRowPitch = kComputeH + kCommGap + kCommH + 8;
constexpr double kBlockLabelH = 20;
constexpr double kAxisH = 40;
constexpr double kPhaseH = 5;       // phase strip along the bottom of a compute box

const char* const kRankColours[] = {"#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2",
                                    "#B279A2", "#9D755D", "#EECA3B", "#FF9DA6", "#79706E"};

// A rank's peak memory as the result states it: summary.peak_memory_bytes[rank], else the rank's
// row of `ranks`; -1 when the result states neither (the chart does not derive one from samples).
std::int64_t stated_peak_memory(const TimelineResult& run, int rank) {
  const std::vector<std::int64_t>& peaks = run.summary.peak_memory_bytes;
  if (rank >= 0 && static_cast<std::size_t>(rank) < peaks.size()) return peaks[static_cast<std::size_t>(rank)];
  for (const RankRow& r : run.ranks) {
    if (r.rank == rank) return r.peak_memory_bytes;
  }
  return -1;
}

// The rows of a timeline's lanes: one per rank with events, and one per run of consecutive ranks
// without any, so the drawing grows with the events, not with the highest rank number (a result
// with one event on rank 1,000,000 draws three rows, not a million).
struct LaneRow {
  std::size_t first_rank, last_rank;
  bool empty;
};
std::vector<LaneRow> lane_rows(const Timeline& t) {
  std::vector<LaneRow> rows;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    const bool empty = t.ranks[r].empty();
    if (empty && !rows.empty() && rows.back().empty) {
      rows.back().last_rank = r;
    } else {
      rows.push_back({r, r, empty});
    }
  }
  return rows;
}

// The phases of compute event `e` as a strip at height `y`: a box per phase, its exposed
// communication (at the phase's end) in a second, red box.
void phase_strip(std::ostringstream& os, const TimelineEvent& e, const ActionPhases& kind, const TimeAxis& axis, double y,
                 const std::string& action) {
  for (const PhaseSpan& p : lay_out_phases(e, kind)) {
    const double x0 = axis.x(static_cast<double>(p.start_ns)), x1 = axis.x(static_cast<double>(p.end_ns));
    if (x1 - x0 < 0.3) continue;
    // The tooltip is built by report.js from these, as an action's is.
    os << "<rect class=\"phase\" data-phase=\"" << attr(p.phase->name) << "\" data-of=\"" << attr(action) << "\" data-dur=\""
       << p.end_ns - p.start_ns << "\" data-comm=\"" << p.phase->comm_ns << "\" data-exposed=\"" << p.exposed_ns << "\" x=\""
       << px(x0) << "\" y=\"" << px(y) << "\" width=\"" << px(x1 - x0) << "\" height=\"" << px(kPhaseH) << "\"/>";
    if (p.exposed_ns <= 0) continue;
    const double xe = axis.x(static_cast<double>(p.end_ns - p.exposed_ns));
    os << "<rect class=\"phase-exposed\" x=\"" << px(xe) << "\" y=\"" << px(y) << "\" width=\"" << px(std::max(0.3, x1 - xe))
       << "\" height=\"" << px(kPhaseH) << "\"/>";
  }
}

}  // namespace

void timeline_svg(std::ostringstream& os, const ReportInput& in, const ScheduleResult& s, const TimeAxis& axis) {
  std::size_t ranks = 0;
  for (const TimelineResult& run : s.runs) ranks = std::max(ranks, run.timeline.ranks.size());
  const bool several = s.runs.size() > 1;
  double height = 8;
  std::vector<std::vector<LaneRow>> rows_of_runs;
  for (const TimelineResult& run : s.runs) {
    rows_of_runs.push_back(lane_rows(run.timeline));
    height += (several ? kBlockLabelH : 0) + kRowPitch * static_cast<double>(std::max<std::size_t>(1, rows_of_runs.back().size()));
  }
  const double rows_bottom = height;
  height += kAxisH;
  const TimeUnit unit = time_unit_for(axis.end_ns);

  os << "<svg class=\"timeline\" data-input=\"" << attr(in.name) << "\" data-schedule=\"" << attr(s.schedule)
     << "\" data-ranks=\"" << ranks << "\" data-aggregated=\"" << (axis.broken ? "true" : "false")
     << "\" data-end-ns=\"" << static_cast<std::int64_t>(axis.end_ns) << "\" width=\""
     << px(kSvgWidth) << "\" height=\"" << px(height) << "\" viewBox=\"0 0 " << px(kSvgWidth) << " " << px(height)
     << "\" role=\"img\" aria-label=\"timeline of " << attr(s.schedule) << "\">";

  // Ticks and grid.
  const std::vector<std::pair<double, std::string>> ticks = axis_ticks(axis, unit);  // (ns, label)
  os << "<g class=\"grid\">";
  for (const auto& [tk, label] : ticks) {
    os << "<line class=\"grid\" x1=\"" << px(axis.x(tk)) << "\" x2=\"" << px(axis.x(tk)) << "\" y1=\"4\" y2=\""
       << px(rows_bottom) << "\"/>";
  }
  os << "</g>";

  double y = 8;
  for (std::size_t k = 0; k < s.runs.size(); ++k) {
    const TimelineResult& run = s.runs[k];
    if (several) {
      os << "<text class=\"block-label\" x=\"4\" y=\"" << px(y + 14) << "\">" << html_escape(run.source) << "</text>";
      y += kBlockLabelH;
    }
    const Timeline& t = run.timeline;
    const auto chunks = chunk_of_events(t);
    os << "<g class=\"run\" data-source=\"" << attr(run.source) << "\">";
    if (t.ranks.empty()) {
      os << "<text class=\"empty\" x=\"" << px(kLeft + 8) << "\" y=\"" << px(y + 16) << "\">empty timeline (no events)</text>";
      y += kRowPitch;
    }
    for (const LaneRow& row : rows_of_runs[k]) {
      if (row.empty && row.first_rank != row.last_rank) {
        os << "<g class=\"rank empty\" data-ranks=\"" << row.first_rank << "-" << row.last_rank << "\"><text class=\"rank-label\" x=\""
           << px(kLeft - 8) << "\" y=\"" << px(y + 14) << "\">ranks " << row.first_rank << "\u2013" << row.last_rank
           << "</text><text class=\"empty\" x=\"" << px(kLeft + 8) << "\" y=\"" << px(y + 14) << "\">no events on these "
           << with_commas(static_cast<std::int64_t>(row.last_rank - row.first_rank + 1)) << " ranks</text></g>";
        y += kRowPitch;
        continue;
      }
      const std::size_t r = row.first_rank;
      os << "<g class=\"rank\" data-rank=\"" << r << "\" data-source=\"" << attr(run.source) << "\">";
      os << "<text class=\"rank-label\" x=\"" << px(kLeft - 8) << "\" y=\"" << px(y + 14) << "\">rank " << r << "</text>";
      os << "<rect class=\"lane\" x=\"" << px(kLeft) << "\" y=\"" << px(y) << "\" width=\"" << px(kPlotWidth)
         << "\" height=\"" << px(kComputeH) << "\"/>";
      os << "<rect class=\"lane comm-lane\" x=\"" << px(kLeft) << "\" y=\"" << px(y + kComputeH + kCommGap)
         << "\" width=\"" << px(kPlotWidth) << "\" height=\"" << px(kCommH) << "\"/>";
      if (axis.broken) {
        std::size_t hidden = 0;
        for (const TimelineEvent& e : t.ranks[r]) hidden += (!axis.drawn(e) && e.stream == Stream::Compute) ? 1 : 0;
        const double x0 = axis.x(axis.head_ns), x1 = axis.x(axis.tail_ns);
        os << "<rect class=\"band\" data-count=\"" << hidden << "\" x=\"" << px(x0) << "\" y=\"" << px(y)
           << "\" width=\"" << px(x1 - x0) << "\" height=\"" << px(kComputeH + kCommGap + kCommH)
           << "\" data-tip=\"" << with_commas(static_cast<std::int64_t>(hidden)) << " compute actions summarised between "
           << fixed(axis.head_ns / unit.ns, 3) << " and " << fixed(axis.tail_ns / unit.ns, 3) << " " << unit.name
           << "\"/><text class=\"band-label\" x=\"" << px((x0 + x1) / 2) << "\" y=\"" << px(y + 14) << "\">\u2026 "
           << with_commas(static_cast<std::int64_t>(hidden)) << " actions \u2026</text>";
      }
      for (std::size_t i = 0; i < t.ranks[r].size(); ++i) {
        const TimelineEvent& e = t.ranks[r][i];
        if (!axis.drawn(e)) continue;
        const double x0 = axis.x(static_cast<double>(e.start_ns));
        const double w = std::max(0.4, axis.x(static_cast<double>(e.end_ns)) - x0);
        double by = y, bh = kComputeH;
        std::string cls = "action op-" + op_class(e.action.op);
        if (e.stream == Stream::Compute) {
          cls += " chunk-" + std::to_string(std::min(chunks[r][i], 3));
        } else {
          const int sub = e.stream == Stream::Send ? 0 : e.stream == Stream::Recv ? 1 : 2;
          by = y + kComputeH + kCommGap + kSubLaneH * sub;
          bh = kSubLaneH;
          cls += " stream-" + std::string(stream_name(e.stream));
        }
        const std::string action = to_string(e.action);
        os << "<rect class=\"" << cls << "\" data-action=\"" << attr(action) << "\" data-start=\"" << e.start_ns
           << "\" data-dur=\"" << e.duration_ns() << "\"";
        if (e.flops > 0) os << " data-flops=\"" << json_number(e.flops) << "\"";
        if (e.bytes > 0) os << " data-bytes=\"" << e.bytes << "\"";
        os << " x=\"" << px(x0) << "\" y=\"" << px(by) << "\" width=\"" << px(w) << "\" height=\"" << px(bh) << "\"/>";
        if (const ActionPhases* kind = e.stream == Stream::Compute ? find_phases(run.phases, e.action) : nullptr) {
          phase_strip(os, e, *kind, axis, y + kComputeH - kPhaseH, action);
        }
        if (e.stream == Stream::Compute) {
          const std::string label = box_label(e.action);
          if (w >= 5.8 * static_cast<double>(label.size()) + 2) {
            os << "<text class=\"mb\" x=\"" << px(x0 + w / 2) << "\" y=\"" << px(y + 14) << "\">" << label << "</text>";
          }
        }
      }
      os << "</g>";
      y += kRowPitch;
    }
    os << "</g>";
  }

  // Axis.
  const double ay = rows_bottom + 2;
  os << "<g class=\"axis\" data-unit=\"" << unit.ascii << "\"><line class=\"axis\" x1=\"" << px(kLeft) << "\" x2=\""
     << px(kLeft + kPlotWidth) << "\" y1=\"" << px(ay) << "\" y2=\"" << px(ay) << "\"/>";
  for (const auto& [tk, label] : ticks) {
    const double x = axis.x(tk);
    os << "<line class=\"axis\" x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << px(ay) << "\" y2=\""
       << px(ay + 4) << "\"/><text class=\"tick\" x=\"" << px(x) << "\" y=\"" << px(ay + 16) << "\">" << label
       << "</text>";
  }
  axis_breaks(os, axis, ay);
  os << "<text class=\"axis-label\" x=\"" << px(kLeft) << "\" y=\"" << px(ay + 32) << "\">time (" << unit.name
     << ")" << (axis.broken ? ", broken axis: first and last " + std::to_string(kHeadTail) + " compute actions per rank drawn, the middle summarised" : std::string())
     << "</text></g></svg>";
}

void memory_svg(std::ostringstream& os, const ReportInput& in, const ScheduleResult& s, const TimelineResult& run,
                const TimeAxis& axis) {
  if (run.memory.empty()) return;
  constexpr double kTop = 26, kPlotH = 130, kBottom = 36;
  const double height = kTop + kPlotH + kBottom;
  const double cap = static_cast<double>(run.summary.memory_capacity_bytes);
  double max_b = cap;
  for (const MemorySeries& m : run.memory) {
    for (const auto& sample : m.samples) max_b = std::max(max_b, static_cast<double>(sample.second));
  }
  max_b = max_b > 0 ? max_b * 1.08 : 1;
  auto ys = [&](double b) { return kTop + kPlotH - kPlotH * std::clamp(b / max_b, 0.0, 1.0); };
  const TimeUnit unit = time_unit_for(axis.end_ns);
  os << "<svg class=\"memory\" data-input=\"" << attr(in.name) << "\" data-schedule=\"" << attr(s.schedule)
     << "\" data-source=\"" << attr(run.source) << "\" data-end-ns=\"" << static_cast<std::int64_t>(axis.end_ns)
     << "\" width=\"" << px(kSvgWidth) << "\" height=\"" << px(height) << "\" viewBox=\"0 0 " << px(kSvgWidth) << " "
     << px(height) << "\" role=\"img\" aria-label=\"memory over time\">";
  // Y axis (GiB).
  for (double v : nice_ticks(0, max_b / kGiB, 5)) {
    const double y = ys(v * kGiB);
    os << "<line class=\"grid\" x1=\"" << px(kLeft) << "\" x2=\"" << px(kLeft + kPlotWidth) << "\" y1=\"" << px(y)
       << "\" y2=\"" << px(y) << "\"/><text class=\"tick\" x=\"" << px(kLeft - 22) << "\" y=\"" << px(y + 4) << "\">"
       << fixed(v, decimals_for(max_b / kGiB, 2)) << "</text>";
  }
  os << "<text class=\"axis-label\" x=\"4\" y=\"14\">memory (GiB)</text>";
  // Legend.
  double lx = kLeft + 120;
  for (std::size_t i = 0; i < run.memory.size() && i < 16; ++i) {
    const char* colour = kRankColours[static_cast<std::size_t>(run.memory[i].rank) % 10];
    os << "<rect x=\"" << px(lx) << "\" y=\"6\" width=\"14\" height=\"3\" style=\"fill:" << colour
       << "\"/><text class=\"tick\" style=\"text-anchor:start\" x=\"" << px(lx + 18) << "\" y=\"12\">rank "
       << run.memory[i].rank << "</text>";
    lx += 70;
  }
  // Capacity: the line, and its label in the legend row (a label on the line would collide with the ranks').
  if (cap > 0) {
    const double y = ys(cap);
    os << "<line class=\"capacity\" x1=\"" << px(kLeft) << "\" x2=\"" << px(kLeft + kPlotWidth) << "\" y1=\"" << px(y)
       << "\" y2=\"" << px(y) << "\" data-tip=\"GPU memory capacity " << fixed(cap / kGiB, 2) << " GiB\"/>"
       << "<line class=\"capacity-key\" x1=\"" << px(lx) << "\" x2=\"" << px(lx + 22) << "\" y1=\"8\" y2=\"8\"/>"
       << "<text class=\"capacity-label\" x=\"" << px(lx + 27) << "\" y=\"12\">capacity " << fixed(cap / kGiB, 2)
       << " GiB</text>";
  }
  // Lines: a step function, decimated to about one vertical segment per pixel.
  for (const MemorySeries& m : run.memory) {
    const char* colour = kRankColours[static_cast<std::size_t>(m.rank) % 10];
    std::ostringstream pts;
    auto point = [&](double x, double b) { pts << px(x) << "," << px(ys(b)) << " "; };
    double level = m.samples.empty() ? 0 : static_cast<double>(m.samples.front().second);
    point(axis.x(m.samples.empty() ? 0 : static_cast<double>(m.samples.front().first)), level);
    long bucket = -1;
    double lo = 0, hi = 0, enter = 0;
    auto flush = [&]() {
      if (bucket < 0) return;
      const double x = kLeft + static_cast<double>(bucket) * 0.5;
      point(x, enter);
      if (lo != enter) point(x, lo);
      if (hi != lo) point(x, hi);
      point(x, level);
    };
    for (const auto& [t, b] : m.samples) {
      const double x = axis.x(static_cast<double>(t));
      const long bk = std::lround((x - kLeft) * 2);
      if (bk != bucket) {
        flush();
        bucket = bk;
        enter = lo = hi = level;
      }
      level = static_cast<double>(b);
      lo = std::min(lo, level);
      hi = std::max(hi, level);
    }
    flush();
    point(axis.x(axis.end_ns), level);
    const std::int64_t peak = stated_peak_memory(run, m.rank);
    os << "<polyline class=\"mem-line\" data-rank=\"" << m.rank << "\" style=\"stroke:" << colour << "\" data-tip=\"rank "
       << m.rank;
    if (peak >= 0) os << ": peak memory " << fixed(static_cast<double>(peak) / kGiB, 2) << " GiB";
    os << "\" points=\"" << pts.str() << "\"/>";
  }
  // X axis: the timeline's ticks.
  const double ay = kTop + kPlotH;
  os << "<line class=\"axis\" x1=\"" << px(kLeft) << "\" x2=\"" << px(kLeft + kPlotWidth) << "\" y1=\"" << px(ay)
     << "\" y2=\"" << px(ay) << "\"/>";
  for (const auto& [tk, label] : axis_ticks(axis, unit)) {
    os << "<text class=\"tick\" x=\"" << px(axis.x(tk)) << "\" y=\"" << px(ay + 15) << "\">" << label << "</text>";
  }
  axis_breaks(os, axis, ay);
  os << "<text class=\"axis-label\" x=\"" << px(kLeft) << "\" y=\"" << px(ay + 31) << "\">time (" << unit.name
     << ")</text></svg>";
}

void throughput_chart(std::ostringstream& os, const ComparisonTable& t) {
  if (t.rows.empty()) return;
  constexpr double kLabelW = 210, kRowH = 26, kTop = 8, kValueW = 440;
  const double bar_w = kSvgWidth - kLabelW - kValueW - 20;
  double max_v = 0;
  for (const TableRow& r : t.rows) max_v = std::max(max_v, r.value[kTflops]);
  const double h = kTop * 2 + kRowH * static_cast<double>(t.rows.size());
  os << "<section id=\"throughput-section\"><h2>Throughput</h2><div class=\"card\">"
     << "<svg class=\"bars\" id=\"throughput\" width=\"" << px(kSvgWidth) << "\" height=\"" << px(h) << "\" viewBox=\"0 0 "
     << px(kSvgWidth) << " " << px(h) << "\" role=\"img\" aria-label=\"model TFLOP/s per GPU per schedule\">";
  double y = kTop;
  for (const TableRow& r : t.rows) {
    const double w = max_v > 0 ? bar_w * std::max(0.0, r.value[kTflops]) / max_v : 0;
    const std::string label = (t.multi_input ? r.input->name + "  " : std::string()) + r.label;
    const std::string value = r.text[kTflops] + " TFLOP/s/GPU  \u00b7  MFU " + r.text[kMfu] + "%  \u00b7  " +
                              r.text[kTokens] + " tokens/s/GPU" + (r.oom ? "  \u00b7  OOM" : "");
    os << "<g class=\"bar-row\" data-input=\"" << attr(r.input->name) << "\" data-schedule=\""
       << attr(r.schedule->schedule) << "\" data-source=\"" << attr(r.run->source) << "\">"
       << "<text class=\"bar-label\" x=\"" << px(kLabelW - 10) << "\" y=\"" << px(y + kRowH / 2 + 4) << "\">"
       << html_escape(label) << "</text><rect class=\"bar" << (r.oom ? " oom" : "") << "\" x=\"" << px(kLabelW)
       << "\" y=\"" << px(y + 4) << "\" width=\"" << px(w) << "\" height=\"" << px(kRowH - 8) << "\" data-value=\""
       << r.text[kTflops] << "\" data-tip=\"" << attr(label + ": " + value) << "\"/><text class=\"bar-value\" x=\""
       << px(kLabelW + w + 8) << "\" y=\"" << px(y + kRowH / 2 + 4) << "\">" << html_escape(value) << "</text></g>";
    y += kRowH;
  }
  os << "</svg><p class=\"note\">Model TFLOP/s per GPU (Megatron FLOPs formula); red bars do not fit in GPU "
        "memory.</p></div></section>\n";
}

}  // namespace pipelab::reports::detail
