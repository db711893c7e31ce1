// Analytic cost model; see analytic_cost.h and docs/metrics.md.
#include "pipelab/sim/analytic_cost.h"

#include <algorithm>
#include <cmath>

#include "pipelab/base/error.h"
#include "pipelab/profiles/flops.h"
#include "pipelab/sim/memory_model.h"
#include "pipelab/sim/stage_layers.h"

namespace pipelab::sim {
namespace {

constexpr double kBf16 = 2;
// Kernels launched per layer per pass (norm, QKV, RoPE, attention, out-proj, residual, norm, up,
// activation, down, residual, plus TP collectives): the launch gap each adds on the GPU.
constexpr double kKernelsPerLayerPass = 14;

}  // namespace

PassCost& PassCost::operator+=(const PassCost& o) {
  gemm_ns += o.gemm_ns;
  attention_ns += o.attention_ns;
  elementwise_ns += o.elementwise_ns;
  tp_comm_ns += o.tp_comm_ns;
  ep_comm_ns += o.ep_comm_ns;
  cp_comm_ns += o.cp_comm_ns;
  launch_ns += o.launch_ns;
  flops += o.flops;
  return *this;
}

AnalyticCost::AnalyticCost(const ModelSpec& model, const GpuSpec& gpu, const ParallelConfig& config, const PipelineShape& shape)
    : model_(model), gpu_(gpu), config_(config), layout_(config, gpu) {
  if (config.dp < 1 || config.seq_length < 1) throw ConfigError("analytic cost model needs a resolved config (dp, seq_length)");
  peak_flops_per_ns_ = gpu.peak_tflops(config.precision) * 1e3;  // TFLOP/s -> FLOP/ns
  const auto ranges = stage_layers(model, config, shape);
  const MemoryModel memory(model, config, shape);
  for (int s = 0; s < shape.stages; ++s) {
    const LayerRange& range = ranges[static_cast<std::size_t>(s)];
    StageCost c;
    for (int l = range.first; l < range.first + range.count; ++l) {
      c.f += layer_pass(l, 'F');
      c.i += layer_pass(l, 'I');
      c.w += layer_pass(l, 'W');
    }
    if (range.has_embedding) {
      c.f += embedding_pass('F');
      c.w += embedding_pass('W');
    }
    if (range.has_output) {
      c.f += output_pass('F');
      c.i += output_pass('I');
      c.w += output_pass('W');
    }
    stages_.push_back(c);
    stage_param_bytes_.push_back(memory.stage_params_per_gpu(s) * 2);  // bf16 gradients on the wire
    // What the engine asks per action, computed once.
    PassCost b = c.i;
    b += c.w;
    StageTotals t;
    t.f_ns = std::llround(c.f.total_ns());
    t.i_ns = std::llround(c.i.total_ns());
    t.w_ns = std::llround(c.w.total_ns());
    t.b_ns = std::llround(c.i.total_ns() + c.w.total_ns());
    t.f_flops = c.f.flops;
    t.i_flops = c.i.flops;
    t.w_flops = c.w.flops;
    t.f_compute_ns = c.f.compute_ns();
    t.b_compute_ns = b.compute_ns();
    t.f_exposed_comm_ns = c.f.tp_comm_ns + c.f.cp_comm_ns;
    t.b_exposed_comm_ns = b.tp_comm_ns + b.cp_comm_ns;
    t.f_ep_ns = c.f.ep_comm_ns;
    t.b_ep_ns = b.ep_comm_ns;
    totals_.push_back(t);
  }
  const bool sp = config.tp > 1 && config.sequence_parallel_enabled();
  boundary_bytes_ = static_cast<std::int64_t>(static_cast<double>(config.mbs) * config.seq_length / config.cp / (sp ? config.tp : 1) *
                                              model.hidden_size * kBf16);
}

double AnalyticCost::gemm_ns(double flops, double calls) const {
  if (flops <= 0) return 0;
  const double per_call = flops / std::max(1.0, calls);
  return flops / (peak_flops_per_ns_ * gpu_.gemm_efficiency(per_call));
}

double AnalyticCost::memory_ns(double bytes) const {
  return bytes / (gpu_.hbm_bandwidth_gbps * gpu_.memory_bandwidth_efficiency);  // GB/s = bytes/ns
}

// Ring collective: `steps` latency hops and `bytes_on_wire` bytes through each GPU's link.
double AnalyticCost::collective_ns(double bytes_on_wire, int steps, const Link& link) const {
  if (bytes_on_wire <= 0) return 0;
  return steps * link.latency_ns + bytes_on_wire / (link.bandwidth_gbps * gpu_.collective_efficiency);
}

PassCost AnalyticCost::layer_pass(int layer, char pass) const {
  const ModelSpec& m = model_;
  const ParallelConfig& c = config_;
  const LayerFlops lf = layer_forward_flops(m, layer, c.mbs, c.seq_length, c.tp, c.cp);
  const double tokens = static_cast<double>(c.mbs) * c.seq_length / c.cp;  // per GPU, before SP
  const double h = m.hidden_size;
  const bool moe = m.is_moe_layer(layer);
  const double f = moe ? static_cast<double>(m.moe_router_topk) * m.moe_ffn_hidden_size + m.moe_shared_expert_intermediate_size
                       : m.ffn_hidden_size;
  const bool sp = c.tp > 1 && c.sequence_parallel_enabled();

  // GEMM calls, for the efficiency curve: QKV and out-proj one each; the MLP two (up [+gate], down),
  // or two per local expert when MoE.
  const double local_experts = moe ? std::max(1.0, static_cast<double>(m.num_experts) / c.ep) : 1;
  PassCost fwd;
  fwd.gemm_ns = gemm_ns(lf.qkv, 1) + gemm_ns(lf.attn_out, 1) + gemm_ns(lf.mlp, 2 * local_experts) + gemm_ns(lf.router, 1);
  const double heads_local = std::max(1.0, static_cast<double>(m.num_attention_heads) / c.tp);
  fwd.attention_ns = gemm_ns(lf.attention_core, c.mbs * heads_local);
  // Memory-bound work per token (bf16): two norms (read + write h), two residual adds (3h each),
  // RoPE on Q and K, the MLP activation (read up output, write activation).
  const double norm_tokens = sp ? tokens / c.tp : tokens;
  const double q_local = static_cast<double>(m.query_projection_size()) / c.tp;
  const double kv_width = m.multi_latent_attention ? static_cast<double>(m.num_attention_heads) * m.qk_head_dim
                                                   : static_cast<double>(m.num_query_groups) * m.kv_channels;
  const double rope_bytes = 2 * (q_local + kv_width / c.tp) * kBf16;  // read + write Q and K
  const double act_bytes = (m.swiglu ? 3 * f : 2 * f) / c.tp * kBf16;
  fwd.elementwise_ns = memory_ns(norm_tokens * (4 * h + 6 * h) * kBf16 + tokens * (rope_bytes + act_bytes));
  fwd.launch_ns = kKernelsPerLayerPass * gpu_.kernel_launch_overhead_ns;
  fwd.flops = lf.forward();

  // TP: 2 all-reduces (or 2 all-gathers + 2 reduce-scatters with SP) of the full activation.
  if (c.tp > 1) {
    const double full = tokens * h * kBf16;
    const Link link = layout_.group_link(1, c.tp);
    const double ring = static_cast<double>(c.tp - 1) / c.tp;
    fwd.tp_comm_ns = sp ? 4 * collective_ns(full * ring, c.tp - 1, link) : 2 * collective_ns(2 * full * ring, 2 * (c.tp - 1), link);
  }
  // EP: token dispatch and combine all-to-alls of top-k copies of each token.
  if (moe && c.ep > 1) {
    const double bytes = tokens * m.moe_router_topk * h * kBf16 / (sp ? c.tp : 1) * (c.ep - 1) / c.ep;
    const Link link = layout_.group_link(static_cast<long>(c.tp) * c.cp, c.ep);
    fwd.ep_comm_ns = 2 * collective_ns(bytes, c.ep - 1, link);
  }
  // CP: each rank passes its K/V chunk around the ring; exposed only beyond the attention compute.
  if (c.cp > 1) {
    const double kv_local = (m.multi_latent_attention ? static_cast<double>(m.num_attention_heads) * (m.qk_head_dim + m.v_head_dim)
                                                      : 2.0 * m.num_query_groups * m.kv_channels) / c.tp;
    const double bytes = tokens * kv_local * kBf16 * (c.cp - 1);
    const Link link = layout_.group_link(c.tp, c.cp);
    fwd.cp_comm_ns = std::max(0.0, collective_ns(bytes, c.cp - 1, link) - fwd.attention_ns);
  }

  switch (pass) {
    case 'F': return fwd;
    case 'I': {
      // dgrad GEMMs as many FLOPs as the forward's; attention backward 2x; elementwise backward
      // about twice the forward's traffic; the same collectives in reverse.
      PassCost in;
      in.gemm_ns = fwd.gemm_ns;
      in.attention_ns = 2 * fwd.attention_ns;
      in.elementwise_ns = 2 * fwd.elementwise_ns;
      in.launch_ns = fwd.launch_ns;
      in.tp_comm_ns = fwd.tp_comm_ns;
      in.ep_comm_ns = fwd.ep_comm_ns;
      in.cp_comm_ns = c.cp > 1 ? 2 * fwd.cp_comm_ns : 0;
      in.flops = lf.input_grad();
      if (c.recompute == Recompute::kSelective) {
        in.attention_ns += fwd.attention_ns;
        in.flops += lf.attention_core;
      } else if (c.recompute == Recompute::kFull) {
        in += fwd;
      }
      return in;
    }
    default: {
      PassCost w;  // wgrad GEMMs only
      w.gemm_ns = fwd.gemm_ns;
      w.launch_ns = fwd.launch_ns / 2;
      w.flops = lf.weight_grad();
      return w;
    }
  }
}

PassCost AnalyticCost::embedding_pass(char pass) const {
  // Lookup writes (and its gradient scatters) one h-vector per token.
  const double tokens = static_cast<double>(config_.mbs) * config_.seq_length / config_.cp;
  PassCost p;
  p.elementwise_ns = memory_ns(tokens * model_.hidden_size * kBf16 * (pass == 'F' ? 1 : 2));
  p.launch_ns = gpu_.kernel_launch_overhead_ns;
  return p;
}

PassCost AnalyticCost::output_pass(char pass) const {
  const ParallelConfig& c = config_;
  const double tokens = static_cast<double>(c.mbs) * c.seq_length / c.cp;
  const double vocab = static_cast<double>(padded_vocab_size(model_, 128 * c.tp)) / c.tp;
  const double logits = logits_forward_flops(model_, c.mbs, c.seq_length, c.tp, c.cp, 128 * c.tp);
  const double mtp = mtp_forward_flops(model_, c.mbs, c.seq_length, c.tp, c.cp, 128 * c.tp);
  PassCost p;
  p.gemm_ns = gemm_ns(logits, 1) + gemm_ns(mtp, 8.0 * std::max(1, model_.mtp_num_layers));
  p.flops = logits + mtp;
  p.launch_ns = 4 * gpu_.kernel_launch_overhead_ns;
  // Cross-entropy over fp32 logits: written and read in the forward, read and written in I.
  if (pass != 'W') p.elementwise_ns = memory_ns(tokens * vocab * 4 * 2);
  if (pass == 'I' && c.recompute == Recompute::kFull) {
    p.gemm_ns *= 2;
    p.flops *= 2;
  }
  return p;
}

std::int64_t AnalyticCost::duration_ns(int, const Action& a) const {
  const StageTotals& t = totals_[static_cast<std::size_t>(a.stage)];
  switch (a.op) {
    case Op::F: return t.f_ns;
    case Op::I: return t.i_ns;
    case Op::W: return t.w_ns;
    case Op::B: return t.b_ns;
    case Op::OverlapFB: return std::llround(overlap_ns(a.stage, a.b_stage));
    default: return 0;
  }
}

double AnalyticCost::overlap_ns(int f_stage, int b_stage) const {
  const StageTotals& f = totals_[static_cast<std::size_t>(f_stage)];
  const StageTotals& b = totals_[static_cast<std::size_t>(b_stage)];
  const double compute = f.f_compute_ns + b.b_compute_ns;
  return compute + f.f_exposed_comm_ns + b.b_exposed_comm_ns + std::max(0.0, f.f_ep_ns + b.b_ep_ns - compute);
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
  return static_cast<std::int64_t>(std::llround(link.latency_ns + static_cast<double>(bytes) / link.bandwidth_gbps));
}

std::int64_t AnalyticCost::reduce_grad_bytes(int stage) const { return stage_param_bytes_[static_cast<std::size_t>(stage)]; }

std::int64_t AnalyticCost::reduce_grad_ns(int, int stage) const {
  const int group = config_.dp * config_.cp;
  if (group <= 1) return 0;
  const double bytes = static_cast<double>(reduce_grad_bytes(stage));
  const Link link = layout_.group_link(config_.tp, group);
  // Reduce-scatter (distributed optimizer) or all-reduce (twice the traffic).
  const double factor = config_.distributed_optimizer ? 1.0 : 2.0;
  return static_cast<std::int64_t>(std::llround(collective_ns(factor * bytes * (group - 1) / group, static_cast<int>(factor) * (group - 1), link)));
}

}  // namespace pipelab::sim
