// TimelineResult from a producer's facts (timeline_result.h).
#include "pipelab/reports/timeline_result.h"

namespace pipelab::reports {
namespace {

std::int64_t at_rank(const std::vector<std::int64_t>& per_rank, std::size_t r) {
  return r < per_rank.size() ? per_rank[r] : 0;
}

}  // namespace

TimelineResult make_timeline_result(TimelineFacts facts, const TimelineMetrics& metrics, const Throughput& throughput) {
  TimelineResult out;
  out.source = std::move(facts.source);
  Summary& s = out.summary;
  s.makespan_ns = metrics.makespan_ns;
  s.bubble_ratio = metrics.bubble_ratio;
  if (facts.hardware_figures) {
    s.tflops_per_gpu = throughput.tflops_per_gpu;
    s.mfu = throughput.mfu;
  } else {
    s.tflops_per_gpu = std::nullopt;
    s.mfu = std::nullopt;
  }
  s.tokens_per_s_per_gpu = throughput.tokens_per_s_per_gpu;
  s.exposed_comm_ns = metrics.exposed_comm_ns;
  s.pipeline_bubble_ratio = metrics.pipeline_bubble_ratio;
  s.span_bubble_rate = metrics.span_bubble_rate;
  s.stage_imbalance = metrics.stage_imbalance;
  s.exposed_pp_comm_ns = metrics.exposed_pp_comm_ns;
  s.exposed_dp_comm_ns = metrics.exposed_dp_comm_ns;
  s.other_idle_ns = metrics.other_idle_ns;
  s.exposed_tp_comm_ns = facts.exposed_tp_comm_ns;
  s.exposed_ep_comm_ns = facts.exposed_ep_comm_ns;
  s.exposed_cp_comm_ns = facts.exposed_cp_comm_ns;
  s.exposed_fsdp_comm_ns = facts.exposed_fsdp_comm_ns;
  s.exposed_offload_ns = facts.exposed_offload_ns;
  s.host_wait_ns = facts.host_wait_ns;
  s.optimizer_step_ns = facts.optimizer_step_ns;
  s.memory_capacity_bytes = facts.memory_capacity_bytes;
  s.model_flops = facts.model_flops;
  s.tokens_per_iteration = facts.tokens_per_iteration;
  for (std::size_t r = 0; r < metrics.ranks.size(); ++r) {
    const RankMetrics& m = metrics.ranks[r];
    RankRow row{.rank = static_cast<int>(r),
                .busy_ns = m.busy_ns,
                .idle_ns = m.idle_ns,
                .comm_ns = m.comm_ns,
                .exposed_comm_ns = m.exposed_comm_ns,
                .idle = m.idle,
                .flops = m.flops,
                .static_memory_bytes = at_rank(facts.static_memory_bytes, r),
                .peak_activation_bytes = at_rank(facts.peak_activation_bytes, r)};
    row.peak_memory_bytes = row.static_memory_bytes + row.peak_activation_bytes;
    if (r < facts.static_parts.size()) row.static_parts = facts.static_parts[r];
    s.peak_memory_bytes.push_back(row.peak_memory_bytes);
    s.oom = s.oom || (s.memory_capacity_bytes > 0 && row.peak_memory_bytes > s.memory_capacity_bytes);
    out.ranks.push_back(row);
  }
  for (std::size_t r = 0; r < facts.activation_steps.size(); ++r) {
    const std::int64_t fixed = at_rank(facts.static_memory_bytes, r);
    MemorySeries series{.rank = static_cast<int>(r), .samples = {{0, fixed}}};
    for (const auto& [time_ns, bytes] : facts.activation_steps[r]) series.samples.emplace_back(time_ns, fixed + bytes);
    out.memory.push_back(std::move(series));
  }
  out.timeline = std::move(facts.timeline);
  out.phases = std::move(facts.phases);
  out.phase_totals = std::move(facts.phase_totals);
  return out;
}

}  // namespace pipelab::reports
