// The terminal summary of simulate and compare (nccl-tests style), printed from the comparison
// table model, so the terminal and the reports decide "best" and "out of memory" the same way.
#include <cstdio>
#include <string>

#include "format.h"
#include "pipelab/reports/render.h"
#include "table_model.h"

namespace pipelab::reports {

using namespace detail;

std::string render_summary_text(const std::vector<ReportInput>& given) {
  const ComparisonTable t = build_comparison(given);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "# %-18s %10s %7s %10s %6s %12s %9s %10s  %s\n", "schedule", "iteration", "bubble",
                "TFLOPS/GPU", "MFU", "tokens/s/GPU", "peak_mem", "exp_comm", "status");
  out += line;
  std::snprintf(line, sizeof line, "# %-18s %10s %7s %10s %6s %12s %9s %10s\n", "", "(ms)", "(%)", "", "(%)", "", "(GiB)",
                "(ms)");
  out += line;
  // Rows in schedule order, a failed schedule where it was asked for.
  std::string oom;
  std::int64_t capacity = 0;
  for (const ReportInput& in : *t.inputs) {
    for (const ScheduleResult& s : in.schedules) {
      if (s.failed()) out += "  " + s.schedule + "  not applicable: " + s.error + "\n";
      for (const TableRow& r : t.rows) {
        if (r.schedule != &s) continue;
        const auto& v = r.value;
        std::snprintf(line, sizeof line, "  %-18s %10.2f %7.2f %10.1f %6.1f %12.1f %9.1f %10.3f  %s\n", r.label.c_str(),
                      v[kIterationTime], v[kBubble], v[kTflops], v[kMfu], v[kTokens], v[kPeakMemory], v[kExposedComm],
                      r.oom ? "OOM" : "OK");
        out += line;
        if (r.oom) oom += (oom.empty() ? "" : ", ") + r.label;
        capacity = r.run->summary.memory_capacity_bytes;
      }
    }
  }
  // The best tokens/s/GPU of the table (docs/metrics.md: among at least two rows that fit).
  const TableRow* best = nullptr;
  bool any_fits = false;
  for (const TableRow& r : t.rows) {
    if (!best && r.best[kTokens]) best = &r;
    any_fits = any_fits || !r.oom;
  }
  if (best) {
    out += "# best fitting schedule: " + best->label + " (" +
           std::to_string(static_cast<long>(best->value[kTokens])) + " tokens/s/GPU)\n";
  } else if (t.rows.empty()) {
    out += "# no schedule is applicable to this configuration\n";
  } else if (!any_fits) {
    out += "# no schedule fits in memory\n";
  }
  if (oom.empty()) {
    out += "# memory: OK\n";
  } else {
    std::snprintf(line, sizeof line, "# memory: FAILED for %s (peak above %.1f GiB usable)\n", oom.c_str(),
                  static_cast<double>(capacity) / kGiB);
    out += line;
  }
  return out;
}

}  // namespace pipelab::reports
