// MoE dispatch and combine traffic against hand calculations (moe_dispatch.h).
#include <gtest/gtest.h>

#include <cmath>

#include "pipelab/profiles/presets.h"
#include "pipelab/sim/moe_dispatch.h"

namespace pipelab {
namespace {

// Round numbers: 400 GB/s NVLink, 50 GB/s NIC, 8 GPUs a node, links at full speed.
GpuSpec round_gpu() {
  GpuSpec g = gpu_preset("h100-sxm");
  g.nvlink_bandwidth_gbps = 400;
  g.nic_bandwidth_gbps = 50;
  g.gpus_per_node = 8;
  g.nvlink_latency_ns = 1000;
  g.nic_latency_ns = 5000;
  g.collective_efficiency = 1.0;
  return g;
}

ParallelConfig moe_layout(int ep, MoeDispatcher dispatcher, int etp = 1) {
  ParallelConfig c;
  c.ep = ep;
  c.etp = etp;
  c.moe_token_dispatcher_type = dispatcher;
  return c;
}

constexpr double kTokens = 4096;

TEST(MoeDispatch, ExpectedDistinctPicks) {
  EXPECT_DOUBLE_EQ(sim::expected_distinct(1, 8), 1);
  EXPECT_NEAR(sim::expected_distinct(2, 8), 2 * (1 - std::pow(0.5, 8)), 1e-12);
  EXPECT_NEAR(sim::expected_distinct(8, 1), 1, 1e-12);  // one pick hits one member
}

TEST(MoeDispatch, PlacementCountsRanksPerNode) {
  EXPECT_EQ(sim::ep_placement(16, 1, 8).ranks_per_node, 8);
  EXPECT_EQ(sim::ep_placement(16, 1, 8).nodes, 2);
  EXPECT_EQ(sim::ep_placement(8, 2, 8).ranks_per_node, 4);  // EP ranks two apart (ETP 2)
  EXPECT_EQ(sim::ep_placement(8, 2, 8).nodes, 2);
  EXPECT_EQ(sim::ep_placement(4, 1, 8).nodes, 1);
}

// NCCL all-to-all, EP16 over two nodes: each of the T k copies goes to a uniform rank; 7 of 16 over
// NVLink, 8 of 16 through the NIC, concurrently; the NIC is the slower.
TEST(MoeDispatch, AlltoallSplitsCopiesByLinkByHand) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");  // h 2048, top-8, 128 experts
  const auto d = sim::moe_dispatch_cost(m, moe_layout(16, MoeDispatcher::kAlltoall), round_gpu(), kTokens);
  const double copy = 2048.0 * 2;  // bf16 bytes of one token
  EXPECT_DOUBLE_EQ(d.nvlink_bytes, kTokens * 8 * copy * 7 / 16);
  EXPECT_DOUBLE_EQ(d.nic_bytes, kTokens * 8 * copy * 8 / 16);
  EXPECT_DOUBLE_EQ(d.comm_ns, 5000 + d.nic_bytes / 50);
  // Global permute (read T, write T k) and the local sort of 8 local experts (read + write T k).
  EXPECT_DOUBLE_EQ(d.permute_bytes, (kTokens + kTokens * 8) * copy + 2 * kTokens * 8 * copy);
  EXPECT_EQ(d.comm_sms, 0);
}

// DeepEP: one copy per destination node across the network. Two nodes, top-8: a token needs the
// other node with p = 1 - (1/2)^8, against 8 x 8/16 = 4 copies through the NIC with NCCL.
// Expert tensor parallelism (ETP 2, EP 4 on one node): after the all-to-all each rank all-gathers its
// T k copies over the ETP pair, a ring moving (2 - 1) x its own rows; the local sort permutes 2 x them.
TEST(MoeDispatch, EtpGatherMovesTheOtherRanksRowsByHand) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");  // h 2048, top-8, 128 experts
  const GpuSpec gpu = round_gpu();
  const auto without = sim::moe_dispatch_cost(m, moe_layout(4, MoeDispatcher::kAlltoall, 1), gpu, kTokens);
  const auto with = sim::moe_dispatch_cost(m, moe_layout(4, MoeDispatcher::kAlltoall, 2), gpu, kTokens);
  const double copies = kTokens * 8 * 2048.0 * 2;  // bf16 bytes of the T k copies
  EXPECT_DOUBLE_EQ(with.comm_ns - without.comm_ns, 1000 + copies * (2 - 1) / 400);
  EXPECT_DOUBLE_EQ(with.permute_bytes - without.permute_bytes, 2 * (2 - 1) * copies);
}

TEST(MoeDispatch, FlexSendsOneCopyPerRemoteNode) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  const auto flex = sim::moe_dispatch_cost(m, moe_layout(16, MoeDispatcher::kFlex), round_gpu(), kTokens);
  const auto a2a = sim::moe_dispatch_cost(m, moe_layout(16, MoeDispatcher::kAlltoall), round_gpu(), kTokens);
  const double copy = 2048.0 * 2;
  EXPECT_NEAR(flex.nic_bytes, kTokens * copy * (1 - std::pow(0.5, 8)), 1e-6 * flex.nic_bytes);
  EXPECT_LT(flex.nic_bytes, a2a.nic_bytes / 3.9);
  EXPECT_LT(flex.comm_ns, a2a.comm_ns);
  EXPECT_EQ(flex.comm_sms, 20);  // Megatron's DeepEP default
  ParallelConfig hybrid = moe_layout(16, MoeDispatcher::kFlex);
  hybrid.moe_flex_dispatcher_backend = "hybridep";
  EXPECT_EQ(sim::moe_dispatch_cost(m, hybrid, round_gpu(), kTokens).comm_sms, 32);  // Megatron-Bridge's perf scripts
}

// DeepSeek-V3's node-limited routing (8 groups, top-4 groups) over EP64 on 8 nodes: a token reaches
// exactly 4 nodes, of which 4 x 7/8 are remote on average; without the limit, 8 (1 - (7/8)^8).
TEST(MoeDispatch, GroupLimitedRoutingCapsTheNodesAToken) {
  ModelSpec m = model_preset("deepseek-v3");
  const sim::EpPlacement at = sim::ep_placement(64, 1, 8);
  EXPECT_NEAR(sim::expected_nodes_hit(m, at), 4.0, 1e-12);
  m.moe_router_num_groups = 0;
  m.moe_router_group_topk = 0;
  EXPECT_NEAR(sim::expected_nodes_hit(m, at), 8 * (1 - std::pow(7.0 / 8, 8)), 1e-12);
}

// The allgather dispatcher moves every token to every EP x ETP rank: independent of top-k.
TEST(MoeDispatch, AllgatherTrafficIsIndependentOfTopK) {
  ModelSpec m = model_preset("qwen3-30b-a3b");
  const ParallelConfig c = moe_layout(4, MoeDispatcher::kAllgather, 2);
  const auto k8 = sim::moe_dispatch_cost(m, c, round_gpu(), kTokens);
  m.moe_router_topk = 2;
  const auto k2 = sim::moe_dispatch_cost(m, c, round_gpu(), kTokens);
  EXPECT_DOUBLE_EQ(k8.nvlink_bytes, kTokens * 2048 * 2 * 7);
  EXPECT_DOUBLE_EQ(k8.nvlink_bytes, k2.nvlink_bytes);
  EXPECT_DOUBLE_EQ(k8.comm_ns, 7 * 1000 + k8.nvlink_bytes / 400);
}

TEST(MoeDispatch, LoadImbalanceScalesTheBusiestRanksTraffic) {
  const ModelSpec m = model_preset("qwen3-30b-a3b");
  ParallelConfig c = moe_layout(16, MoeDispatcher::kAlltoall);
  const auto even = sim::moe_dispatch_cost(m, c, round_gpu(), kTokens);
  c.moe_load_imbalance = 1.5;
  const auto skewed = sim::moe_dispatch_cost(m, c, round_gpu(), kTokens);
  EXPECT_DOUBLE_EQ(skewed.nic_bytes, 1.5 * even.nic_bytes);
  EXPECT_DOUBLE_EQ(skewed.permute_bytes, 1.5 * even.permute_bytes);
  EXPECT_DOUBLE_EQ(skewed.comm_ns - 5000, 1.5 * (even.comm_ns - 5000));
}

TEST(MoeDispatch, NothingMovesWithoutExpertParallelism) {
  const auto d = sim::moe_dispatch_cost(model_preset("qwen3-30b-a3b"), moe_layout(1, MoeDispatcher::kAlltoall), round_gpu(), kTokens);
  EXPECT_EQ(d.comm_ns, 0);
  EXPECT_EQ(d.nic_bytes + d.nvlink_bytes + d.permute_bytes, 0);
}

// Megatron-Core MoE's Table 7 (arXiv 2603.07685): one dispatch of 4096 tokens of DeepSeek-V3 (hidden 7168,
// 256 experts, top-8; its node-limited routing) per GPU, HybridEP and NCCL all-to-all, EP 8 to 64, on the
// shipped presets, all within 15 %. HybridEP's rows and NCCL's across nodes were fitted to nothing; the
// NCCL all-to-all's NVLink efficiency of the presets is the table's EP 8 point on each GPU
// (alltoall_nvlink_efficiency, docs/profiles.md), so NCCL's GB200 EP 16-64 rows check the rest of it.
TEST(MoeDispatch, MatchesMegatronCoreMeasuredDispatchLatencies) {
  struct Measured {
    const char* gpu;
    MoeDispatcher dispatcher;
    double us[4];  // EP 8, 16, 32, 64
  };
  const Measured table[] = {{"h100-sxm", MoeDispatcher::kFlex, {661, 1485, 3064, 4626}},
                            {"h100-sxm", MoeDispatcher::kAlltoall, {1265, 5774, 8059, 9164}},
                            {"gb200", MoeDispatcher::kFlex, {391, 578, 612, 675}},
                            {"gb200", MoeDispatcher::kAlltoall, {735, 743, 769, 930}}};
  const ModelSpec m = model_preset("deepseek-v3");
  for (const Measured& row : table) {
    for (int i = 0; i < 4; ++i) {
      ParallelConfig c = moe_layout(8 << i, row.dispatcher);
      c.moe_flex_dispatcher_backend = "hybridep";
      const double us = sim::moe_dispatch_cost(m, c, gpu_preset(row.gpu), 4096).comm_ns / 1e3;
      EXPECT_NEAR(us / row.us[i], 1, 0.15) << row.gpu << " ep" << (8 << i) << ": " << us << " us against " << row.us[i];
    }
  }
}

}  // namespace
}  // namespace pipelab
