// Summary table.
#include "summary_table.h"

#include <algorithm>
#include <cstdio>

namespace pipelab::app {

bool print_summary_table(std::ostream& os, const std::vector<TableRow>& rows) {
  char line[256];
  std::snprintf(line, sizeof line, "# %-18s %10s %7s %10s %6s %12s %9s %10s  %s\n", "schedule", "iteration", "bubble",
                "TFLOPS/GPU", "MFU", "tokens/s/GPU", "peak_mem", "exp_comm", "status");
  os << line;
  std::snprintf(line, sizeof line, "# %-18s %10s %7s %10s %6s %12s %9s %10s\n", "", "(ms)", "(%)", "", "(%)", "", "(GiB)", "(ms)");
  os << line;
  const sim::SimulationOutcome* best = nullptr;
  bool all_ok = true;
  std::string oom;
  std::int64_t capacity = 0;
  for (const TableRow& row : rows) {
    if (!row.outcome) {
      os << "  " << row.schedule << "  not applicable: " << row.error << "\n";
      all_ok = false;
      continue;
    }
    const sim::SimulationOutcome& o = *row.outcome;
    const double peak_gib = static_cast<double>(*std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end())) /
                            (1024.0 * 1024 * 1024);
    std::snprintf(line, sizeof line, "  %-18s %10.2f %7.2f %10.1f %6.1f %12.1f %9.1f %10.3f  %s\n", row.schedule.c_str(),
                  static_cast<double>(o.metrics.makespan_ns) / 1e6, 100 * o.metrics.bubble_ratio, o.throughput.tflops_per_gpu,
                  100 * o.throughput.mfu, o.throughput.tokens_per_s_per_gpu, peak_gib,
                  static_cast<double>(o.metrics.exposed_comm_ns) / 1e6, o.oom ? "OOM" : "OK");
    os << line;
    all_ok = all_ok && !o.oom;
    if (o.oom) oom += (oom.empty() ? "" : ", ") + row.schedule;
    capacity = o.memory_capacity_bytes;
    if (!o.oom && (!best || o.throughput.tokens_per_s_per_gpu > best->throughput.tokens_per_s_per_gpu)) best = &o;
  }
  if (best) {
    os << "# best fitting schedule: " << best->schedule << " (" << static_cast<long>(best->throughput.tokens_per_s_per_gpu)
       << " tokens/s/GPU)\n";
  } else if (!oom.empty()) {
    os << "# no schedule fits in memory\n";
  } else {
    os << "# no schedule is applicable to this configuration\n";
  }
  if (oom.empty()) {
    os << "# memory: OK\n";
  } else {
    std::snprintf(line, sizeof line, "# memory: FAILED for %s (peak above %.1f GiB usable)\n", oom.c_str(),
                  static_cast<double>(capacity) / (1024.0 * 1024 * 1024));
    os << line;
  }
  return all_ok;
}

}  // namespace pipelab::app
