// MoE dispatch and combine cost; see moe_dispatch.h and docs/simulator.md, "MoE dispatch".
#include "pipelab/sim/moe_dispatch.h"

#include <algorithm>
#include <cmath>

#include "pipelab/sim/cluster_layout.h"
#include "pipelab/sim/layer_geometry.h"

namespace pipelab::sim {
namespace {

// SMs the flex dispatcher's kernels occupy: Megatron's default for DeepEP
// (moe_flex_dispatcher_num_sms: "None -> 20 (DeepEP's historical mcore default)",
// megatron/core/transformer/moe/token_dispatcher.py); for HybridEP what Megatron-Bridge's
// performance scripts set (moe_hybridep_num_sms=32, scripts/performance/utils/overrides.py).
constexpr int kDeepEpSms = 20;
constexpr int kHybridEpSms = 32;
static_assert(kDeepEpSms <= kMaxCommKernelSms && kHybridEpSms <= kMaxCommKernelSms, "GpuSpec::sm_count's lower bound (gpu_spec.h)");

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
  // The busiest rank receives moe_busiest_load() x the mean (capped or padded to the capacity); every
  // rank waits for it.
  const double skew = c.moe_busiest_load();
  const EpPlacement at = ep_placement(c.ep, etp, gpu.gpus_per_node);
  const double ep = at.ep, g = at.ranks_per_node;
  // The expert grid's groups start at a node boundary: ETP fastest, then EP (MoE parallel folding).
  const ClusterLayout layout(c, gpu);
  const double efficiency = gpu.collective_efficiency;

  if (c.moe_token_dispatcher_type == MoeDispatcher::kAllgather) {
    // All-gather every token (hidden states; probs and routing map are small) over EP x ETP, then
    // reduce-scatter in the combine: ring traffic T h (G - 1) per GPU, independent of k and of the
    // routing (only the experts' picking follows the busiest rank's load).
    const int group = c.ep * etp;
    const Link link = layout.ring_link(1, group);
    (link.nvlink ? out.nvlink_bytes : out.nic_bytes) = tokens * token_bytes * (group - 1);
    // The experts pick their tokens out of the gathered set and scatter them back.
    out.permute_bytes = skew * 2 * copies * token_bytes;
    out.comm_ns = collective_ns(out.nvlink_bytes + out.nic_bytes, group - 1, link, efficiency);
    return out;
  }
  if (c.moe_token_dispatcher_type == MoeDispatcher::kAlltoall) {
    // One copy per (token, expert) pair to a uniformly chosen EP rank: 1/ep stays, (g-1)/ep go
    // over NVLink, the rest through the NIC (NCCL cannot aggregate NICs for an all-to-all).
    out.nvlink_bytes = copies * token_bytes * (g - 1) / ep;
    out.nic_bytes = copies * token_bytes * (ep - g) / ep;
    // Global permute (read T, write k T), then a local sort by expert when a rank holds several, of the
    // rows gathered over ETP (etp x its own).
    out.permute_bytes = (tokens + copies) * token_bytes + (local_experts > 1 ? 2 * etp * copies * token_bytes : 0);
  } else {
    // flex: a token crosses the network once per distinct remote node among its k experts, and is
    // then forwarded over NVLink once per distinct destination GPU other than the receiving one.
    const double nodes_hit = expected_nodes_hit(model, at);
    const double remote_nodes = nodes_hit * (at.nodes - 1) / at.nodes;  // the own node is hit with p = hit / nodes
    const double distinct_ranks = expected_distinct(ep, k);
    const double own_node_others = distinct_ranks * (g - 1) / ep;
    const double forwarded = distinct_ranks * (ep - g) / ep * (g - 1) / g;
    out.nic_bytes = tokens * token_bytes * remote_nodes;
    out.nvlink_bytes = tokens * token_bytes * (own_node_others + forwarded);
    // The global permute is fused into the kernel; the local one to expert order (of the rows gathered
    // over ETP) is not.
    out.permute_bytes = 2 * etp * copies * token_bytes;
    out.comm_sms = c.moe_flex_dispatcher_backend == "hybridep" ? kHybridEpSms : kDeepEpSms;
  }
  out.nvlink_bytes *= skew;
  out.nic_bytes *= skew;
  out.permute_bytes *= skew;
  // Both links at once (one message latency each): the slower one decides.
  // NCCL's all-to-all runs inside the NVLink domain at its own measured share of the link (GpuSpec).
  const double nvlink_efficiency =
      c.moe_token_dispatcher_type == MoeDispatcher::kAlltoall ? gpu.nvlink_alltoall_efficiency() : efficiency;
  out.comm_ns = std::max(collective_ns(out.nvlink_bytes, 1, layout.nvlink(), nvlink_efficiency),
                         collective_ns(out.nic_bytes, 1, layout.nic(), efficiency));
  // Expert tensor parallelism: the dispatched copies are all-gathered over ETP after the transfer
  // (reduce-scattered in the combine): each rank's `copies` rows become etp x copies, a ring moving
  // (etp - 1) x its own rows through every rank's link.
  if (etp > 1) out.comm_ns += collective_ns(skew * copies * token_bytes * (etp - 1), etp - 1, layout.ring_link(1, etp), efficiency);
  return out;
}

}  // namespace pipelab::sim
