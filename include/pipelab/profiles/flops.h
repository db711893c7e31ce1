// FLOP counts: Megatron-LM's model-FLOPs formula (what "TFLOP/s/GPU" and MFU are computed from) and the
// per-layer forward pieces the analytic cost model times. Derivation and version: docs/profiles.md.
#pragma once

#include <cstdint>

namespace pipelab {

struct ModelSpec;

/// Megatron's vocabulary padding divisor for a run: make_vocab_size_divisible_by (128) x tp.
constexpr int megatron_vocab_divisor(int tp) { return 128 * tp; }

/// Vocabulary as Megatron pads it: rounded up to a multiple of `vocab_divisor`
/// (megatron_vocab_divisor(tp) for a run; the default is its tp = 1 value).
std::int64_t padded_vocab_size(const ModelSpec& model, int vocab_divisor = 128);

/// Forward + backward FLOPs of one iteration as Megatron-LM main's
/// `training.py::num_floating_point_operations` computes them (2025 form: causal attention halved,
/// GQA, SwiGLU, MoE top-k + shared experts + leading dense layers, MLA, MTP, logits on the padded
/// vocabulary), with Megatron-Bridge's sliding-window term for windowed layers (which Megatron-LM
/// counts as full causal). No recompute FLOPs, no router GEMM. Pass megatron_vocab_divisor(tp) to
/// match a run.
double megatron_model_flops(const ModelSpec& model, std::int64_t global_batch, std::int64_t seq_length,
                            int vocab_divisor = 128);

/// Forward FLOPs of one transformer layer for one microbatch on one (tp, cp) rank: every term divided
/// by tp*cp (heads and GEMM columns split over tp, causal load-balanced tokens over cp; experts at
/// expert-tp = tp). Backward: each GEMM costs its forward again for input-grad and again for
/// weight-grad; core attention has no weights, so its 2x backward is all input-grad.
struct LayerFlops {
  double qkv = 0;             // Q/K/V projections (MLA: down/up projections and decoupled RoPE)
  double attention_core = 0;  // QK^T and scores x V: causal-halved, or over the sliding window
  double attn_out = 0;        // output projection
  double mlp = 0;             // dense MLP, or routed top-k experts + shared experts
  double router = 0;          // MoE gate GEMM h x num_experts (not in Megatron's count)

  double gemm() const { return qkv + attn_out + mlp + router; }
  double forward() const { return gemm() + attention_core; }
  double input_grad() const { return gemm() + 2 * attention_core; }
  double weight_grad() const { return gemm(); }
  double backward() const { return input_grad() + weight_grad(); }
};

LayerFlops layer_forward_flops(const ModelSpec& model, int layer, std::int64_t mbs,
                               std::int64_t seq_length, int tp = 1, int cp = 1);

/// Keys one query of `layer` attends to on average, as the FLOP counts above take them: s/2 under
/// the causal mask, or the mean over the sequence of a sliding window (layer 0-based).
double attended_keys_per_query(const ModelSpec& model, int layer, std::int64_t seq_length);

/// Forward FLOPs of the output layer (logits over the padded vocabulary) for one microbatch per rank.
double logits_forward_flops(const ModelSpec& model, std::int64_t mbs, std::int64_t seq_length,
                            int tp = 1, int cp = 1, int vocab_divisor = 128);

/// Forward FLOPs of one MTP module's glue for one microbatch per rank: its norms and 2h->h projection
/// as Megatron counts them (not its transformer layer or its logits).
double mtp_glue_forward_flops(const ModelSpec& model, std::int64_t mbs, std::int64_t seq_length, int tp = 1, int cp = 1);

/// Forward FLOPs of all MTP modules for one microbatch per rank: each one's transformer layer (shaped
/// like the last layer), its norms and 2h->h projection as Megatron counts them, and its own logits.
double mtp_forward_flops(const ModelSpec& model, std::int64_t mbs, std::int64_t seq_length, int tp = 1,
                         int cp = 1, int vocab_divisor = 128);

}  // namespace pipelab
