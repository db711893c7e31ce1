// Renderers of loaded results: HTML (self-contained, SVG timelines), Markdown, CSV (summary and
// per-action), Chrome/Perfetto trace JSON. They only convert units; every number comes from the
// result files. Output is deterministic: the same inputs give byte-identical text.
#pragma once

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/reports/result.h"

namespace pipelab::reports {

enum class Format {
  Html,         // report.html: one self-contained page
  Markdown,     // report.md: tables and small text timelines, for a PR
  SummaryCsv,   // report.csv: one row per (result file, schedule, timeline) with every summary metric
  TimelineCsv,  // one row per timeline event
  Trace,        // trace.json: Chrome trace event format (Perfetto, chrome://tracing)
};

/// "html", "md", "csv", "timeline-csv", "trace".
std::string_view format_name(Format f);

/// Accepts the names above and "markdown". Throws InputError listing the valid names.
Format format_from_name(std::string_view name);

/// Every name format_from_name accepts, canonical names and aliases (for a flag's check).
std::vector<std::string> format_names();

/// From the extension, case-insensitive: .html/.htm, .md/.markdown, .timeline.csv (before .csv),
/// .csv, .json (a trace). Throws InputError for anything else, suggesting --format.
Format format_from_path(std::string_view path);

/// A full HTML page: configuration, comparison table, failures, throughput chart, and per schedule
/// a Gantt timeline (measured under predicted for runs), a per-rank table and a memory chart.
std::string render_html(const std::vector<ReportInput>& inputs);

/// Markdown: configuration and comparison tables (header, units row, footer verdict), failures,
/// predicted-vs-measured table for runs, and a text timeline per schedule when PP <= 8.
std::string render_markdown(const std::vector<ReportInput>& inputs);

/// CSV with a units-free header, one row per (input, schedule, timeline); failed schedules get a
/// row with status "error" and the error text.
std::string render_summary_csv(const std::vector<ReportInput>& inputs);

/// CSV of every timeline event: input, schedule, source, rank, action, stream, start_ns, end_ns,
/// bytes, flops.
std::string render_timeline_csv(const std::vector<ReportInput>& inputs);

/// Chrome trace JSON `{"traceEvents": [...], "displayTimeUnit": "ns"}`. Each timeline gets a block
/// of process ids: pid = block * stride + rank (stride 1000, or the next multiple of 1000 above the
/// largest rank count); tid = the stream: 0 compute, 1 send, 2 recv, 3 collective (DP gradient
/// reduction).
std::string render_chrome_trace(const std::vector<ReportInput>& inputs);
/// The same trace written to `os` as it is made (a large timeline's trace is not held in memory).
void write_chrome_trace(std::ostream& os, const std::vector<ReportInput>& inputs);

/// The terminal summary of `simulate` and `compare`, nccl-tests style: a header and a units row, a
/// line per timeline (a failed schedule's error where it was asked for), then the best fitting
/// schedule by tokens/s/GPU as the reports mark it (none when fewer than two fit) and the memory
/// verdict.
std::string render_summary_text(const std::vector<ReportInput>& inputs);

/// Dispatches on the format.
std::string render(const std::vector<ReportInput>& inputs, Format format);

/// The fidelity thresholds (kFidelityThresholds in pipelab/schedules/metrics.h) as report text,
/// the clauses joined by `separator`: "|makespan error| <= 5%" + separator +
/// "|bubble predicted - measured| <= 0.02". Every renderer and `pipelab run` print this.
std::string fidelity_thresholds_text(std::string_view separator = " and ");

}  // namespace pipelab::reports
