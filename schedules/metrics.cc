// Timeline metrics (docs/metrics.md).
#include "pipelab/schedules/metrics.h"

#include <algorithm>
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

}  // namespace pipelab
