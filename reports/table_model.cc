// The comparison table model and the predicted-vs-measured rows (docs/metrics.md, "How the
// reports show them").
#include "table_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "config_view.h"
#include "format.h"
#include "pipelab/reports/render.h"
#include "pipelab/schedules/metrics.h"

namespace pipelab::reports {

std::string fidelity_thresholds_text(std::string_view separator) {
  const FidelityThresholds& t = kFidelityThresholds;
  return "|makespan error| <= " + detail::short_number(t.makespan_error * 100) + "%" + std::string(separator) +
         "|bubble predicted - measured| <= " + detail::short_number(t.bubble_difference);
}

namespace detail {

const std::array<MetricColumn, kNumMetrics>& metric_columns() {
  static const std::array<MetricColumn, kNumMetrics> columns{{
      {"iteration time", "(ms)", false},
      {"bubble", "(%)", false},
      {"pipeline bubble", "(%)", false},
      {"TFLOPS/GPU", "(TFLOP/s)", true},
      {"MFU", "(%)", true},
      {"tokens/s/GPU", "(tokens/s)", true},
      {"peak memory", "(GiB, max rank)", false},
      {"exposed comm", "(ms)", false},
  }};
  return columns;
}

const std::array<ColumnSpec, kNumFidelityColumns>& fidelity_columns() {
  static const std::array<ColumnSpec, kNumFidelityColumns> columns{{
      {"schedule", "", false},
      {"makespan error", "(%)", true},
      {"bubble predicted", "(%)", true},
      {"bubble measured", "(%)", true},
      {"action error p50", "(%)", true},
      {"action error p90", "(%)", true},
      {"gradients", "", false},
      {"within", "", false},
  }};
  return columns;
}

namespace {

TableRow make_row(const ReportInput& in, const ScheduleResult& s, const TimelineResult& run) {
  TableRow row;
  row.input = &in;
  row.schedule = &s;
  row.run = &run;
  row.label = run.source == "simulated" ? s.schedule : s.schedule + " (" + run.source + ")";
  const Summary& m = run.summary;
  // Per iteration (docs/metrics.md, "iteration time"): a timeline of N iterations holds N - 1 steps
  // in its makespan and is followed by the last.
  const double iterations = config_iterations(in.config);
  row.value[kIterationTime] = static_cast<double>(m.makespan_ns + m.optimizer_step_ns) / 1e6 / iterations;
  row.value[kBubble] = m.bubble_ratio * 100;
  row.value[kPipelineBubble] = m.pipeline_bubble_ratio * 100;
  row.value[kTflops] = m.tflops_per_gpu.value_or(0);
  row.missing[kTflops] = !m.tflops_per_gpu;
  row.value[kMfu] = m.mfu.value_or(0) * 100;
  row.missing[kMfu] = !m.mfu;
  row.value[kTokens] = m.tokens_per_s_per_gpu;
  row.value[kPeakMemory] = static_cast<double>(m.max_peak_memory_bytes()) / kGiB;
  row.missing[kPeakMemory] = !states_memory(run);  // uniform costs model no memory: "-", never best
  row.value[kExposedComm] = static_cast<double>(m.exposed_comm_ns) / 1e6 / iterations;
  row.oom = m.oom;
  return row;
}

// Column decimals: bubble and memory fixed at 2; the others 4 significant digits of the column's max.
void format_cells(std::vector<TableRow>& rows) {
  for (int c = 0; c < kNumMetrics; ++c) {
    double max_abs = 0;
    for (const TableRow& r : rows) max_abs = std::max(max_abs, std::abs(r.value[c]));
    const int decimals = (c == kBubble || c == kPipelineBubble || c == kPeakMemory) ? 2
                         : c == kIterationTime               ? decimals_for(max_abs, 5)
                         : c == kExposedComm                 ? decimals_for(max_abs, 3)
                                                             : decimals_for(max_abs);
    for (TableRow& r : rows) r.text[c] = r.missing[c] ? "-" : fixed(r.value[c], decimals);
  }
}

// Best per source group, among the rows that fit in memory, when at least two do (docs/metrics.md).
void mark_best(std::vector<TableRow>& rows) {
  std::map<std::string, std::vector<TableRow*>> groups;
  for (TableRow& r : rows) {
    if (!r.oom) groups[r.run->source].push_back(&r);
  }
  for (auto& [source, eligible] : groups) {
    if (eligible.size() < 2) continue;
    for (int c = 0; c < kNumMetrics; ++c) {
      const bool higher = metric_columns()[static_cast<std::size_t>(c)].higher_is_better;
      // Compare the printed values, so that equal-looking cells are all marked; a missing one never is.
      std::vector<TableRow*> stated;
      for (TableRow* r : eligible) {
        if (!r->missing[c]) stated.push_back(r);
      }
      if (stated.size() < 2) continue;
      auto key = [&](const TableRow* r) { return std::stod(r->text[c]); };
      double best = key(stated.front());
      for (const TableRow* r : stated) best = higher ? std::max(best, key(r)) : std::min(best, key(r));
      for (TableRow* r : stated) r->best[c] = key(r) == best;
    }
  }
}

Verdict count_line(const ComparisonTable& t) {
  std::size_t schedules = 0;
  for (const ReportInput& in : *t.inputs) schedules += in.schedules.size();
  const std::size_t failed = t.failed.size();
  std::string line = std::to_string(t.rows.size()) + (t.rows.size() == 1 ? " timeline" : " timelines") + " from " +
                     std::to_string(schedules) + (schedules == 1 ? " schedule" : " schedules");
  if (t.inputs->size() > 1) line += " in " + std::to_string(t.inputs->size()) + " result files";
  line += "; " + std::to_string(failed) + " failed" + (failed ? " (listed below)" : "");
  return {line, true, /*judged=*/false};
}

}  // namespace

bool states_memory(const TimelineResult& run) {
  return std::any_of(run.ranks.begin(), run.ranks.end(), [](const RankRow& k) { return k.peak_memory_bytes > 0; });
}

bool states_memory(const ComparisonTable& t) {
  return std::any_of(t.rows.begin(), t.rows.end(), [](const TableRow& r) { return !r.missing[kPeakMemory]; });  // make_row
}

Verdict memory_verdict(const ComparisonTable& t) {
  if (!states_memory(t)) return {"memory: not modelled (uniform costs time the schedule alone)", true, /*judged=*/false};
  std::vector<std::string> over;
  std::set<std::int64_t> capacities;
  for (const TableRow& r : t.rows) {
    if (r.oom) over.push_back(t.multi_input ? r.input->name + " " + r.label : r.label);
    if (r.run->summary.memory_capacity_bytes > 0) capacities.insert(r.run->summary.memory_capacity_bytes);
  }
  std::string cap;
  if (capacities.size() == 1) cap = " " + fixed(static_cast<double>(*capacities.begin()) / kGiB, 2) + " GiB";
  Verdict v;
  const std::size_t fit = t.rows.size() - over.size();
  v.text = "memory: " + std::to_string(fit) + " of " + std::to_string(t.rows.size()) + (fit == 1 ? " fits" : " fit") + " in" +
           (cap.empty() ? " its GPU" : cap);
  if (!over.empty()) {
    std::string names;
    for (const std::string& n : over) names += (names.empty() ? "" : ", ") + n;
    v.text += "; over: " + names;
    v.ok = false;
  }
  return v;
}

namespace {

Verdict fidelity_verdict(const std::vector<FidelityRow>& rows) {
  std::size_t within = 0;
  for (const FidelityRow& f : rows) within += f.within ? 1 : 0;
  Verdict v;
  v.ok = within == rows.size();
  v.text = "fidelity: " + std::to_string(within) + " of " + std::to_string(rows.size()) + " runs within " +
           fidelity_thresholds_text(" and ");
  return v;
}

// One row per run result's schedule, with `input` pointing into `inputs`: private to
// build_comparison, whose table owns the inputs the rows point into.
std::vector<FidelityRow> fidelity_rows(const std::vector<ReportInput>& inputs) {
  std::vector<FidelityRow> out;
  for (const ReportInput& in : inputs) {
    if (in.kind != "run") continue;
    for (const ScheduleResult& s : in.schedules) {
      if (s.failed() || s.runs.size() < 2) continue;
      FidelityRow row;
      row.input = &in;
      row.schedule = s.schedule;
      // load() requires the comparison; an input built otherwise without one shows "-" and fails the
      // verdict (a NaN figure too): a missing figure is never within the thresholds.
      const double none = std::nan("");
      const FidelityReport* f = s.comparison ? &s.comparison->fidelity : nullptr;
      const double err = f ? f->makespan_error : none, bp = f ? f->bubble_predicted : none;
      const double bm = f ? f->bubble_measured : none;
      auto percent = [](double v) { return fixed(v * 100, 2); };
      auto signed_percent = [](double v) { return std::isfinite(v) ? (v > 0 ? "+" : "") + fixed(v * 100, 2) : "-"; };
      row.makespan_error = signed_percent(err);
      row.bubble_predicted = percent(bp);
      row.bubble_measured = percent(bm);
      row.action_p50 = signed_percent(f ? f->action_error_p50 : none);
      row.action_p90 = signed_percent(f ? f->action_error_p90 : none);
      if (s.gradient_check) {
        row.gradients = s.gradient_check->passed ? "passed" : "FAILED";
        if (std::isfinite(s.gradient_check->max_rel_error)) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.2e", s.gradient_check->max_rel_error);
          row.gradients += std::string(" (max rel ") + buf + ")";
        }
      }
      row.within = within_fidelity(err, bp, bm);
      out.push_back(std::move(row));
    }
  }
  return out;
}

}  // namespace

ComparisonTable build_comparison(std::vector<ReportInput> inputs) {
  ComparisonTable t;
  t.inputs = std::make_shared<const std::vector<ReportInput>>(std::move(inputs));
  const std::vector<ReportInput>& in = *t.inputs;
  t.multi_input = in.size() > 1;
  for (const ReportInput& input : in) {
    for (const ScheduleResult& s : input.schedules) {
      if (s.failed()) t.failed.push_back({&input, &s});
    }
  }
  for_each_timeline(in, [&](const ReportInput& input, const ScheduleResult& s, const TimelineResult& run) {
    t.rows.push_back(make_row(input, s, run));
  });
  format_cells(t.rows);
  mark_best(t.rows);
  t.footer.push_back(count_line(t));
  if (!t.rows.empty()) t.footer.push_back(memory_verdict(t));
  t.fidelity = fidelity_rows(in);
  if (!t.fidelity.empty()) t.footer.push_back(fidelity_verdict(t.fidelity));
  return t;
}

}  // namespace detail
}  // namespace pipelab::reports
