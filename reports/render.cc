// Format names, extension mapping and dispatch: one table of names and one of extensions, each
// read in both directions.
#include "pipelab/reports/render.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "pipelab/base/error.h"

namespace pipelab::reports {
namespace {

struct FormatName {
  std::string_view name;
  Format format;
};
// The first name of each format is its canonical one; later ones are aliases.
constexpr std::array<FormatName, 6> kFormatNames{{
    {"html", Format::Html},
    {"md", Format::Markdown},
    {"markdown", Format::Markdown},
    {"csv", Format::SummaryCsv},
    {"timeline-csv", Format::TimelineCsv},
    {"trace", Format::Trace},
}};

// The first extension of each format is the one error messages suggest.
constexpr std::array<FormatName, 7> kExtensions{{
    {".html", Format::Html},
    {".htm", Format::Html},
    {".md", Format::Markdown},
    {".markdown", Format::Markdown},
    {".csv", Format::SummaryCsv},
    {".timeline.csv", Format::TimelineCsv},
    {".json", Format::Trace},
}};

constexpr std::array<Format, 5> kFormats{Format::Html, Format::Markdown, Format::SummaryCsv, Format::TimelineCsv,
                                         Format::Trace};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

template <std::size_t N>
std::string_view first_of(const std::array<FormatName, N>& table, Format f) {
  for (const FormatName& e : table) {
    if (e.format == f) return e.name;
  }
  return "?";
}

// "a, b, c" (or "a, b or c" with `last` " or "), "a|b|c" with `separator` "|".
std::string canonical_list(const auto& table, std::string_view separator, std::string_view last) {
  std::string out;
  for (std::size_t i = 0; i < kFormats.size(); ++i) {
    if (i > 0) out += i + 1 == kFormats.size() ? last : separator;
    out += first_of(table, kFormats[i]);
  }
  return out;
}

}  // namespace

std::string_view format_name(Format f) { return first_of(kFormatNames, f); }

std::vector<std::string> format_names() {
  std::vector<std::string> out;
  for (const FormatName& e : kFormatNames) out.emplace_back(e.name);
  return out;
}

Format format_from_name(std::string_view name) {
  const std::string n = lower(name);
  for (const FormatName& e : kFormatNames) {
    if (e.name == n) return e.format;
  }
  throw InputError("unknown report format '" + std::string(name) +
                   "'; valid formats: " + canonical_list(kFormatNames, ", ", ", "));
}

Format format_from_path(std::string_view path) {
  // The longest matching extension wins: "x.timeline.csv" is a timeline, not a summary.
  const std::string p = lower(path);
  const FormatName* match = nullptr;
  for (const FormatName& e : kExtensions) {
    if (ends_with(p, e.name) && (!match || e.name.size() > match->name.size())) match = &e;
  }
  if (match) return match->format;
  throw InputError("cannot tell the report format from '" + std::string(path) + "' (use " +
                   canonical_list(kExtensions, ", ", " or ") + ", or --format " +
                   canonical_list(kFormatNames, "|", "|") + ")");
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
