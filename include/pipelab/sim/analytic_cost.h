// AnalyticCost: per-stage F / I / W times from ModelSpec x GpuSpec x ParallelConfig (docs/simulator.md,
// "analytic"). Every constant comes from the GPU and model specs; per-GPU sizes from LayerGeometry.
//   - GEMMs: FLOPs / (peak x efficiency(FLOPs of that GEMM call)), the GPU's size-dependent curve;
//     with FP8, the linear layers' GEMMs on the FP8 peak and curve plus their quantization traffic
//     per Transformer Engine recipe; attention core, router and LM head stay BF16;
//   - attention core (QK^T, PV; causal): the same roofline per (microbatch, head) call;
//   - norms, activations, residuals, RoPE, cross-entropy: bytes / (HBM bandwidth x efficiency);
//   - TP: all-reduce, or all-gather + reduce-scatter with sequence parallel, 4 per layer per pass,
//     on NVLink when the TP group fits a node; on MoE layers the dispatch and combine of the
//     configured dispatcher with their permutes (moe_dispatch.h), scaled by moe_busiest_load();
//     CP ring exchange of K/V hidden behind the attention core where it fits, or its all_gather
//     or a2a (Ulysses) communication, not overlapped; TP overlap (userbuffers) pairs each SP
//     collective with its GEMM;
//   - embedding on the first part, final norm + LM head + loss (+ MTP) on the last;
//   - recompute: selective re-runs the attention core in I, full re-runs the whole forward in I;
//   - kernel-launch gaps per kernel;
//   - F&B units (DualPipe; 1F1B with overlap_moe_expert_parallel_comm) hide EP traffic behind the
//     other half's compute, slowed by the SMs the dispatch kernels hold.
// P2P uses NVLink or the NIC by node placement; REDUCE_GRAD is the distributed optimizer's
// gradient reduce-scatter over DP x CP.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/sim/cluster_layout.h"
#include "pipelab/sim/cost_model.h"
#include "pipelab/sim/layer_geometry.h"
#include "pipelab/sim/memory_model.h"

namespace pipelab::sim {

/// One pass (F, I or W) of one microbatch through one stage, in ns, by component.
struct PassCost {
  double gemm_ns = 0;
  double attention_ns = 0;
  double elementwise_ns = 0;
  double tp_comm_ns = 0;
  double ep_comm_ns = 0;
  double ep_host_gap_ns = 0;  // of ep_comm_ns, the GPU idle after a forward's dispatch waits for the host (F; I when it recomputes the forward)
  // Of ep_comm_ns, what the shared experts hide beside the dispatch and the combine (--moe-shared-expert-overlap):
  // not in total_ns. F&B units pair the whole transfer with their compute instead.
  double ep_hidden_dispatch_ns = 0, ep_hidden_combine_ns = 0;
  double cp_comm_ns = 0;  // exposed part only
  double dp_comm_ns = 0;  // FSDP's per-layer weight gathers and gradient reduce-scatters, exposed part only
  double offload_ns = 0;  // the GPU waiting for activation CPU offloading's copies (F: offloads; I: reloads)
  double launch_ns = 0;
  // The GPU waiting for the host to launch the pass's kernels (sim/host_launches.h): the host's time
  // beyond the GPU's, set per stage once the layers are summed (host_ns is the host's time itself).
  double host_wait_ns = 0;
  double host_ns = 0;  // host CPU time launching the pass's kernels; not GPU time
  double expert_ns = 0;  // of the compute above, the MoE experts' share (MLP GEMMs, activation, permutes)
  double flops = 0;
  // I only: of the TP collectives the wgrad GEMMs run beside (TE's async input-gradient reduce-scatter),
  // the part they hide -- not in tp_comm_ns, and exposed when W does not follow I (without_wgrad).
  double tp_comm_hidden_by_wgrad_ns = 0;

  double compute_ns() const { return gemm_ns + attention_ns + elementwise_ns + launch_ns + host_wait_ns; }
  double ep_exposed_ns() const { return ep_comm_ns - ep_hidden_dispatch_ns - ep_hidden_combine_ns; }
  double total_ns() const { return compute_ns() + tp_comm_ns + ep_exposed_ns() + cp_comm_ns + dp_comm_ns + offload_ns; }
  /// This I run on its own, its W later (zero-bubble schedules): nothing beside it hides those collectives.
  PassCost without_wgrad() const {
    PassCost p = *this;
    p.tp_comm_ns += p.tp_comm_hidden_by_wgrad_ns;
    p.tp_comm_hidden_by_wgrad_ns = 0;
    return p;
  }
  PassCost& operator+=(const PassCost& o);
};

struct StageCost {
  PassCost f, i, w;
};

class AnalyticCost final : public CostModel {
 public:
  /// Shares `geometry` with the memory model of the same simulation; its config must be valid for
  /// its model.
  /// `memory` sizes the activations activation CPU offloading copies (as the memory model does).
  AnalyticCost(std::shared_ptr<const LayerGeometry> geometry, const GpuSpec& gpu, const PipelineShape& shape, MemoryOptions memory = {});
  /// A cost model on its own; `config` must be resolved (dp, seq_length set) and valid for `model`.
  AnalyticCost(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config, const PipelineShape& shape);

  std::int64_t duration_ns(int rank, const Action& a) const override;
  std::int64_t p2p_ns(std::int64_t bytes, int src_rank, int dst_rank) const override;
  std::int64_t boundary_bytes(int /*stage*/) const override { return boundary_bytes_; }
  double flops(const Action& a) const override;
  std::int64_t reduce_grad_bytes(int stage) const override;
  std::int64_t reduce_grad_ns(int rank, int stage) const override;
  /// With --overlap-grad-reduce, on the first stage (Megatron buckets only pp rank 0's first chunk): the
  /// last bucket's reduction (and a gather not overlapped), and its bytes; elsewhere all of it.
  std::int64_t reduce_grad_tail_ns(int rank, int stage) const override;
  std::int64_t reduce_grad_tail_bytes(int stage) const override;
  /// NCCL's kernels taken as holding TE userbuffers' 16 SMs (as for the bulk TP overlap; sm_carve_out.h).
  double dp_collective_compute_loss() const override;
  /// F, B, I, W: the pass's TP, EP, exposed CP and FSDP time; an F&B unit: both halves' TP, CP and
  /// FSDP, and as EP whatever else overlap_ns adds to the halves' compute (the EP it cannot hide).
  InActionComm in_action_comm(int rank, const Action& a) const override;
  /// Adam on the GPU is memory-bound: the bytes it moves per parameter over HBM (docs/simulator.md,
  /// "Optimizer step").
  std::int64_t optimizer_step_ns(double params) const override;
  /// The distributed optimizer's gather of the stage's updated weights (dense over DP x CP, routed
  /// experts over the expert-DP group) with --overlap-param-gather, bucketed as its gradients are.
  ParamGather param_gather(int rank, int stage) const override;

  const StageCost& stage(int s) const { return stages_[static_cast<std::size_t>(s)]; }
  /// F&B unit of (f_stage, b_stage), as Megatron's merged 1F1B runs a pair of model chunks
  /// (model_chunk_schedule_plan.py): F's embedding and B's loss alone; F's layer i beside B's layer
  /// n - 1 - i in four overlapped phases (F attention with B combine, B experts with F dispatch, F
  /// experts with B dispatch, B attention with F combine), each the longer of its compute (slowed by
  /// the SMs the EP kernels hold) and its transfer, an MTP module's layer among them; the layers one
  /// chunk has beyond the other alone; then F's loss (and MTP heads) and B's embedding alone; and both
  /// halves' TP and CP traffic.
  /// The unit takes at least the host's time launching both halves.
  double overlap_ns(int f_stage, int b_stage) const;
  /// The same without the host: the GPU's time of the pair, whatever the host's launches take.
  double overlap_gpu_ns(int f_stage, int b_stage) const;
  /// MoE stages' F, B, I, W: attention (all compute outside the experts), dispatch, experts, combine
  /// (in the backward's order for I and B), then the exposed TP/CP/FSDP traffic; F&B units: the four
  /// phases of overlap_ns, then both halves' TP/CP/FSDP traffic. Empty for stages without experts.
  std::vector<Phase> phases(int rank, const Action& a) const override;

 private:
  enum class Pass { F, I, W };  // forward, input-grad, weight-grad

  /// One of an F&B unit's overlapped phases, summed over the chunks' layers: one half's compute
  /// beside the other half's transfer.
  struct PairedPhase {
    const char* name;
    double compute_ns = 0, transfer_ns = 0;
    double ns = 0;  // per layer pair, the longer of the transfer and the compute slowed by the EP kernels' SMs (none while idle)
  };
  std::array<PairedPhase, 4> paired_phases(int f_stage, int b_stage) const;

  /// One layer's pass; `full_recompute`: I re-runs the layer's forward first.
  PassCost layer_pass(int layer, Pass pass, bool full_recompute) const;
  /// FSDP: one layer's weight all-gather (or, with `gradients`, its gradient reduce-scatter) over
  /// the data-parallel shards; 0 unless parameters are sharded.
  double fsdp_layer_ns(int layer, bool gradients) const;
  /// A stage's data-parallel gradient reduction (with the parameter gather when not overlapped), or
  /// with `tail` only the part after the stage's last gradient pass.
  double reduce_grad_parts(int stage, bool tail) const;
  /// The gradient bytes of the stage's last bucket (all of them where nothing is bucketed).
  double last_bucket_bytes(int stage) const;
  /// Whether Megatron's DDP splits the stage's gradients (and parameters) into buckets.
  bool bucketed(int stage) const;
  /// Parameters per DDP bucket: Megatron's default, max(40M, 1M x DP x CP), or the word embedding, which
  /// no bucket splits.
  double bucket_params() const;
  /// The stage's data-parallel groups: dense parameters over DP x CP (TP fastest in the rank order),
  /// routed experts over the expert-DP group, TP x CP x DP / (EP x ETP) ranks EP x ETP apart (Megatron's
  /// expert grid: ETP fastest, then EP); each with its parameters and ring link.
  struct DpGroup {
    double elems = 0;
    int ranks = 1;
    Link link;
  };
  std::array<DpGroup, 2> dp_groups(int stage) const;
  /// The all-gather of a stage's updated weights: its time and the bytes this GPU receives.
  struct GatherNs {
    double ns = 0, bytes = 0;
  };
  GatherNs stage_param_gather(int stage) const;
  /// The loss (final norm, LM head, cross-entropy) and/or `mtp_layers` MTP modules of a stage.
  PassCost output_pass(Pass pass, bool loss, int mtp_layers) const;
  PassCost embedding_pass(Pass pass) const;
  /// One layer's fused attention kernel (BF16) on `forward_flops` (the model's count, per GPU): its
  /// forward, and its backward, which does 2.5 x that work.
  struct AttentionNs {
    double forward = 0, backward = 0;
    // An unfused backend's launch gaps beyond one fused kernel's (its GEMMs, softmax and dropout).
    double forward_launch_ns = 0, backward_launch_ns = 0;
  };
  AttentionNs attention_ns(int layer, double forward_flops) const;
  /// One layer's TP communication time left exposed, in its F and its I.
  struct TpCommNs {
    double forward = 0, backward = 0;
    double hidden_by_wgrad = 0;  // of the backward's collectives, what the wgrad GEMMs hide (not in backward)
    // Of forward and backward, a MoE layer's shared experts' collectives, by the transfer they sit beside
    // under --moe-shared-expert-overlap: F's before FC1 (dispatch) and after FC2 (combine); I's around FC1's
    // gradient (dispatch) and before FC2's (combine).
    double shared_f_dispatch = 0, shared_f_combine = 0, shared_i_dispatch = 0, shared_i_combine = 0;
  };
  TpCommNs tp_comm_ns(int layer) const;
  /// A BF16 GEMM (router, LM head).
  double gemm_ns(double flops, double calls) const;
  /// Whether decoder layer `layer`'s linear layers run in FP8 or NVFP4 (Transformer Engine).
  bool quantized_layer(int layer) const;
  /// A linear layer's GEMM: FP8 or NVFP4 (the run's precision: its curve and peak) when `quantized`,
  /// else gemm_ns.
  double linear_ns(double flops, double calls, bool quantized) const;
  double memory_ns(double bytes) const;
  /// TP communication overlap (TE userbuffers), what a collective paired with a linear layer's GEMM of
  /// `flops` adds to the GEMM alone: split into `chunks` chunk GEMMs at `math_share` of its speed, with a
  /// transfer of `transfer_ns` beside each chunk after the first and `tail_ns` exposed at the end.
  double split_overlap_exposed_ns(double flops, bool quantized, int chunks, double transfer_ns, double tail_ns,
                                  double math_share) const;
  /// ... or run whole beside an independent GEMM of `gemm_ns` (bulk overlap).
  double bulk_overlap_exposed_ns(double gemm_ns, double comm_ns) const;
  double collective_ns(double bytes_on_wire, int steps, const Link& link) const;

  // Per stage, what duration_ns / flops / overlap_ns need, so the engine's hot path only looks up.
  /// One decoder layer's two halves as an F&B unit pairs them.
  struct OverlapHalves {
    double f_other_ns = 0, f_expert_ns = 0, f_ep_ns = 0, f_gap_ns = 0;  // F: compute outside the experts, the experts', dispatch + combine, of it the host gap
    double b_other_ns = 0, b_expert_ns = 0, b_ep_ns = 0;                // B = I + W, the same parts
  };
  struct LayerRun {
    OverlapHalves halves;
    int count = 0;
  };
  struct StageTotals {
    std::int64_t f_ns = 0, i_ns = 0, w_ns = 0, b_ns = 0;
    double f_flops = 0, i_flops = 0, w_flops = 0;
    double f_compute_ns = 0, b_compute_ns = 0;            // F, and I + W, without communication
    double f_exposed_comm_ns = 0, b_exposed_comm_ns = 0;  // TP + exposed CP and FSDP + the offload wait
    double f_ep_ns = 0, b_ep_ns = 0;                      // EP dispatch + combine (hidden by F&B overlap)
    double f_host_gap_ns = 0;                             // of f_ep_ns, the GPU idle after the dispatch's host wait
    double f_expert_ns = 0, b_expert_ns = 0;              // the experts' share of the compute
    double f_host_ns = 0, b_host_ns = 0;                  // the host's time launching the passes' kernels
    double f_host_wait_ns = 0, b_host_wait_ns = 0;        // of f/b_compute_ns, the GPU's wait for those launches
    // What an F&B unit pairs: the decoder layers in order, as runs of one kind, then each MTP module's
    // layer (a run of its own), and the compute outside them (embedding, loss, MTP heads), which runs alone.
    std::vector<LayerRun> layer_runs;
    double f_alone_ns = 0, b_alone_ns = 0;
  };

  std::shared_ptr<const LayerGeometry> geometry_;
  GpuSpec gpu_;
  ClusterLayout layout_;
  std::vector<StageCost> stages_;
  std::vector<StageTotals> totals_;
  std::vector<std::int64_t> stage_param_elems_;  // parameters per GPU of each stage
  std::vector<std::int64_t> stage_expert_elems_;  // of them, routed experts' (reduced over the expert-DP group)
  std::vector<double> stage_weight_bytes_;       // their weights' bytes (LayerGeometry::weight_bytes)
  std::int64_t boundary_bytes_ = 0;
  double peak_flops_per_ns_ = 0;  // BF16, x the sustained compute ratio
  double linear_flops_per_ns_ = 0;    // their peak, x the block-scaled FP8 GEMMs' factor (blockwise, mxfp8) and the sustained ratio
  double quantize_bytes_ = 0;         // HBM bytes per element of an unfused quantization
  double quantize_fused_bytes_ = 0;   // the same after TE's norm (fused into it, or with its amax, by recipe)
  double sp_gather_bytes_ = 0;        // bytes per element an SP all-gather of a quantized input moves
  double ep_compute_loss_ = 0;       // share of its speed compute loses beside the EP kernels (flex dispatcher; sm_carve_out.h)
};

}  // namespace pipelab::sim
