// MoE dispatch and combine cost; see moe_dispatch.h and docs/simulator.md, "MoE dispatch".
#include "pipelab/sim/moe_dispatch.h"

#include <algorithm>
#include <cmath>

#include "pipelab/sim/layer_geometry.h"

namespace pipelab::sim {
namespace {

// SMs the flex dispatcher's kernels occupy: Megatron's default for DeepEP
// (moe_flex_dispatcher_num_sms: "None -> 20 (DeepEP's historical mcore default)",
// megatron/core/transformer/moe/token_dispatcher.py); for HybridEP what Megatron-Bridge's
// performance scripts set (moe_hybridep_num_sms=32, scripts/performance/utils/overrides.py).
constexpr int kDeepEpSms = 20;
constexpr int kHybridEpSms = 32;

}  // namespace

EpPlacement ep_placement(int ep, int stride, int gpus_per_node) {
  EpPlacement p;
  p.ep = std::max(1, ep);
  // EP ranks are `stride` apart from a node boundary: a node holds gpus_per_node / stride of them.
  p.ranks_per_node = std::clamp(std::max(1, gpus_per_node) / std::max(1, stride), 1, p.ep);
  p.nodes = (p.ep + p.ranks_per_node - 1) / p.ranks_per_node;
  return p;
}

double expected_distinct(double n, double k) {
  if (n <= 1) return std::min(n, k > 0 ? 1.0 : 0.0);
  return n * (1 - std::pow(1 - 1 / n, k));
}

double expected_nodes_hit(const ModelSpec& model, const EpPlacement& at) {
  const double nodes = at.nodes;
  const double unlimited = expected_distinct(nodes, model.moe_router_topk);
  const int groups = model.moe_router_num_groups, picked = model.moe_router_group_topk;
  if (groups <= 0 || groups < at.nodes || groups % at.nodes != 0) return unlimited;
  // Whole groups per node (experts are laid out contiguously over the EP ranks): a node is missed
  // when none of its groups is among the `picked`, drawn without replacement.
  const int per_node = groups / at.nodes;
  double missed = 1;
  for (int i = 0; i < picked; ++i) missed *= std::max(0.0, static_cast<double>(groups - per_node - i) / (groups - i));
  return std::min(unlimited, nodes * (1 - missed));
}

MoeDispatchCost moe_dispatch_cost(const ModelSpec& model, const ParallelConfig& c, const GpuSpec& gpu, double tokens) {
  MoeDispatchCost out;
  const int etp = c.expert_tp();
  if (c.ep <= 1 && etp <= 1) return out;
  const double k = model.moe_router_topk;
  const double token_bytes = model.hidden_size * static_cast<double>(kBf16Bytes);
  const double copies = tokens * k;  // (token, expert) pairs this GPU routes
  const double local_experts = std::max(1.0, static_cast<double>(model.num_experts) / c.ep);
  // The busiest rank receives moe_load_imbalance x the mean; every rank waits for it.
  const double skew = c.moe_load_imbalance;
  const EpPlacement at = ep_placement(c.ep, etp, gpu.gpus_per_node);
  const double ep = at.ep, g = at.ranks_per_node;
  const double nvlink_bw = gpu.nvlink_bandwidth_gbps * gpu.collective_efficiency;  // bytes/ns
  const double nic_bw = gpu.nic_bandwidth_gbps * gpu.collective_efficiency;
  double latency_ns = 0;

  switch (c.moe_token_dispatcher_type) {
    case MoeDispatcher::kAllgather: {
      // All-gather every token (hidden states; probs and routing map are small) over EP x ETP, then
      // reduce-scatter in the combine: ring traffic T h (G - 1) per GPU, independent of k.
      const int group = c.ep * etp;
      const bool one_node = group <= std::max(1, gpu.gpus_per_node);
      (one_node ? out.nvlink_bytes : out.nic_bytes) = tokens * token_bytes * (group - 1);
      latency_ns = (group - 1) * (one_node ? gpu.nvlink_latency_ns : gpu.nic_latency_ns);
      // The experts pick their tokens out of the gathered set and scatter them back.
      out.permute_bytes = 2 * copies * token_bytes;
      break;
    }
    case MoeDispatcher::kAlltoall: {
      // One copy per (token, expert) pair to a uniformly chosen EP rank: 1/ep stays, (g-1)/ep go
      // over NVLink, the rest through the NIC (NCCL cannot aggregate NICs for an all-to-all).
      out.nvlink_bytes = copies * token_bytes * (g - 1) / ep;
      out.nic_bytes = copies * token_bytes * (ep - g) / ep;
      // Global permute (read T, write k T), then a local sort by expert when a rank holds several.
      out.permute_bytes = (tokens + copies) * token_bytes + (local_experts > 1 ? 2 * copies * token_bytes : 0);
      break;
    }
    case MoeDispatcher::kFlex: {
      // A token crosses the network once per distinct remote node among its k experts, and is then
      // forwarded over NVLink once per distinct destination GPU other than the receiving one.
      const double nodes_hit = expected_nodes_hit(model, at);
      const double remote_nodes = nodes_hit * (at.nodes - 1) / at.nodes;  // the own node is hit with p = hit / nodes
      const double distinct_ranks = expected_distinct(ep, k);
      const double own_node_others = distinct_ranks * (g - 1) / ep;
      const double forwarded = distinct_ranks * (ep - g) / ep * (g - 1) / g;
      out.nic_bytes = tokens * token_bytes * remote_nodes;
      out.nvlink_bytes = tokens * token_bytes * (own_node_others + forwarded);
      // The global permute is fused into the kernel; the local one to expert order is not.
      out.permute_bytes = 2 * copies * token_bytes;
      out.comm_sms = c.moe_flex_dispatcher_backend == "hybridep" ? kHybridEpSms : kDeepEpSms;
      break;
    }
  }
  if (c.moe_token_dispatcher_type != MoeDispatcher::kAllgather) {
    if (out.nvlink_bytes > 0) latency_ns = std::max(latency_ns, gpu.nvlink_latency_ns);
    if (out.nic_bytes > 0) latency_ns = std::max(latency_ns, gpu.nic_latency_ns);
  }
  out.nvlink_bytes *= skew;
  out.nic_bytes *= skew;
  out.permute_bytes *= skew;
  double ns = latency_ns + std::max(out.nvlink_bytes / nvlink_bw, out.nic_bytes / nic_bw);
  // Expert tensor parallelism (alltoall, flex): the dispatched copies are all-gathered over ETP
  // after the transfer (reduce-scattered in the combine); the allgather dispatcher's group covers it.
  if (etp > 1 && c.moe_token_dispatcher_type != MoeDispatcher::kAllgather) {
    const bool one_node = etp <= std::max(1, gpu.gpus_per_node);
    const double bytes = skew * copies * token_bytes * (etp - 1) / etp;
    ns += (etp - 1) * (one_node ? gpu.nvlink_latency_ns : gpu.nic_latency_ns) + bytes / (one_node ? nvlink_bw : nic_bw);
  }
  out.comm_ns = ns;
  return out;
}

}  // namespace pipelab::sim
