// MoE token dispatch and combine: the traffic and time of moving one microbatch's routed tokens to
// their experts and back, per MoE layer and per GPU, for each of Megatron's dispatchers
// (docs/simulator.md, "MoE dispatch"):
//   - alltoall (NCCL): one copy per (token, expert) pair; NVLink to the EP ranks of the same node
//     and the NIC to the others, concurrently; a global and a local permute around each side;
//   - allgather: every token all-gathered over the EP x ETP group and reduce-scattered back, k-free;
//   - flex (DeepEP, HybridEP): one copy per destination *node* across the network, forwarded over
//     NVLink once per destination GPU there; the global permute fused into the kernel; the kernels
//     occupy a published number of SMs.
// Experts are assumed spread evenly over the EP ranks and tokens routed uniformly (NVIDIA's tables
// force-balance the router); ParallelConfig::moe_busiest_load() scales the busiest rank's share.
#pragma once

#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab::sim {

/// Where the EP group sits: `ranks_per_node` of its `ep` ranks share a node (NVLink domain), and
/// it spans `nodes` of them. EP ranks are `stride` (= ETP) global ranks apart (MoE parallel folding).
struct EpPlacement {
  int ep = 1;
  int ranks_per_node = 1;
  int nodes = 1;
};
EpPlacement ep_placement(int ep, int stride, int gpus_per_node);

/// Expected number of distinct members, out of `n` equally likely, that `k` independent uniform
/// picks hit: n (1 - (1 - 1/n)^k). Used for DeepEP's deduplication per node and per GPU.
double expected_distinct(double n, double k);

/// Expected nodes, of the EP group's, that one token's top-k experts fall on: expected_distinct over
/// the nodes, or, with group-limited routing whose groups tile the nodes, the nodes holding any of
/// its moe_router_group_topk groups (DeepSeek-V3's node-limited routing: at most 4 nodes).
double expected_nodes_hit(const ModelSpec& model, const EpPlacement& placement);

/// One dispatch (or, equally, one combine) of one microbatch through one MoE layer, on one GPU.
struct MoeDispatchCost {
  double nvlink_bytes = 0;   // sent over NVLink to the other EP ranks of the node (forwarding included)
  double nic_bytes = 0;      // sent across nodes through this GPU's NIC
  double comm_ns = 0;        // the transfer: the slower of the two links (they run concurrently) + latency
  double permute_bytes = 0;  // HBM bytes of the permutes around it (read + write)
  int comm_sms = 0;          // SMs the communication kernels hold while they run; 0 = not modelled
};

/// `tokens`: tokens one GPU routes per microbatch (after sequence parallelism). Bytes are BF16
/// (NVIDIA's recipes dispatch and combine in BF16). Zero cost when ep == 1 and etp == 1.
MoeDispatchCost moe_dispatch_cost(const ModelSpec& model, const ParallelConfig& config, const GpuSpec& gpu,
                                  double tokens);

}  // namespace pipelab::sim
