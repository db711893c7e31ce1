// Markdown report: the HTML report's tables (configuration, comparison with a units row and an
// OK/FAILED footer, failures, predicted vs measured) and a text timeline per schedule for PP <= 8.
#include <algorithm>
#include <sstream>

#include "config_view.h"
#include "format.h"
#include "table_model.h"
#include "timeline_view.h"
#include "pipelab/reports/render.h"
#include "pipelab/schedules/text_grid.h"

namespace pipelab::reports {
namespace {

using namespace detail;

constexpr std::size_t kMaxTextRanks = 8;
constexpr std::size_t kMaxTextColumns = 96;

std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n' || c == '\r') out += ' ';
    else out += c;
  }
  return out;
}

// A pipe table with padded columns; `right[i]` right-aligns column i.
std::string table(const std::vector<std::string>& header, const std::vector<bool>& right,
                  const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> width(header.size(), 3);
  auto measure = [&](const std::vector<std::string>& r) {
    for (std::size_t i = 0; i < r.size() && i < width.size(); ++i) width[i] = std::max(width[i], r[i].size());
  };
  measure(header);
  for (const auto& r : rows) measure(r);
  std::ostringstream os;
  auto line = [&](const std::vector<std::string>& r) {
    os << "|";
    for (std::size_t i = 0; i < width.size(); ++i) {
      const std::string& text = i < r.size() ? r[i] : std::string();
      const std::string pad(width[i] - text.size(), ' ');
      os << ' ' << (right[i] ? pad + text : text + pad) << " |";
    }
    os << "\n";
  };
  line(header);
  os << "|";
  for (std::size_t i = 0; i < width.size(); ++i) {
    os << (right[i] ? " " + std::string(width[i] - 1, '-') + ": |" : " " + std::string(width[i], '-') + " |");
  }
  os << "\n";
  for (const auto& r : rows) line(r);
  return os.str();
}

// The header, units row and alignment of a table, column by column; a "result" column first when
// the table holds several inputs.
struct Columns {
  std::vector<std::string> header, units;
  std::vector<bool> right;

  explicit Columns(bool multi_input) {
    if (multi_input) add("result");
  }
  void add(const std::string& name, const std::string& unit = "", bool right_aligned = false) {
    header.push_back(name);
    units.push_back(unit);
    right.push_back(right_aligned);
  }
};

// A footer line; a verdict ends in its OK/FAILED word, bold.
std::string verdict_line(const Verdict& v) {
  return v.judged ? v.text + ": **" + verdict_word(v) + "**" : v.text;
}

void text_timeline(std::ostringstream& os, const std::string& title, const Timeline& t) {
  os << "### " << title << "\n\n";
  if (t.ranks.size() > kMaxTextRanks) {
    os << "(" << t.ranks.size() << " ranks: text timelines are printed for PP <= " << kMaxTextRanks << ")\n\n";
    return;
  }
  const auto grid = timeline_text_grid(t);
  std::size_t width = 0;
  for (const auto& row : grid) width = std::max(width, row.size());
  if (width == 0) {
    os << "(empty timeline: no compute events)\n\n";
    return;
  }
  const std::size_t shown = std::min(width, kMaxTextColumns);
  os << "```text\n" << render_text_grid("step", grid, 0, shown) << "```\n";
  if (shown < width) os << "(first " << shown << " of " << width << " steps)\n";
  os << "\n";
}

}  // namespace

std::string render_markdown(const std::vector<ReportInput>& given) {
  std::ostringstream os;
  const ComparisonTable t = build_comparison(given);
  const std::vector<ReportInput>& inputs = *t.inputs;  // the table's rows point into these
  os << "# pipelab report\n\n";
  {
    std::string list;
    for (const ReportInput& in : inputs) list += (list.empty() ? "" : ", ") + ("`" + in.name + "` (" + in.kind + ")");
    os << "Results: " << (list.empty() ? "none" : list) << "\n\n";
  }

  // Configuration
  const std::vector<ConfigRow> config = config_rows(inputs);
  if (!config.empty()) {
    os << "## Configuration\n\n";
    std::vector<std::string> header{"setting"};
    std::vector<bool> right{false};
    for (const ReportInput& in : inputs) {
      header.push_back(inputs.size() > 1 ? cell(in.name) : "value");
      right.push_back(false);
    }
    std::vector<std::vector<std::string>> rows;
    for (const ConfigRow& r : config) {
      std::vector<std::string> row{cell(r.label)};
      for (const std::string& v : r.values) row.push_back(v.empty() ? "-" : cell(v));
      rows.push_back(std::move(row));
    }
    os << table(header, right, rows) << "\n";
  }

  // Comparison
  os << "## Comparison\n\n";
  if (t.rows.empty()) {
    os << "No timelines to compare.\n\n";
  } else {
    Columns columns(t.multi_input);
    columns.add("schedule");
    for (const MetricColumn& c : metric_columns()) columns.add(c.header, c.unit, true);
    std::vector<std::vector<std::string>> rows{columns.units};
    for (const TableRow& r : t.rows) {
      std::vector<std::string> row;
      if (t.multi_input) row.push_back(cell(r.input->name));
      row.push_back(cell(r.label));
      for (int c = 0; c < kNumMetrics; ++c) {
        std::string text = r.best[c] ? "**" + r.text[c] + "**" : r.text[c];
        if (c == kPeakMemory && r.oom) text += " OOM";
        row.push_back(text);
      }
      rows.push_back(std::move(row));
    }
    os << table(columns.header, columns.right, rows) << "\n";
  }
  for (const Verdict& v : t.footer) os << "- " << verdict_line(v) << "\n";
  os << "\n";
  if (!t.rows.empty()) {
    os << "Best value per column in **bold** (lowest time, bubble, memory and exposed communication; highest "
          "throughput), among timelines of the same kind that fit in memory. Metric definitions: docs/metrics.md.\n\n";
  }

  // Failures
  if (!t.failed.empty()) {
    os << "## Failed schedules\n\n";
    for (const FailedSchedule& f : t.failed) {
      os << "- " << (t.multi_input ? cell(f.input->name) + " " : "") << "`" << f.schedule->schedule
         << "`: " << cell(f.schedule->error) << "\n";
    }
    os << "\n";
  }

  // Predicted vs measured
  const std::vector<FidelityRow>& fid = t.fidelity;
  if (!fid.empty()) {
    os << "## Predicted vs measured\n\n";
    Columns columns(t.multi_input);
    for (const ColumnSpec& c : fidelity_columns()) columns.add(c.header, c.unit, c.numeric);
    std::vector<std::vector<std::string>> rows{columns.units};
    for (const FidelityRow& f : fid) {
      std::vector<std::string> row{cell(f.schedule), f.makespan_error, f.bubble_predicted, f.bubble_measured,
                                   f.action_p50, f.action_p90, f.gradients.empty() ? "-" : f.gradients,
                                   f.within ? "OK" : "FAILED"};
      if (t.multi_input) row.insert(row.begin(), cell(f.input->name));
      rows.push_back(std::move(row));
    }
    os << table(columns.header, columns.right, rows) << "\n";
    os << kMakespanErrorDefinition << "; thresholds: " << fidelity_thresholds_text(", ") << ".\n\n";
  }

  // MoE phases
  std::vector<std::vector<std::string>> phase_rows;
  for (const TableRow& r : t.rows) {
    for (const Phase& p : r.run->phase_totals) {
      std::vector<std::string> row{cell(r.label), cell(p.name), milliseconds(p.ns), milliseconds(p.comm_ns),
                                   milliseconds(p.exposed_comm_ns)};
      if (t.multi_input) row.insert(row.begin(), cell(r.input->name));
      phase_rows.push_back(std::move(row));
    }
  }
  if (!phase_rows.empty()) {
    os << "## MoE phases\n\n";
    Columns columns(t.multi_input);
    columns.add("schedule", "", false);
    columns.add("phase", "", false);
    columns.add("time per rank", "ms", true);
    columns.add("communication", "ms", true);
    columns.add("exposed", "ms", true);
    phase_rows.insert(phase_rows.begin(), columns.units);
    os << table(columns.header, columns.right, phase_rows) << "\n";
    os << "Each phase summed over its stage's layers and over the rank's actions, mean per rank; \"exposed\" is the "
          "time the communication adds beyond the phase's compute (docs/simulator.md, \"Phases\").\n\n";
  }

  // Text timelines
  if (!t.rows.empty()) {
    os << "## Timelines\n\n";
    os << "Compute actions per rank in start order, aligned in steps: an action sits in a later column than every "
          "action that ended before it started. `.` = idle; `0F7&7B3` = an F&B unit.\n\n";
    for (const TableRow& r : t.rows) {
      text_timeline(os, (t.multi_input ? r.input->name + ": " : std::string()) + r.label, r.run->timeline);
    }
  }
  std::string out = os.str();
  while (out.size() >= 2 && out[out.size() - 1] == '\n' && out[out.size() - 2] == '\n') out.pop_back();
  return out;
}

}  // namespace pipelab::reports
