// HTML report: one self-contained page (inline CSS, inline SVG, a little vanilla JS for hover
// tooltips; nothing is fetched). This file writes the page and its tables; svg_charts.cc draws the
// charts. Element classes and data attributes are stable: tests and users' scripts find
// `svg.timeline[data-schedule]`, `g.rank[data-rank]`, `rect.action[data-action]`.
#include "html.h"

#include <algorithm>
#include <sstream>

#include "assets.h"
#include "config_view.h"
#include "format.h"
#include "pipelab/reports/render.h"
#include "svg_charts.h"
#include "table_model.h"

namespace pipelab::reports {
namespace detail {

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace detail

namespace {

using namespace detail;

// Plain-text formulas ("a - b <= 5%") with typographic minus and less-or-equal signs.
std::string math_html(std::string_view text) {
  std::string out = html_escape(text);
  for (auto [from, to] : {std::pair<std::string_view, std::string_view>{" - ", " &minus; "}, {"&lt;=", "&le;"}}) {
    for (std::size_t at = out.find(from); at != std::string::npos; at = out.find(from, at + to.size())) {
      out.replace(at, from.size(), to);
    }
  }
  return out;
}

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
  static const char* const kMetricKeys[kNumMetrics] = {"iteration-time", "bubble", "pipeline-bubble", "tflops", "mfu",
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
    for (const FailedSchedule& f : t.failed) {
      os << "<li class=\"failed\" data-input=\"" << attr(f.input->name) << "\" data-schedule=\""
         << attr(f.schedule->schedule) << "\">" << (t.multi_input ? html_escape(f.input->name) + " " : "")
         << "<code>" << html_escape(f.schedule->schedule) << "</code>: <span class=\"error-text\">"
         << html_escape(f.schedule->error) << "</span></li>";
    }
    os << "</ul></div></section>\n";
  }
}

void fidelity_section(std::ostringstream& os, const ComparisonTable& t) {
  if (t.fidelity.empty()) return;
  os << "<section id=\"fidelity\"><h2>Predicted vs measured</h2><div class=\"card\"><table class=\"fidelity\"><thead><tr>";
  if (t.multi_input) os << "<th>result</th>";
  for (const ColumnSpec& c : fidelity_columns()) os << (c.numeric ? "<th class=\"num\">" : "<th>") << c.header << "</th>";
  os << "</tr><tr class=\"units\">";
  if (t.multi_input) os << "<th></th>";
  for (const ColumnSpec& c : fidelity_columns()) os << (c.numeric ? "<th class=\"num\">" : "<th>") << c.unit << "</th>";
  os << "</tr></thead><tbody>";
  for (const FidelityRow& f : t.fidelity) {
    os << "<tr data-schedule=\"" << attr(f.schedule) << "\">";
    if (t.multi_input) os << "<td>" << html_escape(f.input->name) << "</td>";
    os << "<td>" << html_escape(f.schedule) << "</td>";
    for (const std::string* figure : {&f.makespan_error, &f.bubble_predicted, &f.bubble_measured, &f.action_p50, &f.action_p90}) {
      os << "<td class=\"num\">" << *figure << "</td>";
    }
    os << "<td>" << (f.gradients.empty() ? "&ndash;" : html_escape(f.gradients)) << "</td><td class=\"verdict "
       << (f.within ? "ok\"><b>OK</b>" : "failed\"><b>FAILED</b>") << "</td></tr>";
  }
  os << "</tbody></table><p class=\"note\">" << math_html(kMakespanErrorDefinition)
     << " (from the result's <code>comparison</code>); thresholds: " << math_html(fidelity_thresholds_text(", "))
     << ".</p></div></section>\n";
}

// `phases`: some timeline carries the cost model's phases (simulated MoE stages and F&B units).
void legend(std::ostringstream& os, bool phases) {
  os << "<div class=\"legend\" id=\"legend\">"
        "<span><i class=\"sw op-F\"></i>F forward</span><span><i class=\"sw op-B\"></i>B backward</span>"
        "<span><i class=\"sw op-I\"></i>I input grad</span><span><i class=\"sw op-W\"></i>W weight grad</span>"
        "<span><i class=\"sw op-FB\"></i>F&amp;B overlapped</span><span><i class=\"sw send\"></i>send</span>"
        "<span><i class=\"sw recv\"></i>recv</span><span><i class=\"sw coll\"></i>DP gradient reduce</span><span><i class=\"sw idle\"></i>idle</span>"
        "<span><i class=\"sw chunk\"></i>lighter: rank's 2nd model chunk</span>"
        "<span><i class=\"sw band\"></i>summarised middle (large runs)</span>"
     << (phases ? "<span><i class=\"sw phase\"></i>phase strip: MoE phases</span><span><i class=\"sw exposed\"></i>"
                  "exposed communication</span>" : "")
     << "</div>"
        "<p class=\"note\">Each rank: compute stream (tall lane, microbatch number in the box when it fits) over its "
        "communication lane (send, recv, then data-parallel gradient reduction). Gaps are idle time. Hover a box for the action, start and "
        "duration."
     << (phases ? " A strip along the bottom of an MoE action splits it into phases (attention &amp; dense, dispatch, experts, "
                  "combine; an F&amp;B unit's overlapped pairs), each the total over the stage's layers, with the communication "
                  "its compute does not hide in red; hover a phase for its figures (docs/simulator.md, \"Phases\")." : "")
     << "</p>\n";
}

// The result's phase_totals: each MoE phase's time per rank, its communication and what is exposed.
// A timeline of --iterations N holds all N: its per-rank totals say so.
std::string over_iterations(int iterations) {
  return iterations > 1 ? ", over all " + std::to_string(iterations) + " iterations of the timeline" : "";
}

void phase_table(std::ostringstream& os, const TimelineResult& run, int iterations) {
  if (run.phase_totals.empty()) return;
  os << "<details class=\"phases\" open><summary>MoE phases, " << html_escape(run.source)
     << " (time per rank, each summed over its stage's layers" << over_iterations(iterations) << ")</summary><div class=\"card\"><table class=\"phases\">"
        "<thead><tr><th>phase</th><th class=\"num\">time (ms)</th><th class=\"num\">communication (ms)</th>"
        "<th class=\"num\">exposed (ms)</th></tr></thead><tbody>";
  for (const Phase& p : run.phase_totals) {
    os << "<tr data-phase=\"" << attr(p.name) << "\"><td>" << html_escape(p.name) << "</td><td class=\"num\">" << milliseconds(p.ns)
       << "</td><td class=\"num\">" << milliseconds(p.comm_ns) << "</td><td class=\"num\">" << milliseconds(p.exposed_comm_ns) << "</td></tr>";
  }
  os << "</tbody></table></div></details>";
}

void rank_table(std::ostringstream& os, const TimelineResult& run, bool several, int iterations) {
  if (run.ranks.empty()) return;
  const std::int64_t cap = run.summary.memory_capacity_bytes;
  // Simulated results split static memory into its parts (the memory model's); others give the sum.
  const bool parts = std::all_of(run.ranks.begin(), run.ranks.end(), [](const RankRow& r) { return r.static_parts.has_value(); });
  const char* const static_headers = parts ? "<th class=\"num\">weights</th><th class=\"num\">main grads</th>"
                                             "<th class=\"num\">optimizer</th><th class=\"num\">FSDP buffers</th>"
                                           : "<th class=\"num\">static memory</th>";
  os << "<details class=\"ranks\"" << (run.ranks.size() <= 16 ? " open" : "") << "><summary>Per rank"
     << (several ? " (" + html_escape(run.source) + ")" : "") << over_iterations(iterations) << "</summary><table class=\"ranks\" data-source=\""
     << attr(run.source) << "\"><thead><tr><th>rank</th><th class=\"num\">busy</th><th class=\"num\">idle</th>"
     << "<th class=\"num\">comm</th><th class=\"num\">exposed comm</th>" << static_headers
     << "<th class=\"num\">peak activations</th><th class=\"num\">peak memory</th></tr><tr class=\"units\"><th></th>"
     << "<th class=\"num\">(ms)</th><th class=\"num\">(ms)</th><th class=\"num\">(ms)</th><th class=\"num\">(ms)</th>";
  for (int i = 0; i < (parts ? 4 : 1) + 2; ++i) os << "<th class=\"num\">(GiB)</th>";
  os << "</tr></thead><tbody>";
  double max_ms = 0;
  for (const RankRow& r : run.ranks) max_ms = std::max({max_ms, r.busy_ns / 1e6, r.idle_ns / 1e6, r.comm_ns / 1e6});
  const int d = decimals_for(max_ms);
  // Uniform costs model no memory: its cells say so ("-") rather than 0.00 GiB.
  const bool memory = states_memory(run);
  const auto gib = [memory](std::int64_t bytes) { return memory ? fixed(bytes / kGiB, 2) : std::string("-"); };
  for (const RankRow& r : run.ranks) {
    const bool over = cap > 0 && r.peak_memory_bytes > cap;
    os << "<tr data-rank=\"" << r.rank << "\"><td>" << r.rank << "</td><td class=\"num\">" << fixed(r.busy_ns / 1e6, d)
       << "</td><td class=\"num\">" << fixed(r.idle_ns / 1e6, d) << "</td><td class=\"num\">" << fixed(r.comm_ns / 1e6, d)
       << "</td><td class=\"num\">" << fixed(r.exposed_comm_ns / 1e6, d) << "</td>";
    if (parts) {
      for (const std::int64_t bytes : {r.static_parts->params_bytes, r.static_parts->grads_bytes, r.static_parts->optimizer_bytes,
                                       r.static_parts->comm_buffers_bytes}) {
        os << "<td class=\"num\">" << gib(bytes) << "</td>";
      }
    } else {
      os << "<td class=\"num\">" << gib(r.static_memory_bytes) << "</td>";
    }
    os << "<td class=\"num\">" << gib(r.peak_activation_bytes)
       << "</td><td class=\"num" << (over ? " oom" : "") << "\">" << gib(r.peak_memory_bytes)
       << (over ? "<span class=\"oom-badge\">OOM</span>" : "") << "</td></tr>";
  }
  os << "</tbody></table></details>";
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
         << "iteration " << r.text[kIterationTime] << " ms &middot; bubble " << r.text[kBubble] << "% (pipeline " << r.text[kPipelineBubble]
         << "%; zero-bubble paper's rate " << fixed(run.summary.span_bubble_rate * 100, 2) << "%) &middot; "
         << r.text[kTflops] << " TFLOP/s/GPU &middot; MFU " << r.text[kMfu] << "% &middot; " << r.text[kTokens]
         << " tokens/s/GPU &middot; peak memory " << r.text[kPeakMemory] << " GiB"
         << (r.oom ? " <span class=\"oom-badge\">OOM</span>" : "") << " &middot; exposed comm "
         << r.text[kExposedComm] << " ms</p>";
    }
  }
  if (!s.pipeline_layout.empty()) {
    os << "<p class=\"stats layout\">layout (Megatron --pipeline-model-parallel-layout): <code>" << html_escape(s.pipeline_layout)
       << "</code></p>";
  }
  if (!s.memory_advice.empty()) os << "<p class=\"stats advice error-text\">does not fit; " << html_escape(s.memory_advice) << "</p>";
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
  const int iterations = config_iterations(in.config);
  for (const TimelineResult& run : s.runs) phase_table(os, run, iterations);
  for (const TimelineResult& run : s.runs) rank_table(os, run, s.runs.size() > 1, iterations);
  os << "</section>\n";
}

}  // namespace

std::string render_html(const std::vector<ReportInput>& given) {
  const ComparisonTable t = build_comparison(given);
  const std::vector<ReportInput>& inputs = *t.inputs;  // the table's rows point into these
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta name=\"generator\" content=\"pipelab report\">\n<title>pipelab report";
  std::string names;
  for (const ReportInput& in : inputs) names += (names.empty() ? "" : ", ") + in.name;
  if (!names.empty()) os << ": " << html_escape(names);
  os << "</title>\n<style>\n" << report_css() << "</style>\n</head>\n<body>\n"
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
  bool phases = false;
  for_each_timeline(inputs, [&](const ReportInput&, const ScheduleResult&, const TimelineResult& run) { phases = phases || !run.phases.empty(); });
  legend(os, phases);
  std::size_t index = 0;
  for (const ReportInput& in : inputs) {
    for (const ScheduleResult& s : in.schedules) {
      if (!s.failed()) schedule_section(os, t, in, s, index);
      ++index;
    }
  }
  os << "</section>\n</main>\n<div id=\"tip\" hidden></div>\n<script>\n" << report_js() << "</script>\n</body>\n</html>\n";
  return os.str();
}

}  // namespace pipelab::reports
