// Timeline metrics (docs/metrics.md).
#include "pipelab/schedules/metrics.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>
#include <utility>

namespace pipelab {
namespace {

using Interval = std::pair<std::int64_t, std::int64_t>;

// Sorts and merges overlapping intervals in place.
void merge(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end());
  std::size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.second <= iv.first) continue;
    if (out > 0 && iv.first <= v[out - 1].second) {
      v[out - 1].second = std::max(v[out - 1].second, iv.second);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

std::int64_t total(const std::vector<Interval>& merged) {
  std::int64_t sum = 0;
  for (const Interval& iv : merged) sum += iv.second - iv.first;
  return sum;
}

// Length of `a` not covered by `b`; both merged.
std::int64_t uncovered(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::int64_t sum = 0;
  std::size_t j = 0;
  for (const Interval& iv : a) {
    std::int64_t cursor = iv.first;
    while (j < b.size() && b[j].second <= cursor) ++j;
    for (std::size_t k = j; k < b.size() && b[k].first < iv.second; ++k) {
      if (b[k].first > cursor) sum += b[k].first - cursor;
      cursor = std::max(cursor, b[k].second);
      if (cursor >= iv.second) break;
    }
    if (cursor < iv.second) sum += iv.second - cursor;
  }
  return sum;
}

}  // namespace

TimelineMetrics compute_metrics(const Timeline& t) {
  TimelineMetrics m;
  m.makespan_ns = t.makespan_ns();
  m.ranks.resize(t.ranks.size());
  std::int64_t idle_sum = 0, exposed_sum = 0;
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
    rm.idle_ns = m.makespan_ns - rm.busy_ns;
    rm.comm_ns = total(comm);
    rm.exposed_comm_ns = uncovered(comm, compute);
    idle_sum += rm.idle_ns;
    exposed_sum += rm.exposed_comm_ns;
  }
  if (!t.ranks.empty() && m.makespan_ns > 0) {
    m.bubble_ratio = static_cast<double>(idle_sum) / (static_cast<double>(t.ranks.size()) * static_cast<double>(m.makespan_ns));
    m.exposed_comm_ns = exposed_sum / static_cast<std::int64_t>(t.ranks.size());
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
