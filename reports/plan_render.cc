// Renderers of a plan result (plan_result.h): the terminal report and the HTML page. Every number
// comes from the PlanResult; nothing is recomputed.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "assets.h"
#include "csv.h"
#include "format.h"
#include "html.h"
#include "pipelab/reports/plan_result.h"
#include "svg_charts.h"
#include "time_axis.h"

namespace pipelab::reports {
namespace {

using namespace detail;

// The top table's columns: layout, then the compare columns plus memory.
struct Column {
  const char* header;
  const char* unit;
  int width;
};
constexpr Column kColumns[] = {{"#", "", 3},          {"schedule", "", 17},     {"tp", "", 3},         {"pp", "", 3},
                               {"vp", "", 3},         {"cp", "", 3},            {"ep", "", 4},         {"etp", "", 4},
                               {"dp", "", 5},         {"mbs", "", 4},           {"recompute", "", 10}, {"dp-shard", "", 9},
                               {"split", "", 8},      {"iteration", "(ms)", 10}, {"bubble", "(%)", 7}, {"TFLOP/s", "(/GPU)", 9},
                               {"MFU", "(%)", 6},     {"tokens/s", "(/GPU)", 9}, {"peak mem", "(GiB)", 9}, {"exp. comm", "(ms)", 10}};

std::vector<std::string> row_cells(std::size_t rank, const PlanEntry& e) {
  const PlanLayout& l = e.layout;
  const Summary& s = e.summary;
  return {std::to_string(rank),
          l.schedule,
          std::to_string(l.tp),
          std::to_string(l.pp),
          std::to_string(l.vp),
          std::to_string(l.cp),
          std::to_string(l.ep),
          std::to_string(l.etp),
          std::to_string(l.dp),
          std::to_string(l.mbs),
          l.recompute,
          l.fsdp == "none" ? "dist-opt" : "fsdp",
          l.embedding_loss_aware ? "aware" : "balanced",
          fixed(static_cast<double>(s.makespan_ns + s.optimizer_step_ns) / 1e6, 1),  // the iteration, its step included
          fixed(s.bubble_ratio * 100, 1),
          s.tflops_per_gpu ? fixed(*s.tflops_per_gpu, 1) : "-",
          s.mfu ? fixed(*s.mfu * 100, 1) : "-",
          fixed(s.tokens_per_s_per_gpu, 0),
          fixed(static_cast<double>(s.max_peak_memory_bytes()) / kGiB, 1),
          fixed(static_cast<double>(s.exposed_comm_ns) / 1e6, 2)};
}

std::string pad(const std::string& s, int width, bool left) {
  const int n = static_cast<int>(s.size());
  if (n >= width) return s;
  return left ? s + std::string(static_cast<std::size_t>(width - n), ' ') : std::string(static_cast<std::size_t>(width - n), ' ') + s;
}

std::string config_text(const PlanResult& r, std::string_view key) {
  if (!r.config.contains(key)) return "?";
  const nlohmann::json& v = r.config.at(std::string(key));
  if (v.is_object() && v.contains("name") && v.at("name").is_string()) return v.at("name").get<std::string>();  // a model or GPU spec
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string search_line(const PlanResult& r) {
  std::int64_t fits = 0;
  for (const PlanPointRow& p : r.points) fits += p.fits;
  std::ostringstream os;
  os << config_text(r, "model") << " on " << config_text(r, "gpus") << " x " << config_text(r, "gpu") << ", gbs "
     << config_text(r, "gbs") << ", seq " << config_text(r, "seq_length") << ", " << config_text(r, "precision") << ": "
     << with_commas(r.search.candidates) << " layouts, " << with_commas(r.evaluated) << " simulated, " << with_commas(fits)
     << " fit; " << fixed(r.search.seconds, 1) << " s on " << r.search.threads << " threads";
  if (!r.search.complete) {
    os << "; time budget reached after searching " << with_commas(r.search.searched) << " of " << with_commas(r.search.candidates)
       << " layouts: the best found so far";
  }
  return os.str();
}

// Exclusions, largest first (ties by rule text).
std::vector<std::pair<std::string, std::int64_t>> exclusions(const PlanResult& r) {
  std::vector<std::pair<std::string, std::int64_t>> out(r.excluded.begin(), r.excluded.end());
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

const char* const kScheduleColours[] = {"#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2",
                                        "#B279A2", "#9D755D", "#EECA3B", "#FF9DA6", "#79706E"};

void pareto_svg(std::ostringstream& os, const PlanResult& r) {
  std::map<std::string, std::size_t> colour;
  for (const PlanPointRow& p : r.points) colour.emplace(p.schedule, 0);
  std::size_t next = 0;
  for (auto& [name, index] : colour) index = next++ % std::size(kScheduleColours);
  constexpr double kW = 900, kH = 420, kLeft = 70, kBottom = 50, kTop = 16, kRight = 20;
  double max_x = 1, max_y = 1;
  for (const PlanPointRow& p : r.points) {
    max_x = std::max(max_x, static_cast<double>(p.peak_memory_bytes) / kGiB);
    max_y = std::max(max_y, p.tokens_per_s_per_gpu);
  }
  const double cap = r.top.empty() ? 0 : static_cast<double>(r.top.front().summary.memory_capacity_bytes) / kGiB;
  max_x = std::max(max_x, cap) * 1.05;
  max_y *= 1.05;
  auto x = [&](double gib) { return kLeft + (kW - kLeft - kRight) * gib / max_x; };
  auto y = [&](double tokens) { return kH - kBottom - (kH - kBottom - kTop) * tokens / max_y; };
  os << "<svg class=\"pareto\" id=\"pareto\" width=\"" << kW << "\" height=\"" << kH << "\" viewBox=\"0 0 " << kW << " " << kH
     << "\" role=\"img\" aria-label=\"tokens/s/GPU against peak memory, every evaluated layout\">";
  for (double t : nice_ticks(0, max_x, 8)) {
    os << "<line class=\"grid\" x1=\"" << fixed(x(t), 1) << "\" x2=\"" << fixed(x(t), 1) << "\" y1=\"" << kTop << "\" y2=\""
       << kH - kBottom << "\" stroke=\"#e3e6ea\"/><text x=\"" << fixed(x(t), 1) << "\" y=\"" << kH - kBottom + 16
       << "\" text-anchor=\"middle\" font-size=\"11\">" << short_number(t) << "</text>";
  }
  for (double t : nice_ticks(0, max_y, 6)) {
    os << "<line class=\"grid\" x1=\"" << kLeft << "\" x2=\"" << kW - kRight << "\" y1=\"" << fixed(y(t), 1) << "\" y2=\"" << fixed(y(t), 1)
       << "\" stroke=\"#e3e6ea\"/><text x=\"" << kLeft - 6 << "\" y=\"" << fixed(y(t) + 4, 1) << "\" text-anchor=\"end\" font-size=\"11\">"
       << short_number(t) << "</text>";
  }
  if (cap > 0) {
    os << "<line class=\"capacity\" x1=\"" << fixed(x(cap), 1) << "\" x2=\"" << fixed(x(cap), 1) << "\" y1=\"" << kTop << "\" y2=\""
       << kH - kBottom << "\" stroke=\"#c0392b\" stroke-dasharray=\"4 3\"/>";
  }
  os << "<text x=\"" << (kLeft + kW - kRight) / 2 << "\" y=\"" << kH - 12 << "\" text-anchor=\"middle\" font-size=\"12\">peak memory (GiB)</text>"
     << "<text transform=\"translate(16 " << (kTop + kH - kBottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\" font-size=\"12\">tokens/s/GPU</text>";
  for (const PlanPointRow& p : r.points) {
    os << "<circle class=\"point" << (p.fits ? "" : " oom") << "\" data-schedule=\"" << attr(p.schedule) << "\" cx=\""
       << fixed(x(static_cast<double>(p.peak_memory_bytes) / kGiB), 1) << "\" cy=\"" << fixed(y(p.tokens_per_s_per_gpu), 1) << "\" r=\"3\" fill=\""
       << kScheduleColours[colour[p.schedule]] << "\" fill-opacity=\"" << (p.fits ? "0.75" : "0.25") << "\"/>";
  }
  os << "</svg><div class=\"legend\">";
  for (const auto& [name, index] : colour) {
    os << "<span><i class=\"sw\" style=\"background:" << kScheduleColours[index] << "\"></i>" << html_escape(name) << "</span>";
  }
  os << "</div><p class=\"note\">Every simulated layout; faint points do not fit (right of the dashed line: the usable memory).</p>";
}

}  // namespace

std::string render_plan_markdown(const PlanResult& r) {
  std::ostringstream os;
  os << "# pipelab plan\n\n" << search_line(r) << "\n\n";
  if (r.top.empty()) {
    os << "No layout fits: see the exclusions below.\n\n";
  } else {
    std::string head = "|", rule = "|";
    for (const Column& c : kColumns) {
      head += " " + std::string(c.header) + (std::string_view(c.unit).empty() ? "" : " " + std::string(c.unit)) + " |";
      rule += "---|";
    }
    os << head << "\n" << rule << "\n";
    for (std::size_t i = 0; i < r.top.size(); ++i) {
      std::string line = "|";
      for (const std::string& cell : row_cells(i + 1, r.top[i])) line += " " + cell + " |";
      os << line << "\n";
    }
    os << "\n";
  }
  os << "## Excluded (each layout once, under the first rule it breaks)\n\n| layouts | rule |\n|---|---|\n";
  for (const auto& [rule, count] : exclusions(r)) os << "| " << with_commas(count) << " | " << rule << " |\n";
  if (!r.why.empty()) {
    os << "\n## Why #1 beats #2\n\n";
    for (const std::string& line : r.why) os << "- " << line << "\n";
  }
  if (!r.top.empty()) {
    os << "\n## Recipes for #1\n\nMegatron-LM:\n\n```\n" << r.recipes.megatron_lm << "```\n\nMegatron-Bridge:\n\n```\n"
       << r.recipes.megatron_bridge << "```\n\nNeMo AutoModel:\n\n```yaml\n" << r.recipes.automodel_yaml
       << "```\n\ntorchtitan:\n\n```toml\n" << r.recipes.torchtitan << "```\n";
  }
  return os.str();
}

std::string render_plan_csv(const PlanResult& r) {
  std::ostringstream os;
  for (std::size_t c = 0; c < std::size(kColumns); ++c) {
    const std::string unit = std::string_view(kColumns[c].unit).empty() ? "" : " " + std::string(kColumns[c].unit);
    os << (c ? "," : "") << csv_field(std::string(kColumns[c].header == std::string_view("#") ? "rank" : kColumns[c].header) + unit);
  }
  os << "\n";
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    const std::vector<std::string> cells = row_cells(i + 1, r.top[i]);
    for (std::size_t c = 0; c < cells.size(); ++c) os << (c ? "," : "") << csv_field(cells[c] == "-" ? "" : cells[c]);
    os << "\n";
  }
  return os.str();
}

std::string render_plan_text(const PlanResult& r) {
  std::ostringstream os;
  os << "# plan: " << search_line(r) << "\n";
  if (r.top.empty()) {
    os << "# no layout fits: see the exclusions below\n";
  } else {
    std::string head = "#", units = "#";
    for (const Column& c : kColumns) {
      const bool left = std::string_view(c.header) == "schedule" || std::string_view(c.header) == "recompute" ||
                        std::string_view(c.header) == "dp-shard" || std::string_view(c.header) == "split";
      head += " " + pad(c.header, c.width, left);
      units += " " + pad(c.unit, c.width, left);
    }
    os << head << "\n" << units << "\n";
    for (std::size_t i = 0; i < r.top.size(); ++i) {
      const std::vector<std::string> cells = row_cells(i + 1, r.top[i]);
      std::string line = " ";
      for (std::size_t c = 0; c < cells.size(); ++c) {
        const std::string_view h = kColumns[c].header;
        line += " " + pad(cells[c], kColumns[c].width, h == "schedule" || h == "recompute" || h == "dp-shard" || h == "split");
      }
      os << line << "\n";
    }
  }
  os << "# excluded (each layout once, under the first rule it breaks):\n";
  if (r.excluded.empty()) os << "#   none\n";
  for (const auto& [rule, count] : exclusions(r)) os << "#   " << pad(with_commas(count), 9, false) << "  " << rule << "\n";
  if (!r.why.empty()) {
    os << "# why #1 beats #2 (per iteration, means over pipeline ranks):\n";
    for (const std::string& line : r.why) os << "#   " << line << "\n";
  }
  if (!r.top.empty()) {
    os << "# recipes for #1:\n## Megatron-LM (pretrain_gpt.py flags)\n" << r.recipes.megatron_lm << "## Megatron-Bridge (overrides)\n"
       << r.recipes.megatron_bridge << "## NeMo AutoModel (YAML)\n" << r.recipes.automodel_yaml << "## torchtitan (TOML)\n"
       << r.recipes.torchtitan;
  }
  os << "# plan: " << (r.top.empty() ? "nothing fits: FAILED" : "best layout found: OK") << "\n";
  return os.str();
}

std::string render_plan_html(const PlanResult& r, const ReportInput* winner) {
  std::ostringstream os;
  os << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"generator\" content=\"pipelab plan\">\n"
     << "<title>pipelab plan: " << html_escape(config_text(r, "model")) << "</title>\n<style>\n"
     << report_css() << "</style>\n</head>\n<body>\n<main>\n<header><h1>pipelab plan</h1><p class=\"sub\">" << html_escape(search_line(r))
     << "</p></header>\n";
  os << "<section id=\"pareto-section\"><h2>Every evaluated layout</h2><div class=\"card\">";
  pareto_svg(os, r);
  os << "</div></section>\n<section id=\"top-section\"><h2>Top layouts</h2><div class=\"card\"><table class=\"comparison\" id=\"top\"><thead><tr>";
  for (const Column& c : kColumns) os << "<th>" << html_escape(c.header) << "</th>";
  os << "</tr><tr class=\"units\">";
  for (const Column& c : kColumns) os << "<th>" << html_escape(c.unit) << "</th>";
  os << "</tr></thead><tbody>";
  for (std::size_t i = 0; i < r.top.size(); ++i) {
    os << "<tr class=\"result\" data-schedule=\"" << attr(r.top[i].layout.schedule) << "\">";
    for (const std::string& cell : row_cells(i + 1, r.top[i])) os << "<td>" << html_escape(cell) << "</td>";
    os << "</tr>";
  }
  if (r.top.empty()) os << "<tr><td colspan=\"" << std::size(kColumns) << "\">No layout fits.</td></tr>";
  os << "</tbody></table></div></section>\n<section id=\"exclusions\"><h2>Excluded</h2><div class=\"card\"><table><tbody>";
  for (const auto& [rule, count] : exclusions(r)) os << "<tr><td class=\"num\">" << with_commas(count) << "</td><td>" << html_escape(rule) << "</td></tr>";
  os << "</tbody></table></div></section>\n";
  if (!r.why.empty()) {
    os << "<section id=\"why\"><h2>Why #1 beats #2</h2><div class=\"card\"><ul>";
    for (const std::string& line : r.why) os << "<li>" << html_escape(line) << "</li>";
    os << "</ul></div></section>\n";
  }
  if (!r.top.empty()) {
    os << "<section id=\"recipes\"><h2>Recipes for #1</h2><div class=\"card\">";
    for (const auto& [title, text] : {std::pair{"Megatron-LM", &r.recipes.megatron_lm}, {"Megatron-Bridge", &r.recipes.megatron_bridge},
                                      {"NeMo AutoModel", &r.recipes.automodel_yaml}, {"torchtitan", &r.recipes.torchtitan}}) {
      os << "<h3>" << title << "</h3><pre>" << html_escape(*text) << "</pre>";
    }
    os << "</div></section>\n";
  }
  if (winner != nullptr && !winner->schedules.empty() && !winner->schedules.front().failed()) {
    const ScheduleResult& s = winner->schedules.front();
    const TimeAxis axis = schedule_axis(s);
    os << "<section id=\"timelines\"><h2>Timeline of #1</h2><section class=\"schedule\" data-schedule=\"" << attr(s.schedule)
       << "\"><div class=\"card\">";
    timeline_svg(os, *winner, s, axis);
    os << "</div>";
    for (const TimelineResult& run : s.runs) {
      if (run.memory.empty()) continue;
      os << "<div class=\"card\">";
      memory_svg(os, *winner, s, run, axis);
      os << "</div>";
    }
    os << "</section></section>\n";
  }
  os << "</main>\n<div id=\"tip\" hidden></div>\n<script>\n" << report_js() << "</script>\n</body>\n</html>\n";
  return os.str();
}

}  // namespace pipelab::reports
