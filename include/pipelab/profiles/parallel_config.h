// ParallelConfig: how one training iteration is laid out over GPUs (TP/PP/VP/CP/EP/DP, batch sizes,
// recompute, precision), the rules that make a layout legal for a model and GPU, and the stage split.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <pipelab/profiles/precision.h>

namespace pipelab {

struct GpuSpec;
struct ModelSpec;

enum class Recompute { kNone, kSelective, kFull };

std::string_view to_string(Recompute recompute);
/// "none" | "selective" | "full"; InputError naming the valid values otherwise.
Recompute parse_recompute(std::string_view text);

/// Megatron's --recompute-method for full recompute: each chunk's layers in groups of
/// recompute_num_layers whose input is kept (uniform), or only its first recompute_num_layers
/// layers recomputed (block).
enum class RecomputeMethod { kUniform, kBlock };
std::string_view to_string(RecomputeMethod method);
RecomputeMethod parse_recompute_method(std::string_view text);

/// Which data-parallel state is sharded over the data-parallel ranks (Megatron-FSDP's
/// --data-parallel-sharding-strategy; ZeRO stages 0-3): nothing, the optimizer state (Megatron's
/// distributed optimizer), also the gradients, also the parameters.
enum class Sharding { kNoShard, kOptim, kOptimGrads, kOptimGradsParams };
std::string_view to_string(Sharding sharding);
Sharding parse_sharding(std::string_view text);

/// Fully sharded data parallelism: none, Megatron-FSDP (--use-megatron-fsdp) or torch FSDP2
/// (--use-torch-fsdp2).
enum class Fsdp { kNone, kMegatron, kTorch };
std::string_view to_string(Fsdp fsdp);
Fsdp parse_fsdp(std::string_view text);

/// Transformer Engine's FP8 recipe (Megatron's --fp8-recipe): one scale per tensor from an amax
/// history (delayed) or from the tensor itself (tensorwise, "FP8-CS"); 1x128/128x128 block scales
/// (blockwise, Hopper); 1x32 E8M0 block scales (mxfp8, Blackwell).
enum class Fp8Recipe { kDelayed, kTensorwise, kBlockwise, kMxfp8 };
std::string_view to_string(Fp8Recipe recipe);
Fp8Recipe parse_fp8_recipe(std::string_view text);

/// Megatron's --moe-token-dispatcher-type: all-gather over TP x EP, NCCL all-to-all, or the fused
/// flex dispatcher (DeepEP or HybridEP: one copy per destination node across the network).
enum class MoeDispatcher { kAllgather, kAlltoall, kFlex };
std::string_view to_string(MoeDispatcher dispatcher);
MoeDispatcher parse_moe_dispatcher(std::string_view text);

/// Megatron's --cp-comm-type: K/V passed around a ring overlapping attention (p2p), K/V all-gathered
/// before it (all_gather), or heads exchanged by all-to-all (a2a, Ulysses).
enum class CpCommType { kP2p, kAllGather, kA2a, kA2aP2p };
std::string_view to_string(CpCommType type);
CpCommType parse_cp_comm_type(std::string_view text);

/// Megatron's --attention-backend: a fused kernel (auto, flash, fused: FlashAttention or cuDNN through
/// Transformer Engine), or the score matrix materialised (unfused: TE's UnfusedDotProductAttention;
/// local: Megatron's own DotProductAttention, baddbmm, fused scale-mask-softmax, dropout and bmm, what
/// Megatron and NeMo ran before flash attention).
enum class AttentionBackend { kAuto, kFlash, kFused, kUnfused, kLocal };
std::string_view to_string(AttentionBackend backend);
AttentionBackend parse_attention_backend(std::string_view text);

/// Megatron's --cross-entropy-fusion-impl, the fused loss kernel (with --cross-entropy-loss-fusion):
/// Megatron's own compiled functions (native) or Transformer Engine's Triton kernels (te: TE 2.18 on,
/// an fp32 gradient; te_inplace, pipelab's name for TE before 2.18: the gradient written over the BF16
/// logits in place, what Megatron-Bridge releases up to 26.08 ran).
enum class CrossEntropyFusionImpl { kNative, kTe, kTeInplace };
std::string_view to_string(CrossEntropyFusionImpl impl);
CrossEntropyFusionImpl parse_cross_entropy_fusion_impl(std::string_view text);

/// Megatron's --recompute-modules names (selective recompute).
const std::vector<std::string>& recompute_module_names();

/// Megatron's --cuda-graph-impl: no CUDA graphs; per-layer graphs of the --cuda-graph-modules regions
/// (the whole layer when none are named), captured by Megatron (local) or by Transformer Engine's
/// make_graphed_callables (transformer_engine); or one graph of the whole forward and backward
/// (full_iteration). A graph replays its region's kernels with one launch from the host.
enum class CudaGraphImpl { kNone, kLocal, kTransformerEngine, kFullIteration };
std::string_view to_string(CudaGraphImpl impl);
CudaGraphImpl parse_cuda_graph_impl(std::string_view text);

/// Megatron's --cuda-graph-modules names (CudaGraphModule): attention, a dense MLP, a whole MoE layer
/// (drop-and-pad only), the MoE router and its preprocessing.
const std::vector<std::string>& cuda_graph_module_names();

/// A parallel layout. dp = 0 or world = 0 means "derive it" (resolve()); seq_length = 0 means the
/// model's default; sequence_parallel unset means "on when tp > 1" (Megatron's usual choice).
struct ParallelConfig {
  int tp = 1;     // tensor parallel
  int pp = 1;     // pipeline parallel (ranks)
  int vp = 1;     // virtual pipeline chunks per rank
  int cp = 1;     // context parallel
  int ep = 1;     // expert parallel (MoE parallel folding: ep * etp divides tp * cp * dp)
  int etp = 0;    // expert tensor parallel (0 = tp, Megatron's default)
  int dp = 0;     // data parallel
  int world = 0;  // GPUs
  int mbs = 1;    // micro-batch size (sequences)
  int gbs = 0;    // global batch size (sequences)
  int seq_length = 0;
  std::optional<bool> sequence_parallel;
  Recompute recompute = Recompute::kNone;
  RecomputeMethod recompute_method = RecomputeMethod::kUniform;  // full recompute only
  int recompute_num_layers = 0;                                  // full recompute: 0 = every layer of a chunk
  std::vector<std::string> recompute_modules;                    // selective: empty = {"core_attn"}, Megatron's default
  // The pipeline split, given at most one way (pipeline_layout.h); none = even, or cost-balanced.
  std::vector<int> stage_layers;  // decoder layers per virtual stage, size pp*vp, in model order
  std::string pipeline_layout;    // Megatron's --pipeline-model-parallel-layout
  int decoder_first_pipeline_num_layers = 0;
  int decoder_last_pipeline_num_layers = 0;
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  Precision precision = Precision::kBf16;
  // Data parallelism and sharding. Defaults are the Megatron-Bridge performance recipes':
  // distributed optimizer, overlapped gradient reduce-scatter and parameter all-gather, bf16
  // gradient buffers and reductions (grad_reduce_in_fp32 false), FP8 parameters all-gathered in FP8.
  bool distributed_optimizer = true;
  Fsdp fsdp = Fsdp::kNone;
  Sharding data_parallel_sharding_strategy = Sharding::kOptimGradsParams;  // with fsdp
  int num_distributed_optimizer_instances = 1;  // HSDP / partial distributed optimizer: shards within dp*cp / n
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool grad_reduce_in_fp32 = false;
  bool use_precision_aware_optimizer = false;   // bf16 Adam moments (exp_avg, exp_avg_sq), fp32 main params
  std::optional<bool> fp8_param_gather;         // unset: on with precision fp8 and a sharded optimizer or FSDP
  std::optional<bool> fp4_param_gather;         // unset: on with precision nvfp4 and a sharded optimizer or FSDP
  double optimizer_offload_fraction = 0;        // share of the optimizer state kept in host memory
  // Activation CPU offloading (Megatron's --cpu-offloading-num-layers, Transformer Engine's default
  // scheduling): the first N decoder layers' saved activations go to host memory in the forward and
  // come back for the backward. 0 = off.
  int cpu_offloading_num_layers = 0;
  // FP8, MoE and communication overlap (docs/simulator.md "Modelled effects").
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;   // Megatron's default
  // Megatron's --first-last-layers-bf16: the first and last decoder layers' GEMMs stay BF16 under FP8 or NVFP4.
  bool first_last_layers_bf16 = false;
  int num_layers_at_start_in_bf16 = 1;
  int num_layers_at_end_in_bf16 = 1;
  MoeDispatcher moe_token_dispatcher_type = MoeDispatcher::kAllgather;  // Megatron's default
  std::string moe_flex_dispatcher_backend = "deepep";                   // flex only: deepep | hybridep
  bool overlap_moe_expert_parallel_comm = false;  // 1F1B all-to-all overlap: merged F and B of adjacent microbatches
  bool delay_wgrad_compute = false;               // wgrad after the combine (EP overlap) or at the layer's end
  bool moe_shared_expert_overlap = false;         // shared experts on their own stream, beside the dispatch and combine
  double moe_load_imbalance = 1.0;                // busiest rank's tokens / the mean (NVIDIA's tables force 1)
  double moe_expert_capacity_factor = 0;          // an expert's capacity / the mean tokens, beyond it dropped; 0 = dropless (Megatron's None)
  bool moe_pad_expert_input_to_capacity = false;  // every expert padded to its capacity (needs the factor)
  // HybridEP's per-rank token budget (Megatron's --moe-expert-rank-capacity-factor): static buffers, so
  // the dispatch does not wait for the host; tokens beyond it dropped. 0 = none (dropless).
  double moe_expert_rank_capacity_factor = 0;
  bool tp_comm_overlap = false;                   // TE userbuffers: TP collectives pipelined with the GEMMs
  CpCommType cp_comm_type = CpCommType::kP2p;
  AttentionBackend attention_backend = AttentionBackend::kAuto;
  // The loss over the vocabulary (docs/simulator.md, "Cross-entropy"): fused by Megatron's own kernels,
  // as Megatron-Bridge's GPT provider and Megatron-LM's MoE performance flags set it (Megatron-LM's
  // default is unfused; Megatron-Bridge's performance scripts choose te, which Megatron-LM now refuses).
  bool cross_entropy_loss_fusion = true;
  CrossEntropyFusionImpl cross_entropy_fusion_impl = CrossEntropyFusionImpl::kNative;
  // a2a+p2p: {a2a group, p2p group} sizes, a2a over adjacent CP ranks (Megatron's
  // --hierarchical-context-parallel-sizes; their product is cp).
  std::vector<int> hierarchical_context_parallel_sizes;
  // CUDA graphs (docs/simulator.md, "Host launches"): Megatron's --cuda-graph-impl and
  // --cuda-graph-modules (older --cuda-graph-scope); no modules with a per-layer impl = whole layers.
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::kNone;
  std::vector<std::string> cuda_graph_modules;

  bool operator==(const ParallelConfig&) const = default;

  /// gbs / (mbs * dp): microbatches per iteration per pipeline. Needs a resolved dp (> 0).
  int microbatches() const;
  bool sequence_parallel_enabled() const { return sequence_parallel.value_or(tp > 1); }
  int virtual_stages() const { return pp * vp; }
  /// Expert tensor parallel in effect (etp, or tp when unset).
  int expert_tp() const { return etp > 0 ? etp : tp; }
  /// Ranks in CP's p2p ring, each step of which moves one K/V chunk: cp for p2p, a2a+p2p's p2p size P,
  /// 1 without a ring (cp = 1, all_gather, a2a). A valid a2a+p2p config holds both sizes when cp > 1.
  int cp_ring_size() const;
  /// The attention backend materialises the score matrix (unfused, local) instead of one fused kernel.
  bool attention_unfused() const { return attention_backend == AttentionBackend::kUnfused || attention_backend == AttentionBackend::kLocal; }
  /// MoE: the busiest EP rank's routed tokens / the mean, as its experts compute them and the dispatch
  /// moves them: moe_load_imbalance, capped at the capacity factor (tokens beyond it dropped) or at
  /// HybridEP's per-rank budget, or the capacity itself when padded to it.
  double moe_busiest_load() const;
  /// MoE: whether the token dispatch waits for the host (the token counts copied to the host, needed
  /// for the all-to-all splits and grouped GEMM sizes): always with allgather (Megatron copies its
  /// local map's counts whatever the capacity), else unless padded to capacity or given HybridEP's
  /// per-rank budget (static shapes).
  bool moe_dispatch_waits_for_host() const {
    return moe_token_dispatcher_type == MoeDispatcher::kAllgather || !(moe_pad_expert_input_to_capacity || moe_expert_rank_capacity_factor > 0);
  }
  /// Expert data parallel: the ranks of tp * cp * dp that hold the same experts, (tp*cp*dp) / (ep*etp).
  int expert_dp() const;
  /// Whether a CUDA graph replays `module` (a cuda_graph_module_names() entry): named with a per-layer
  /// impl, every module of a whole-layer capture, or full_iteration.
  bool cuda_graphed(std::string_view module) const;
  /// Whether selective recompute re-runs `module` (Megatron's --recompute-modules; core_attn when
  /// none are listed). False without selective recompute.
  bool recomputes_module(std::string_view module) const;
  /// What is sharded over data parallel: the FSDP strategy, or the distributed optimizer's state.
  Sharding sharding() const;
  /// FP8 weights kept and all-gathered: as set, else on with FP8 where something gathers them
  /// (the distributed optimizer or FSDP), as Megatron-Bridge's FP8 recipes run.
  bool fp8_param_gather_enabled() const {
    return fp8_param_gather.value_or(precision == Precision::kFp8 && (distributed_optimizer || fsdp != Fsdp::kNone));
  }
  /// The linear layers' GEMM precision in decoder layer `layer` (0-based, model order) of `num_layers`:
  /// `precision`, or BF16 for the first and last layers that first_last_layers_bf16 keeps.
  Precision layer_precision(int layer, int num_layers) const {
    const bool kept = first_last_layers_bf16 && (layer < num_layers_at_start_in_bf16 || layer >= num_layers - num_layers_at_end_in_bf16);
    return kept ? Precision::kBf16 : precision;
  }
  /// The same for NVFP4 weights (Megatron-Bridge's bf16_with_nvfp4_mixed sets fp4_param_gather).
  bool fp4_param_gather_enabled() const {
    return fp4_param_gather.value_or(precision == Precision::kNvfp4 && (distributed_optimizer || fsdp != Fsdp::kNone));
  }
  /// Bytes per weight element the model keeps and the parameter all-gather moves: the quantized copy
  /// under fp8_param_gather or fp4_param_gather, bf16 otherwise.
  double param_gather_bytes() const {
    if (fp8_param_gather_enabled()) return quantized_bytes(Precision::kFp8);
    if (fp4_param_gather_enabled()) return quantized_bytes(Precision::kNvfp4);
    return quantized_bytes(Precision::kBf16);
  }
};

/// Fills the derived fields: dp from world = tp*pp*cp*dp (or world from dp), seq_length from the model,
/// sequence_parallel's default. Throws ConfigError when dp cannot be derived (neither given, or world
/// not a multiple of tp*pp*cp). The other rules are check()'s job.
ParallelConfig resolve(const ParallelConfig& config, const ModelSpec& model);

/// One broken (or risky) rule: the field it is about, a short rule id, and a message naming both.
struct ConfigIssue {
  std::string field;
  std::string rule;
  std::string message;
};

struct ConfigCheck {
  std::vector<ConfigIssue> errors;
  std::vector<ConfigIssue> warnings;

  bool ok() const { return errors.empty(); }
};

/// The issues' messages joined by `separator`: "\n" for require_valid's error, "; " on one line.
std::string join_messages(const std::vector<ConfigIssue>& issues, std::string_view separator);

/// Every rule of docs/profiles.md "Parallel rules", on the config as given (dp/world/seq_length
/// derived on the fly if missing). Schedule-specific constraints belong to the schedule generators.
ConfigCheck check(const ParallelConfig& config, const ModelSpec& model, const GpuSpec& gpu);
/// Whether `gpu` has the tensor cores `config`'s precision and FP8 recipe need (one of check()'s
/// rules, also asked by the planner before it searches): FP8 needs FP8 tensor cores; MXFP8 and NVFP4
/// the block-scaled ones that come with FP4 (Blackwell). nullopt when it does.
std::optional<ConfigIssue> precision_unsupported(const ParallelConfig& config, const GpuSpec& gpu);
/// Throws ConfigError with every error message of check(), one per line.
void require_valid(const ParallelConfig& config, const ModelSpec& model, const GpuSpec& gpu);

/// Decoder layers of each virtual stage in model order (size pp*vp; which rank runs stage s is the
/// schedule's placement, loop or V): the resolved pipeline layout's (pipeline_layout.h). ConfigError
/// naming the field and rule when the split is impossible.
std::vector<int> layers_per_stage(const ParallelConfig& config, const ModelSpec& model);

/// Strict JSON with the field names above ("recompute": "selective", "precision": "fp8", ...); gbs is
/// required, every other key optional.
ParallelConfig parallel_config_from_json(const nlohmann::json& json, std::string_view context);
ParallelConfig parse_parallel_config(std::string_view json_text, std::string_view context);
nlohmann::json to_json(const ParallelConfig& config);

/// "19,21,21,19" -> {19, 21, 21, 19}: the command-line form of stage_layers. InputError
/// "<key>=<item>: expected an integer" naming the item that is not one.
std::vector<int> parse_int_list(std::string_view key, std::string_view text);

/// Megatron's virtual pipeline size of a layout string: its stages / pp (Megatron derives vp from the
/// string and refuses a vp flag beside it); 0 without a string, or one that does not parse or split
/// over pp. Schedules that take any vp use it when none is given (simulate_config); DualPipe's layout
/// has pp stages, each held twice, so fixed-vp schedules keep their own.
int vp_from_layout(const ParallelConfig& config);

/// The field a key names: '-' or '_' separated, Megatron's long names resolved (apply_override's keys);
/// unchecked (an unknown key comes back normalized).
std::string canonical_parallel_key(std::string_view key);

/// Sets one field from a command-line string. Keys: the JSON names and Megatron's long names
/// (tensor_model_parallel_size, pipeline_model_parallel_size, virtual_pipeline_model_parallel_size,
/// context_parallel_size, expert_model_parallel_size, data_parallel_size, micro_batch_size,
/// global_batch_size, recompute_granularity, use_distributed_optimizer), '-' or '_' separated.
void apply_override(ParallelConfig& config, std::string_view key, std::string_view value);

}  // namespace pipelab
