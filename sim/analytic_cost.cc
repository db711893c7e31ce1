// Analytic cost model; see analytic_cost.h and docs/simulator.md.
#include "pipelab/sim/analytic_cost.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "pipelab/base/limits.h"
#include "pipelab/profiles/flops.h"
#include "pipelab/sim/activation_offload.h"
#include "pipelab/sim/cross_entropy.h"
#include "pipelab/sim/expert_bias.h"
#include "pipelab/sim/host_launches.h"
#include "pipelab/sim/moe_dispatch.h"
#include "pipelab/sim/sm_carve_out.h"
#include "pipelab/sim/stage_layers.h"
#include "pipelab/sim/unfused_attention.h"

namespace pipelab::sim {
namespace {

// Of one dispatch and one combine, what the shared experts beside them hide (--moe-shared-expert-overlap).
struct SharedBeside {
  double dispatch_ns = 0, combine_ns = 0;
};

// Kernels launched per layer per pass (norm, QKV, RoPE, attention, out-proj, residual, norm, up,
// activation, down, residual, plus TP collectives): the launch gap each adds on the GPU.
constexpr double kKernelsPerLayerPass = 14;

// Fused attention's backward does 2.5x its forward's matmul work: it recomputes the scores QK^T, then
// dV = P^T dO, dP = dO V^T, dQ = dS K and dK = dS^T Q (5 matmuls against the forward's 2; Dao 2023,
// FlashAttention-2, Algorithm 2). FlashAttention's benchmarks count its backward FLOPs the same way,
// which is what the backward points of attention_efficiency_curve are measured against.
constexpr double kAttentionBackwardWork = 2.5;

// FP8 (Transformer Engine): bytes of HBM traffic per element to quantize a BF16 tensor into the FP8
// row-wise and (Hopper) column-wise copies: delayed scaling reads it once (2) and writes both copies
// (1 + 1); current/block scaling reads it twice (amax pass, then cast); after TE's norm, less by recipe
// (quantize_fused_bytes_, the constructor). TE performance_considerations.rst.
constexpr double kQuantizeDelayedBytes = 4;
constexpr double kQuantizeCurrentBytes = 6;
// NVFP4 (16-value blocks with E4M3 scales, a per-tensor amax, the random Hadamard transform on the
// wgrad inputs): its quantization costs 1.152x current scaling's in TE's own benchmark, B300, the 5B
// shapes, autocast minus pre-quantized per layer: 6.453 - 3.764 ms (NVFP4) against 9.147 - 6.812 ms
// (FP8 current scaling) (TE docs/examples/gemm_profiling, the same table as kMxfp8GemmFactor).
constexpr double kQuantizeNvfp4Bytes = kQuantizeCurrentBytes * (6.453 - 3.764) / (9.147 - 6.812);
// The gated MLP's activation as Megatron runs it: bias_swiglu_impl (megatron/core/fusions/
// fused_bias_swiglu.py, torch.compile'd by jit_fuser; Megatron-Bridge's Llama, DeepSeek and gpt-oss
// bridges set bias_activation_fusion; without it Megatron runs eager PyTorch ops, which the same
// benchmark puts at 0.31 of peak forward and 0.27 backward, timed here as the fused path) writes BF16,
// and its backward computes both halves and concatenates them. MoE experts run
// weighted_bias_swiglu_impl (the same kernels times the routing weights), timed alike. Measured on
// H100 at Megatron's call shape (8192 tokens, per-rank FFN F = 8192-32768; Liger-Kernel
// benchmark/data/all_benchmark_data.csv @ead96b61, kernel megatron_swiglu, provider megatron):
// forward 0.220-0.859 ms for 3F BF16 elements per token (read both halves, write the product): 0.55 of
// peak HBM bandwidth; forward+backward minus forward, less the benchmark's out.sum() (F per token read,
// ~0.05 ms at F = 8192), for 5F per token (read the gradient and both halves, write both): 0.196. Measured
// fractions of peak, not of memory_bandwidth_efficiency: a tuned kernel moving the same bytes (Liger's)
// reaches 0.88-0.91 forward in the same table. Other GPUs: the same fractions, unmeasured there.
constexpr double kMegatronSwigluForwardBandwidth = 0.55;
constexpr double kMegatronSwigluBackwardBandwidth = 0.196;
// Extra kernels per layer per pass for the unfused quantizations and amax updates.
constexpr double kFp8KernelsPerLayerPass = 4;
// TP communication overlap (TE userbuffers, --tp-comm-overlap), as TE's initialize_ub sets it up
// (transformer_engine/pytorch/module/base.py): the "pipeline" reduce-scatters run in 4 chunks on 16
// SMs the GEMM leaves them (set_sm_margin); the "bulk" collectives of the backward run beside an
// independent GEMM on a few SMs it does not leave (Megatron-Bridge's userbuffers_* configs give them
// 2-24 with set_sm_margin=False; TE's default count is 16).
constexpr int kTpOverlapPipelineSplits = 4;
constexpr double kTpOverlapPipelineSms = 16;
constexpr double kTpOverlapBulkSms = 16;
static_assert(kTpOverlapPipelineSms <= kMaxCommKernelSms && kTpOverlapBulkSms <= kMaxCommKernelSms, "GpuSpec::sm_count's lower bound");
// Block-scaled (1x128 / 128x128) GEMMs against per-tensor ones: TE gemm_profiling.rst, H200, 5B-model
// shapes, autocast: 20.285 ms (current scaling) / 22.882 ms (blockwise) per layer.
constexpr double kBlockwiseGemmFactor = 20.285 / 22.882;
// MXFP8 (1x32 blocks, E8M0 scales) GEMMs against per-tensor ones: TE gemm_profiling.rst, B300, the
// same shapes, pre-quantized inputs: 6.812 ms (current scaling) / 7.161 ms (MXFP8) per layer.
constexpr double kMxfp8GemmFactor = 6.812 / 7.161;

// CP's p2p ring (TE AttnFuncWithCPAndKVP2P, context_parallel.py; sequence in 2P load-balanced chunks),
// the work a rank does around its attention kernels, in HBM bytes (BF16, read + write) and kernels.
// q, k, v: the rank's Q, K and V elements. Rank r of P runs the diagonal step causal, r "lower" steps
// (all its queries against half the keys) and P-1-r "upper" ones (half its queries against all keys).
// F: K and V packed into one send buffer (torch.cat), then one merge per step into the BF16 output
// (the first a copy, a lower step a full read-modify-write, an upper one half of it) and one LSE
// correction per step (FP32, 1/head_dim of the output: its bytes left out). I: K/V copied into the
// ring buffer (and, but on the last rank, the LSE made contiguous), then dQ and dK/dV added per step
// (copy, half or full add; rank 0's diagonal step a half add and a half copy each), dK/dV into the
// buffer that carries them around the ring. The ring couples the ranks step by step, so the busiest
// rank's work is charged: the one whose bytes at `ns_per_byte` and kernels at `launch_ns` take longest.
struct CpRingWork {
  double forward_bytes = 0, backward_bytes = 0;
  int forward_kernels = 0, backward_kernels = 0;
};

CpRingWork cp_ring_work(int ring, double q, double k, double v, double ns_per_byte, double launch_ns) {
  CpRingWork out;
  if (ring <= 1) return out;
  const double kv = k + v;
  const auto busier = [&](double bytes, int kernels, double& out_bytes, int& out_kernels) {
    if (bytes * ns_per_byte + kernels * launch_ns > out_bytes * ns_per_byte + out_kernels * launch_ns) {
      out_bytes = bytes;
      out_kernels = kernels;
    }
  };
  for (int r = 0; r < ring; ++r) {
    const int lower = r, upper = ring - 1 - r;
    busier(4 * kv + 4 * q + 6 * q * lower + 3 * q * upper, 2 * ring + 1, out.forward_bytes, out.forward_kernels);
    double dq = 0, dkv = 0;
    int kernels = 0;
    if (r < ring - 1) {
      dq = 2 * q + 3 * q * (upper - 1) + 5 * q + 6 * q * lower;
      dkv = kv * (4 + 6 * (upper - 1) + 3 * lower + (r == 0 ? 5 : 6));
      kernels = 2 + (ring + 1) + 2 * ring + (r == 0 ? 2 : 0);
    } else {
      dq = 4 * q + 6 * q * (ring - 1);
      dkv = kv * (2 + 3 * (ring - 2) + 6);
      kernels = 1 + ring + 2 * ring;
    }
    busier(4 * kv + dq + dkv, kernels, out.backward_bytes, out.backward_kernels);
  }
  return out;
}

}  // namespace

PassCost& PassCost::operator+=(const PassCost& o) {
  dp_comm_ns += o.dp_comm_ns;
  offload_ns += o.offload_ns;
  gemm_ns += o.gemm_ns;
  attention_ns += o.attention_ns;
  elementwise_ns += o.elementwise_ns;
  tp_comm_ns += o.tp_comm_ns;
  ep_comm_ns += o.ep_comm_ns;
  ep_host_gap_ns += o.ep_host_gap_ns;
  ep_hidden_dispatch_ns += o.ep_hidden_dispatch_ns;
  ep_hidden_combine_ns += o.ep_hidden_combine_ns;
  cp_comm_ns += o.cp_comm_ns;
  launch_ns += o.launch_ns;
  host_wait_ns += o.host_wait_ns;
  host_ns += o.host_ns;
  tp_comm_hidden_by_wgrad_ns += o.tp_comm_hidden_by_wgrad_ns;
  expert_ns += o.expert_ns;
  flops += o.flops;
  return *this;
}

AnalyticCost::AnalyticCost(std::shared_ptr<const LayerGeometry> geometry, const GpuSpec& gpu, const PipelineShape& shape, MemoryOptions memory)
    : geometry_(std::move(geometry)), gpu_(gpu), layout_(geometry_->config(), gpu) {
  const LayerGeometry& g = *geometry_;
  const ParallelConfig& cfg = g.config();
  // Decoder GEMMs run at the configured precision; attention core, router, LM head stay BF16.
  // Tensor-core work runs at the clock the GPU holds at its power limit, below the short runs the
  // efficiency curves were measured in (GpuSpec::sustained_compute_ratio).
  const double sustained = gpu.sustained_compute_ratio;
  peak_flops_per_ns_ = gpu.peak_tflops(Precision::kBf16) * 1e3 * sustained;  // TFLOP/s -> FLOP/ns
  if (cfg.precision == Precision::kFp8) {
    const double block_scaled = cfg.fp8_recipe == Fp8Recipe::kBlockwise ? kBlockwiseGemmFactor
                                : cfg.fp8_recipe == Fp8Recipe::kMxfp8   ? kMxfp8GemmFactor
                                                                        : 1.0;
    linear_flops_per_ns_ = gpu.peak_tflops(Precision::kFp8) * 1e3 * block_scaled * sustained;
    quantize_bytes_ = cfg.fp8_recipe == Fp8Recipe::kDelayed ? kQuantizeDelayedBytes : kQuantizeCurrentBytes;
  } else if (cfg.precision == Precision::kNvfp4) {
    // The FP4 curve is measured on block-scaled NVFP4 GEMMs: no factor on top.
    linear_flops_per_ns_ = gpu.peak_tflops(Precision::kNvfp4) * 1e3 * sustained;
    quantize_bytes_ = kQuantizeNvfp4Bytes;
  }
  // The norm before QKV and FC1 (TE's LayerNormLinear) quantizes its output as the recipe allows (TE
  // csrc/extensions/normalization.cpp): delayed scaling in the norm kernel itself (FULLY_FUSED: only the
  // row- and column-wise writes); current (tensorwise) scaling takes the amax in the norm and casts after
  // (FUSED_NORM_AMAX_FP8: the cast reads the BF16 output and writes both copies, no amax pass); MXFP8,
  // blockwise and NVFP4 with the random Hadamard transform (the recipe's default) quantize on their own
  // (UNFUSED; the norm's BF16 output is already in norm_ns).
  quantize_fused_bytes_ = cfg.precision == Precision::kFp8 && cfg.fp8_recipe == Fp8Recipe::kDelayed      ? 2 * quantized_bytes(cfg.precision)
                          : cfg.precision == Precision::kFp8 && cfg.fp8_recipe == Fp8Recipe::kTensorwise ? kBf16Bytes + 2 * quantized_bytes(cfg.precision)
                                                                                                          : quantize_bytes_;
  // SP all-gathers of a quantized input: per-tensor FP8 (delayed, tensorwise) gathers the row-wise copy
  // only and transposes after; MXFP8, block scaling and NVFP4 gather both copies (TE
  // supports_only_rowwise_all_gather: true for Float8Quantizer and Float8CurrentScalingQuantizer only).
  const bool rowwise_gather = cfg.precision == Precision::kFp8 && (cfg.fp8_recipe == Fp8Recipe::kDelayed || cfg.fp8_recipe == Fp8Recipe::kTensorwise);
  sp_gather_bytes_ = quantized_bytes(cfg.precision) * (rowwise_gather ? 1 : 2);
  // A decoder layer's cost depends on the layer only through its kind (MoE or dense, windowed
  // attention or not, its linear layers quantized or not) and whether it is fully recomputed: each
  // kind is costed once.
  std::array<std::optional<StageCost>, 16> kinds;
  const auto layer_cost = [&](int l, bool full) -> const StageCost& {
    const ModelSpec& m = g.model();
    std::optional<StageCost>& kind =
        kinds[(quantized_layer(l) ? 8 : 0) + (m.is_moe_layer(l) ? 4 : 0) + (m.is_window_attention_layer(l) ? 2 : 0) + (full ? 1 : 0)];
    if (!kind) kind = StageCost{layer_pass(l, Pass::F, full), layer_pass(l, Pass::I, full), layer_pass(l, Pass::W, full)};
    return *kind;
  };
  // Activation CPU offloading (pp = 1: one stage of every layer): its copies' bytes, as the memory
  // model sizes what a layer keeps, over the host link (GB/s = bytes/ns).
  const std::optional<MemoryModel> offload_sizes =
      cfg.cpu_offloading_num_layers > 0 ? std::optional<MemoryModel>(std::in_place, geometry_, shape, memory) : std::nullopt;
  std::vector<OffloadLayer> offload_layers;
  struct HostGpu {
    double host_ns = 0, gpu_ns = 0;
  };
  // The GPU waits for what the host needs beyond the GPU's own time.
  const auto host_wait = [](double host_ns, double gpu_ns) { return host_ns > gpu_ns ? host_ns - gpu_ns : 0.0; };
  for (const LayerRange& range : stage_layers(g.model(), cfg, shape)) {
    StageCost c;
    HostGpu ahead_f;  // the forwards the host can run ahead across
    offload_layers.clear();
    std::vector<LayerRun> runs;
    const StageCost* run_kind = nullptr;  // a run is consecutive layers of one costed kind
    // One transformer layer of the stage: a decoder layer, or an MTP module's (shaped like the last), which
    // starts a run of its own.
    const auto add_layer = [&](int l, bool full, bool own_run) -> const StageCost& {
      const StageCost& layer = layer_cost(l, full);
      c.f += layer.f;
      c.i += layer.i;
      c.w += layer.w;
      if (&layer == run_kind && !own_run) {
        ++runs.back().count;
      } else {
        run_kind = own_run ? nullptr : &layer;
        PassCost b = layer.i;
        b += layer.w;
        runs.push_back({{layer.f.compute_ns() - layer.f.expert_ns, layer.f.expert_ns, layer.f.ep_comm_ns, layer.f.ep_host_gap_ns,
                         b.compute_ns() - b.expert_ns, b.expert_ns, b.ep_comm_ns},
                        1});
      }
      // The host cannot launch across a dispatch's wait for it: a MoE layer's forward is its own
      // stretch, the GPU waiting where its host time exceeds the GPU's (less the gap already charged).
      if (g.model().is_moe_layer(l) && cfg.moe_dispatch_waits_for_host()) {
        c.f.host_wait_ns += host_wait(layer.f.host_ns, layer.f.total_ns() - layer.f.ep_host_gap_ns);
      } else {
        ahead_f.host_ns += layer.f.host_ns;
        ahead_f.gpu_ns += layer.f.total_ns();
      }
      return layer;
    };
    for (int i = 0; i < range.count; ++i) {
      // Full recompute: every layer (uniform), or a chunk's first recompute_num_layers (block).
      const bool full = cfg.recompute == Recompute::kFull &&
                        (cfg.recompute_method == RecomputeMethod::kUniform || cfg.recompute_num_layers == 0 ||
                         i < cfg.recompute_num_layers);
      const StageCost& layer = add_layer(range.first + i, full, false);
      if (offload_sizes) {
        const int l = range.first + i;
        const double copy = l < cfg.cpu_offloading_num_layers
                                ? static_cast<double>(offload_sizes->layer_activation_bytes(l)) / gpu.host_link_bandwidth_gbps
                                : 0;
        offload_layers.push_back({layer.f.total_ns(), layer.i.total_ns() + layer.w.total_ns(), copy});
      }
    }
    // An MTP module: its transformer layer runs as the model's last layer does, its dispatch and combine
    // included (Megatron's MultiTokenPredictionLayer builds it from the decoder's layer spec), after its
    // glue (the norms and the 2h -> h projection, in the same layer's forward); full recompute re-runs
    // both only with the uniform method (MultiTokenPredictionLayer._checkpointed_forward skips block).
    // Its head, the logits and the cross-entropy, is output_pass's.
    const bool mtp_full = cfg.recompute == Recompute::kFull && cfg.recompute_method == RecomputeMethod::kUniform;
    PassCost glue;
    if (range.mtp_layers > 0) {
      glue.flops = mtp_glue_forward_flops(g.model(), cfg.mbs, cfg.seq_length, cfg.tp, cfg.cp);
      glue.gemm_ns = gemm_ns(glue.flops, 1);
    }
    for (int k = 0; k < range.mtp_layers; ++k) {
      const bool full = mtp_full;
      add_layer(g.model().num_layers - 1, full, true);
      c.f += glue;
      c.w += glue;
      c.i += glue;
      if (full) c.i += glue;
      runs.back().halves.f_other_ns += glue.compute_ns();
      runs.back().halves.b_other_ns += (full ? 3 : 2) * glue.compute_ns();
    }
    if (!offload_layers.empty()) {
      const OffloadStall stall = activation_offload_stall(offload_layers);
      c.f.offload_ns += stall.forward_ns;
      c.i.offload_ns += stall.backward_ns;
      ahead_f.gpu_ns += stall.forward_ns;  // offloading runs at pp = 1 without CUDA graphs: the wait and the host overlap
    }
    // Elsewhere the host runs ahead of the GPU across layers: the wait is over the stage's pass.
    c.f.host_wait_ns += host_wait(ahead_f.host_ns, ahead_f.gpu_ns);
    // I and W (B, or apart in zero-bubble schedules) share the host's lead: one wait over both, split in
    // proportion to their launches, so that B = I + W wherever they are summed.
    const double b_host_ns = c.i.host_ns + c.w.host_ns;
    const double b_wait_ns = host_wait(b_host_ns, c.i.total_ns() + c.w.total_ns());
    c.i.host_wait_ns = b_host_ns > 0 ? b_wait_ns * c.i.host_ns / b_host_ns : 0;
    c.w.host_wait_ns = b_wait_ns - c.i.host_wait_ns;
    if (range.has_embedding) {
      c.f += embedding_pass(Pass::F);
      c.w += embedding_pass(Pass::W);
    }
    if (range.has_loss || range.mtp_layers > 0) {
      for (Pass pass : {Pass::F, Pass::I, Pass::W}) {
        PassCost& target = pass == Pass::F ? c.f : pass == Pass::I ? c.i : c.w;
        target += output_pass(pass, range.has_loss, range.mtp_layers);
      }
    }
    stages_.push_back(c);
    const GpuParams params = g.stage_params(range);
    stage_param_elems_.push_back(params.total);
    stage_expert_elems_.push_back(params.experts);
    stage_weight_bytes_.push_back(g.weight_bytes(params));
    // What the engine asks per action, computed once.
    PassCost b = c.i;
    b += c.w;
    StageTotals t;
    t.f_ns = limits::saturated_ns(c.f.total_ns());
    t.i_ns = limits::saturated_ns(c.i.without_wgrad().total_ns());
    t.w_ns = limits::saturated_ns(c.w.total_ns());
    t.b_ns = limits::saturated_ns(c.i.total_ns() + c.w.total_ns());
    t.f_flops = c.f.flops;
    t.i_flops = c.i.flops;
    t.w_flops = c.w.flops;
    t.f_compute_ns = c.f.compute_ns();
    t.b_compute_ns = b.compute_ns();
    t.f_exposed_comm_ns = c.f.tp_comm_ns + c.f.cp_comm_ns + c.f.dp_comm_ns + c.f.offload_ns;
    t.b_exposed_comm_ns = b.tp_comm_ns + b.cp_comm_ns + b.dp_comm_ns + b.offload_ns;
    t.f_ep_ns = c.f.ep_comm_ns;
    t.f_host_gap_ns = c.f.ep_host_gap_ns;
    t.b_ep_ns = b.ep_comm_ns;
    t.f_expert_ns = c.f.expert_ns;
    t.f_host_ns = c.f.host_ns;
    t.b_host_ns = b.host_ns;
    t.f_host_wait_ns = c.f.host_wait_ns;
    t.b_host_wait_ns = b.host_wait_ns;
    t.b_expert_ns = b.expert_ns;
    // The rest of each half's compute is the embedding, the loss and the MTP heads.
    double f_layers = 0, b_layers = 0;
    for (const LayerRun& run : runs) {
      f_layers += run.count * (run.halves.f_other_ns + run.halves.f_expert_ns);
      b_layers += run.count * (run.halves.b_other_ns + run.halves.b_expert_ns);
    }
    t.f_alone_ns = std::max(0.0, t.f_compute_ns - t.f_host_wait_ns - f_layers);
    t.b_alone_ns = std::max(0.0, t.b_compute_ns - t.b_host_wait_ns - b_layers);
    t.layer_runs = std::move(runs);
    totals_.push_back(std::move(t));
  }
  boundary_bytes_ = static_cast<std::int64_t>(g.hidden_state_bytes());
  if (g.model().num_experts > 0) ep_compute_loss_ = sm_carve_out_loss(moe_dispatch_cost(g.model(), cfg, gpu, 0).comm_sms, gpu.sm_count);
}

AnalyticCost::AnalyticCost(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config, const PipelineShape& shape)
    : AnalyticCost(std::make_shared<const LayerGeometry>(model, config), gpu, shape) {}

double AnalyticCost::gemm_ns(double flops, double calls) const {
  if (flops <= 0) return 0;
  const double per_call = flops / std::max(1.0, calls);
  return flops / (peak_flops_per_ns_ * gpu_.gemm_efficiency(per_call));
}

// One kernel covers the microbatch's sequences and local heads. Its speed depends above all on how many
// keys each query attends in that call (the inner loop over K/V tiles that amortises each tile's
// setup), so the GPU's attention curve is read at that count: s/2 under the causal mask, the window's
// mean when sliding; CP's p2p ring (and a2a+p2p's ring over its groups) runs one kernel per step on a
// 1/cp (1/P) share of the keys. Without a curve, each (sequence, head) is timed as one BF16 GEMM.
AnalyticCost::AttentionNs AnalyticCost::attention_ns(int layer, double forward_flops) const {
  if (forward_flops <= 0) return {};
  const ModelSpec& m = geometry_->model();
  const ParallelConfig& c = geometry_->config();
  const double calls = c.mbs * std::max(1.0, static_cast<double>(m.num_attention_heads) / c.tp);  // (sequence, query head)s
  if (c.attention_unfused()) {
    // The score matrix materialised (unfused_attention.h): QK^T and PV as batched BF16 GEMMs over every
    // key, the causal or window mask applied after, one GEMM per (sequence, head) of the query heads on
    // the GEMM curve (four in the backward), then the softmax and dropout kernels' HBM traffic over the
    // whole matrix.
    const double s = static_cast<double>(c.seq_length);
    const double full_flops = forward_flops * s / attended_keys_per_query(m, layer, c.seq_length);
    const double scores = calls * s * s;
    const UnfusedAttentionWork w = unfused_attention_work(m, c, m.is_window_attention_layer(layer));
    return {gemm_ns(full_flops, 2 * calls) + memory_ns(scores * w.forward_bytes),
            gemm_ns(2 * full_flops, 4 * calls) + memory_ns(scores * w.backward_bytes),
            (1 + w.forward_kernels) * gpu_.kernel_launch_overhead_ns, (3 + w.backward_kernels) * gpu_.kernel_launch_overhead_ns};
  }
  if (gpu_.attention_efficiency_curve.empty()) {
    const double forward = gemm_ns(forward_flops, calls);
    return {forward, kAttentionBackwardWork * forward};
  }
  // check() refuses a sliding window under a ring, so a ring only ever splits a causal layer's keys.
  // The curve is read at the query/key head dim (MLA: its non-RoPE and RoPE parts together).
  const double head_dim = static_cast<double>(m.query_projection_size()) / m.num_attention_heads;
  const AttentionEfficiencyPoint e = gpu_.attention_efficiency(attended_keys_per_query(m, layer, c.seq_length) / c.cp_ring_size(), head_dim);
  return {forward_flops / (peak_flops_per_ns_ * e.forward), kAttentionBackwardWork * forward_flops / (peak_flops_per_ns_ * e.backward)};
}

// The run's precision, unless it is BF16 or first_last_layers_bf16 keeps this layer BF16.
bool AnalyticCost::quantized_layer(int layer) const {
  return geometry_->config().layer_precision(layer, geometry_->model().num_layers) != Precision::kBf16;
}

double AnalyticCost::linear_ns(double flops, double calls, bool quantized) const {
  if (!quantized) return gemm_ns(flops, calls);
  if (flops <= 0) return 0;
  const double per_call = flops / std::max(1.0, calls);
  return flops / (linear_flops_per_ns_ * gpu_.gemm_efficiency(per_call, geometry_->config().precision));
}

double AnalyticCost::split_overlap_exposed_ns(double flops, bool quantized, int chunks, double transfer_ns,
                                              double tail_ns, double math_share) const {
  // TE comm_gemm_overlap.cpp (split_overlap_ag, split_overlap_rs): the GEMM runs as `chunks` GEMMs
  // of 1/chunks the rows each, at `math_share` of its speed; each chunk's transfer runs beside the next
  // chunk's GEMM, and what follows the last one (the reduce of a ring-exchange reduce-scatter, the
  // last chunk of a pipelined one) is exposed. Each extra GEMM launch is charged too.
  const double whole = linear_ns(flops, 1, quantized);
  const double chunk = linear_ns(flops, chunks, quantized) / chunks / math_share;
  const double wall = chunk + (chunks - 1) * (std::max(chunk, transfer_ns) + gpu_.kernel_launch_overhead_ns) + tail_ns;
  return std::max(0.0, wall - whole);  // a user's curve need not be monotonic
}

double AnalyticCost::bulk_overlap_exposed_ns(double gemm_ns, double comm_ns) const {
  // TE CommOverlapBase::bulk_overlap: the whole collective beside the GEMM, which the communication
  // kernels' SMs slow while they run.
  const double loss = sm_carve_out_loss(kTpOverlapBulkSms, gpu_.sm_count);
  return std::max(comm_ns, gemm_ns + loss * comm_ns) - gemm_ns;
}

// TP, one layer's F and I: 2 all-reduces, or with SP 2 all-gathers + 2 reduce-scatters, of the full
// activation, and what of them the GEMMs leave exposed (docs/simulator.md, "TP").
AnalyticCost::TpCommNs AnalyticCost::tp_comm_ns(int layer) const {
  const LayerGeometry& g = *geometry_;
  const ModelSpec& m = g.model();
  const ParallelConfig& c = g.config();
  TpCommNs out;
  if (c.tp <= 1) return out;
  const LayerFlops lf = layer_forward_flops(m, layer, c.mbs, c.seq_length, c.tp, c.cp);
  const LayerWidths& w = g.widths(layer);
  const bool moe = m.is_moe_layer(layer);
  const bool quantized = quantized_layer(layer);
  const double qkv_ns = linear_ns(lf.qkv, 1, quantized);
  const double full = g.tokens() * w.hidden * kBf16Bytes;
  const Link link = layout_.ring_link(1, c.tp);
  const double ring = static_cast<double>(c.tp - 1) / c.tp;
  // The column-parallel GEMMs (QKV, dense FC1) and their sizes. A MoE layer's routed experts move
  // their tokens through the dispatcher (its expert-TP gathers included: moe_dispatch.cc); only its
  // shared experts, TP-parallel linear layers, gather and scatter on the MLP side, exposed here.
  const double fc1 = moe ? 0 : lf.mlp * w.mlp_up / (w.mlp_up + w.mlp), fc2 = moe ? 0 : lf.mlp - fc1;
  const double fc1_ns = linear_ns(fc1, 1, quantized);
  const double shared = moe && m.has_shared_experts() ? 1.0 : 0.0;
  // A reduce-scatter (or all-reduce) beside the wgrad GEMM of `gemm_ns`; exposed when TE defers the
  // wgrad (--delay-wgrad-compute: it waits for the collective at the end of the layer's backward).
  // What the wgrad hides is kept apart: it stays exposed when W runs on its own later (zero-bubble).
  const auto beside_wgrad = [&](double gemm_ns, double comm_ns) {
    const double exposed = c.delay_wgrad_compute ? comm_ns : bulk_overlap_exposed_ns(gemm_ns, comm_ns);
    out.hidden_by_wgrad += comm_ns - exposed;
    return exposed;
  };
  // Without userbuffers TE overlaps only in the backward, with NCCL on a side stream: the
  // column-parallel layers' input re-gather (SP) beside their dgrad GEMM and their input gradient's
  // reduce-scatter (all-reduce without SP) beside their wgrad GEMM (TE linear.py, layernorm_linear.py,
  // layernorm_mlp.py backward: async_op=True); the row-parallel layers' output-gradient gathers
  // (grad_output_preprocess) are synchronous. The NCCL kernels' SMs are taken as the bulk overlap's.
  if (!g.sequence_parallel()) {
    const double all_reduce_ns = collective_ns(2 * full * ring, 2 * (c.tp - 1), link);
    out.forward = (moe ? 1 + shared : 2) * all_reduce_ns;
    out.backward = beside_wgrad(qkv_ns, all_reduce_ns) + (moe ? shared * all_reduce_ns : beside_wgrad(fc1_ns, all_reduce_ns));
    out.shared_f_combine = shared * all_reduce_ns;  // FC2's output
    out.shared_i_dispatch = shared * all_reduce_ns;  // FC1's input gradient
  } else {
    const double scatter_ns = collective_ns(full * ring, c.tp - 1, link);
    // FP8 or NVFP4: the all-gathers move the quantized inputs (TE gathers FP8 and NVFP4 tensors in
    // their quantized form; never more than the BF16 tensor, which TE would gather instead).
    const double gather_ns =
        quantized ? collective_ns(full * ring * std::min(sp_gather_bytes_, static_cast<double>(kBf16Bytes)) / kBf16Bytes, c.tp - 1, link)
                  : scatter_ns;
    // I, the column-parallel side: each layer's input re-gathered beside its dgrad GEMM and its input
    // gradient reduce-scattered beside its wgrad GEMM (the same size) -- NCCL's async collectives, or
    // userbuffers' bulk overlap.
    const double column_backward_ns = bulk_overlap_exposed_ns(qkv_ns, gather_ns) + beside_wgrad(qkv_ns, scatter_ns) +
                                      (moe ? shared * (gather_ns + scatter_ns) : bulk_overlap_exposed_ns(fc1_ns, gather_ns) + beside_wgrad(fc1_ns, scatter_ns));
    // The shared experts' (not overlapped with their GEMMs in either branch below): F gathers FC1's input
    // and reduce-scatters FC2's output; I gathers FC2's output gradient, then re-gathers FC1's input and
    // reduce-scatters its input gradient.
    out.shared_f_dispatch = shared * gather_ns;
    out.shared_f_combine = shared * scatter_ns;
    out.shared_i_combine = shared * gather_ns;
    out.shared_i_dispatch = shared * (gather_ns + scatter_ns);
    if (!c.tp_comm_overlap) {
      out.forward = (moe ? 1 + shared : 2) * (gather_ns + scatter_ns);
      out.backward = (moe ? 1 + shared : 2) * gather_ns + column_backward_ns;
    } else {
      // Userbuffers, per GEMM as TE's defaults and Megatron-Bridge's configs place them. Ring
      // exchange: tp chunk GEMMs, each beside a p2p copy of the next chunk on the copy engines (no
      // SMs); the first chunk is local. Quantized layers ring-exchange the out-proj and FC2
      // reduce-scatters too, with a 1-SM margin and a reduce of the tp partial chunks after
      // (Bridge's userbuffers_fp8_* configs); BF16 layers pipeline them (TE's default).
      // The share of its speed a GEMM keeps beside kernels holding `held` SMs (0 SMs: unknown, all).
      const auto math_share = [&](double held) { return 1 - sm_carve_out_loss(held, gpu_.sm_count); };
      const double partials_ns = memory_ns(full * (c.tp + 1) / c.tp);
      const auto ring_gather = [&](double flops) {
        return split_overlap_exposed_ns(flops, quantized, c.tp, gather_ns / (c.tp - 1), 0, 1);
      };
      const auto reduce_scatter = [&](double flops) {
        if (quantized) return split_overlap_exposed_ns(flops, quantized, c.tp, scatter_ns / (c.tp - 1), partials_ns, math_share(1));
        const double chunk_ns = scatter_ns / kTpOverlapPipelineSplits;
        return split_overlap_exposed_ns(flops, quantized, kTpOverlapPipelineSplits, chunk_ns, chunk_ns, math_share(kTpOverlapPipelineSms));
      };
      // F: AG -> QKV, out-proj -> RS, AG -> FC1, FC2 -> RS.
      out.forward = ring_gather(lf.qkv) + reduce_scatter(lf.attn_out) +
                    (moe ? shared * (gather_ns + scatter_ns) : ring_gather(fc1) + reduce_scatter(fc2));
      // I: out-proj's and FC2's output gradients gathered by ring exchange into their dgrad GEMMs.
      out.backward = ring_gather(lf.attn_out) + (moe ? shared * gather_ns : ring_gather(fc2)) + column_backward_ns;
    }
    // Per-tensor current scaling (FP8 tensorwise) and NVFP4 scale a tensor that is all-gathered by the
    // amax of the whole: TE all-reduces the amax over TP before the cast, and the cast waits for it
    // (set_quantizer_amax_reduction_group in linear.py, layernorm_linear.py, layernorm_mlp.py: F the
    // column-parallel inputs, I the row-parallel output gradients; csrc quantizer.cpp allreduce()->wait()).
    if (quantized && (c.precision == Precision::kNvfp4 || c.fp8_recipe == Fp8Recipe::kTensorwise)) {
      const double amax_ns = collective_ns(2 * kFp32Bytes * ring, 2 * (c.tp - 1), link);
      out.forward += (moe ? 1 + shared : 2) * amax_ns;
      out.backward += (moe ? 1 + shared : 2) * amax_ns;
      out.shared_f_dispatch += shared * amax_ns;  // FC1's input
      out.shared_i_combine += shared * amax_ns;   // FC2's output gradient
    }
  }
  return out;
}

std::int64_t AnalyticCost::optimizer_step_ns(double params) const {
  // Megatron's step over its fp32 main parameters (Adam as Apex/TE multi-tensor kernels), per
  // parameter: the gradient-norm pass for clipping reads the gradient; Adam reads the gradient and
  // reads and writes the fp32 main weight and both moments (bf16 moments with the precision-aware
  // optimizer); the updated weight is copied to the bf16 model weight (read 4, write 2); the gradient
  // buffer is zeroed for the next iteration. About 10 FLOPs against 28-42 bytes: bandwidth-bound on
  // every GPU here, so the FLOPs are not counted.
  const ParallelConfig& c = geometry_->config();
  const double grad = c.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes;
  const double moments = c.use_precision_aware_optimizer ? 2 * (kBf16Bytes + kBf16Bytes) : 2 * (kFp32Bytes + kFp32Bytes);
  const double bytes = grad + (grad + 2 * kFp32Bytes + moments) + (kFp32Bytes + kBf16Bytes) + grad;
  return limits::saturated_ns(memory_ns(params * bytes));
}

double AnalyticCost::memory_ns(double bytes) const {
  return bytes / (gpu_.hbm_bandwidth_gbps * gpu_.memory_bandwidth_efficiency);  // GB/s = bytes/ns
}

// Ring collective: `steps` latency hops and `bytes_on_wire` bytes through each GPU's link.
double AnalyticCost::collective_ns(double bytes_on_wire, int steps, const Link& link) const {
  return sim::collective_ns(bytes_on_wire, steps, link, gpu_.collective_efficiency);
}

PassCost AnalyticCost::layer_pass(int layer, Pass pass, bool full_recompute) const {
  const LayerGeometry& g = *geometry_;
  const ModelSpec& m = g.model();
  const ParallelConfig& c = g.config();
  const LayerFlops lf = layer_forward_flops(m, layer, c.mbs, c.seq_length, c.tp, c.cp);
  const double tokens = g.tokens();
  const LayerWidths& w = g.widths(layer);
  const double h = w.hidden;
  const bool moe = m.is_moe_layer(layer);
  const bool quantized = quantized_layer(layer);

  // GEMM calls, for the efficiency curve: QKV and out-proj one each; the MLP two (up [+gate], down),
  // or two per local expert when MoE.
  const double local_experts = moe ? std::max(1.0, static_cast<double>(m.num_experts) / c.ep) : 1;
  // The linear layers' GEMMs run in FP8 or NVFP4 when asked (linear_ns); the router stays BF16.
  const double qkv_ns = linear_ns(lf.qkv, 1, quantized), out_ns = linear_ns(lf.attn_out, 1, quantized);
  // MoE: the busiest EP rank's experts see moe_busiest_load() x the mean tokens; every rank waits
  // for it at the combine. Shared experts are not routed.
  const double expert_skew = g.mlp_load(layer);
  const double mlp_ns = linear_ns(lf.mlp, 2 * local_experts, quantized) * expert_skew + gemm_ns(lf.router, 1);
  // Of the MLP, the shared experts' FLOPs and their two GEMMs on their own (0 without shared experts).
  const double shared_flops = moe ? lf.mlp * m.moe_shared_expert_intermediate_size / w.mlp : 0;
  const double shared_ns = linear_ns(shared_flops, 2, quantized);
  PassCost fwd;
  fwd.gemm_ns = qkv_ns + out_ns + mlp_ns;
  const AttentionNs attention = attention_ns(layer, lf.attention_core);
  fwd.attention_ns = attention.forward;
  // Memory-bound work per token (bf16): two norms (read + write h), two residual adds (3h each),
  // RoPE on Q and K, the MLP activation (read up output, write activation).
  const double norm_tokens = tokens / g.sp_split();
  const double rope_bytes = 2 * (w.query / c.tp + w.key / c.tp) * kBf16Bytes;  // read + write Q and K
  const double act_bytes = (w.mlp_up + w.mlp) / c.tp * kBf16Bytes;
  const double norm_ns = memory_ns(norm_tokens * 4 * h * kBf16Bytes);
  // The MoE activation on the busiest rank's rows. A gated MLP runs Megatron's SwiGLU kernels, timed
  // as measured (above): the backward reads the output gradient and both input halves and writes the
  // input gradient (5 x the per-rank FFN width); a plain activation's backward moves twice the forward's.
  const double peak_bytes_per_ns = gpu_.hbm_bandwidth_gbps;  // GB/s = bytes/ns
  const double act_ns = expert_skew * (m.swiglu ? tokens * act_bytes / (peak_bytes_per_ns * kMegatronSwigluForwardBandwidth)
                                                : memory_ns(tokens * act_bytes));
  const double act_back_ns =
      m.swiglu ? expert_skew * tokens * (2 * w.mlp_up + w.mlp) / c.tp * kBf16Bytes / (peak_bytes_per_ns * kMegatronSwigluBackwardBandwidth)
               : 2 * act_ns;
  fwd.elementwise_ns = norm_ns + act_ns + memory_ns(norm_tokens * 6 * h * kBf16Bytes + tokens * rope_bytes);
  fwd.launch_ns = kKernelsPerLayerPass * gpu_.kernel_launch_overhead_ns;
  // Unfused attention launches its GEMMs, softmax and dropout where a fused backend runs one kernel.
  const double unfused_f_launch_ns = attention.forward_launch_ns, unfused_i_launch_ns = attention.backward_launch_ns;
  fwd.launch_ns += unfused_f_launch_ns;
  fwd.flops = lf.forward();
  // MoE: the dispatch and combine (moe_dispatch.h) and the permutes around them.
  MoeDispatchCost dispatch;
  if (moe) dispatch = moe_dispatch_cost(m, c, gpu_, tokens / g.sp_split());
  const double permute_ns = memory_ns(2 * dispatch.permute_bytes);  // dispatch side + combine side
  fwd.elementwise_ns += permute_ns;
  // A MoE layer's experts see the routed copies: each SP shard's tokens x top-k, gathered over ETP, on
  // the busiest rank x its load.
  const double routed_rows = norm_tokens * m.moe_router_topk * c.expert_tp() * c.moe_busiest_load();
  // Biased experts: FC2's bias added per expert in eager PyTorch (expert_bias.h), on those rows of FC2's
  // output.
  const ExpertBiasWork bias = expert_bias_work(m, c, layer, local_experts);
  const double bias_elements = routed_rows * h;
  const double bias_f_ns = memory_ns(bias_elements * bias.forward_bytes_per_element);
  const double bias_i_ns = memory_ns(bias_elements * bias.input_grad_bytes_per_element);
  fwd.elementwise_ns += bias_f_ns;
  if (moe) fwd.expert_ns = mlp_ns + act_ns + permute_ns + bias_f_ns;
  // FP8: each linear layer's input is quantized. The QKV and dense FC1 inputs come out of TE's
  // LayerNormLinear on the sequence-parallel shard (quantize_fused_bytes_, by recipe); the attention output, FC2's input
  // (Megatron's activation writes BF16: use_te_activation_func is off by default and in NVIDIA's
  // recipes) and MoE experts' dispatched tokens are quantized on their own. In I, each GEMM's output
  // gradient, on its own (FC1's comes out of Megatron's activation backward in BF16).
  double quantize_f_ns = 0, quantize_i_ns = 0, quantize_mlp_f_ns = 0;  // the last: of quantize_f_ns, FC1's and FC2's inputs
  if (quantized) {
    const double fused = quantize_fused_bytes_;
    const double fc1_in = moe ? routed_rows * h * quantize_bytes_ : norm_tokens * h * fused;
    quantize_mlp_f_ns = memory_ns(fc1_in + tokens * w.mlp / c.tp * quantize_bytes_ * expert_skew);
    quantize_f_ns = memory_ns(norm_tokens * h * fused + tokens * w.query / c.tp * quantize_bytes_) + quantize_mlp_f_ns;
    const double fc2_grad_rows = moe ? routed_rows : tokens;
    quantize_i_ns = memory_ns((tokens * (h + (w.query + w.key + w.value) / c.tp) + fc2_grad_rows * h) * quantize_bytes_ +
                              tokens * w.mlp_up / c.tp * quantize_bytes_ * expert_skew);
    fwd.elementwise_ns += quantize_f_ns;
    fwd.launch_ns += kFp8KernelsPerLayerPass * gpu_.kernel_launch_overhead_ns;
  }

  // TP: F's and I's collectives, what of them the GEMMs leave exposed (tp_comm_ns).
  const TpCommNs tp = tp_comm_ns(layer);
  fwd.tp_comm_ns = tp.forward;
  const double tp_backward_ns = tp.backward;
  // EP: the token dispatch and the combine, each with its expert-TP gather or scatter. A dropless
  // dispatch waits for the host (the token counts copied to it; Megatron token_dispatcher.py, DeepEP's
  // and HybridEP's CPU waits): the GPU idles while the host refills the emptied launch queue.
  fwd.ep_comm_ns = 2 * dispatch.comm_ns;
  if (moe && c.moe_dispatch_waits_for_host()) {
    fwd.ep_host_gap_ns = gpu_.moe_sync_gap_ns;
    fwd.ep_comm_ns += fwd.ep_host_gap_ns;
  }
  // --moe-shared-expert-overlap: the shared experts run on a stream of their own, FC1 and its activation
  // launched right after the dispatch's all-to-all and FC2 after the combine's (Megatron
  // token_dispatcher.py), each with its TP collectives (pre_forward_comm, post_forward_comm in
  // shared_experts.py), so each side hides up to its own time of that transfer; the backward runs their
  // gradients beside the same transfers. The host wait comes before the all-to-all: nothing hides it.
  SharedBeside shared_f, shared_i;
  if (c.moe_shared_expert_overlap && shared_ns > 0) {
    const double fc1_ns = shared_ns * w.mlp_up / (w.mlp_up + w.mlp), fc2_ns = shared_ns - fc1_ns;  // FC1: gate + up under SwiGLU
    shared_f = {std::min(dispatch.comm_ns, fc1_ns + tp.shared_f_dispatch), std::min(dispatch.comm_ns, fc2_ns + tp.shared_f_combine)};
    shared_i = {std::min(dispatch.comm_ns, fc1_ns + tp.shared_i_dispatch), std::min(dispatch.comm_ns, fc2_ns + tp.shared_i_combine)};
  }
  fwd.ep_hidden_dispatch_ns = shared_f.dispatch_ns;
  fwd.ep_hidden_combine_ns = shared_f.combine_ns;
  // CP (TE's cp_comm_type): p2p passes each rank's K/V chunk around the ring, exposed only beyond the
  // attention kernel (I: K/V and dK/V, twice the bytes, beside the backward kernel); all_gather gathers all K/V first, not overlapped
  // (I: gathered again and dK/V reduce-scattered); a2a (Ulysses) trades sequence for heads with four
  // all-to-alls of Q, K, V and the output, not overlapped (I: the same four); a2a+p2p does the four
  // all-to-alls inside groups of A adjacent CP ranks and then the p2p ring over the P = cp/A groups
  // (each rank then holds A x the sequence chunk for 1/A of the heads: the same K/V bytes per step).
  double cp_backward_ns = 0;
  // The p2p ring's merges and accumulations around the attention kernels (cp_ring_work).
  double cp_ring_f_ns = 0, cp_ring_i_ns = 0, cp_ring_f_launch_ns = 0, cp_ring_i_launch_ns = 0;
  if (c.cp > 1) {
    const double kv_local = (w.key + w.value) / c.tp;
    const Link link = layout_.group_link(c.tp, c.cp);  // p2p ring hops and all-to-alls: each GPU's own link
    const double gathered = tokens * kv_local * kBf16Bytes * (c.cp - 1);
    // Q, K, V and the output through one Ulysses all-to-all group of `size` ranks.
    const auto a2a_ns = [&](int size, const Link& group) {
      const double moved = tokens * (2 * w.query + w.key + w.value) / c.tp * kBf16Bytes * (size - 1) / size;
      // Four all-to-alls, one latency each; NCCL's all-to-all inside the NVLink domain at its own share.
      return sim::collective_ns(moved, 4, group, group.nvlink ? gpu_.nvlink_alltoall_efficiency() : gpu_.collective_efficiency);
    };
    switch (c.cp_comm_type) {
      case CpCommType::kP2p:
        fwd.cp_comm_ns = std::max(0.0, collective_ns(gathered, c.cp - 1, link) - attention.forward);
        cp_backward_ns = std::max(0.0, 2 * collective_ns(gathered, c.cp - 1, link) - attention.backward);
        break;
      case CpCommType::kAllGather:
        fwd.cp_comm_ns = collective_ns(gathered, c.cp - 1, layout_.ring_link(c.tp, c.cp));
        cp_backward_ns = 2 * fwd.cp_comm_ns;
        break;
      case CpCommType::kA2a:
        fwd.cp_comm_ns = a2a_ns(c.cp, link);
        cp_backward_ns = fwd.cp_comm_ns;
        break;
      case CpCommType::kA2aP2p: {  // check() guarantees two sizes with product cp
        const int a = c.hierarchical_context_parallel_sizes.at(0), p = c.cp_ring_size();
        const double a2a = a > 1 ? a2a_ns(a, layout_.group_link(c.tp, a)) : 0;
        const double ring_ns = p > 1 ? collective_ns(tokens * kv_local * kBf16Bytes * (p - 1), p - 1, layout_.group_link(c.tp * a, p)) : 0;
        fwd.cp_comm_ns = a2a + std::max(0.0, ring_ns - attention.forward);
        cp_backward_ns = a2a + std::max(0.0, 2 * ring_ns - attention.backward);
        break;
      }
    }
    // a2a+p2p: each rank then holds A x the chunk for 1/A of the heads, the same elements.
    const CpRingWork ring = cp_ring_work(c.cp_ring_size(), tokens * w.query / c.tp, tokens * w.key / c.tp, tokens * w.value / c.tp,
                                         memory_ns(1), gpu_.kernel_launch_overhead_ns);
    cp_ring_f_ns = memory_ns(ring.forward_bytes);
    cp_ring_i_ns = memory_ns(ring.backward_bytes);
    cp_ring_f_launch_ns = ring.forward_kernels * gpu_.kernel_launch_overhead_ns;
    cp_ring_i_launch_ns = ring.backward_kernels * gpu_.kernel_launch_overhead_ns;
    fwd.elementwise_ns += cp_ring_f_ns;
    fwd.launch_ns += cp_ring_f_launch_ns;
  }
  // FSDP (parameters sharded): the layer's weights are all-gathered before its forward and again
  // before its backward, and its gradients reduce-scattered after W; the next layer's gather is
  // prefetched, so only what the layer's own compute cannot hide is exposed.
  const double fsdp_gather_ns = fsdp_layer_ns(layer, /*gradients=*/false);

  const LayerLaunches launches = layer_launches(m, c, layer, full_recompute);
  if (pass == Pass::F) {
    fwd.dp_comm_ns = std::max(0.0, fsdp_gather_ns - fwd.compute_ns());
    fwd.host_ns = launches.forward * gpu_.host_launch_ns;
    return fwd;
  }
  if (pass == Pass::W) {
    PassCost wgrad;  // wgrad GEMMs only
    wgrad.gemm_ns = fwd.gemm_ns;
    wgrad.launch_ns = (fwd.launch_ns - cp_ring_f_launch_ns - unfused_f_launch_ns) / 2;
    wgrad.flops = lf.weight_grad();
    if (moe) wgrad.expert_ns = mlp_ns;
    wgrad.dp_comm_ns = std::max(0.0, fsdp_layer_ns(layer, /*gradients=*/true) - wgrad.compute_ns());
    wgrad.host_ns = launches.weight_grad * gpu_.host_launch_ns;
    return wgrad;
  }
  // I: dgrad GEMMs as many FLOPs as the forward's; the attention backward kernel; elementwise backward
  // about twice the forward's traffic; the same collectives in reverse.
  PassCost in;
  in.gemm_ns = fwd.gemm_ns;
  in.attention_ns = attention.backward;
  // The permutes' backward moves the same bytes as their forward.
  in.elementwise_ns = 2 * (fwd.elementwise_ns - quantize_f_ns - permute_ns - cp_ring_f_ns - act_ns - bias_f_ns) + act_back_ns + quantize_i_ns +
                      permute_ns + cp_ring_i_ns + bias_i_ns;
  in.launch_ns = fwd.launch_ns - cp_ring_f_launch_ns + cp_ring_i_launch_ns - unfused_f_launch_ns + unfused_i_launch_ns;
  in.tp_comm_ns = tp_backward_ns;
  in.tp_comm_hidden_by_wgrad_ns = tp.hidden_by_wgrad;
  in.ep_comm_ns = 2 * dispatch.comm_ns;  // the backward reuses the forward's counts: no wait
  in.ep_hidden_dispatch_ns = shared_i.dispatch_ns;
  in.ep_hidden_combine_ns = shared_i.combine_ns;
  in.cp_comm_ns = cp_backward_ns;
  in.flops = lf.input_grad();
  if (moe) in.expert_ns = mlp_ns + act_back_ns + permute_ns + bias_i_ns;
  if (full_recompute) {
    in += fwd;  // the whole forward again (its FSDP gather included)
    in.dp_comm_ns = 0;
  } else {
    // Selective recompute re-runs what its modules dropped (memory_model.cc drops the same parts).
    if (c.recomputes_module("core_attn")) {
      in.attention_ns += fwd.attention_ns;
      in.launch_ns += unfused_f_launch_ns;
      in.elementwise_ns += cp_ring_f_ns;  // TE re-runs the whole CP attention: the ring and its merges
      in.launch_ns += cp_ring_f_launch_ns;
      in.cp_comm_ns += fwd.cp_comm_ns;
      in.flops += lf.attention_core;
    }
    if (c.recomputes_module("layernorm")) in.elementwise_ns += norm_ns;
    if (c.recomputes_module("mla_up_proj") && m.multi_latent_attention) {
      in.gemm_ns += qkv_ns;
      in.flops += lf.qkv;
    }
    if ((c.recomputes_module("mlp") && !moe) || (c.recomputes_module("moe") && moe)) {
      in.gemm_ns += mlp_ns;
      in.elementwise_ns += act_ns + quantize_mlp_f_ns;  // the activation, and FC1's and FC2's input casts again
      in.flops += lf.mlp + lf.router;
      if (moe) {  // the dispatch, combine, permutes and expert biases run again
        in.ep_comm_ns += fwd.ep_comm_ns;
        in.ep_host_gap_ns += fwd.ep_host_gap_ns;
        in.ep_hidden_dispatch_ns += fwd.ep_hidden_dispatch_ns;  // the shared experts run beside it again
        in.ep_hidden_combine_ns += fwd.ep_hidden_combine_ns;
        in.elementwise_ns += permute_ns + bias_f_ns;
        in.expert_ns += fwd.expert_ns;
      }
    }
    if (c.recomputes_module("moe_act") && moe) {
      in.elementwise_ns += act_ns;
      in.expert_ns += act_ns;
    }
    if (c.recomputes_module("shared_experts") && shared_flops > 0) {
      in.gemm_ns += shared_ns;
      in.flops += shared_flops;
    }
  }
  in.dp_comm_ns = std::max(0.0, fsdp_gather_ns - in.compute_ns());
  in.host_ns = launches.input_grad * gpu_.host_launch_ns;
  return in;
}

double AnalyticCost::fsdp_layer_ns(int layer, bool gradients) const {
  const LayerGeometry& g = *geometry_;
  const ParallelConfig& c = g.config();
  if (c.sharding() != Sharding::kOptimGradsParams) return 0;
  const GpuParams params = g.layer_params(layer);
  const double total = static_cast<double>(params.total), experts = static_cast<double>(params.experts);
  const double per_elem = gradients ? (c.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes) : (total > 0 ? g.weight_bytes(params) / total : 0);
  // Dense weights shard over DP x CP, routed experts over the expert-DP group (each per replica of
  // num_distributed_optimizer_instances), as Megatron-FSDP shards them.
  const auto shard = [&](double elems, int ranks, int stride) {
    const int group = std::max(1, ranks / c.num_distributed_optimizer_instances);
    if (group <= 1 || elems <= 0) return 0.0;
    return collective_ns(elems * per_elem * (group - 1) / group, group - 1, layout_.ring_link(stride, group));
  };
  return shard(total - experts, c.dp * c.cp, c.tp) + shard(experts, c.expert_dp(), c.ep * c.expert_tp());
}

PassCost AnalyticCost::embedding_pass(Pass pass) const {
  // Lookup writes (and its gradient scatters) one h-vector per token.
  const LayerGeometry& g = *geometry_;
  PassCost p;
  p.elementwise_ns = memory_ns(g.tokens() * g.model().hidden_size * kBf16Bytes * (pass == Pass::F ? 1 : 2));
  p.launch_ns = gpu_.kernel_launch_overhead_ns;
  return p;
}

PassCost AnalyticCost::output_pass(Pass pass, bool loss, int mtp_layers) const {
  const LayerGeometry& g = *geometry_;
  const ModelSpec& m = g.model();
  const ParallelConfig& c = g.config();
  const double logits = loss ? logits_forward_flops(m, c.mbs, c.seq_length, c.tp, c.cp, g.vocab_divisor()) : 0.0;
  // Each MTP module's head: its own logits (its layer and glue are costed with the stage's layers).
  const double mtp_logits = mtp_layers * logits_forward_flops(m, c.mbs, c.seq_length, c.tp, c.cp, g.vocab_divisor());
  PassCost p;
  p.gemm_ns = gemm_ns(logits, 1) + gemm_ns(mtp_logits, mtp_layers);
  p.flops = logits + mtp_logits;
  p.launch_ns = 4 * gpu_.kernel_launch_overhead_ns;
  // Cross-entropy over the logits (the loss's and each MTP module's, one implementation for all).
  const int heads = (loss ? 1 : 0) + mtp_layers;
  const CrossEntropyBytes ce = cross_entropy_bytes(c);
  if (pass != Pass::W) p.elementwise_ns = memory_ns(g.logits() * (pass == Pass::F ? ce.forward : ce.input_grad) * heads);
  // Full recompute re-runs neither the logits nor the cross-entropy: the model computes them outside
  // the checkpointed layers.
  return p;
}

std::int64_t AnalyticCost::duration_ns(int, const Action& a) const {
  const StageTotals& t = totals_[static_cast<std::size_t>(a.stage)];
  switch (a.op) {
    case Op::F: return t.f_ns;
    case Op::I: return t.i_ns;
    case Op::W: return t.w_ns;
    case Op::B: return t.b_ns;
    case Op::OverlapFB: return limits::saturated_ns(overlap_ns(a.stage, a.b_stage));
    default: return 0;
  }
}

std::array<AnalyticCost::PairedPhase, 4> AnalyticCost::paired_phases(int f_stage, int b_stage) const {
  const StageTotals& f = totals_[static_cast<std::size_t>(f_stage)];
  const StageTotals& b = totals_[static_cast<std::size_t>(b_stage)];
  std::array<PairedPhase, 4> out{{{"F attention & dense | B combine"},
                                  {"B experts | F dispatch"},
                                  {"F experts | B dispatch"},
                                  {"B attention & dense | F combine"}}};
  // While the EP kernels run they hold some of the GPU's SMs, so the compute beside them runs at
  // (1 - loss) of its speed (sm_carve_out.h): C + loss x E when the compute outlasts the transfer E, else
  // E itself. Of E, `idle` is the GPU waiting for the host, when no EP kernel holds SMs.
  const auto add = [&](int phase, double compute, double transfer, double idle, int times) {
    PairedPhase& p = out[static_cast<std::size_t>(phase)];
    p.compute_ns += times * compute;
    p.transfer_ns += times * transfer;
    p.ns += times * std::max(transfer, compute + ep_compute_loss_ * (transfer - idle));
  };
  // One layer of F beside one of B (either may be absent: a zero half). Dispatch and combine move the
  // same bytes; F's dispatch also holds the host gap after its wait (B has none: F&B units exclude a
  // recomputed forward).
  const auto pair = [&](const OverlapHalves& fl, const OverlapHalves& bl, int times) {
    const double f_half = (fl.f_ep_ns - fl.f_gap_ns) / 2, b_half = bl.b_ep_ns / 2;
    add(0, fl.f_other_ns, b_half, 0, times);
    add(1, bl.b_expert_ns, f_half + fl.f_gap_ns, fl.f_gap_ns, times);
    add(2, fl.f_expert_ns, b_half, 0, times);
    add(3, bl.b_other_ns, f_half, 0, times);
  };
  // Megatron pairs F's layer i with B's layer n - 1 - i: F's runs forward, B's backward.
  const OverlapHalves none;
  auto fi = f.layer_runs.begin();
  auto bi = b.layer_runs.rbegin();
  int f_left = fi != f.layer_runs.end() ? fi->count : 0, b_left = bi != b.layer_runs.rend() ? bi->count : 0;
  while (fi != f.layer_runs.end() && bi != b.layer_runs.rend()) {
    const int n = std::min(f_left, b_left);
    pair(fi->halves, bi->halves, n);
    if ((f_left -= n) == 0 && ++fi != f.layer_runs.end()) f_left = fi->count;
    if ((b_left -= n) == 0 && ++bi != b.layer_runs.rend()) b_left = bi->count;
  }
  for (; fi != f.layer_runs.end(); f_left = ++fi != f.layer_runs.end() ? fi->count : 0) pair(fi->halves, none, f_left);
  for (; bi != b.layer_runs.rend(); b_left = ++bi != b.layer_runs.rend() ? bi->count : 0) pair(none, bi->halves, b_left);
  // F's embedding, loss and MTP heads, and B's, run beside no transfer.
  add(0, f.f_alone_ns, 0, 0, 1);
  add(3, b.b_alone_ns, 0, 0, 1);
  return out;
}

double AnalyticCost::overlap_ns(int f_stage, int b_stage) const {
  const StageTotals& f = totals_[static_cast<std::size_t>(f_stage)];
  const StageTotals& b = totals_[static_cast<std::size_t>(b_stage)];
  return std::max(overlap_gpu_ns(f_stage, b_stage), f.f_host_ns + b.b_host_ns);
}

double AnalyticCost::overlap_gpu_ns(int f_stage, int b_stage) const {
  double ns = totals_[static_cast<std::size_t>(f_stage)].f_exposed_comm_ns + totals_[static_cast<std::size_t>(b_stage)].b_exposed_comm_ns;
  for (const PairedPhase& p : paired_phases(f_stage, b_stage)) ns += p.ns;
  return ns;
}

std::vector<Phase> AnalyticCost::phases(int, const Action& a) const {
  std::vector<Phase> out;
  auto add = [&out](std::string_view name, double ns, double comm_ns, double exposed_ns) {
    if (ns > 0) out.push_back({std::string(name), std::llround(ns), std::llround(comm_ns), std::llround(exposed_ns)});
  };
  constexpr std::string_view kOtherComm = "tp/cp/fsdp comm", kNonExpert = "attention & dense", kHostLaunches = "host launches";
  const StageCost& c = stages_[static_cast<std::size_t>(a.stage)];
  if (a.op == Op::OverlapFB) {
    const StageTotals& f = totals_[static_cast<std::size_t>(a.stage)];
    const StageTotals& b = totals_[static_cast<std::size_t>(a.b_stage)];
    if (f.f_ep_ns + b.b_ep_ns + f.f_expert_ns + b.b_expert_ns <= 0) return out;
    for (const PairedPhase& p : paired_phases(a.stage, a.b_stage)) add(p.name, p.ns, p.transfer_ns, p.ns - p.compute_ns);
    const double other = f.f_exposed_comm_ns + b.b_exposed_comm_ns;
    add(kOtherComm, other, other, other);
    add(kHostLaunches, overlap_ns(a.stage, a.b_stage) - overlap_gpu_ns(a.stage, a.b_stage), 0, 0);
    return out;
  }
  PassCost p;
  switch (a.op) {
    case Op::F: p = c.f; break;
    case Op::I: p = c.i.without_wgrad(); break;
    case Op::W: p = c.w; break;
    case Op::B: p = c.i; p += c.w; break;
    default: return out;
  }
  if (p.expert_ns <= 0 && p.ep_comm_ns <= 0) return out;
  // Not an F&B unit: each transfer is exposed, less what shared experts beside it hide (below). The
  // backward meets combine before dispatch.
  const double half = (p.ep_comm_ns - p.ep_host_gap_ns) / 2, attention = p.compute_ns() - p.host_wait_ns - p.expert_ns;
  const double other = p.tp_comm_ns + p.cp_comm_ns + p.dp_comm_ns;
  // With --moe-shared-expert-overlap a transfer's phase is only its exposed part; the rest runs under the
  // experts' phase, beside the shared experts.
  const double dispatch = half + p.ep_host_gap_ns, dispatch_exposed = dispatch - p.ep_hidden_dispatch_ns,
               combine_exposed = half - p.ep_hidden_combine_ns;
  if (a.op == Op::F) {
    add(kNonExpert, attention, 0, 0);
    add("dispatch", dispatch_exposed, dispatch_exposed, dispatch_exposed);
    add("experts", p.expert_ns, 0, 0);
    add("combine", combine_exposed, combine_exposed, combine_exposed);
  } else {  // a recomputed forward's host gap joins the backward's dispatch
    add("combine", combine_exposed, combine_exposed, combine_exposed);
    add("experts", p.expert_ns, 0, 0);
    add("dispatch", dispatch_exposed, dispatch_exposed, dispatch_exposed);
    add(kNonExpert, attention, 0, 0);
  }
  add(kOtherComm, other, other, other);
  add("activation offload", p.offload_ns, p.offload_ns, p.offload_ns);
  add(kHostLaunches, p.host_wait_ns, 0, 0);
  return out;
}

namespace {

InActionComm pass_comm(const PassCost& p) { return {p.tp_comm_ns, p.ep_exposed_ns(), p.cp_comm_ns, p.dp_comm_ns, p.offload_ns, p.host_wait_ns}; }

}  // namespace

InActionComm AnalyticCost::in_action_comm(int, const Action& a) const {
  const StageCost& c = stages_[static_cast<std::size_t>(a.stage)];
  InActionComm out;
  switch (a.op) {
    case Op::F: return pass_comm(c.f);
    case Op::I: return pass_comm(c.i.without_wgrad());
    case Op::W: return pass_comm(c.w);
    case Op::B:
      out = pass_comm(c.i);
      out += pass_comm(c.w);
      return out;
    case Op::OverlapFB: {
      const StageCost& b = stages_[static_cast<std::size_t>(a.b_stage)];
      out = pass_comm(c.f);
      out += pass_comm(b.i);
      out += pass_comm(b.w);
      // Derived from overlap_ns so the parts and the unit's duration cannot disagree: the host launches
      // both halves, so the unit waits for it beyond the GPU's time of the pair.
      const StageTotals& ft = totals_[static_cast<std::size_t>(a.stage)];
      const StageTotals& bt = totals_[static_cast<std::size_t>(a.b_stage)];
      const double gpu_ns = overlap_gpu_ns(a.stage, a.b_stage);
      out.host_ns = overlap_ns(a.stage, a.b_stage) - gpu_ns;
      const double compute = ft.f_compute_ns - ft.f_host_wait_ns + bt.b_compute_ns - bt.b_host_wait_ns;
      out.ep_ns = std::max(0.0, gpu_ns - compute - out.tp_ns - out.cp_ns - out.fsdp_ns - out.offload_ns);
      return out;
    }
    default: return out;
  }
}

double AnalyticCost::flops(const Action& a) const {
  const StageTotals& t = totals_[static_cast<std::size_t>(a.stage)];
  switch (a.op) {
    case Op::F: return t.f_flops;
    case Op::I: return t.i_flops;
    case Op::W: return t.w_flops;
    case Op::B: return t.i_flops + t.w_flops;
    case Op::OverlapFB: return t.f_flops + totals_[static_cast<std::size_t>(a.b_stage)].i_flops + totals_[static_cast<std::size_t>(a.b_stage)].w_flops;
    default: return 0;
  }
}

std::int64_t AnalyticCost::p2p_ns(std::int64_t bytes, int src_rank, int dst_rank) const {
  const Link link = layout_.pipeline_link(src_rank, dst_rank);
  return limits::saturated_ns(link.latency_ns + static_cast<double>(bytes) / link.bandwidth_gbps);
}

std::int64_t AnalyticCost::reduce_grad_bytes(int stage) const {
  const ParallelConfig& c = geometry_->config();
  return stage_param_elems_[static_cast<std::size_t>(stage)] * (c.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes);
}

std::int64_t AnalyticCost::reduce_grad_ns(int, int stage) const { return limits::saturated_ns(reduce_grad_parts(stage, false)); }

std::int64_t AnalyticCost::reduce_grad_tail_ns(int, int stage) const { return limits::saturated_ns(reduce_grad_parts(stage, true)); }

std::int64_t AnalyticCost::reduce_grad_tail_bytes(int stage) const {
  return static_cast<std::int64_t>(std::min(static_cast<double>(reduce_grad_bytes(stage)), last_bucket_bytes(stage)));
}

double AnalyticCost::last_bucket_bytes(int stage) const {
  const ParallelConfig& c = geometry_->config();
  if (!bucketed(stage)) return static_cast<double>(reduce_grad_bytes(stage));
  // Megatron's DDP reduces bucket by bucket as the last microbatch's backward produces them (the
  // others run under no_sync). Only the last bucket follows the pass: the default bucket, or the word
  // embedding, among the first parameters (the last gradients), which no bucket splits
  // (param_and_grad_buffer.py; tied, it is a bucket of its own; untied it may share the last one with a
  // few of the first layer's parameters: a lower bound then).
  return bucket_params() * (c.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes);
}

bool AnalyticCost::bucketed(int stage) const {
  // Only the first pipeline stage's first chunk, and only with the overlap: later stages and chunks
  // take one bucket (distributed_data_parallel.py: bucket_size None for pp_rank > 0 and without
  // overlap_grad_reduce; training.py: disable_bucketing for chunk_idx > 0).
  return geometry_->config().overlap_grad_reduce && stage == 0;
}

double AnalyticCost::bucket_params() const {
  // Megatron's default, max(40M, 1M x the DP x CP size) (Megatron-LM training.py resolve_ddp_bucket_size;
  // core_v0.15.0's DDP counted DP alone), or the word embedding.
  const ParallelConfig& c = geometry_->config();
  const double embedding_params = geometry_->vocab_per_gpu() * geometry_->model().hidden_size;
  return std::max({40e6, 1e6 * c.dp * c.cp, embedding_params});
}

double AnalyticCost::dp_collective_compute_loss() const { return sm_carve_out_loss(kTpOverlapBulkSms, gpu_.sm_count); }

double AnalyticCost::reduce_grad_parts(int stage, bool tail) const {
  const ParallelConfig& c = geometry_->config();
  // FSDP reduce-scatters each layer's gradients in its W (fsdp_layer_ns), nothing is left to the end.
  if (c.sharding() == Sharding::kOptimGradsParams) return 0;
  const double grad_bytes = c.grad_reduce_in_fp32 ? kFp32Bytes : kBf16Bytes;
  // Reduce-scatter (sharded optimizer) or all-reduce (twice the traffic) over a data-parallel group;
  // the distributed optimizer then all-gathers the updated parameters, overlapped with the next
  // iteration's forward (--overlap-param-gather: param_gather) or right after the step, on the same
  // link: then after the stage's last gradient pass, in the tail.
  const bool sharded = c.sharding() != Sharding::kNoShard;
  const double factor = sharded ? 1.0 : 2.0;
  const auto reduce = [&](double bytes, int group, const Link& link) {
    if (group <= 1 || bytes <= 0) return 0.0;
    return collective_ns(factor * bytes * (group - 1) / group, static_cast<int>(factor) * (group - 1), link);
  };
  // Dense parameters and routed experts over their groups (dp_groups). Bucketed (stage 0 with the
  // overlap, last_bucket_bytes), the last bucket (the tail) holds the word embedding: dense. Otherwise
  // the stage is one bucket: its tail is the whole reduction.
  const auto [dense, routed] = dp_groups(stage);
  const bool last_bucket_only = tail && bucketed(stage);
  const double dense_total = dense.elems * grad_bytes;
  const double dense_bytes = last_bucket_only ? std::min(static_cast<double>(reduce_grad_tail_bytes(stage)), dense_total) : dense_total;
  const double expert_bytes = last_bucket_only ? 0 : routed.elems * grad_bytes;
  const double gather_ns = sharded && !c.overlap_param_gather ? stage_param_gather(stage).ns : 0;
  return reduce(dense_bytes, dense.ranks, dense.link) + reduce(expert_bytes, routed.ranks, routed.link) + gather_ns;
}

std::array<AnalyticCost::DpGroup, 2> AnalyticCost::dp_groups(int stage) const {
  const ParallelConfig& c = geometry_->config();
  const auto s = static_cast<std::size_t>(stage);
  const double all = static_cast<double>(stage_param_elems_[s]), experts = static_cast<double>(stage_expert_elems_[s]);
  return {DpGroup{all - experts, c.dp * c.cp, layout_.ring_link(c.tp, c.dp * c.cp)},
          DpGroup{experts, c.expert_dp(), layout_.ring_link(c.ep * c.expert_tp(), c.expert_dp())}};
}

AnalyticCost::GatherNs AnalyticCost::stage_param_gather(int stage) const {
  const auto s = static_cast<std::size_t>(stage);
  const double all = static_cast<double>(stage_param_elems_[s]);
  const double weight_per_elem = all > 0 ? stage_weight_bytes_[s] / all : 0;
  GatherNs out;
  for (const DpGroup& g : dp_groups(stage)) {
    if (g.ranks <= 1 || g.elems <= 0) continue;
    const double received = g.elems * weight_per_elem * (g.ranks - 1) / g.ranks;
    out.ns += collective_ns(received, g.ranks - 1, g.link);
    out.bytes += received;
  }
  return out;
}

ParamGather AnalyticCost::param_gather(int, int stage) const {
  const ParallelConfig& c = geometry_->config();
  // FSDP gathers per layer inside the passes (fsdp_layer_ns); without --overlap-param-gather the gather
  // follows the step (reduce_grad_parts).
  if (c.sharding() != Sharding::kOptim && c.sharding() != Sharding::kOptimGrads) return {};
  if (!c.overlap_param_gather) return {};
  const GatherNs g = stage_param_gather(stage);
  ParamGather out;
  out.ns = limits::saturated_ns(g.ns);
  out.bytes = static_cast<std::int64_t>(g.bytes);
  // Megatron-Bridge aligns the gathers across pipeline stages with virtual pipelining
  // (comm_overlap.py: align_param_gather when pp > 1 and vp > 1).
  out.aligned = c.pp > 1 && c.vp > 1;
  // The buckets are the gradient buckets (bucketed). The forward pre-hook gathers them in the order
  // the forward needs them; an aligned gather issues them all at once in the buffer's order, the
  // model's last parameters first (param_and_grad_buffer.py builds it from params[::-1]), so the
  // forward's first layer waits for the whole gather: one bucket.
  if (bucketed(stage) && !out.aligned) {
    out.buckets = static_cast<int>(std::clamp(std::ceil(static_cast<double>(stage_param_elems_[0]) / bucket_params()), 1.0, 1e6));
  }
  return out;
}

}  // namespace pipelab::sim
