// The terminal summary of simulate and compare (nccl-tests style), printed from the comparison
// table model, so the terminal and the reports decide "best" and "out of memory" the same way.
#include <algorithm>
#include <cstdio>
#include <string>

#include "format.h"
#include "pipelab/reports/render.h"
#include "table_model.h"

namespace pipelab::reports {

using namespace detail;

namespace {

std::string gib(std::int64_t bytes) { return fixed(static_cast<double>(bytes) / kGiB, 1); }

// The rank with the largest peak: the one that decides whether the layout fits.
const RankRow* fullest_rank(const TimelineResult& run) {
  const RankRow* fullest = nullptr;
  for (const RankRow& r : run.ranks) {
    if (!fullest || r.peak_memory_bytes > fullest->peak_memory_bytes) fullest = &r;
  }
  return fullest;
}

// "rank 0: weights 8.2 + grads 4.1 + optimizer 12.3 + activations 20.1 = 44.7 GiB"
std::string memory_breakdown(const RankRow& r) {
  std::string out = "rank " + std::to_string(r.rank) + ": ";
  if (r.static_parts) {
    const StaticMemoryParts& p = *r.static_parts;
    out += "weights " + gib(p.params_bytes) + " + grads " + gib(p.grads_bytes) + " + optimizer " + gib(p.optimizer_bytes);
    if (p.comm_buffers_bytes > 0) out += " + FSDP buffers " + gib(p.comm_buffers_bytes);
  } else {
    out += "static " + gib(r.static_memory_bytes);
  }
  return out + " + activations " + gib(r.peak_activation_bytes) + " = " + gib(r.peak_memory_bytes) + " GiB";
}

// "usable 76.0 GiB = 80.0 HBM - 4.0 reserved (...)", from the GPU spec the result echoes.
std::string capacity_line(const ReportInput& in, std::int64_t usable) {
  const auto gpu = in.config.find("gpu");
  if (gpu == in.config.end() || !gpu->is_object() || !gpu->contains("hbm_bytes") || !gpu->contains("reserved_memory_bytes")) {
    return "usable " + gib(usable) + " GiB";
  }
  const auto hbm = (*gpu)["hbm_bytes"].get<std::int64_t>();
  const auto reserved = (*gpu)["reserved_memory_bytes"].get<std::int64_t>();
  return "usable " + gib(usable) + " GiB = " + gib(hbm) + " HBM - " + gib(reserved) + " reserved for CUDA context, NCCL, allocator";
}

}  // namespace

std::string render_summary_text(const std::vector<ReportInput>& given) {
  const ComparisonTable t = build_comparison(given);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "# %-18s %3s %10s %7s %10s %6s %12s %9s %10s  %s\n", "schedule", "vp", "iteration", "bubble",
                "TFLOPS/GPU", "MFU", "tokens/s/GPU", "peak_mem", "exp_comm", "status");
  out += line;
  std::snprintf(line, sizeof line, "# %-18s %3s %10s %7s %10s %6s %12s %9s %10s\n", "", "", "(ms)", "(%)", "", "(%)", "", "(GiB)",
                "(ms)");
  out += line;
  // Rows in schedule order, a failed schedule where it was asked for.
  std::string layouts, memory, advice, capacity;
  for (const ReportInput& in : *t.inputs) {
    const int config_vp = in.config.contains("parallel") ? in.config["parallel"].value("vp", 0) : 0;
    for (const ScheduleResult& s : in.schedules) {
      if (s.failed()) out += "  " + s.schedule + "  not applicable: " + s.error + "\n";
      for (const TableRow& r : t.rows) {
        if (r.schedule != &s) continue;
        const auto& v = r.value;
        const int vp = s.vp > 0 ? s.vp : config_vp;
        std::snprintf(line, sizeof line, "  %-18s %3s %10.2f %7.2f %10.1f %6.1f %12.1f %9.1f %10.3f  %s\n", r.label.c_str(),
                      vp > 0 ? std::to_string(vp).c_str() : "-", v[kIterationTime], v[kBubble], v[kTflops], v[kMfu],
                      v[kTokens], v[kPeakMemory], v[kExposedComm], r.oom ? "OOM" : "OK");
        out += line;
        std::snprintf(line, sizeof line, "#   %-18s ", r.label.c_str());
        if (!s.pipeline_layout.empty()) layouts += line + s.pipeline_layout + "\n";
        if (const RankRow* fullest = fullest_rank(*r.run)) memory += line + memory_breakdown(*fullest) + "\n";
        if (!s.memory_advice.empty()) advice += "# " + r.label + " does not fit; " + s.memory_advice + "\n";
        if (capacity.empty() && r.run->summary.memory_capacity_bytes > 0) {
          capacity = capacity_line(in, r.run->summary.memory_capacity_bytes);
        }
      }
    }
  }
  if (!layouts.empty()) out += "# layout (Megatron --pipeline-model-parallel-layout, model order):\n" + layouts;
  if (!memory.empty()) out += "# memory of the fullest rank (" + (capacity.empty() ? std::string("GiB") : capacity) + "):\n" + memory;
  out += advice;
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
  if (!t.rows.empty()) {
    const Verdict v = memory_verdict(t);
    out += "# " + v.text + ": " + verdict_word(v) + "\n";
  }
  return out;
}

}  // namespace pipelab::reports
