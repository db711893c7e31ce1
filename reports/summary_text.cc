// The terminal summary of simulate and compare (nccl-tests style), printed from the comparison
// table model, so the terminal and the reports decide "best" and "out of memory" the same way.
#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <string>
#include <utility>

#include "config_view.h"
#include "format.h"
#include "pipelab/reports/render.h"
#include "table_model.h"

namespace pipelab::reports {

using namespace detail;

namespace {

std::string gib(std::int64_t bytes) { return fixed(static_cast<double>(bytes) / kGiB, 1); }
std::string ms(std::int64_t ns) { return milliseconds(ns) + " ms"; }

// The rank with the largest peak: the one that decides whether the layout fits.
// Null when the result states no memory (uniform costs model none).
const RankRow* fullest_rank(const TimelineResult& run) {
  if (!states_memory(run)) return nullptr;
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

// "bubble 12.30% = pipeline 8.10% + imbalance 2.20% + PP comm 0.00% + DP comm 2.00%; in compute:
// TP 1.234 ms, EP 0.500 ms" (other idle and each communication in compute only when not zero).
std::string idle_breakdown(const Summary& m, int iterations) {
  const double span = static_cast<double>(m.makespan_ns);
  auto pct = [](double ratio) { return fixed(ratio * 100, 2) + "%"; };
  auto share = [&](std::int64_t ns) { return span > 0 ? pct(static_cast<double>(ns) / span) : pct(0); };
  std::string out = "bubble " + pct(m.bubble_ratio) + " = pipeline " + pct(m.pipeline_bubble_ratio) + " + imbalance " +
                    pct(m.stage_imbalance) + " + PP comm " + share(m.exposed_pp_comm_ns) + " + DP comm " + share(m.exposed_dp_comm_ns);
  if (m.other_idle_ns > 0) out += " + other " + share(m.other_idle_ns);
  out += " (zero-bubble paper's rate " + pct(m.span_bubble_rate) + ")";
  std::string in_compute;
  for (const auto& [name, ns] : {std::pair<const char*, std::int64_t>{"TP", m.exposed_tp_comm_ns}, {"EP", m.exposed_ep_comm_ns},
                                 {"CP", m.exposed_cp_comm_ns}, {"FSDP", m.exposed_fsdp_comm_ns}, {"activation offload", m.exposed_offload_ns},
                                 {"host launches", m.host_wait_ns}}) {
    if (ns > 0) in_compute += (in_compute.empty() ? "" : ", ") + std::string(name) + " " + ms(ns / iterations);
  }
  if (!in_compute.empty()) out += "; in compute: " + in_compute;
  if (m.optimizer_step_ns > 0) out += "; then the optimizer step " + ms(m.optimizer_step_ns);
  return out;
}

// "attention & dense 512.300 ms, dispatch 120.000 ms (exposed 120.000 ms), ...": the MoE phases per rank.
std::string phase_line(const std::vector<Phase>& totals, int iterations) {
  std::string out;
  for (const Phase& p : totals) {
    if (!out.empty()) out += ", ";
    out += p.name + " " + ms(p.ns / iterations);
    if (p.exposed_comm_ns > 0) out += " (exposed " + ms(p.exposed_comm_ns / iterations) + ")";
  }
  return out;
}

}  // namespace

std::string render_summary_text(const std::vector<ReportInput>& given) {
  const ComparisonTable t = build_comparison(given);
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "# %-18s %3s %10s %7s %8s %10s %6s %12s %9s %10s  %s\n", "schedule", "vp", "iteration", "bubble",
                "pipeline", "TFLOPS/GPU", "MFU", "tokens/s/GPU", "peak_mem", "exp_comm", "status");
  out += line;
  std::snprintf(line, sizeof line, "# %-18s %3s %10s %7s %8s %10s %6s %12s %9s %10s\n", "", "", "(ms)", "(%)", "(%)", "", "(%)", "",
                "(GiB)", "(ms)");
  out += line;
  // Rows in schedule order, a failed schedule where it was asked for.
  std::string layouts, idle, phases, memory, advice, capacity;
  for (const ReportInput& in : *t.inputs) {
    const int config_vp = in.config.contains("parallel") ? in.config["parallel"].value("vp", 0) : 0;
    for (const ScheduleResult& s : in.schedules) {
      if (s.failed()) out += "  " + s.schedule + "  not applicable: " + s.error + "\n";
      for (const TableRow& r : t.rows) {
        if (r.schedule != &s) continue;
        const auto& v = r.value;
        const int vp = s.vp > 0 ? s.vp : config_vp;
        const bool memory_known = !r.missing[kPeakMemory];  // without it, no peak and no fits/OOM status
        std::snprintf(line, sizeof line, "  %-18s %3s %10.2f %7.2f %8.2f %10s %6s %12.1f %9s %10.3f  %s\n", r.label.c_str(),
                      vp > 0 ? std::to_string(vp).c_str() : "-", v[kIterationTime], v[kBubble], v[kPipelineBubble],
                      r.missing[kTflops] ? "-" : fixed(v[kTflops], 1).c_str(), r.missing[kMfu] ? "-" : fixed(v[kMfu], 1).c_str(),
                      v[kTokens], memory_known ? fixed(v[kPeakMemory], 1).c_str() : "-", v[kExposedComm],
                      memory_known ? (r.oom ? "OOM" : "OK") : "-");
        out += line;
        std::snprintf(line, sizeof line, "#   %-18s ", r.label.c_str());
        if (!s.pipeline_layout.empty()) layouts += line + s.pipeline_layout + "\n";
        // Times per iteration, as the table's (a timeline of --iterations N holds N of them).
        const int iterations = detail::config_iterations(in.config);
        idle += line + idle_breakdown(r.run->summary, iterations) + "\n";
        if (!r.run->phase_totals.empty()) phases += line + phase_line(r.run->phase_totals, iterations) + "\n";
        if (const RankRow* fullest = fullest_rank(*r.run)) memory += line + memory_breakdown(*fullest) + "\n";
        if (!s.memory_advice.empty()) advice += "# " + r.label + " does not fit; " + s.memory_advice + "\n";
        if (capacity.empty() && r.run->summary.memory_capacity_bytes > 0) {
          capacity = capacity_line(in, r.run->summary.memory_capacity_bytes);
        }
      }
    }
  }
  if (!layouts.empty()) out += "# layout (Megatron --pipeline-model-parallel-layout, model order):\n" + layouts;
  if (!idle.empty()) out += "# idle time by cause, share of ranks x iteration (docs/metrics.md); communication inside compute, per rank:\n" + idle;
  if (!phases.empty()) out += "# MoE phases, time per rank, each summed over its stage's layers (docs/simulator.md, \"Phases\"):\n" + phases;
  if (!memory.empty()) out += "# memory of the fullest rank (" + (capacity.empty() ? std::string("GiB") : capacity) + "):\n" + memory;
  out += advice;
  // MFU is against the dense BF16 peak at every precision (docs/metrics.md): past 100 % it says why.
  if (std::any_of(t.rows.begin(), t.rows.end(), [](const TableRow& r) { return !r.missing[kMfu] && r.value[kMfu] > 100; })) {
    out += "# MFU above 100%: it is against the GPU's dense BF16 peak at every precision, and FP8 or NVFP4 GEMMs run faster than that\n";
  }
  // The best tokens/s/GPU of the table (docs/metrics.md: among at least two rows that fit).
  const TableRow* best = nullptr;
  bool any_fits = false;
  for (const TableRow& r : t.rows) {
    if (!best && r.best[kTokens]) best = &r;
    any_fits = any_fits || !r.oom;
  }
  if (best) {
    out += std::string(states_memory(t) ? "# best fitting schedule: " : "# best schedule (memory not modelled): ") + best->label + " (" +
           std::to_string(static_cast<long>(best->value[kTokens])) + " tokens/s/GPU)\n";
  } else if (t.rows.empty()) {
    out += "# no schedule is applicable to this configuration\n";
  } else if (!any_fits) {
    out += "# no schedule fits in memory\n";
  }
  if (!t.rows.empty()) {
    const Verdict v = memory_verdict(t);
    out += "# " + v.text + (v.judged ? std::string(": ") + verdict_word(v) : std::string()) + "\n";
  }
  return out;
}

}  // namespace pipelab::reports
