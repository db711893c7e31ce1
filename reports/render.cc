// Format names, extension mapping and dispatch.
#include "pipelab/reports/render.h"

#include <algorithm>
#include <cctype>

#include "pipelab/base/error.h"

namespace pipelab::reports {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string_view format_name(Format f) {
  switch (f) {
    case Format::Html: return "html";
    case Format::Markdown: return "md";
    case Format::SummaryCsv: return "csv";
    case Format::TimelineCsv: return "timeline-csv";
    case Format::Trace: return "trace";
  }
  return "?";
}

Format format_from_name(std::string_view name) {
  const std::string n = lower(name);
  if (n == "html") return Format::Html;
  if (n == "md" || n == "markdown") return Format::Markdown;
  if (n == "csv") return Format::SummaryCsv;
  if (n == "timeline-csv") return Format::TimelineCsv;
  if (n == "trace") return Format::Trace;
  throw InputError("unknown report format '" + std::string(name) + "'; valid formats: html, md, csv, timeline-csv, trace");
}

Format format_from_path(std::string_view path) {
  const std::string p = lower(path);
  if (ends_with(p, ".html") || ends_with(p, ".htm")) return Format::Html;
  if (ends_with(p, ".md") || ends_with(p, ".markdown")) return Format::Markdown;
  if (ends_with(p, ".timeline.csv")) return Format::TimelineCsv;
  if (ends_with(p, ".csv")) return Format::SummaryCsv;
  if (ends_with(p, ".json")) return Format::Trace;
  throw InputError("cannot tell the report format from '" + std::string(path) +
                   "' (use .html, .md, .csv, .timeline.csv or .json, or --format html|md|csv|timeline-csv|trace)");
}

std::string render(const std::vector<ReportInput>& inputs, Format format) {
  switch (format) {
    case Format::Html: return render_html(inputs);
    case Format::Markdown: return render_markdown(inputs);
    case Format::SummaryCsv: return render_summary_csv(inputs);
    case Format::TimelineCsv: return render_timeline_csv(inputs);
    case Format::Trace: return render_chrome_trace(inputs);
  }
  return {};
}

}  // namespace pipelab::reports
