// ParallelConfig: derivation, legality rules (errors name field and rule), stage split, strict JSON
// and command-line overrides.
#include <pipelab/profiles/parallel_config.h>

#include <algorithm>
#include <array>
#include <numeric>

#include <nlohmann/json.hpp>

#include <pipelab/base/error.h>
#include <pipelab/base/json_reader.h>
#include <pipelab/profiles/gpu_spec.h>
#include <pipelab/profiles/model_spec.h>
#include <pipelab/profiles/pipeline_layout.h>

#include "field_table.h"

namespace pipelab {
namespace {

constexpr std::array<EnumName<Recompute>, 3> kRecomputeNames = {
    {{Recompute::kNone, "none"}, {Recompute::kSelective, "selective"}, {Recompute::kFull, "full"}}};
constexpr std::array<EnumName<RecomputeMethod>, 2> kRecomputeMethodNames = {
    {{RecomputeMethod::kUniform, "uniform"}, {RecomputeMethod::kBlock, "block"}}};
constexpr std::array<EnumName<Sharding>, 4> kShardingNames = {{{Sharding::kNoShard, "no_shard"},
                                                              {Sharding::kOptim, "optim"},
                                                              {Sharding::kOptimGrads, "optim_grads"},
                                                              {Sharding::kOptimGradsParams, "optim_grads_params"}}};
constexpr std::array<EnumName<Fsdp>, 3> kFsdpNames = {{{Fsdp::kNone, "none"}, {Fsdp::kMegatron, "megatron"}, {Fsdp::kTorch, "torch"}}};
constexpr std::array<EnumName<Fp8Recipe>, 4> kFp8RecipeNames = {{{Fp8Recipe::kDelayed, "delayed"},
                                                                {Fp8Recipe::kTensorwise, "tensorwise"},
                                                                {Fp8Recipe::kBlockwise, "blockwise"},
                                                                {Fp8Recipe::kMxfp8, "mxfp8"}}};
constexpr std::array<EnumName<MoeDispatcher>, 3> kMoeDispatcherNames = {
    {{MoeDispatcher::kAllgather, "allgather"}, {MoeDispatcher::kAlltoall, "alltoall"}, {MoeDispatcher::kFlex, "flex"}}};
constexpr std::array<EnumName<CpCommType>, 4> kCpCommTypeNames = {{{CpCommType::kP2p, "p2p"},
                                                                    {CpCommType::kAllGather, "all_gather"},
                                                                    {CpCommType::kA2a, "a2a"},
                                                                    {CpCommType::kA2aP2p, "a2a+p2p"}}};
constexpr std::array<EnumName<AttentionBackend>, 5> kAttentionBackendNames = {{{AttentionBackend::kAuto, "auto"},
                                                                                {AttentionBackend::kFlash, "flash"},
                                                                                {AttentionBackend::kFused, "fused"},
                                                                                {AttentionBackend::kUnfused, "unfused"},
                                                                                {AttentionBackend::kLocal, "local"}}};
constexpr std::array<EnumName<CudaGraphImpl>, 4> kCudaGraphImplNames = {{{CudaGraphImpl::kNone, "none"},
                                                                          {CudaGraphImpl::kLocal, "local"},
                                                                          {CudaGraphImpl::kTransformerEngine, "transformer_engine"},
                                                                          {CudaGraphImpl::kFullIteration, "full_iteration"}}};
constexpr std::array<EnumName<CrossEntropyFusionImpl>, 3> kCrossEntropyFusionImplNames = {
    {{CrossEntropyFusionImpl::kNative, "native"}, {CrossEntropyFusionImpl::kTe, "te"}, {CrossEntropyFusionImpl::kTeInplace, "te_inplace"}}};

}  // namespace

namespace detail {

template <>
struct ValueCodec<Recompute> : NamedEnumCodec<Recompute, parse_recompute> {};
template <>
struct ValueCodec<Precision> : NamedEnumCodec<Precision, parse_precision> {};
template <>
struct ValueCodec<RecomputeMethod> : NamedEnumCodec<RecomputeMethod, parse_recompute_method> {};
template <>
struct ValueCodec<Sharding> : NamedEnumCodec<Sharding, parse_sharding> {};
template <>
struct ValueCodec<Fsdp> : NamedEnumCodec<Fsdp, parse_fsdp> {};
template <>
struct ValueCodec<Fp8Recipe> : NamedEnumCodec<Fp8Recipe, parse_fp8_recipe> {};
template <>
struct ValueCodec<MoeDispatcher> : NamedEnumCodec<MoeDispatcher, parse_moe_dispatcher> {};
template <>
struct ValueCodec<CpCommType> : NamedEnumCodec<CpCommType, parse_cp_comm_type> {};
template <>
struct ValueCodec<AttentionBackend> : NamedEnumCodec<AttentionBackend, parse_attention_backend> {};
template <>
struct ValueCodec<CrossEntropyFusionImpl> : NamedEnumCodec<CrossEntropyFusionImpl, parse_cross_entropy_fusion_impl> {};
template <>
struct ValueCodec<CudaGraphImpl> : NamedEnumCodec<CudaGraphImpl, parse_cuda_graph_impl> {};

/// A list of names: a JSON array of strings; on a command line comma- or space-separated.
template <>
struct ValueCodec<std::vector<std::string>> {
  static std::vector<std::string> read(const JsonReader& r, std::string_view key) {
    const nlohmann::json& list = r.get(key);
    if (!list.is_array()) r.fail_type(key, "an array of strings");
    std::vector<std::string> out;
    for (const auto& item : list) {
      if (!item.is_string()) r.fail_type(key, "an array of strings");
      out.push_back(item.get<std::string>());
    }
    return out;
  }
  static void write(nlohmann::json& j, std::string_view key, const std::vector<std::string>& v) { j[std::string(key)] = v; }
  static std::vector<std::string> parse(std::string_view, std::string_view text) {
    std::vector<std::string> out;
    std::string item;
    for (const char c : text) {
      if (c == ',' || c == ' ') {
        if (!item.empty()) out.push_back(std::move(item));
        item.clear();
      } else {
        item += c;
      }
    }
    if (!item.empty()) out.push_back(std::move(item));
    return out;
  }
};

template <>
struct ValueCodec<std::vector<int>> {
  static std::vector<int> read(const JsonReader& r, std::string_view key) {
    const nlohmann::json& list = r.get(key);
    if (!list.is_array()) r.fail_type(key, "an array of integers");
    std::vector<int> out;
    for (const auto& item : list) {
      if (!item.is_number_integer()) r.fail_type(key, "an array of integers");
      out.push_back(item.get<int>());
    }
    return out;
  }
  static void write(nlohmann::json& j, std::string_view key, const std::vector<int>& v) { j[std::string(key)] = v; }
  /// An empty text is an empty list.
  static std::vector<int> parse(std::string_view key, std::string_view text) {
    return text.empty() ? std::vector<int>{} : parse_int_list(key, text);
  }
};

}  // namespace detail

namespace {

using Field = detail::Field<ParallelConfig, int, std::optional<bool>, Recompute, bool, std::vector<int>, Precision, RecomputeMethod,
                            std::vector<std::string>, std::string, Sharding, Fsdp, double, Fp8Recipe, MoeDispatcher, CpCommType,
                            AttentionBackend, CrossEntropyFusionImpl, CudaGraphImpl>;

// One row per JSON key; drives from_json, to_json and apply_override. Only gbs is required.
const std::array kFields = {
    Field{"tp", &ParallelConfig::tp},
    Field{"pp", &ParallelConfig::pp},
    Field{"vp", &ParallelConfig::vp},
    Field{"cp", &ParallelConfig::cp},
    Field{"ep", &ParallelConfig::ep},
    Field{"etp", &ParallelConfig::etp},
    Field{"dp", &ParallelConfig::dp},
    Field{"world", &ParallelConfig::world},
    Field{"mbs", &ParallelConfig::mbs},
    Field{"gbs", &ParallelConfig::gbs, true},
    Field{"seq_length", &ParallelConfig::seq_length},
    Field{"sequence_parallel", &ParallelConfig::sequence_parallel},
    Field{"recompute", &ParallelConfig::recompute},
    Field{"recompute_method", &ParallelConfig::recompute_method},
    Field{"recompute_num_layers", &ParallelConfig::recompute_num_layers},
    Field{"recompute_modules", &ParallelConfig::recompute_modules},
    Field{"distributed_optimizer", &ParallelConfig::distributed_optimizer},
    Field{"stage_layers", &ParallelConfig::stage_layers},
    Field{"pipeline_layout", &ParallelConfig::pipeline_layout},
    Field{"decoder_first_pipeline_num_layers", &ParallelConfig::decoder_first_pipeline_num_layers},
    Field{"decoder_last_pipeline_num_layers", &ParallelConfig::decoder_last_pipeline_num_layers},
    Field{"account_for_embedding_in_pipeline_split", &ParallelConfig::account_for_embedding_in_pipeline_split},
    Field{"account_for_loss_in_pipeline_split", &ParallelConfig::account_for_loss_in_pipeline_split},
    Field{"precision", &ParallelConfig::precision},
    Field{"fsdp", &ParallelConfig::fsdp},
    Field{"data_parallel_sharding_strategy", &ParallelConfig::data_parallel_sharding_strategy},
    Field{"num_distributed_optimizer_instances", &ParallelConfig::num_distributed_optimizer_instances},
    Field{"overlap_grad_reduce", &ParallelConfig::overlap_grad_reduce},
    Field{"overlap_param_gather", &ParallelConfig::overlap_param_gather},
    Field{"grad_reduce_in_fp32", &ParallelConfig::grad_reduce_in_fp32},
    Field{"use_precision_aware_optimizer", &ParallelConfig::use_precision_aware_optimizer},
    Field{"fp8_param_gather", &ParallelConfig::fp8_param_gather},
    Field{"fp4_param_gather", &ParallelConfig::fp4_param_gather},
    Field{"optimizer_offload_fraction", &ParallelConfig::optimizer_offload_fraction},
    Field{"cpu_offloading_num_layers", &ParallelConfig::cpu_offloading_num_layers},
    Field{"fp8_recipe", &ParallelConfig::fp8_recipe},
    Field{"first_last_layers_bf16", &ParallelConfig::first_last_layers_bf16},
    Field{"num_layers_at_start_in_bf16", &ParallelConfig::num_layers_at_start_in_bf16},
    Field{"num_layers_at_end_in_bf16", &ParallelConfig::num_layers_at_end_in_bf16},
    Field{"moe_token_dispatcher_type", &ParallelConfig::moe_token_dispatcher_type},
    Field{"moe_flex_dispatcher_backend", &ParallelConfig::moe_flex_dispatcher_backend},
    Field{"overlap_moe_expert_parallel_comm", &ParallelConfig::overlap_moe_expert_parallel_comm},
    Field{"delay_wgrad_compute", &ParallelConfig::delay_wgrad_compute},
    Field{"moe_shared_expert_overlap", &ParallelConfig::moe_shared_expert_overlap},
    Field{"moe_load_imbalance", &ParallelConfig::moe_load_imbalance},
    Field{"moe_expert_capacity_factor", &ParallelConfig::moe_expert_capacity_factor},
    Field{"moe_pad_expert_input_to_capacity", &ParallelConfig::moe_pad_expert_input_to_capacity},
    Field{"moe_expert_rank_capacity_factor", &ParallelConfig::moe_expert_rank_capacity_factor},
    Field{"tp_comm_overlap", &ParallelConfig::tp_comm_overlap},
    Field{"cp_comm_type", &ParallelConfig::cp_comm_type},
    Field{"attention_backend", &ParallelConfig::attention_backend},
    Field{"hierarchical_context_parallel_sizes", &ParallelConfig::hierarchical_context_parallel_sizes},
    Field{"cross_entropy_loss_fusion", &ParallelConfig::cross_entropy_loss_fusion},
    Field{"cross_entropy_fusion_impl", &ParallelConfig::cross_entropy_fusion_impl},
    Field{"cuda_graph_impl", &ParallelConfig::cuda_graph_impl},
    Field{"cuda_graph_modules", &ParallelConfig::cuda_graph_modules},
};

const std::vector<std::string>& parallel_keys() {
  static const std::vector<std::string> keys = detail::field_keys(kFields);
  return keys;
}

// Megatron's long argument names (underscored) -> our key.
const std::vector<std::pair<std::string_view, std::string_view>> kAliases = {
    {"tensor_model_parallel_size", "tp"},
    {"pipeline_model_parallel_size", "pp"},
    {"virtual_pipeline_model_parallel_size", "vp"},
    {"context_parallel_size", "cp"},
    {"expert_model_parallel_size", "ep"},
    {"expert_tensor_parallel_size", "etp"},
    {"pipeline_model_parallel_layout", "pipeline_layout"},
    {"data_parallel_size", "dp"},
    {"world_size", "world"},
    {"num_gpus", "world"},
    {"micro_batch_size", "mbs"},
    {"global_batch_size", "gbs"},
    {"recompute_granularity", "recompute"},
    {"use_distributed_optimizer", "distributed_optimizer"},
    {"cuda_graph_scope", "cuda_graph_modules"},  // Megatron's older name
};

std::string str(std::int64_t v) { return std::to_string(v); }

// Rules on the stage split (pipeline_layout.h); empty when the split is possible. The issue's field
// is the option that gave the split.
std::vector<ConfigIssue> stage_split_issues(const ParallelConfig& c, const ModelSpec& m) {
  try {
    resolve_pipeline_layout(c, m, c.pp * c.vp);
    return {};
  } catch (const ConfigError& e) {
    const std::string message = e.what();
    const std::string field = !c.pipeline_layout.empty()   ? "pipeline_layout"
                              : !c.stage_layers.empty()    ? "stage_layers"
                              : message.find("decoder_first") == 0 ? "decoder_first_pipeline_num_layers"
                              : message.find("account_for") == 0   ? "account_for_embedding_in_pipeline_split"
                                                                   : "pp";
    return {{field, "layers_split", message}};
  }
}

}  // namespace

std::string_view to_string(Recompute recompute) { return name_of(kRecomputeNames, recompute); }
Recompute parse_recompute(std::string_view text) { return parse_name(kRecomputeNames, "recompute", text); }
std::string_view to_string(RecomputeMethod method) { return name_of(kRecomputeMethodNames, method); }
RecomputeMethod parse_recompute_method(std::string_view text) { return parse_name(kRecomputeMethodNames, "recompute_method", text); }
std::string_view to_string(Sharding sharding) { return name_of(kShardingNames, sharding); }
Sharding parse_sharding(std::string_view text) { return parse_name(kShardingNames, "data_parallel_sharding_strategy", text); }
std::string_view to_string(Fsdp fsdp) { return name_of(kFsdpNames, fsdp); }
Fsdp parse_fsdp(std::string_view text) { return parse_name(kFsdpNames, "fsdp", text); }
std::string_view to_string(Fp8Recipe recipe) { return name_of(kFp8RecipeNames, recipe); }
Fp8Recipe parse_fp8_recipe(std::string_view text) { return parse_name(kFp8RecipeNames, "fp8_recipe", text); }
std::string_view to_string(MoeDispatcher dispatcher) { return name_of(kMoeDispatcherNames, dispatcher); }
MoeDispatcher parse_moe_dispatcher(std::string_view text) { return parse_name(kMoeDispatcherNames, "moe_token_dispatcher_type", text); }
std::string_view to_string(CpCommType type) { return name_of(kCpCommTypeNames, type); }
CpCommType parse_cp_comm_type(std::string_view text) { return parse_name(kCpCommTypeNames, "cp_comm_type", text); }
std::string_view to_string(AttentionBackend backend) { return name_of(kAttentionBackendNames, backend); }
AttentionBackend parse_attention_backend(std::string_view text) { return parse_name(kAttentionBackendNames, "attention_backend", text); }
std::string_view to_string(CrossEntropyFusionImpl impl) { return name_of(kCrossEntropyFusionImplNames, impl); }
CrossEntropyFusionImpl parse_cross_entropy_fusion_impl(std::string_view text) {
  return parse_name(kCrossEntropyFusionImplNames, "cross_entropy_fusion_impl", text);
}

std::string_view to_string(CudaGraphImpl impl) { return name_of(kCudaGraphImplNames, impl); }
CudaGraphImpl parse_cuda_graph_impl(std::string_view text) { return parse_name(kCudaGraphImplNames, "cuda_graph_impl", text); }

const std::vector<std::string>& cuda_graph_module_names() {
  static const std::vector<std::string> names = {"attn", "mlp", "moe", "moe_router", "moe_preprocess"};
  return names;
}

bool ParallelConfig::cuda_graphed(std::string_view module) const {
  switch (cuda_graph_impl) {
    case CudaGraphImpl::kNone: return false;
    case CudaGraphImpl::kFullIteration: return true;
    case CudaGraphImpl::kLocal:
    case CudaGraphImpl::kTransformerEngine: {
      const auto named = [&](std::string_view m) { return std::find(cuda_graph_modules.begin(), cuda_graph_modules.end(), m) != cuda_graph_modules.end(); };
      // Megatron's local impl graphs the router and its preprocessing together when either is named.
      const bool router_pair = module == "moe_router" || module == "moe_preprocess";
      return cuda_graph_modules.empty() || named(module) ||
             (cuda_graph_impl == CudaGraphImpl::kLocal && router_pair && (named("moe_router") || named("moe_preprocess")));
    }
  }
  return false;
}

const std::vector<std::string>& recompute_module_names() {
  static const std::vector<std::string> names = {"core_attn", "mlp", "moe", "moe_act", "layernorm", "mla_up_proj", "shared_experts"};
  return names;
}

bool ParallelConfig::recomputes_module(std::string_view module) const {
  if (recompute != Recompute::kSelective) return false;
  if (recompute_modules.empty()) return module == "core_attn";
  return std::find(recompute_modules.begin(), recompute_modules.end(), module) != recompute_modules.end();
}

int ParallelConfig::expert_dp() const {
  const std::int64_t group = std::int64_t{ep} * expert_tp();
  return group > 0 ? static_cast<int>(std::int64_t{tp} * cp * dp / group) : 0;
}

Sharding ParallelConfig::sharding() const {
  if (fsdp != Fsdp::kNone) return data_parallel_sharding_strategy;
  return distributed_optimizer ? Sharding::kOptim : Sharding::kNoShard;
}

std::vector<int> parse_int_list(std::string_view key, std::string_view text) {
  std::vector<int> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    out.push_back(detail::ValueCodec<int>::parse(key, text.substr(start, end - start)));
    start = end + 1;
  }
  return out;
}

int ParallelConfig::cp_ring_size() const {
  if (cp <= 1) return 1;
  if (cp_comm_type == CpCommType::kP2p) return cp;
  if (cp_comm_type == CpCommType::kA2aP2p) return hierarchical_context_parallel_sizes.at(1);
  return 1;
}

double ParallelConfig::moe_busiest_load() const {
  if (moe_expert_capacity_factor <= 0) {
    return moe_expert_rank_capacity_factor > 0 ? std::min(moe_load_imbalance, moe_expert_rank_capacity_factor) : moe_load_imbalance;
  }
  return moe_pad_expert_input_to_capacity ? moe_expert_capacity_factor : std::min(moe_load_imbalance, moe_expert_capacity_factor);
}

int ParallelConfig::microbatches() const {
  if (mbs <= 0 || dp <= 0) {
    throw ConfigError("microbatches() needs mbs > 0 and a resolved dp > 0 (got mbs=" + str(mbs) +
                      ", dp=" + str(dp) + "); call resolve() first");
  }
  return gbs / (mbs * dp);
}

ParallelConfig resolve(const ParallelConfig& config, const ModelSpec& model) {
  ParallelConfig c = config;
  if (c.seq_length == 0) c.seq_length = model.seq_length;
  const std::int64_t base = std::int64_t{c.tp} * c.pp * c.cp;
  if (base <= 0) {
    throw ConfigError("tp=" + str(c.tp) + ", pp=" + str(c.pp) + ", cp=" + str(c.cp) + " must be positive");
  }
  if (c.dp == 0 && c.world == 0) {
    throw ConfigError("give dp or world: world = tp*pp*cp*dp derives the other");
  }
  if (c.dp == 0) {
    if (c.world % base != 0) {
      throw ConfigError("world=" + str(c.world) + " must be a multiple of tp*pp*cp = " + str(c.tp) + "*" +
                        str(c.pp) + "*" + str(c.cp) + " = " + str(base) + " to derive dp");
    }
    c.dp = static_cast<int>(c.world / base);
  } else if (c.world == 0) {
    c.world = static_cast<int>(base * c.dp);
  }
  if (!c.sequence_parallel.has_value()) c.sequence_parallel = c.tp > 1;
  return c;
}

int vp_from_layout(const ParallelConfig& c) {
  if (c.pipeline_layout.empty() || c.pp <= 0) return 0;
  const Result<PipelineLayout> layout = parse_pipeline_layout(c.pipeline_layout);
  return layout.ok() && layout.value().size() % c.pp == 0 ? layout.value().size() / c.pp : 0;
}

std::optional<ConfigIssue> precision_unsupported(const ParallelConfig& c, const GpuSpec& gpu) {
  if (c.precision == Precision::kFp8 && gpu.peak_fp8_tflops <= 0) {
    return ConfigIssue{"precision", "fp8_supported", "precision=fp8 needs FP8 tensor cores; '" + gpu.name + "' has peak_fp8_tflops=0"};
  }
  // Transformer Engine runs MXFP8 on data-center Blackwell only (its MXFP8 support check: compute
  // capability 10.x or 11.x); FP4 tensor cores stand for them here, as no GPU spec field names the architecture.
  if (c.precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kMxfp8 && gpu.peak_fp4_tflops <= 0) {
    return ConfigIssue{"fp8_recipe", "mxfp8_supported",
                       "fp8_recipe=mxfp8 needs block-scaled (MX) tensor cores, which come with FP4 (Blackwell); '" + gpu.name +
                           "' has peak_fp4_tflops=0 (Hopper: tensorwise, delayed or blockwise)"};
  }
  if (c.precision == Precision::kNvfp4 && gpu.peak_fp4_tflops <= 0) {
    return ConfigIssue{"precision", "nvfp4_supported",
                       "precision=nvfp4 needs FP4 tensor cores (Blackwell); '" + gpu.name + "' has peak_fp4_tflops=0"};
  }
  return std::nullopt;
}

// Megatron's rules on CUDA graphs (TransformerConfig.__post_init__, CudaGraphModule) where they decide
// what can be captured: a graph needs static shapes, so a dropless MoE layer (its token counts read by
// the host) cannot be captured whole.
void check_cuda_graphs(const ParallelConfig& c, const ModelSpec& m, ConfigCheck& out) {
  auto error_on = [&](std::string field, std::string rule, std::string message) {
    out.errors.push_back({std::move(field), std::move(rule), std::move(message)});
  };
  auto error = [&](std::string rule, std::string message) { error_on("cuda_graph_modules", std::move(rule), std::move(message)); };
  const auto& modules = c.cuda_graph_modules;
  const auto has = [&](std::string_view name) { return std::find(modules.begin(), modules.end(), name) != modules.end(); };
  const auto& names = cuda_graph_module_names();
  for (const std::string& module : modules) {
    if (std::find(names.begin(), names.end(), module) == names.end()) {
      error("cuda_graph_module_name", "cuda_graph_modules: '" + module + "' is not one of " + join(names) +
                                          (module == "full" ? " (Megatron's older whole-layer scope: give no modules)"
                                           : module == "full_iteration" ? " (give cuda_graph_impl=full_iteration)" : ""));
    }
  }
  if (c.cuda_graph_impl == CudaGraphImpl::kNone) {
    if (!modules.empty()) {
      out.warnings.push_back({"cuda_graph_modules", "cuda_graph_modules_need_impl",
                              "cuda_graph_modules has no effect with cuda_graph_impl=none (as in Megatron): nothing is graphed"});
    }
    return;
  }
  if (c.cuda_graph_impl == CudaGraphImpl::kFullIteration && !modules.empty()) {
    error("full_iteration_takes_no_modules", "cuda_graph_modules must be empty with cuda_graph_impl=full_iteration (it captures everything)");
  }
  const bool moe_model = m.num_experts > 0;
  if (has("moe_preprocess") && !has("moe_router") && c.cuda_graph_impl == CudaGraphImpl::kTransformerEngine) {
    error("moe_preprocess_needs_moe_router", "cuda_graph_modules: moe_preprocess needs moe_router (Megatron)");
  }
  if (has("moe") && c.cuda_graphed("moe_router") && !modules.empty()) {
    error("moe_excludes_moe_router", "cuda_graph_modules must not contain both moe and moe_router (Megatron; local graphs moe_preprocess with moe_router)");
  }
  if (!moe_model && (has("moe") || has("moe_router") || has("moe_preprocess"))) {
    error("moe_graph_needs_moe", "cuda_graph_modules: moe, moe_router and moe_preprocess need an MoE model ('" + m.name + "' is dense)");
  }
  if (moe_model && has("mlp") && m.num_moe_layers() == m.num_layers) {
    error("mlp_graph_needs_dense_layers", "cuda_graph_modules: mlp graphs dense MLPs, and every layer of '" + m.name + "' is MoE");
  }
  // A whole MoE layer must not wait for the host in the middle. Per-layer graphs of it (the moe module,
  // a whole-layer capture) need drop-and-pad; a whole iteration, any static shapes (padding, or
  // HybridEP's per-rank budget as Megatron-Bridge's full_iteration recipes run it).
  const bool per_layer_moe = c.cuda_graph_impl != CudaGraphImpl::kFullIteration && (has("moe") || modules.empty());
  const bool padded = c.moe_expert_capacity_factor > 0 && c.moe_pad_expert_input_to_capacity;
  if (moe_model && ((per_layer_moe && !padded) || (c.cuda_graph_impl == CudaGraphImpl::kFullIteration && c.moe_dispatch_waits_for_host()))) {
    const bool iteration = c.cuda_graph_impl == CudaGraphImpl::kFullIteration;
    error("moe_graph_needs_drop_and_pad",
          std::string(iteration         ? "cuda_graph_impl=full_iteration"
                      : modules.empty() ? "cuda_graph_impl=" + std::string(to_string(c.cuda_graph_impl)) + " with no cuda_graph_modules (whole layers)"
                                        : "cuda_graph_modules: moe") +
              " needs static MoE shapes: set moe_expert_capacity_factor and moe_pad_expert_input_to_capacity" +
              (iteration ? " or HybridEP's moe_expert_rank_capacity_factor" : "") +
              " (a dropless dispatch waits for the host; graph attn, moe_router and moe_preprocess instead)");
  }
  if (c.cuda_graphed("moe_preprocess") && !modules.empty() && c.moe_token_dispatcher_type == MoeDispatcher::kAlltoall && c.moe_expert_capacity_factor > 0 &&
      !c.moe_pad_expert_input_to_capacity) {
    error("moe_preprocess_excludes_token_drop",
          "cuda_graph_modules: moe_preprocess cannot be graphed with the alltoall dispatcher and a capacity factor without padding (Megatron: "
          "its preprocess copies counts to the host)");
  }
  if (c.cpu_offloading_num_layers > 0 && c.cuda_graph_impl != CudaGraphImpl::kFullIteration) {
    error_on("cpu_offloading_num_layers", "cuda_graphs_exclude_cpu_offloading", "cuda_graph_impl=" + std::string(to_string(c.cuda_graph_impl)) +
                                                    " excludes cpu_offloading_num_layers (Megatron: CUDA graphs not supported with CPU offloading)");
  }
  if (c.recompute == Recompute::kFull && c.cuda_graph_impl != CudaGraphImpl::kFullIteration) {
    error_on("recompute", "full_recompute_needs_full_iteration", "recompute=full needs cuda_graph_impl=full_iteration or none, got " +
                                                     std::string(to_string(c.cuda_graph_impl)) + " (Megatron)");
  }
  if (c.cuda_graph_impl == CudaGraphImpl::kTransformerEngine && c.recomputes_module("moe") && has("moe_router")) {
    error_on("recompute_modules", "moe_recompute_excludes_router_graph", "recompute_modules: moe excludes the moe_router CUDA graph with cuda_graph_impl=transformer_engine (Megatron)");
  }
}

ConfigCheck check(const ParallelConfig& c, const ModelSpec& m, const GpuSpec& gpu) {
  ConfigCheck out;
  auto error = [&](std::string field, std::string rule, std::string message) {
    out.errors.push_back({std::move(field), std::move(rule), std::move(message)});
  };
  auto warn = [&](std::string field, std::string rule, std::string message) {
    out.warnings.push_back({std::move(field), std::move(rule), std::move(message)});
  };

  // Sizes first: every later rule divides by them.
  const std::pair<const char*, int> sizes[] = {{"tp", c.tp},   {"pp", c.pp},   {"vp", c.vp},
                                               {"cp", c.cp},   {"ep", c.ep},   {"mbs", c.mbs},
                                               {"gbs", c.gbs}, {"num_distributed_optimizer_instances", c.num_distributed_optimizer_instances}};
  for (const auto& [field, value] : sizes) {
    if (value <= 0) error(field, "positive", std::string(field) + "=" + str(value) + " must be positive");
  }
  if (c.dp < 0) error("dp", "non_negative", "dp=" + str(c.dp) + " must be >= 0 (0 = derive from world)");
  if (c.world < 0) error("world", "non_negative", "world=" + str(c.world) + " must be >= 0 (0 = derive from dp)");
  if (c.seq_length < 0) error("seq_length", "non_negative", "seq_length=" + str(c.seq_length) + " must be >= 0");
  if (c.etp < 0) error("etp", "non_negative", "etp=" + str(c.etp) + " must be >= 0 (0 = tp)");
  if (c.recompute_num_layers < 0) {
    error("recompute_num_layers", "non_negative", "recompute_num_layers=" + str(c.recompute_num_layers) + " must be >= 0");
  }
  if (!(c.optimizer_offload_fraction >= 0 && c.optimizer_offload_fraction <= 1)) {
    error("optimizer_offload_fraction", "fraction",
          "optimizer_offload_fraction=" + number_text(c.optimizer_offload_fraction) + " must be within [0, 1]");
  }
  if (c.cpu_offloading_num_layers < 0) {
    error("cpu_offloading_num_layers", "non_negative", "cpu_offloading_num_layers=" + str(c.cpu_offloading_num_layers) + " must be >= 0");
  }
  if (!(c.moe_load_imbalance >= 1 && c.moe_load_imbalance <= 64)) {
    error("moe_load_imbalance", "range",
          "moe_load_imbalance=" + number_text(c.moe_load_imbalance) + " must be within [1, 64] (busiest rank's tokens / the mean)");
  }
  if (!(c.moe_expert_capacity_factor >= 0 && c.moe_expert_capacity_factor <= 64)) {
    error("moe_expert_capacity_factor", "range",
          "moe_expert_capacity_factor=" + number_text(c.moe_expert_capacity_factor) + " must be within [0, 64] (0 = dropless)");
  }
  if (c.moe_pad_expert_input_to_capacity && !(c.moe_expert_capacity_factor > 0)) {
    error("moe_pad_expert_input_to_capacity", "needs_capacity_factor",
          "moe_pad_expert_input_to_capacity needs moe_expert_capacity_factor > 0 (Megatron: the capacity it pads to)");
  }
  if (c.moe_pad_expert_input_to_capacity && c.moe_token_dispatcher_type == MoeDispatcher::kFlex && c.moe_flex_dispatcher_backend == "deepep") {
    error("moe_pad_expert_input_to_capacity", "deepep_cannot_pad",
          "moe_pad_expert_input_to_capacity is not supported by moe_token_dispatcher_type=flex with moe_flex_dispatcher_backend=deepep (Megatron)");
  }
  if (!(c.moe_expert_rank_capacity_factor >= 0 && c.moe_expert_rank_capacity_factor <= 64)) {
    error("moe_expert_rank_capacity_factor", "range",
          "moe_expert_rank_capacity_factor=" + number_text(c.moe_expert_rank_capacity_factor) + " must be within [0, 64] (0 = none)");
  } else if (c.moe_expert_rank_capacity_factor > 0 &&
             (c.moe_token_dispatcher_type != MoeDispatcher::kFlex || c.moe_flex_dispatcher_backend != "hybridep")) {
    error("moe_expert_rank_capacity_factor", "rank_capacity_needs_hybridep",
          "moe_expert_rank_capacity_factor needs moe_token_dispatcher_type=flex with moe_flex_dispatcher_backend=hybridep (Megatron)");
  }
  if (c.moe_flex_dispatcher_backend != "deepep" && c.moe_flex_dispatcher_backend != "hybridep") {
    error("moe_flex_dispatcher_backend", "name",
          "moe_flex_dispatcher_backend='" + c.moe_flex_dispatcher_backend + "' must be deepep or hybridep");
  }
  if (!out.ok()) return out;

  // World = TP x PP x CP x DP.
  const std::int64_t base = std::int64_t{c.tp} * c.pp * c.cp;
  const std::string product = str(c.tp) + "*" + str(c.pp) + "*" + str(c.cp);
  std::int64_t dp = c.dp;
  if (c.dp == 0 && c.world == 0) {
    error("dp", "dp_or_world", "give dp or world: world = tp*pp*cp*dp derives the other");
  } else if (c.dp == 0) {
    if (c.world % base != 0) {
      error("world", "world_size", "world=" + str(c.world) + " must be a multiple of tp*pp*cp = " + product +
                                       " = " + str(base) + " to derive dp");
    } else {
      dp = c.world / base;
    }
  } else if (c.world != 0 && c.world != base * c.dp) {
    error("world", "world_size", "world=" + str(c.world) + " must equal tp*pp*cp*dp = " + product + "*" +
                                     str(c.dp) + " = " + str(base * c.dp));
  }
  const std::int64_t seq = c.seq_length > 0 ? c.seq_length : m.seq_length;
  const bool sp = c.sequence_parallel_enabled();

  // Tensor parallel splits heads, query groups and MLP columns.
  if (m.num_attention_heads % c.tp != 0) {
    error("tp", "tp_divides_heads",
          "tp=" + str(c.tp) + " must divide num_attention_heads=" + str(m.num_attention_heads));
  }
  if (m.num_query_groups % c.tp != 0) {
    error("tp", "tp_divides_query_groups",
          "tp=" + str(c.tp) + " must divide num_query_groups=" + str(m.num_query_groups));
  }
  if (m.ffn_hidden_size % c.tp != 0) {
    error("tp", "tp_divides_ffn", "tp=" + str(c.tp) + " must divide ffn_hidden_size=" + str(m.ffn_hidden_size));
  }
  // Ulysses-style CP scatters the heads (and query groups) each TP rank holds over the CP ranks (all
  // of them, or a2a+p2p's inner a2a group).
  if (c.cp > 1 && c.cp_comm_type == CpCommType::kA2a && c.tp > 0 && (m.num_attention_heads / c.tp) % c.cp != 0) {
    error("cp_comm_type", "a2a_heads",
          "cp_comm_type=a2a needs cp=" + str(c.cp) + " to divide the heads per TP rank, num_attention_heads/tp = " +
              str(m.num_attention_heads / c.tp));
  }
  // Transformer Engine runs CP over a sliding window only by gathering K/V (all_gather) or the heads (a2a):
  // its p2p ring has no windowed mask (context_parallel.py asserts it).
  const bool ring = c.cp_comm_type == CpCommType::kP2p || c.cp_comm_type == CpCommType::kA2aP2p;
  if (c.cp > 1 && ring && m.num_window_attention_layers() > 0) {
    error("cp_comm_type", "window_needs_gathered_cp",
          "cp_comm_type=" + std::string(to_string(c.cp_comm_type)) + " at cp=" + str(c.cp) + " cannot run sliding-window attention (window_size=" +
              str(m.window_size) + "): Transformer Engine supports CP with a sliding window only as a2a or all_gather");
  }
  const std::vector<int>& levels = c.hierarchical_context_parallel_sizes;
  if (c.cp > 1 && c.cp_comm_type == CpCommType::kA2aP2p) {
    if (levels.size() != 2 || levels[0] < 1 || levels[1] < 1 || levels[0] * levels[1] != c.cp) {
      error("hierarchical_context_parallel_sizes", "hierarchical_cp_sizes",
            "cp_comm_type=a2a+p2p needs hierarchical_context_parallel_sizes = {a2a size, p2p size} with product cp=" + str(c.cp) +
                " (Megatron's --hierarchical-context-parallel-sizes A P)");
    } else if (c.tp > 0 && (m.num_attention_heads / c.tp) % levels[0] != 0) {
      error("hierarchical_context_parallel_sizes", "a2a_heads",
            "cp_comm_type=a2a+p2p needs its a2a size " + str(levels[0]) + " to divide the heads per TP rank, num_attention_heads/tp = " +
                str(m.num_attention_heads / c.tp));
    }
  } else if (!levels.empty()) {
    warn("hierarchical_context_parallel_sizes", "hierarchical_cp_unused",
         "hierarchical_context_parallel_sizes applies to cp_comm_type=a2a+p2p only: ignored with cp_comm_type=" +
             std::string(to_string(c.cp_comm_type)));
  }
  // TE userbuffers overlap the sequence-parallel all-gathers and reduce-scatters.
  if (c.tp_comm_overlap && c.tp > 1 && !sp) {
    error("tp_comm_overlap", "needs_sequence_parallel", "tp_comm_overlap needs sequence parallelism (Transformer Engine userbuffers)");
  }
  const int etp = c.expert_tp();
  if (m.is_moe() && m.moe_ffn_hidden_size % etp != 0) {
    error(c.etp > 0 ? "etp" : "tp", "etp_divides_moe_ffn",
          "expert tensor parallel etp=" + str(etp) + (c.etp > 0 ? "" : " (= tp)") + " must divide moe_ffn_hidden_size=" +
              str(m.moe_ffn_hidden_size));
  }

  // Layers over PP x VP: a layout Megatron can run is never refused; an uneven split without one
  // is balanced by cost, with a warning giving the layout string.
  for (auto& issue : stage_split_issues(c, m)) out.errors.push_back(std::move(issue));
  if (out.errors.empty() || out.errors.back().rule != "layers_split") {
    try {
      const ResolvedLayout layout = resolve_pipeline_layout(c, m, c.pp * c.vp);
      if (!layout.warning.empty()) warn("pp", "layers_balanced", layout.warning);
      int most = 0;
      for (int d : layout.layout.decoder_counts()) most = std::max(most, d);
      if (c.recompute_num_layers > most) {
        error("recompute_num_layers", "recompute_num_layers_within_chunk",
              "recompute_num_layers=" + str(c.recompute_num_layers) + " exceeds the " + str(most) +
                  " decoder layers of the largest chunk (Megatron counts it per chunk)");
      }
    } catch (const ConfigError&) {
    }
  }
  if (c.vp > 1 && c.pp == 1) error("vp", "vp_needs_pp", "vp=" + str(c.vp) + " requires pp > 1");
  // Context parallelism runs through Transformer Engine's attention only (Megatron's DotProductAttention
  // asserts cp == 1; TE's unfused attention has no CP path).
  if (c.cp > 1 && c.attention_unfused()) {
    error("attention_backend", "unfused_attention_without_cp",
          "attention_backend=" + std::string(to_string(c.attention_backend)) + " cannot run context parallelism (cp=" + str(c.cp) +
              "): Megatron's CP needs a fused backend (auto, flash or fused)");
  }
  // Megatron's local backend runs only with its local layer spec (arguments.py: "--attention-backend local is
  // only supported with --spec local"): no Transformer Engine, so no FP8 or NVFP4 GEMMs, no userbuffers
  // TP overlap and no delayed wgrad (which needs transformer_impl=transformer_engine).
  if (c.attention_backend == AttentionBackend::kLocal) {
    const auto needs_te = [&](const char* field, const std::string& what) {
      error(field, "local_attention_without_te",
            "attention_backend=local runs Megatron's local layer spec, without Transformer Engine: " + what +
                " needs it (use attention_backend=unfused for Transformer Engine's unfused attention)");
    };
    if (c.precision != Precision::kBf16) needs_te("precision", "precision=" + std::string(to_string(c.precision)));
    if (c.tp_comm_overlap) needs_te("tp_comm_overlap", "tp_comm_overlap");
    if (c.delay_wgrad_compute) needs_te("delay_wgrad_compute", "delay_wgrad_compute");
  }
  // Megatron's MTP layers recompute only in groups of one (multi_token_prediction.py asserts it).
  if (m.mtp_num_layers > 0 && c.recompute == Recompute::kFull && c.recompute_method == RecomputeMethod::kUniform &&
      c.recompute_num_layers > 1) {
    error("recompute_num_layers", "mtp_uniform_recompute_one_layer",
          "recompute_num_layers=" + str(c.recompute_num_layers) + " must be 1 with recompute_method=uniform when the model has " +
              str(m.mtp_num_layers) + " MTP layer(s) (Megatron's MTP recompute asserts it; use block, or mtp_num_layers=0)");
  }

  // Batch: whole microbatches per DP replica.
  if (dp > 0 && c.gbs % (std::int64_t{c.mbs} * dp) != 0) {
    error("gbs", "gbs_divisible", "gbs=" + str(c.gbs) + " must be a multiple of mbs*dp=" + str(c.mbs * dp));
  }

  // Sequence: causal CP splits it into 2*cp load-balanced chunks; SP splits each rank's share over tp.
  if (c.cp > 1 && seq % (2 * c.cp) != 0) {
    error("seq_length", "cp_divides_seq",
          "seq_length=" + str(seq) + " must be divisible by 2*cp=" + str(2 * c.cp) +
              " (load-balanced causal context parallel)");
  }
  if (sp && c.tp > 1 && (seq % c.cp != 0 || (seq / c.cp) % c.tp != 0)) {
    const std::string what = c.cp > 1 ? "seq_length/cp=" + str(seq / c.cp) : "seq_length=" + str(seq);
    error("seq_length", "sp_divides_seq",
          what + " must be divisible by tp=" + str(c.tp) + " with sequence_parallel");
  }

  // Experts.
  if (c.ep > 1 && !m.is_moe()) {
    error("ep", "ep_needs_moe", "ep=" + str(c.ep) + " requires an MoE model ('" + m.name + "' has num_experts=0)");
  }
  if (m.is_moe() && m.num_experts % c.ep != 0) {
    error("ep", "ep_divides_experts", "ep=" + str(c.ep) + " must divide num_experts=" + str(m.num_experts));
  }
  // MoE parallel folding (Megatron-Core): the experts' grid ETP x EP x EDP covers the same ranks as
  // the attention's TP x CP x DP of a pipeline stage.
  const std::int64_t stage_ranks = std::int64_t{c.tp} * c.cp * dp;
  if (dp > 0 && stage_ranks % (std::int64_t{c.ep} * etp) != 0) {
    error("ep", "ep_etp_divide_tp_cp_dp",
          "ep*etp=" + str(c.ep) + "*" + str(etp) + "=" + str(std::int64_t{c.ep} * etp) + " must divide tp*cp*dp=" + str(c.tp) + "*" +
              str(c.cp) + "*" + str(dp) + "=" + str(stage_ranks) + " (MoE parallel folding)");
  }

  // Data-parallel sharding.
  const int instances = c.num_distributed_optimizer_instances;
  if (dp > 0 && (dp * c.cp) % instances != 0) {
    error("num_distributed_optimizer_instances", "instances_divide_dp",
          "num_distributed_optimizer_instances=" + str(instances) + " must divide dp*cp=" + str(dp * c.cp));
  }
  if (c.optimizer_offload_fraction > 0 && c.optimizer_offload_fraction <= 1) {
    // Megatron's HybridDeviceOptimizer steps that share on the CPU and copies gradients and weights over
    // the host link; pipelab only drops it from the GPU's memory and step.
    warn("optimizer_offload_fraction", "optimizer_offload_untimed",
         "optimizer_offload_fraction=" + number_text(c.optimizer_offload_fraction) +
             ": the host's optimizer step and the gradient and weight copies over the host link are not timed, so the "
             "iteration is optimistic (only the GPU's memory and step shrink)");
  }
  if (c.fsdp == Fsdp::kTorch && (c.pp > 1 || c.ep > 1)) {
    // torchtitan and NeMo AutoModel run FSDP2 beside PP and EP; Megatron-LM's integration does not.
    warn("fsdp", "torch_fsdp2_with_pp_or_ep",
         "fsdp=torch with pp=" + str(c.pp) + ", ep=" + str(c.ep) + ": Megatron-LM's --use-torch-fsdp2 refuses pp>1 or ep>1 "
         "(torchtitan and NeMo AutoModel run it; simulated as they do)");
  }
  if (c.fsdp == Fsdp::kNone && c.fp8_param_gather == true && !c.distributed_optimizer) {
    error("fp8_param_gather", "fp8_param_gather_needs_sharding",
          "fp8_param_gather needs the distributed optimizer or FSDP (the FP8 copy is what the all-gather moves)");
  }
  if (c.fsdp == Fsdp::kNone && c.fp4_param_gather == true && !c.distributed_optimizer) {
    error("fp4_param_gather", "fp4_param_gather_needs_sharding",
          "fp4_param_gather needs the distributed optimizer or FSDP (the NVFP4 copy is what the all-gather moves)");
  }
  // Megatron: "--fp4-param-gather must be used together with --fp4-format" (and FP8's likewise).
  if (c.fp8_param_gather == true && c.precision != Precision::kFp8) {
    error("fp8_param_gather", "param_gather_needs_its_precision",
          "fp8_param_gather needs precision=fp8, got precision=" + std::string(to_string(c.precision)));
  }
  if (c.fp4_param_gather == true && c.precision != Precision::kNvfp4) {
    error("fp4_param_gather", "param_gather_needs_its_precision",
          "fp4_param_gather needs precision=nvfp4, got precision=" + std::string(to_string(c.precision)));
  }

  // MoE all-to-all overlap (Megatron's rules for --overlap-moe-expert-parallel-comm).
  if (c.overlap_moe_expert_parallel_comm && c.ep <= 1) {
    error("overlap_moe_expert_parallel_comm", "needs_ep", "overlap_moe_expert_parallel_comm needs ep > 1, got ep=" + str(c.ep));
  }
  if (c.overlap_moe_expert_parallel_comm && c.ep > 1 && c.moe_token_dispatcher_type == MoeDispatcher::kAllgather) {
    error("moe_token_dispatcher_type", "ep_overlap_needs_alltoall_or_flex",
          "overlap_moe_expert_parallel_comm needs moe_token_dispatcher_type=alltoall or flex, got allgather");
  }
  if (c.overlap_moe_expert_parallel_comm && c.recompute == Recompute::kFull) {
    error("recompute", "ep_overlap_excludes_full_recompute",
          "overlap_moe_expert_parallel_comm excludes recompute=full (Megatron: disable full recomputation)");
  }
  if (c.overlap_moe_expert_parallel_comm && std::find(c.recompute_modules.begin(), c.recompute_modules.end(), "moe") != c.recompute_modules.end()) {
    error("recompute_modules", "ep_overlap_excludes_moe_recompute",
          "overlap_moe_expert_parallel_comm excludes \"moe\" in recompute_modules (Megatron: disable moe in recompute_modules)");
  }
  if (c.overlap_moe_expert_parallel_comm && m.mtp_num_layers > 1) {
    error("overlap_moe_expert_parallel_comm", "ep_overlap_mtp_at_most_one",
          "overlap_moe_expert_parallel_comm supports at most one MTP layer, model '" + m.name + "' has mtp_num_layers=" +
              str(m.mtp_num_layers) + " (Megatron)");
  }
  if (c.overlap_moe_expert_parallel_comm && c.cuda_graph_impl == CudaGraphImpl::kTransformerEngine &&
      std::any_of(c.cuda_graph_modules.begin(), c.cuda_graph_modules.end(), [](const std::string& g) { return g == "moe" || g == "mlp"; })) {
    error("cuda_graph_modules", "ep_overlap_excludes_moe_mlp_graphs",
          "overlap_moe_expert_parallel_comm excludes cuda_graph_modules moe and mlp under cuda_graph_impl=transformer_engine "
          "(Megatron: CUDA graph scope on moe and mlp is not supported with overlap_moe_expert_parallel_comm)");
  }
  // Megatron (core 0.14 on): "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute".
  if (c.delay_wgrad_compute && !c.overlap_moe_expert_parallel_comm) {
    error("delay_wgrad_compute", "delay_wgrad_needs_ep_overlap",
          "delay_wgrad_compute needs overlap_moe_expert_parallel_comm (Megatron: overlap_moe_expert_parallel_comm must be "
          "enabled when enabling delay_wgrad_compute)");
  }
  // Shared-expert overlap (Megatron's rules for --moe-shared-expert-overlap, transformer_config.py): the
  // dispatcher and the recompute only matter to a model with shared experts; the EP overlap always.
  const bool shared_experts = m.has_shared_experts();
  if (c.moe_shared_expert_overlap && shared_experts && c.moe_token_dispatcher_type == MoeDispatcher::kAllgather) {
    error("moe_token_dispatcher_type", "shared_expert_overlap_needs_alltoall_or_flex",
          "moe_shared_expert_overlap needs moe_token_dispatcher_type=alltoall or flex, got allgather");
  }
  if (c.moe_shared_expert_overlap && shared_experts && c.recomputes_module("shared_experts")) {
    error("recompute_modules", "shared_expert_overlap_excludes_shared_recompute",
          "moe_shared_expert_overlap excludes \"shared_experts\" in recompute_modules (Megatron: shared_experts recompute "
          "cannot work with --moe-shared-expert-overlap)");
  }
  if (c.moe_shared_expert_overlap && c.overlap_moe_expert_parallel_comm) {
    error("moe_shared_expert_overlap", "shared_expert_overlap_excludes_ep_overlap",
          "moe_shared_expert_overlap excludes overlap_moe_expert_parallel_comm (Megatron: disable moe_shared_expert_overlap "
          "when enabling overlap_moe_expert_parallel_comm)");
  }
  if (c.overlap_moe_expert_parallel_comm && c.pp > 1 && c.vp <= 1) {
    warn("overlap_moe_expert_parallel_comm", "needs_vp",
         "overlap_moe_expert_parallel_comm with pp=" + str(c.pp) + " needs vp > 1 in Megatron (it merges F and B of adjacent "
         "microbatches): simulated without the overlap");
  }

  // Activation CPU offloading: Megatron's rules (TransformerConfig.__post_init__), and the host link it
  // needs timed.
  if (c.cpu_offloading_num_layers > 0) {
    const int n = c.cpu_offloading_num_layers;
    if (n >= m.num_layers) {
      error("cpu_offloading_num_layers", "offload_fewer_than_all_layers",
            "cpu_offloading_num_layers=" + str(n) + " must be less than num_layers=" + str(m.num_layers) +
                " (Megatron: CPU offloading can be done only for layers less than num_layers)");
    } else if (n == m.num_layers - 1) {
      warn("cpu_offloading_num_layers", "offload_leaves_one_layer",
           "cpu_offloading_num_layers=" + str(n) + " of " + str(m.num_layers) +
               " layers leaves one layer's activations on the GPU: compute waits for every copy (Transformer Engine "
               "advises num_layers - 2 or fewer)");
    }
    if (c.pp > 1) {
      error("cpu_offloading_num_layers", "offload_needs_pp1",
            "cpu_offloading_num_layers needs pp=1, got pp=" + str(c.pp) + " (Megatron: no pipeline parallelism with CPU offloading)");
    }
    if (c.recompute != Recompute::kNone) {
      error("cpu_offloading_num_layers", "offload_excludes_recompute",
            "cpu_offloading_num_layers excludes recompute, got recompute=" + std::string(to_string(c.recompute)) +
                " (Megatron: CPU offloading does not work when activation recomputation is enabled)");
    }
    if (!(gpu.host_link_bandwidth_gbps > 0)) {
      error("cpu_offloading_num_layers", "offload_needs_host_link",
            "cpu_offloading_num_layers needs the GPU's host link: '" + gpu.name + "' has no host_link_bandwidth_gbps");
    }
  }

  // CUDA graphs: Megatron's rules (TransformerConfig.__post_init__, CudaGraphModule), where they shape
  // what pipelab times.
  check_cuda_graphs(c, m, out);

  // Recompute options belong to one granularity each.
  if (c.recompute != Recompute::kFull && (c.recompute_num_layers > 0 || c.recompute_method != RecomputeMethod::kUniform)) {
    error("recompute_method", "recompute_method_needs_full",
          "recompute_method and recompute_num_layers apply to recompute=full, got recompute=" + std::string(to_string(c.recompute)));
  }
  if (c.recompute != Recompute::kSelective && !c.recompute_modules.empty()) {
    error("recompute_modules", "recompute_modules_need_selective",
          "recompute_modules apply to recompute=selective, got recompute=" + std::string(to_string(c.recompute)));
  }
  for (const std::string& module : c.recompute_modules) {
    const auto& names = recompute_module_names();
    if (std::find(names.begin(), names.end(), module) == names.end()) {
      error("recompute_modules", "recompute_module_name", "recompute_modules: '" + module + "' is not one of " + join(names));
    }
    if (module == "mla_up_proj" && !m.multi_latent_attention) {
      error("recompute_modules", "mla_up_proj_needs_mla", "recompute_modules: mla_up_proj needs multi-latent attention ('" + m.name + "' has none)");
    }
    if ((module == "moe" || module == "moe_act") && !m.is_moe()) {
      error("recompute_modules", "moe_module_needs_moe", "recompute_modules: " + module + " needs an MoE model ('" + m.name + "' is dense)");
    }
  }

  if (const std::optional<ConfigIssue> unsupported = precision_unsupported(c, gpu)) out.errors.push_back(*unsupported);
  // Megatron's rules for --first-last-layers-bf16 (TransformerConfig.__post_init__).
  if (c.first_last_layers_bf16) {
    if (c.precision == Precision::kBf16) {
      warn("first_last_layers_bf16", "bf16_layers_need_low_precision",
           "first_last_layers_bf16 keeps layers in BF16 under fp8 or nvfp4: no effect with precision=bf16");
    }
    if (c.precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kDelayed) {
      error("first_last_layers_bf16", "bf16_layers_need_current_scaling",
            "first_last_layers_bf16 is refused with fp8_recipe=delayed (Megatron: \"Delayed scaling does not support first / "
            "last layer in BF16\")");
    }
    // Megatron checks the counts under FP8 only (its FP4 path takes any count).
    const int per_stage = m.num_layers / std::max(1, c.pp);
    for (const auto& [field, value] : {std::pair<const char*, int>{"num_layers_at_start_in_bf16", c.num_layers_at_start_in_bf16},
                                       std::pair<const char*, int>{"num_layers_at_end_in_bf16", c.num_layers_at_end_in_bf16}}) {
      if (c.precision == Precision::kFp8 && (value < 0 || value > per_stage)) {
        error(field, "bf16_layers_within_a_stage",
              std::string(field) + "=" + str(value) + " must be between 0 and the layers per pipeline stage, num_layers/pp=" +
                  str(per_stage));
      }
    }
  }

  // Legal but risky.
  if (c.tp > gpu.gpus_per_node) {
    warn("tp", "tp_within_node",
         "tp=" + str(c.tp) + " exceeds gpus_per_node=" + str(gpu.gpus_per_node) + " of '" + gpu.name +
             "': tensor-parallel collectives cross the scale-out network");
  }
  if (const std::int64_t expert_group = std::int64_t{c.ep} * c.expert_tp();
      m.is_moe() && c.ep > 1 && c.moe_token_dispatcher_type == MoeDispatcher::kAllgather && expert_group > gpu.gpus_per_node) {
    warn("moe_token_dispatcher_type", "allgather_across_nodes",
         "moe_token_dispatcher_type=allgather (Megatron's default) with ep*etp=" + str(expert_group) +
             " beyond one node of " + str(gpu.gpus_per_node) +
             " GPUs: every GPU gathers all those ranks' tokens over the network; Megatron advises it for TP-only "
             "setups, small EP and large top-k; alltoall or flex move each token only to its experts' ranks");
  }
  if (c.pp > 1 && c.vp == 1) {
    warn("vp", "pp_without_vp",
         "pp=" + str(c.pp) + " with vp=1: interleaving (vp>1) divides the pipeline bubble (pp-1)/m by vp");
  }
  if (c.cp > 1 && seq / c.cp < 2048) {
    warn("cp", "cp_short_chunks",
         "cp=" + str(c.cp) + " leaves seq_length/cp=" + str(seq / c.cp) +
             " tokens per rank: context parallel pays off for long sequences (>= 2048 tokens per rank)");
  }
  if (dp > 0 && c.pp > 1 && c.gbs / (std::int64_t{c.mbs} * dp) < c.pp) {
    warn("gbs", "microbatches_fill_pipeline",
         "microbatches=" + str(c.gbs / (std::int64_t{c.mbs} * dp)) + " < pp=" + str(c.pp) +
             ": the pipeline never fills; raise gbs or lower mbs or dp");
  }
  if (c.sequence_parallel == true && c.tp == 1) {
    warn("sequence_parallel", "sp_needs_tp", "sequence_parallel has no effect with tp=1");
  }
  if (c.tp_comm_overlap && c.tp == 1) warn("tp_comm_overlap", "tp_overlap_needs_tp", "tp_comm_overlap has no effect with tp=1");
  if (c.etp > 0 && c.etp != c.tp && !m.is_moe()) {
    warn("etp", "etp_needs_experts", "etp=" + str(c.etp) + " splits expert layers: no effect on '" + m.name + "', which has none");
  }
  if (c.fsdp == Fsdp::kNone && c.data_parallel_sharding_strategy != ParallelConfig{}.data_parallel_sharding_strategy) {
    warn("data_parallel_sharding_strategy", "sharding_needs_fsdp",
         "data_parallel_sharding_strategy=" + std::string(to_string(c.data_parallel_sharding_strategy)) +
             " is Megatron-FSDP's (use_megatron_fsdp): no effect without FSDP, where distributed_optimizer shards the optimizer state");
  }
  if (c.sequence_parallel == false && c.tp > 1) {
    warn("sequence_parallel", "sp_off_with_tp",
         "tp=" + str(c.tp) + " without sequence_parallel keeps full-sequence norm/dropout activations on every "
                            "tensor-parallel rank");
  }
  return out;
}

std::string join_messages(const std::vector<ConfigIssue>& issues, std::string_view separator) {
  std::string out;
  for (const ConfigIssue& issue : issues) out += (out.empty() ? "" : std::string(separator)) + issue.message;
  return out;
}

void require_valid(const ParallelConfig& config, const ModelSpec& model, const GpuSpec& gpu) {
  const ConfigCheck result = check(config, model, gpu);
  if (!result.ok()) throw ConfigError(join_messages(result.errors, "\n"));
}

std::vector<int> layers_per_stage(const ParallelConfig& c, const ModelSpec& m) {
  if (c.pp <= 0 || c.vp <= 0) {
    throw ConfigError("pp=" + str(c.pp) + " and vp=" + str(c.vp) + " must be positive");
  }
  return resolve_pipeline_layout(c, m, c.pp * c.vp).layout.decoder_counts();
}

ParallelConfig parallel_config_from_json(const nlohmann::json& json, std::string_view context) {
  ParallelConfig c;
  detail::read_fields(kFields, JsonReader(json, context, KeyNames::spec("parallel"), parallel_keys()), c);
  return c;
}

ParallelConfig parse_parallel_config(std::string_view json_text, std::string_view context) {
  return parallel_config_from_json(parse_json_text(json_text, context), context);
}

nlohmann::json to_json(const ParallelConfig& c) { return detail::fields_to_json(kFields, c); }

std::string canonical_parallel_key(std::string_view raw_key) {
  std::string key = detail::normalize_key(raw_key);
  for (const auto& [alias, canonical] : kAliases) {
    if (key == alias) key = std::string(canonical);
  }
  return key;
}

void apply_override(ParallelConfig& config, std::string_view raw_key, std::string_view value) {
  const std::string key = canonical_parallel_key(raw_key);
  const Field* field = detail::find_field(kFields, key);
  if (field == nullptr) detail::throw_unknown_field("parallel", raw_key, parallel_keys());
  ParallelConfig c = config;
  detail::set_field(*field, c, value);
  config = std::move(c);
}

}  // namespace pipelab
