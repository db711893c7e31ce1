// HTML report: one self-contained page (inline CSS, inline SVG, a little vanilla JS for hover
// tooltips; nothing is fetched). Element classes and data attributes are stable: tests and users'
// scripts find `svg.timeline[data-schedule]`, `g.rank[data-rank]`, `rect.action[data-action]`.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "common.h"
#include "pipelab/reports/render.h"

namespace pipelab::reports {
namespace {

using namespace detail;

// --- geometry --------------------------------------------------------------------------------
constexpr double kSvgWidth = 1200;
constexpr double kLeft = 96;        // rank labels
constexpr double kRight = 18;
constexpr double kPlotWidth = kSvgWidth - kLeft - kRight;
constexpr double kComputeH = 20;    // compute lane
constexpr double kCommGap = 2;
constexpr double kCommH = 12;       // comm lane: send, recv, collective sub-lanes (4 each)
constexpr double kSubLaneH = kCommH / 3;
constexpr double kRowPitch = kComputeH + kCommGap + kCommH + 8;
constexpr double kBlockLabelH = 20;
constexpr double kAxisH = 40;

// Large timelines: beyond this many boxes on a rank (or in all), draw the first and last
// kHeadTail compute actions per rank in full and summarise the middle as a band.
constexpr std::size_t kAggregateBoxesPerRank = 3000;
constexpr std::size_t kAggregateBoxesTotal = 40000;
constexpr std::size_t kHeadTail = 64;

const char* const kRankColours[] = {"#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2",
                                    "#B279A2", "#9D755D", "#EECA3B", "#FF9DA6", "#79706E"};

// Coordinates with one decimal, trailing ".0" dropped.
std::string px(double v) {
  std::string s = fixed(v, 1);
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  return s;
}

std::string attr(std::string_view s) { return html_escape(s); }

// Time -> x: linear, or broken into head | band | tail for aggregated timelines.
struct TimeAxis {
  double end_ns = 0;            // right edge
  bool broken = false;
  double head_ns = 0, tail_ns = 0;  // broken: [0, head] and [tail, end] drawn; (head, tail) banded
  static constexpr double kHeadFrac = 0.44, kBandFrac = 0.12;

  double x(double t) const {
    if (end_ns <= 0) return kLeft;
    if (!broken) return kLeft + kPlotWidth * std::clamp(t / end_ns, 0.0, 1.0);
    const double head_w = kPlotWidth * kHeadFrac, band_w = kPlotWidth * kBandFrac;
    const double tail_w = kPlotWidth - head_w - band_w;
    if (t <= head_ns) return kLeft + (head_ns > 0 ? head_w * t / head_ns : 0);
    if (t <= tail_ns) return kLeft + head_w + band_w * (t - head_ns) / (tail_ns - head_ns);
    return kLeft + head_w + band_w + tail_w * std::min(1.0, (t - tail_ns) / std::max(1.0, end_ns - tail_ns));
  }
  bool drawn(const TimelineEvent& e) const { return !broken || e.start_ns < head_ns || e.end_ns > tail_ns; }
};

// Ticks over [lo_ns, hi_ns] in `unit`, labelled with the decimals their step needs.
std::vector<std::pair<double, std::string>> time_ticks(double lo_ns, double hi_ns, const TimeUnit& unit, int target) {
  const std::vector<double> v = nice_ticks(lo_ns / unit.ns, hi_ns / unit.ns, target);
  int decimals = 0;
  if (v.size() >= 2) decimals = std::max(0, -static_cast<int>(std::floor(std::log10(v[1] - v[0]) + 1e-9)));
  std::vector<std::pair<double, std::string>> out;
  for (double x : v) out.emplace_back(x * unit.ns, fixed(x, decimals));
  return out;
}

// --- page pieces -----------------------------------------------------------------------------

const char* kStyle = R"css(
:root{--c-F:#4C78A8;--c-B:#E45756;--c-I:#F58518;--c-W:#54A24B;--c-FB:#B279A2;--c-send:#2A9D8F;--c-recv:#9D755D;--c-coll:#3D4B5C;
--lane:#ECEEF2;--ink:#1d2433;--muted:#5f6b7a;--line:#d5d9e0;--best:#d9f2dc;--bad:#c62828}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:var(--ink);
margin:0;background:#f7f8fa}
main{max-width:1260px;margin:0 auto;padding:20px 24px 60px}
h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:28px 0 10px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:16px;margin:22px 0 6px}
.sub,.note,.stats{color:var(--muted)}.note{font-size:12.5px;margin:6px 0}
.card{background:#fff;border:1px solid var(--line);border-radius:6px;padding:12px 14px;margin:10px 0;overflow-x:auto}
table{border-collapse:collapse;font-size:13px}
th,td{padding:4px 10px;border-bottom:1px solid var(--line);text-align:left;white-space:nowrap}
thead th{background:#eef1f5;font-weight:600}
tr.units th{font-weight:400;color:var(--muted);font-size:12px;background:#f5f7fa}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
td.best{background:var(--best);font-weight:700}
.oom-badge{display:inline-block;margin-left:6px;padding:0 5px;border-radius:3px;background:var(--bad);color:#fff;
font-size:11px;font-weight:700}
tr.oom td.label{color:var(--bad)}
td.oom{color:var(--bad);font-weight:700}
tfoot td{border-bottom:none;font-size:12.5px;padding-top:6px}
.verdict.ok b{color:#1b7f32}.verdict.failed b{color:var(--bad)}
table.config td:first-child{color:var(--muted)}table.config td{white-space:normal}
ul.failures li{margin:4px 0}ul.failures code{font-weight:700}.error-text{color:var(--bad)}
.legend{display:flex;flex-wrap:wrap;gap:6px 16px;font-size:12.5px;margin:6px 0 2px}
.legend span{display:inline-flex;align-items:center;gap:5px}
.sw{display:inline-block;width:18px;height:12px;border-radius:2px}
.sw.op-F{background:var(--c-F)}.sw.op-B{background:var(--c-B)}.sw.op-I{background:var(--c-I)}.sw.op-W{background:var(--c-W)}
.sw.op-FB{background:var(--c-FB)}.sw.send{background:var(--c-send);height:5px}.sw.recv{background:var(--c-recv);height:5px}
.sw.coll{background:var(--c-coll);height:5px}
.sw.idle{background:var(--lane);border:1px solid var(--line)}.sw.chunk{background:var(--c-F);opacity:.55}
.sw.band{background:repeating-linear-gradient(45deg,#c9ced6 0 3px,#eceef2 3px 6px)}
svg{max-width:100%;height:auto;display:block}
svg text{font-family:inherit;fill:var(--ink)}
rect.lane{fill:var(--lane)}rect.comm-lane{fill:#f3f4f7}
rect.action{stroke:#fff;stroke-width:.5}
rect.action:hover{stroke:#000;stroke-width:1.2}
rect.op-F{fill:var(--c-F)}rect.op-B{fill:var(--c-B)}rect.op-I{fill:var(--c-I)}rect.op-W{fill:var(--c-W)}rect.op-FB{fill:var(--c-FB)}
rect.stream-send{fill:var(--c-send);stroke:none}rect.stream-recv{fill:var(--c-recv);stroke:none}
rect.stream-collective{fill:var(--c-coll);stroke:none}
rect.op-SEND_B,rect.op-RECV_B{fill-opacity:.6}
rect.chunk-1{fill-opacity:.62}rect.chunk-2{fill-opacity:.45}rect.chunk-3{fill-opacity:.35}
text.mb{font-size:10px;fill:#fff;text-anchor:middle;pointer-events:none;font-variant-numeric:tabular-nums}
text.rank-label{font-size:12px;text-anchor:end}
text.block-label{font-size:12px;font-weight:700;fill:var(--muted)}
rect.band{fill:url(#pl-hatch);stroke:#b5bcc7;stroke-width:.5}
text.band-label{font-size:10.5px;text-anchor:middle;fill:#39424e;pointer-events:none}
line.grid{stroke:#cfd4dc;stroke-width:.6;stroke-dasharray:2 3}
line.axis{stroke:#8a94a3;stroke-width:1}
text.tick{font-size:11px;text-anchor:middle;fill:var(--muted)}
text.axis-label{font-size:11.5px;fill:var(--muted)}
path.break{stroke:#8a94a3;fill:none;stroke-width:1.2}
text.empty{font-size:13px;fill:var(--muted)}
polyline.mem-line{fill:none;stroke-width:1.6}
line.capacity,line.capacity-key{stroke:var(--bad);stroke-width:1.4;stroke-dasharray:6 4}
text.capacity-label{font-size:11px;fill:var(--bad)}
rect.bar{fill:var(--c-F)}rect.bar.oom{fill:var(--bad)}
text.bar-label{font-size:12.5px;text-anchor:end}text.bar-value{font-size:12px;fill:var(--muted)}
details.ranks summary{cursor:pointer;color:var(--muted);margin:6px 0}
#tip{position:fixed;pointer-events:none;background:#1d2433;color:#fff;font-size:12px;padding:6px 8px;border-radius:4px;
white-space:pre;z-index:10;box-shadow:0 2px 8px rgba(0,0,0,.25)}
)css";

const char* kScript = R"js(
(function () {
  var tip = document.getElementById('tip');
  function t(ns) {
    ns = +ns; var a = Math.abs(ns);
    if (a >= 1e9) return (ns / 1e9).toFixed(3) + ' s';
    if (a >= 1e6) return (ns / 1e6).toFixed(3) + ' ms';
    if (a >= 1e3) return (ns / 1e3).toFixed(3) + ' \u00b5s';
    return ns + ' ns';
  }
  function text(el) {
    if (el.getAttribute('data-tip')) return el.getAttribute('data-tip');
    var a = el.getAttribute('data-action');
    if (!a) return null;
    var g = el.closest('g.rank'), s = a;
    if (g) s += '   rank ' + g.getAttribute('data-rank') + (g.getAttribute('data-source') ? ' (' + g.getAttribute('data-source') + ')' : '');
    s += '\nstart     ' + t(el.getAttribute('data-start')) + '\nduration  ' + t(el.getAttribute('data-dur'));
    var f = el.getAttribute('data-flops'), b = el.getAttribute('data-bytes');
    if (f) s += '\nflops     ' + (+f / 1e9).toFixed(2) + ' GFLOP';
    if (b) s += '\nbytes     ' + (+b / 1048576).toFixed(2) + ' MiB';
    return s;
  }
  document.addEventListener('mouseover', function (e) {
    var el = e.target.closest ? e.target.closest('[data-action],[data-tip]') : null;
    var s = el ? text(el) : null;
    if (!s) { tip.hidden = true; return; }
    tip.textContent = s; tip.hidden = false;
  });
  document.addEventListener('mousemove', function (e) {
    if (tip.hidden) return;
    var x = e.clientX + 14, y = e.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 4) x = e.clientX - tip.offsetWidth - 10;
    if (y + tip.offsetHeight > window.innerHeight - 4) y = e.clientY - tip.offsetHeight - 10;
    tip.style.left = x + 'px'; tip.style.top = y + 'px';
  });
  document.body.setAttribute('data-script', 'ready');  // lets tests see that the script ran
})();
)js";

// A footer line; a verdict ends in its OK/FAILED word, bold.
std::string verdict_html(const Verdict& v) {
  const std::string text = html_escape(v.text);
  return v.judged ? text + ": <b>" + verdict_word(v) + "</b>" : text;
}

void config_section(std::ostringstream& os, const std::vector<ReportInput>& inputs) {
  const std::vector<ConfigRow> rows = config_rows(inputs);
  if (rows.empty()) return;
  os << "<section id=\"config\"><h2>Configuration</h2><div class=\"card\"><table class=\"config\">";
  if (inputs.size() > 1) {
    os << "<thead><tr><th></th>";
    for (const ReportInput& in : inputs) os << "<th>" << html_escape(in.name) << "</th>";
    os << "</tr></thead>";
  }
  os << "<tbody>";
  for (const ConfigRow& r : rows) {
    os << "<tr data-key=\"" << attr(r.label) << "\"><td>" << html_escape(r.label) << "</td>";
    for (const std::string& v : r.values) os << "<td>" << (v.empty() ? "&ndash;" : html_escape(v)) << "</td>";
    os << "</tr>";
  }
  os << "</tbody></table></div></section>\n";
}

void comparison_section(std::ostringstream& os, const ComparisonTable& t) {
  os << "<section id=\"comparison-section\"><h2>Comparison</h2><div class=\"card\">";
  const int ncols = kNumMetrics + (t.multi_input ? 2 : 1);
  os << "<table class=\"comparison\" id=\"comparison\"><thead><tr>";
  if (t.multi_input) os << "<th>result</th>";
  os << "<th>schedule</th>";
  for (const MetricColumn& c : metric_columns()) os << "<th class=\"num\">" << html_escape(c.header) << "</th>";
  os << "</tr><tr class=\"units\">";
  if (t.multi_input) os << "<th></th>";
  os << "<th></th>";
  for (const MetricColumn& c : metric_columns()) os << "<th class=\"num\">" << html_escape(c.unit) << "</th>";
  os << "</tr></thead><tbody>";
  if (t.rows.empty()) os << "<tr><td colspan=\"" << ncols << "\">No timelines to compare.</td></tr>";
  static const char* const kMetricKeys[kNumMetrics] = {"iteration-time", "bubble", "tflops", "mfu",
                                                       "tokens", "peak-memory", "exposed-comm"};
  for (const TableRow& r : t.rows) {
    os << "<tr class=\"result" << (r.oom ? " oom" : "") << "\" data-input=\"" << attr(r.input->name)
       << "\" data-schedule=\"" << attr(r.schedule->schedule) << "\" data-source=\"" << attr(r.run->source) << "\">";
    if (t.multi_input) os << "<td>" << html_escape(r.input->name) << "</td>";
    os << "<td class=\"label\">" << html_escape(r.label) << "</td>";
    for (int c = 0; c < kNumMetrics; ++c) {
      os << "<td class=\"num" << (r.best[c] ? " best" : "") << (c == kPeakMemory && r.oom ? " oom" : "")
         << "\" data-metric=\"" << kMetricKeys[c] << "\">" << r.text[c];
      if (c == kPeakMemory && r.oom) os << "<span class=\"oom-badge\">OOM</span>";
      os << "</td>";
    }
    os << "</tr>";
  }
  os << "</tbody><tfoot>";
  for (const Verdict& v : t.footer) {
    os << "<tr><td colspan=\"" << ncols << "\" class=\"verdict " << (v.ok ? "ok" : "failed") << "\">"
       << verdict_html(v) << "</td></tr>";
  }
  os << "</tfoot></table>";
  if (!t.rows.empty()) {
    os << "<p class=\"note\">Best value per column highlighted (lowest time, bubble, memory and exposed "
          "communication; highest throughput), among timelines of the same kind (simulated, predicted, measured) "
          "that fit in memory. Numbers are the result files' own; definitions in docs/metrics.md.</p>";
  }
  os << "</div></section>\n";

  if (!t.failed.empty()) {
    os << "<section id=\"failures\"><h2>Failed schedules</h2><div class=\"card\"><ul class=\"failures\">";
    for (std::size_t i = 0; i < t.failed.size(); ++i) {
      os << "<li class=\"failed\" data-input=\"" << attr(t.failed_input[i]->name) << "\" data-schedule=\""
         << attr(t.failed[i]->schedule) << "\">" << (t.multi_input ? html_escape(t.failed_input[i]->name) + " " : "")
         << "<code>" << html_escape(t.failed[i]->schedule) << "</code>: <span class=\"error-text\">"
         << html_escape(t.failed[i]->error) << "</span></li>";
    }
    os << "</ul></div></section>\n";
  }
}

void fidelity_section(std::ostringstream& os, const ComparisonTable& t) {
  const std::vector<FidelityRow>& fid = t.fidelity;
  const bool multi_input = t.multi_input;
  if (fid.empty()) return;
  os << "<section id=\"fidelity\"><h2>Predicted vs measured</h2><div class=\"card\"><table class=\"fidelity\"><thead><tr>";
  if (multi_input) os << "<th>result</th>";
  os << "<th>schedule</th><th class=\"num\">makespan error</th><th class=\"num\">bubble predicted</th>"
        "<th class=\"num\">bubble measured</th><th class=\"num\">action error p50</th>"
        "<th class=\"num\">action error p90</th><th>gradients</th><th>within thresholds</th></tr><tr class=\"units\">";
  if (multi_input) os << "<th></th>";
  os << "<th></th><th class=\"num\">(%)</th><th class=\"num\">(%)</th><th class=\"num\">(%)</th>"
        "<th class=\"num\">(%)</th><th class=\"num\">(%)</th><th></th><th></th></tr></thead><tbody>";
  for (const FidelityRow& f : fid) {
    os << "<tr data-schedule=\"" << attr(f.schedule) << "\">";
    if (multi_input) os << "<td>" << html_escape(f.input->name) << "</td>";
    os << "<td>" << html_escape(f.schedule) << "</td><td class=\"num\">" << f.makespan_error << "</td><td class=\"num\">"
       << f.bubble_predicted << "</td><td class=\"num\">" << f.bubble_measured << "</td><td class=\"num\">"
       << f.action_p50 << "</td><td class=\"num\">" << f.action_p90 << "</td><td>"
       << (f.gradients.empty() ? "&ndash;" : html_escape(f.gradients)) << "</td><td class=\"verdict "
       << (f.within ? "ok\"><b>OK</b>" : "failed\"><b>FAILED</b>") << "</td></tr>";
  }
  os << "</tbody></table><p class=\"note\">makespan error = predicted / measured &minus; 1 (from the result's "
        "<code>comparison</code>); thresholds: |makespan error| &le; 5%, |bubble predicted &minus; measured| &le; "
        "0.02.</p></div></section>\n";
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

void legend(std::ostringstream& os) {
  os << "<div class=\"legend\" id=\"legend\">"
        "<span><i class=\"sw op-F\"></i>F forward</span><span><i class=\"sw op-B\"></i>B backward</span>"
        "<span><i class=\"sw op-I\"></i>I input grad</span><span><i class=\"sw op-W\"></i>W weight grad</span>"
        "<span><i class=\"sw op-FB\"></i>F&amp;B overlapped</span><span><i class=\"sw send\"></i>send</span>"
        "<span><i class=\"sw recv\"></i>recv</span><span><i class=\"sw coll\"></i>DP gradient reduce</span><span><i class=\"sw idle\"></i>idle</span>"
        "<span><i class=\"sw chunk\"></i>lighter: rank's 2nd model chunk</span>"
        "<span><i class=\"sw band\"></i>summarised middle (large runs)</span></div>"
        "<p class=\"note\">Each rank: compute stream (tall lane, microbatch number in the box when it fits) over its "
        "communication lane (send, recv, then data-parallel gradient reduction). Gaps are idle time. Hover a box for the action, start and "
        "duration.</p>\n";
}

// The time axis of one schedule, shared by its timeline and its memory charts so that one time is
// one x in both: it ends at the latest timeline end, summary makespan or memory sample of any run,
// and is broken (head | band | tail) when the timelines are large enough to be aggregated.
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

// Tick positions (ns) and labels of an axis: ten over a linear axis, five each side of a break.
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

// The break marks of a broken axis drawn at height `ay`.
void axis_breaks(std::ostringstream& os, const TimeAxis& axis, double ay) {
  if (!axis.broken) return;
  for (double t : {axis.head_ns, axis.tail_ns}) {
    const double x = axis.x(t);
    os << "<path class=\"break\" d=\"M" << px(x - 4) << " " << px(ay + 5) << " l4 -10 l4 10\"/>";
  }
}

// One timeline SVG for a schedule: every run (predicted, measured) stacked on the schedule's axis.
void timeline_svg(std::ostringstream& os, const ReportInput& in, const ScheduleResult& s, const TimeAxis& axis) {
  std::size_t ranks = 0;
  for (const TimelineResult& run : s.runs) ranks = std::max(ranks, run.timeline.ranks.size());
  const bool several = s.runs.size() > 1;
  double height = 8;
  for (const TimelineResult& run : s.runs) {
    height += (several ? kBlockLabelH : 0) + kRowPitch * static_cast<double>(std::max<std::size_t>(1, run.timeline.ranks.size()));
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
  for (const TimelineResult& run : s.runs) {
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
    for (std::size_t r = 0; r < t.ranks.size(); ++r) {
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

void rank_table(std::ostringstream& os, const TimelineResult& run, bool several) {
  if (run.ranks.empty()) return;
  const std::int64_t cap = run.summary.memory_capacity_bytes;
  os << "<details class=\"ranks\"" << (run.ranks.size() <= 16 ? " open" : "") << "><summary>Per rank"
     << (several ? " (" + html_escape(run.source) + ")" : "") << "</summary><table class=\"ranks\" data-source=\""
     << attr(run.source) << "\"><thead><tr><th>rank</th><th class=\"num\">busy</th><th class=\"num\">idle</th>"
     << "<th class=\"num\">comm</th><th class=\"num\">exposed comm</th><th class=\"num\">static memory</th>"
     << "<th class=\"num\">peak activations</th><th class=\"num\">peak memory</th></tr><tr class=\"units\"><th></th>"
     << "<th class=\"num\">(ms)</th><th class=\"num\">(ms)</th><th class=\"num\">(ms)</th><th class=\"num\">(ms)</th>"
     << "<th class=\"num\">(GiB)</th><th class=\"num\">(GiB)</th><th class=\"num\">(GiB)</th></tr></thead><tbody>";
  double max_ms = 0;
  for (const RankRow& r : run.ranks) max_ms = std::max({max_ms, r.busy_ns / 1e6, r.idle_ns / 1e6, r.comm_ns / 1e6});
  const int d = decimals_for(max_ms);
  for (const RankRow& r : run.ranks) {
    const bool over = cap > 0 && r.peak_memory_bytes > cap;
    os << "<tr data-rank=\"" << r.rank << "\"><td>" << r.rank << "</td><td class=\"num\">" << fixed(r.busy_ns / 1e6, d)
       << "</td><td class=\"num\">" << fixed(r.idle_ns / 1e6, d) << "</td><td class=\"num\">" << fixed(r.comm_ns / 1e6, d)
       << "</td><td class=\"num\">" << fixed(r.exposed_comm_ns / 1e6, d) << "</td><td class=\"num\">"
       << fixed(r.static_memory_bytes / kGiB, 2) << "</td><td class=\"num\">" << fixed(r.peak_activation_bytes / kGiB, 2)
       << "</td><td class=\"num" << (over ? " oom" : "") << "\">" << fixed(r.peak_memory_bytes / kGiB, 2)
       << (over ? "<span class=\"oom-badge\">OOM</span>" : "") << "</td></tr>";
  }
  os << "</tbody></table></details>";
}

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

// Memory over time, one polyline per rank, against the capacity line, on the schedule's time axis
// (the same x for the same time as its timeline).
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

void schedule_section(std::ostringstream& os, const ComparisonTable& t, const ReportInput& in,
                      const ScheduleResult& s, std::size_t index) {
  os << "<section class=\"schedule\" id=\"schedule-" << index << "\" data-input=\"" << attr(in.name)
     << "\" data-schedule=\"" << attr(s.schedule) << "\"><h3>" << (t.multi_input ? html_escape(in.name) + ": " : "")
     << html_escape(s.schedule) << "</h3>";
  for (const TimelineResult& run : s.runs) {
    for (const TableRow& r : t.rows) {
      if (r.run != &run) continue;
      os << "<p class=\"stats\">" << (s.runs.size() > 1 ? "<b>" + html_escape(run.source) + "</b>: " : "")
         << "iteration " << r.text[kIterationTime] << " ms &middot; bubble " << r.text[kBubble] << "% &middot; "
         << r.text[kTflops] << " TFLOP/s/GPU &middot; MFU " << r.text[kMfu] << "% &middot; " << r.text[kTokens]
         << " tokens/s/GPU &middot; peak memory " << r.text[kPeakMemory] << " GiB"
         << (r.oom ? " <span class=\"oom-badge\">OOM</span>" : "") << " &middot; exposed comm "
         << r.text[kExposedComm] << " ms</p>";
    }
  }
  const TimeAxis axis = schedule_axis(s);  // once: the timeline and the memory charts share it
  os << "<div class=\"card\">";
  timeline_svg(os, in, s, axis);
  os << "</div>";
  for (const TimelineResult& run : s.runs) {
    if (run.memory.empty()) continue;
    os << "<div class=\"card\">";
    memory_svg(os, in, s, run, axis);
    os << "</div>";
  }
  for (const TimelineResult& run : s.runs) rank_table(os, run, s.runs.size() > 1);
  os << "</section>\n";
}

}  // namespace

std::string render_html(const std::vector<ReportInput>& inputs) {
  const ComparisonTable t = build_comparison(inputs);
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"pipelab report\">\n<title>pipelab report";
  std::string names;
  for (const ReportInput& in : inputs) names += (names.empty() ? "" : ", ") + in.name;
  if (!names.empty()) os << ": " << html_escape(names);
  os << "</title>\n<style>" << kStyle << "</style>\n</head>\n<body>\n"
     << "<svg width=\"0\" height=\"0\" style=\"position:absolute\" aria-hidden=\"true\"><defs>"
        "<pattern id=\"pl-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#eceef2\"/>"
        "<rect width=\"3\" height=\"6\" fill=\"#c9ced6\"/></pattern></defs></svg>\n<main>\n"
     << "<header><h1>pipelab report</h1><p class=\"sub\">";
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    os << (i ? " &middot; " : "") << "<span class=\"input\" data-input=\"" << attr(inputs[i].name) << "\" data-kind=\""
       << attr(inputs[i].kind) << "\"><b>" << html_escape(inputs[i].name) << "</b> (" << html_escape(inputs[i].kind)
       << ")</span>";
  }
  if (inputs.empty()) os << "no results";
  os << "</p></header>\n";
  config_section(os, inputs);
  comparison_section(os, t);
  fidelity_section(os, t);
  throughput_chart(os, t);
  os << "<section id=\"timelines\"><h2>Timelines</h2>";
  legend(os);
  std::size_t index = 0;
  for (const ReportInput& in : inputs) {
    for (const ScheduleResult& s : in.schedules) {
      if (!s.failed()) schedule_section(os, t, in, s, index);
      ++index;
    }
  }
  os << "</section>\n</main>\n<div id=\"tip\" hidden></div>\n<script>" << kScript << "</script>\n</body>\n</html>\n";
  return os.str();
}

}  // namespace pipelab::reports
