// Rank placement on nodes.
#include "pipelab/sim/cluster_layout.h"

#include <algorithm>

namespace pipelab::sim {

ClusterLayout::ClusterLayout(const ParallelConfig& config, const GpuSpec& gpu)
    : config_(config), gpu_(gpu), gpus_per_node_(std::max(1, gpu.gpus_per_node)) {}

long ClusterLayout::global_rank(int tp_rank, int cp_rank, int dp_rank, int pp_rank) const {
  const long tp = config_.tp, cp = config_.cp, dp = config_.dp;
  return tp_rank + tp * (cp_rank + cp * (dp_rank + dp * static_cast<long>(pp_rank)));
}

double collective_ns(double bytes_on_wire, double steps, const Link& link, double efficiency) {
  if (bytes_on_wire <= 0) return 0;
  return steps * link.latency_ns + bytes_on_wire / (link.bandwidth_gbps * efficiency);  // GB/s = bytes/ns
}

Link ClusterLayout::pipeline_link(int p, int q) const {
  const long a = global_rank(0, 0, 0, p), b = global_rank(0, 0, 0, q);
  return same_node(a, b) ? nvlink() : nic();
}

Link ClusterLayout::group_link(long stride, int group) const {
  if (group <= 1) return nvlink();
  // The group's members are stride apart starting at a node boundary (rank 0's group).
  const long first = 0, last = stride * (group - 1);
  return same_node(first, last) ? nvlink() : nic();
}

Link ClusterLayout::ring_link(long stride, int group) const {
  Link link = group_link(stride, group);
  if (link.nvlink) return link;
  // The fewest members on any node the group touches (its ranks are stride apart from rank 0; a
  // partly filled last node, or a stride that does not divide the node, leaves some nodes fewer): the
  // ring crosses no faster than that node's NICs. The counts repeat every `stride` nodes at most, so
  // those and the last node are all that need counting.
  const long step = std::max(1L, stride), last = step * (group - 1), last_node = last / gpus_per_node_;
  const auto members_on = [&](long node) {
    const long lo = node * gpus_per_node_, hi = std::min(last, lo + gpus_per_node_ - 1);
    return hi / step - (lo + step - 1) / step + 1;  // multiples of step in [lo, hi]
  };
  long fewest = group;
  for (long node = 0; node <= std::min(last_node, step); ++node) {
    if (const long m = members_on(node); m > 0) fewest = std::min(fewest, m);
  }
  if (const long m = members_on(last_node); m > 0) fewest = std::min(fewest, m);
  link.bandwidth_gbps = std::min(gpu_.nvlink_bandwidth_gbps, static_cast<double>(fewest) * gpu_.nic_bandwidth_gbps);
  return link;
}

}  // namespace pipelab::sim
