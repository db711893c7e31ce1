// Timeline metrics (docs/metrics.md).
#include "pipelab/schedules/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

#include "intervals.h"

namespace pipelab {

using detail::Interval;
using detail::merge;
using detail::total;
using detail::uncovered;

TimelineMetrics compute_metrics(const Timeline& t) {
  TimelineMetrics m;
  m.makespan_ns = t.makespan_ns();
  m.ranks.resize(t.ranks.size());
  std::int64_t idle_sum = 0, exposed_sum = 0;
  IdleParts parts_sum;
  const std::vector<IdleParts> parts = split_idle(t);
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    std::vector<Interval> compute, comm;
    RankMetrics& rm = m.ranks[r];
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Compute) {
        compute.emplace_back(e.start_ns, e.end_ns);
        rm.flops += e.flops;
      } else {
        comm.emplace_back(e.start_ns, e.end_ns);
      }
    }
    merge(compute);
    merge(comm);
    rm.busy_ns = total(compute);
    rm.span_ns = compute.empty() ? 0 : compute.back().second - compute.front().first;
    rm.idle_ns = m.makespan_ns - rm.busy_ns;
    rm.comm_ns = total(comm);
    rm.exposed_comm_ns = uncovered(comm, compute);
    rm.idle = parts[r];
    idle_sum += rm.idle_ns;
    exposed_sum += rm.exposed_comm_ns;
    parts_sum.pipeline_bubble_ns += rm.idle.pipeline_bubble_ns;
    parts_sum.imbalance_ns += rm.idle.imbalance_ns;
    parts_sum.exposed_pp_comm_ns += rm.idle.exposed_pp_comm_ns;
    parts_sum.exposed_dp_comm_ns += rm.idle.exposed_dp_comm_ns;
    parts_sum.other_ns += rm.idle.other_ns;
  }
  std::int64_t max_span = 0, max_busy = 0;
  for (const RankMetrics& rm : m.ranks) {
    max_span = std::max(max_span, rm.span_ns);
    max_busy = std::max(max_busy, rm.busy_ns);
  }
  if (max_span > 0) m.span_bubble_rate = static_cast<double>(max_span - max_busy) / static_cast<double>(max_span);
  if (!t.ranks.empty() && m.makespan_ns > 0) {
    const double rank_time = static_cast<double>(t.ranks.size()) * static_cast<double>(m.makespan_ns);
    const auto ranks = static_cast<std::int64_t>(t.ranks.size());
    m.bubble_ratio = static_cast<double>(idle_sum) / rank_time;
    m.pipeline_bubble_ratio = static_cast<double>(parts_sum.pipeline_bubble_ns) / rank_time;
    m.stage_imbalance = static_cast<double>(parts_sum.imbalance_ns) / rank_time;
    m.exposed_comm_ns = exposed_sum / ranks;
    m.exposed_pp_comm_ns = parts_sum.exposed_pp_comm_ns / ranks;
    m.exposed_dp_comm_ns = parts_sum.exposed_dp_comm_ns / ranks;
    m.other_idle_ns = parts_sum.other_ns / ranks;
  }
  return m;
}

Throughput compute_throughput(std::int64_t iteration_ns, double model_flops, std::int64_t tokens, std::int64_t gpus,
                              double peak_tflops) {
  Throughput out;
  if (iteration_ns <= 0 || gpus <= 0) return out;
  const double seconds = static_cast<double>(iteration_ns) * 1e-9;
  out.tflops_per_gpu = model_flops / (seconds * static_cast<double>(gpus)) / 1e12;
  out.mfu = peak_tflops > 0 ? out.tflops_per_gpu / peak_tflops : 0;
  out.tokens_per_s_per_gpu = static_cast<double>(tokens) / (seconds * static_cast<double>(gpus));
  return out;
}

// ---- predicted vs measured ---------------------------------------------------------------------

namespace {

// The q-quantile by the nearest-rank method: the ceil(q * n)-th smallest; 0 for no values.
double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
  return v[std::min(i, v.size() - 1)];
}

}  // namespace

FidelityReport compare_timelines(const Timeline& predicted, const Timeline& measured) {
  FidelityReport out;
  const TimelineMetrics pred = compute_metrics(predicted), meas = compute_metrics(measured);
  out.makespan_predicted_ns = pred.makespan_ns;
  out.makespan_measured_ns = meas.makespan_ns;
  out.makespan_error = meas.makespan_ns > 0
                           ? static_cast<double>(pred.makespan_ns) / static_cast<double>(meas.makespan_ns) - 1.0
                           : 0.0;
  out.bubble_predicted = pred.bubble_ratio;
  out.bubble_measured = meas.bubble_ratio;

  // Compute actions are matched by (rank, action); an F&B unit by both halves.
  using Key = std::tuple<std::size_t, int, int, int, int, int>;
  auto key = [](std::size_t r, const Action& a) {
    return Key{r, static_cast<int>(a.op), a.stage, a.mb, a.b_stage, a.b_mb};
  };
  std::map<Key, std::int64_t> predicted_ns;
  for (std::size_t r = 0; r < predicted.ranks.size(); ++r) {
    for (const TimelineEvent& e : predicted.ranks[r]) {
      if (e.stream == Stream::Compute) predicted_ns[key(r, e.action)] = e.duration_ns();
    }
  }
  std::vector<double> errors;
  for (std::size_t r = 0; r < measured.ranks.size(); ++r) {
    std::vector<double> ratios;  // measured / predicted: how much slower the rank ran than profiled
    for (const TimelineEvent& e : measured.ranks[r]) {
      if (e.stream != Stream::Compute || e.duration_ns() <= 0) continue;
      const auto it = predicted_ns.find(key(r, e.action));
      if (it == predicted_ns.end() || it->second <= 0) continue;
      errors.push_back(static_cast<double>(it->second) / static_cast<double>(e.duration_ns()) - 1.0);
      ratios.push_back(static_cast<double>(e.duration_ns()) / static_cast<double>(it->second));
    }
    out.compute_time_ratio.push_back(quantile(std::move(ratios), 0.5));
  }
  out.action_error_p50 = quantile(errors, 0.5);
  out.action_error_p90 = quantile(errors, 0.9);
  out.actions_compared = errors.size();
  return out;
}

bool within_fidelity(double makespan_error, double bubble_predicted, double bubble_measured,
                     const FidelityThresholds& thresholds) {
  // Written so that a NaN compares false and fails the verdict.
  return std::abs(makespan_error) <= thresholds.makespan_error &&
         std::abs(bubble_predicted - bubble_measured) <= thresholds.bubble_difference;
}

bool within_fidelity(const FidelityReport& report, const FidelityThresholds& thresholds) {
  return within_fidelity(report.makespan_error, report.bubble_predicted, report.bubble_measured, thresholds);
}

std::vector<std::size_t> ranks_off_profile(const FidelityReport& report, const FidelityThresholds& thresholds) {
  std::vector<std::size_t> out;
  for (std::size_t r = 0; r < report.compute_time_ratio.size(); ++r) {
    if (std::abs(report.compute_time_ratio[r] - 1.0) > thresholds.compute_time_ratio) out.push_back(r);
  }
  return out;
}

}  // namespace pipelab
