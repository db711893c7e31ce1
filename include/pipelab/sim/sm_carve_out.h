// What compute loses while communication kernels hold some of the GPU's SMs beside it (DeepEP and
// HybridEP's dispatch and combine, Transformer Engine's userbuffers TP overlap, NCCL's data-parallel
// collectives). More than the SMs' share: the compute's waves no longer fill the GPU evenly and the
// communication kernels' memory traffic competes with it. The Megatron-Core MoE report measured it once
// ("Scalable Training of Mixture-of-Experts Models with Megatron Core", arXiv 2603.07685, §4.2.3, "SM
// Carve-out Overhead"): DeepEP's 20 SMs of an H100's 132 (15.2 %) cost the GEMMs beside them "roughly 20%"
// of their efficiency, 1.32 times the share. pipelab applies that ratio to every carve-out it models, on
// every GPU (measured on H100 only; docs/simulator.md, "SMs held by communication kernels"). It reads the
// report's "efficiency overhead" as the GEMMs keeping 80 % of their throughput; read as 20 % more time, the
// ratio would be 1.10.
#pragma once

namespace pipelab::sim {

/// The report's point: GEMM efficiency lost per unit of SM share held by the communication kernels.
constexpr double kSmCarveOutCost = 0.20 / (20.0 / 132.0);

/// The share of its throughput compute loses while kernels hold `held_sms` of the GPU's `sm_count`:
/// kSmCarveOutCost x the SMs' share, and never so much that the SMs left run below 1 / kSmCarveOutCost
/// of their speed (a bound only GPUs with few SMs reach). 0 when sm_count is 0 (unknown), nothing is held, or
/// the kernels would hold every SM (a spec GpuSpec::validate() refuses).
double sm_carve_out_loss(double held_sms, int sm_count);

}  // namespace pipelab::sim
