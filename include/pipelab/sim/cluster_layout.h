// Where each GPU of a (TP, CP, DP, PP) layout sits: Megatron's rank order (TP fastest, then CP,
// then DP, then PP), packed gpus_per_node to a node. Decides which links groups and pipeline
// neighbours use: NVLink within a node, the scale-out NIC across nodes.
#pragma once

#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab::sim {

struct Link {
  double bandwidth_gbps = 0;  // GB/s per direction
  double latency_ns = 0;
  bool nvlink = true;
};

/// A collective's time: `steps` latency hops, then `bytes_on_wire` through each GPU's link at
/// `efficiency` of its bandwidth (0 when nothing moves).
double collective_ns(double bytes_on_wire, double steps, const Link& link, double efficiency);

class ClusterLayout {
 public:
  ClusterLayout(const ParallelConfig& config, const GpuSpec& gpu);

  /// Global rank of the GPU with these coordinates.
  long global_rank(int tp_rank, int cp_rank, int dp_rank, int pp_rank) const;
  bool same_node(long a, long b) const { return a / gpus_per_node_ == b / gpus_per_node_; }
  /// Link between the pipeline ranks p and q (same TP/CP/DP coordinates).
  Link pipeline_link(int p, int q) const;
  /// Link a collective over `group` consecutive-stride ranks uses: NVLink when the whole group
  /// (spanning `stride * group` global ranks) fits in one node, else the NIC (the ring's slowest hop).
  Link group_link(long stride, int group) const;
  /// Link a ring collective (all-reduce, all-gather, reduce-scatter) over that group runs at: across
  /// nodes NCCL builds one ring per NIC and splits the data over them through NVLink, so a node's
  /// members together cross at their NICs' summed bandwidth, at most NVLink's; the node with the fewest
  /// members sets the pace (docs/simulator.md,
  /// "Collectives across nodes"). Point-to-point and all-to-all traffic keep group_link.
  Link ring_link(long stride, int group) const;
  Link nvlink() const { return {gpu_.nvlink_bandwidth_gbps, gpu_.nvlink_latency_ns, true}; }
  Link nic() const { return {gpu_.nic_bandwidth_gbps, gpu_.nic_latency_ns, false}; }

 private:

  ParallelConfig config_;
  GpuSpec gpu_;
  long gpus_per_node_;
};

}  // namespace pipelab::sim
