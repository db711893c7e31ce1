// Model / GPU / layout flags.
#include "config_flags.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"
#include "pipelab/profiles/presets.h"

namespace pipelab::app {
namespace {

// A Megatron-named model override: `--num-layers 40` sets num_layers.
void add_model_override(CLI::App* cmd, ConfigFlags& f, const std::string& flag, const std::string& field,
                        const std::string& help) {
  cmd->add_option_function<std::string>(
      flag, [&f, field](const std::string& value) { f.model_overrides.emplace_back(field, value); }, help);
}

// Megatron's layout, data-parallel and recompute arguments that set a ParallelConfig field:
// options take a value (`--expert-tensor-parallel-size 1`), switches set a fixed one
// (`--use-megatron-fsdp` sets fsdp=megatron). One table, so each flag is written once.
struct LayoutOption {
  const char* flag;
  const char* field;
  const char* help;
};
constexpr LayoutOption kLayoutOptions[] = {
    {"--etp,--expert-tensor-parallel-size", "etp", "Expert tensor-parallel size (default: tp); ep*etp must divide tp*cp*dp"},
    {"--pipeline-model-parallel-layout", "pipeline_layout", "Megatron's layout string, e.g. \"Et|(tt|)*30mL\" (docs/profiles.md)"},
    {"--decoder-first-pipeline-num-layers", "decoder_first_pipeline_num_layers", "Decoder layers of the first pipeline rank"},
    {"--decoder-last-pipeline-num-layers", "decoder_last_pipeline_num_layers", "Decoder layers of the last pipeline rank"},
    {"--recompute-method", "recompute_method", "Full recompute: uniform | block"},
    {"--recompute-num-layers", "recompute_num_layers", "Full recompute: layers per group (uniform) or recomputed per chunk (block)"},
    {"--data-parallel-sharding-strategy", "data_parallel_sharding_strategy", "FSDP: no_shard | optim | optim_grads | optim_grads_params"},
    {"--num-distributed-optimizer-instances", "num_distributed_optimizer_instances", "HSDP: replicas of the sharded state over dp*cp"},
    {"--fp8-recipe", "fp8_recipe", "FP8 scaling: delayed (default) | tensorwise | blockwise | mxfp8 (docs/simulator.md, FP8)"},
    {"--num-layers-at-start-in-bf16", "num_layers_at_start_in_bf16", "With --first-last-layers-bf16: first decoder layers kept BF16 (default 1)"},
    {"--num-layers-at-end-in-bf16", "num_layers_at_end_in_bf16", "With --first-last-layers-bf16: last decoder layers kept BF16 (default 1)"},
    {"--moe-token-dispatcher-type", "moe_token_dispatcher_type", "allgather (Megatron's default) | alltoall | flex (docs/simulator.md, \"MoE dispatch\")"},
    {"--moe-flex-dispatcher-backend", "moe_flex_dispatcher_backend", "flex: deepep | hybridep (the SMs its kernels hold)"},
    {"--moe-load-imbalance", "moe_load_imbalance", "Busiest rank's routed tokens / the mean, 1..64 (scales its traffic and expert GEMMs)"},
    {"--moe-expert-rank-capacity-factor", "moe_expert_rank_capacity_factor", "HybridEP's per-rank token budget / the mean: static shapes, no wait for the host (default: none)"},
    {"--moe-expert-capacity-factor", "moe_expert_capacity_factor", "An expert's capacity / the mean tokens; tokens beyond it are dropped (default: dropless)"},
    {"--cross-entropy-fusion-impl", "cross_entropy_fusion_impl", "With --cross-entropy-loss-fusion: native (default) | te (Transformer Engine 2.18 on) | te_inplace (TE before 2.18) (docs/simulator.md, \"Cross-entropy\")"},
    {"--cpu-offloading-num-layers", "cpu_offloading_num_layers", "Activation CPU offloading: the first N decoder layers' activations in host memory (pp=1, no recompute; docs/simulator.md)"},
    {"--cuda-graph-impl", "cuda_graph_impl", "CUDA graphs: none (default) | local | transformer_engine | full_iteration; the host launches a graphed region once (docs/simulator.md, \"Host launches\")"},
    {"--cp-comm-type", "cp_comm_type", "p2p (default: ring hidden behind attention) | all_gather | a2a (Ulysses) | a2a+p2p (with --hierarchical-context-parallel-sizes)"},
    {"--attention-backend", "attention_backend", "auto (default) | flash | fused: one fused kernel; unfused | local: the score matrix materialised, softmax and dropout on their own (docs/simulator.md)"},
};
struct LayoutSwitch {
  const char* flag;
  const char* field;
  const char* value;
  const char* help;
};
constexpr LayoutSwitch kLayoutSwitches[] = {
    {"--account-for-embedding-in-pipeline-split", "account_for_embedding_in_pipeline_split", "true", "The embedding counts as a layer in the split"},
    {"--account-for-loss-in-pipeline-split", "account_for_loss_in_pipeline_split", "true", "The loss counts as a layer in the split"},
    {"--use-megatron-fsdp", "fsdp", "megatron", "Megatron-FSDP (default strategy optim_grads_params)"},
    {"--use-torch-fsdp2", "fsdp", "torch", "PyTorch FSDP2 (Megatron: pp=1, ep=1)"},
    {"--enable-cuda-graph", "cuda_graph_impl", "local", "Megatron's older switch: --cuda-graph-impl local"},
    {"--external-cuda-graph", "cuda_graph_impl", "transformer_engine", "Megatron's older switch: --cuda-graph-impl transformer_engine"},
    {"--use-distributed-optimizer", "distributed_optimizer", "true", "Shard the optimizer state over dp*cp (default)"},
    {"--overlap-grad-reduce", "overlap_grad_reduce", "true", "Reduce-scatter gradients during the backward (default)"},
    {"--no-overlap-grad-reduce", "overlap_grad_reduce", "false", "Reduce gradients after the whole backward"},
    {"--overlap-param-gather", "overlap_param_gather", "true", "All-gather parameters during the next forward (default)"},
    {"--no-overlap-param-gather", "overlap_param_gather", "false", "All-gather parameters right after the optimizer step"},
    {"--grad-reduce-in-bf16", "grad_reduce_in_fp32", "false", "bf16 gradient buffers and reductions (default, as Megatron-Bridge)"},
    {"--accumulate-allreduce-grads-in-fp32", "grad_reduce_in_fp32", "true", "fp32 gradient buffers and reductions"},
    {"--use-precision-aware-optimizer", "use_precision_aware_optimizer", "true", "bf16 Adam moments"},
    {"--fp8-param-gather", "fp8_param_gather", "true", "Keep and all-gather FP8 weights (default with --precision fp8)"},
    {"--no-fp8-param-gather", "fp8_param_gather", "false", "bf16 weights with FP8 GEMMs"},
    {"--first-last-layers-bf16", "first_last_layers_bf16", "true", "Keep the first and last decoder layers' GEMMs in BF16 under fp8 or nvfp4"},
    {"--fp4-param-gather", "fp4_param_gather", "true", "Keep and all-gather NVFP4 weights (default with --precision nvfp4)"},
    {"--no-fp4-param-gather", "fp4_param_gather", "false", "bf16 weights with NVFP4 GEMMs"},
    {"--recompute-activations", "recompute", "selective", "Selective recompute (core attention)"},
    {"--overlap-moe-expert-parallel-comm", "overlap_moe_expert_parallel_comm", "true", "1F1B EP all-to-all overlap: B and the next F merged into F&B units"},
    {"--moe-shared-expert-overlap", "moe_shared_expert_overlap", "true", "Shared experts on their own stream beside the dispatch and combine (alltoall or flex)"},
    {"--delay-wgrad-compute", "delay_wgrad_compute", "true", "With --overlap-moe-expert-parallel-comm (Megatron needs it): wgrad after the combine, exposing the TP reduce-scatter beside it"},
    {"--moe-pad-expert-input-to-capacity", "moe_pad_expert_input_to_capacity", "true", "Pad every expert to its capacity (needs --moe-expert-capacity-factor): no host sync in the dispatch"},
    {"--cross-entropy-loss-fusion", "cross_entropy_loss_fusion", "true", "Fused cross-entropy loss (default; the kernel: --cross-entropy-fusion-impl)"},
    {"--no-cross-entropy-loss-fusion", "cross_entropy_loss_fusion", "false", "Unfused cross-entropy loss: Megatron-LM's default without --cross-entropy-loss-fusion"},
    {"--tp-comm-overlap", "tp_comm_overlap", "true", "TE userbuffers TP overlap: SP collectives pipelined with their GEMMs (needs SP)"},
};

// Products of flag values are formed below before ParallelConfig's rules run: refuse the ones that
// pass pipelab's limits (docs/validation.md, "Limits") before they are multiplied in int.
void check_flag_products(const ConfigFlags& f) {
  const auto text = [](auto... v) {
    std::string out;
    ((out += (out.empty() ? "" : "*") + std::to_string(v)), ...);
    return out;
  };
  const std::int64_t base = limits::product_within({f.tp, f.pp, f.cp}, limits::kMaxWorldSize, "tp*pp*cp", text(f.tp, f.pp, f.cp));
  // dp as resolve_flags derives it: --dp, else --gpus / (tp*pp*cp), else 4.
  const std::int64_t dp = f.dp > 0 ? f.dp : f.gpus > 0 ? std::max<std::int64_t>(1, f.gpus / base) : 4;
  limits::product_within({base, dp}, limits::kMaxWorldSize, "world size tp*pp*cp*dp", text(f.tp, f.pp, f.cp, dp));
  if (f.gbs == 0) {
    const int microbatches = f.microbatches > 0 ? f.microbatches : 32;
    limits::product_within({f.mbs, dp, microbatches}, limits::kMaxGlobalBatch, "global batch mbs*dp*microbatches",
                           text(f.mbs, dp, microbatches));
  }
}

}  // namespace

void add_config_flags(CLI::App* cmd, ConfigFlags& c) {
  const std::size_t before = cmd->get_options().size();
  cmd->add_option("--model", c.model, "Model preset (pipelab list models) or a model JSON file")->capture_default_str();
  cmd->add_option("--gpu", c.gpu, "GPU preset (pipelab list gpus) or a GPU JSON file")->capture_default_str();
  cmd->add_option("--tp,--tensor-model-parallel-size", c.tp, "Tensor-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--pp,--pipeline-model-parallel-size", c.pp, "Pipeline-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--vp,--virtual-pipeline-model-parallel-size,--num-virtual-stages-per-pipeline-rank", c.vp,
                  "Chunks per rank for interleaved schedules (0 = a layout string's stages / pp, else the schedule's default)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--num-layers-per-virtual-pipeline-stage", c.layers_per_virtual_stage,
                  "Megatron's way to give vp: vp = (num_layers / pp) / this")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--cp,--context-parallel-size", c.cp, "Context-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--ep,--expert-model-parallel-size", c.ep, "Expert-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--dp,--data-parallel-size", c.dp, "Data-parallel size (0 = derive from --gpus)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--gpus,--world-size", c.gpus, "Total GPUs (default tp*pp*cp*4 when --dp is not given)")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--mbs,--micro-batch-size", c.mbs, "Micro-batch size (sequences)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--gbs,--global-batch-size", c.gbs, "Global batch size (sequences); default mbs*dp*32")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--microbatches,--num-microbatches", c.microbatches, "Microbatches per iteration (instead of --gbs)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--seq,--seq-length", c.seq, "Sequence length (default: the model's)")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--recompute,--recompute-granularity", c.recompute, "none | selective | full")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "selective", "full"}));
  cmd->add_option("--precision", c.precision, "bf16 | fp8 | nvfp4: the decoder's linear GEMMs (MFU is against the BF16 peak)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp8", "nvfp4"}));
  // Megatron's --bf16 is the base dtype (bf16 weights, activations, communication), which pipelab always
  // assumes; FP8 or NVFP4 GEMMs come on top of it (NVIDIA's FP8 scripts pass --bf16 and --fp8-format).
  cmd->add_flag_callback("--bf16", [] {}, "Megatron's --bf16: the bf16 base dtype pipelab assumes; no effect on --precision (FP8 or NVFP4 "
                          "GEMMs, --fp8-format / --fp4-format, run on top of it)");
  CLI::Option* fp8_format = cmd->add_option_function<std::string>(
                                   "--fp8-format", [&c](const std::string&) { c.precision = "fp8"; },
                                   "Megatron's --fp8-format hybrid|e4m3: --precision fp8")
                                ->check(CLI::IsMember({"hybrid", "e4m3"}));
  // Megatron refuses the two together ("--fp4-format and --fp8-format cannot be used simultaneously").
  cmd->add_option_function<std::string>(
         "--fp4-format", [&c](const std::string&) { c.precision = "nvfp4"; }, "Megatron's --fp4-format e2m1: --precision nvfp4")
      ->check(CLI::IsMember({"e2m1"}))
      ->excludes(fp8_format);
  // Megatron's other recipe, custom, takes a user's quantizer factory: nothing to simulate.
  cmd->add_option_function<std::string>("--fp4-recipe", [](const std::string&) {}, "Megatron's --fp4-recipe: nvfp4 (its default; the only one simulated)")
      ->check(CLI::IsMember({"nvfp4"}));
  cmd->add_option("--megatron-args", c.unused_megatron_args,
                  "Arguments of a Megatron-LM launch script, as \"ARGS\" or @FILE: known flags apply, the rest are "
                  "listed as ignored; this command line's own flags win (docs/cli.md)");
  cmd->add_option("--automodel-yaml", c.unused_automodel_yaml,
                  "A NeMo AutoModel config (its distributed:, step_scheduler: and model: keys), read as the flags "
                  "they mean; this command line's own flags win (docs/cli.md)");
  cmd->add_flag_callback("--sequence-parallel", [&c] { c.sequence_parallel = "on"; }, "Sequence parallel (default: on when tp > 1)");
  cmd->add_flag_callback("--no-sequence-parallel", [&c] { c.sequence_parallel = "off"; }, "No sequence parallel");
  cmd->add_flag("--no-distributed-optimizer", c.no_distributed_optimizer, "Replicate optimizer state over DP");
  cmd->add_option("--stage-layers", c.stage_layers, "Decoder layers per virtual stage, e.g. 2,3,3,3,2,3,3,3");
  for (const LayoutOption& o : kLayoutOptions) {
    const std::string field = o.field;
    CLI::Option* opt =
        cmd->add_option_function<std::string>(o.flag, [&c, field](const std::string& v) { c.parallel_overrides.emplace_back(field, v); }, o.help);
    // 0 means "not given" in the config JSON; on the command line Megatron refuses it ("num_layers_in_first_pipeline_stage
    // must be larger than 0"), so pipelab does too rather than run the even split.
    if (field == "decoder_first_pipeline_num_layers" || field == "decoder_last_pipeline_num_layers") {
      opt->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            int n = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
            if (ec == std::errc() && end == v.data() + v.size() && n >= 1) return "";
            return "must be a layer count >= 1, got '" + v + "' (Megatron refuses 0; leave the flag out for the even split)";
          },
          "LAYERS >= 1"));
    }
  }
  // Megatron's pair: the switch offloads, the fraction (default 1) says how much; the fraction alone does nothing.
  cmd->add_flag("--optimizer-cpu-offload", c.optimizer_cpu_offload,
                "Optimizer state in host memory: the share --optimizer-offload-fraction says (default 1)");
  cmd->add_option("--optimizer-offload-fraction", c.optimizer_offload_fraction,
                  "With --optimizer-cpu-offload: share of the optimizer state in host memory (0..1, default 1)")
      ->check(CLI::Range(0.0, 1.0));
  // TransformerConfig's switch (a flag in older Megatron-LM, config-only now); --cpu-offloading-num-layers
  // N > 0 turns offloading on by itself (arguments.py).
  cmd->add_flag("--cpu-offloading", c.cpu_offloading, "Activation offload switch (older Megatron-LM): offloads --cpu-offloading-num-layers layers");
  for (const LayoutSwitch& s : kLayoutSwitches) {
    const std::string field = s.field, value = s.value;
    cmd->add_flag_callback(s.flag, [&c, field, value] { c.parallel_overrides.emplace_back(field, value); }, s.help);
  }
  // Megatron's list flags (nargs='+'): the words joined into the field's comma-separated list.
  const auto add_list_override = [&](const char* flag, const char* field, const char* help) {
    cmd->add_option_function<std::vector<std::string>>(
           flag,
           [&c, field](const std::vector<std::string>& words) {
             std::string joined;
             for (const std::string& w : words) joined += (joined.empty() ? "" : ",") + w;
             c.parallel_overrides.emplace_back(field, joined);
           },
           help)
        ->expected(1, -1);
  };
  add_list_override("--recompute-modules", "recompute_modules",
                    "Selective recompute: core_attn mlp moe moe_act layernorm mla_up_proj shared_experts");
  add_list_override("--cuda-graph-modules,--cuda-graph-scope", "cuda_graph_modules",
                    "With --cuda-graph-impl local|transformer_engine: attn mlp moe moe_router moe_preprocess (none: whole layers)");
  add_list_override("--hierarchical-context-parallel-sizes", "hierarchical_context_parallel_sizes",
                    "a2a+p2p: the a2a group size, then the p2p ring size (product cp), e.g. 2 4");
  cmd->add_flag("--softmax-stored", c.softmax_stored, "Memory: keep Korthikanti's 5as/h softmax term (no flash attention)");
  // Megatron-named model overrides.
  add_model_override(cmd, c, "--num-layers", "num_layers", "Override the model's num_layers");
  add_model_override(cmd, c, "--hidden-size", "hidden_size", "Override hidden_size");
  add_model_override(cmd, c, "--ffn-hidden-size", "ffn_hidden_size", "Override ffn_hidden_size");
  add_model_override(cmd, c, "--num-attention-heads", "num_attention_heads", "Override num_attention_heads");
  add_model_override(cmd, c, "--num-query-groups", "num_query_groups", "Override num_query_groups");
  add_model_override(cmd, c, "--kv-channels", "kv_channels", "Override kv_channels");
  add_model_override(cmd, c, "--vocab-size", "vocab_size", "Override vocab_size");
  add_model_override(cmd, c, "--num-experts", "num_experts", "Override num_experts");
  add_model_override(cmd, c, "--moe-router-topk", "moe_router_topk", "Override moe_router_topk");
  add_model_override(cmd, c, "--moe-router-num-groups", "moe_router_num_groups", "Group-limited routing: expert groups (DeepSeek-V3: 8)");
  add_model_override(cmd, c, "--moe-router-group-topk", "moe_router_group_topk", "Group-limited routing: groups per token (DeepSeek-V3: 4)");
  add_model_override(cmd, c, "--moe-ffn-hidden-size", "moe_ffn_hidden_size", "Override moe_ffn_hidden_size");
  add_model_override(cmd, c, "--moe-shared-expert-intermediate-size", "moe_shared_expert_intermediate_size",
                     "Override moe_shared_expert_intermediate_size");
  add_model_override(cmd, c, "--mtp-num-layers", "mtp_num_layers", "Multi-token-prediction layers (0 turns MTP off)");
  add_model_override(cmd, c, "--window-size", "window_size", "Sliding-window attention, e.g. 128,0");
  add_model_override(cmd, c, "--window-attn-skip-freq", "window_attn_skip_freq", "Every Nth layer attends fully");
  add_model_override(cmd, c, "--q-lora-rank", "q_lora_rank", "MLA query compression rank");
  add_model_override(cmd, c, "--kv-lora-rank", "kv_lora_rank", "MLA key/value compression rank");
  add_model_override(cmd, c, "--qk-head-dim", "qk_head_dim", "MLA query/key head dim");
  add_model_override(cmd, c, "--qk-pos-emb-head-dim", "qk_pos_emb_head_dim", "MLA decoupled RoPE head dim");
  add_model_override(cmd, c, "--v-head-dim", "v_head_dim", "MLA value head dim");
  add_model_override(cmd, c, "--hidden-dropout", "hidden_dropout", "Hidden dropout probability (masks kept when > 0)");
  add_model_override(cmd, c, "--attention-dropout", "attention_dropout", "Attention dropout probability");
  add_model_override(cmd, c, "--normalization", "normalization", "layernorm | rmsnorm (Megatron: LayerNorm | RMSNorm)");
  add_model_override(cmd, c, "--position-embedding-type", "position_embedding_type", "learned_absolute | rope | none");
  cmd->add_flag_callback("--multi-latent-attention", [&c] { c.model_overrides.emplace_back("multi_latent_attention", "true"); },
                         "Multi-latent attention (DeepSeek)");
  cmd->add_flag_callback("--squared-relu", [&c] { c.model_overrides.emplace_back("swiglu", "false"); }, "Non-gated MLP (FLOPs of GELU)");
  cmd->add_flag_callback("--disable-bias-linear", [&c] { c.model_overrides.emplace_back("add_bias_linear", "false"); }, "No linear biases");
  cmd->add_flag_callback("--add-qkv-bias", [&c] { c.model_overrides.emplace_back("add_qkv_bias", "true"); }, "Biases on Q, K, V only");
  cmd->add_flag_callback("--qk-layernorm", [&c] { c.model_overrides.emplace_back("qk_layernorm", "true"); }, "Norms on Q and K");
  cmd->add_flag_callback("--swiglu", [&c] { c.model_overrides.emplace_back("swiglu", "true"); }, "Gated SwiGLU MLP");
  cmd->add_flag_callback("--no-swiglu", [&c] { c.model_overrides.emplace_back("swiglu", "false"); }, "Plain GELU MLP");
  cmd->add_flag_callback("--untie-embeddings-and-output-weights",
                         [&c] { c.model_overrides.emplace_back("untie_embeddings_and_output_weights", "true"); },
                         "Separate LM-head weights");
  // Cost model.
  cmd->add_option("--cost", c.cost, "analytic | uniform")->capture_default_str()->check(CLI::IsMember({"analytic", "uniform"}));
  cmd->add_option("--t-f", c.t_f_us, "Uniform cost: forward time (us)")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--t-i", c.t_i_us, "Uniform cost: input-grad time (us)")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--t-w", c.t_w_us, "Uniform cost: weight-grad time (us)")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--t-b", c.t_b_us, "Uniform cost: full backward time (us); default t-i + t-w")->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--t-fb", c.t_fb_us, "Uniform cost: overlapped F&B unit (us); default t-f + t-b")->check(CLI::Range(0.0, 1e9));
  cmd->add_option("--t-comm", c.t_comm_us, "Uniform cost: one P2P transfer (us)")->capture_default_str()->check(CLI::Range(0.0, 1e9));
  // Apply each flag as it is read, so that of two flags setting one field (--precision / --fp8-format,
  // --overlap-grad-reduce / --no-overlap-grad-reduce) the later on the command line wins.
  const std::vector<CLI::Option*> options = cmd->get_options();
  for (std::size_t i = before; i < options.size(); ++i) options[i]->trigger_on_parse();
}

ResolvedConfig resolve_flags(const ConfigFlags& f) {
  check_flag_products(f);
  ResolvedConfig out;
  out.model = load_model(f.model);
  for (const auto& [field, value] : f.model_overrides) apply_override(out.model, field, value);
  out.gpu = load_gpu(f.gpu);
  ParallelConfig c;
  c.tp = f.tp;
  c.pp = f.pp;
  c.cp = f.cp;
  c.ep = f.ep;
  c.dp = f.dp;
  c.world = f.gpus;
  if (c.dp == 0 && c.world == 0) c.world = f.tp * f.pp * f.cp * 4;
  c.vp = f.vp;
  if (f.layers_per_virtual_stage > 0) {
    const int per_rank = out.model.num_layers / f.pp;
    if (out.model.num_layers % f.pp != 0 || per_rank % f.layers_per_virtual_stage != 0) {
      throw ConfigError("--num-layers-per-virtual-pipeline-stage=" + std::to_string(f.layers_per_virtual_stage) +
                        " must divide num_layers/pp = " + std::to_string(out.model.num_layers) + "/" + std::to_string(f.pp));
    }
    c.vp = per_rank / f.layers_per_virtual_stage;
    // Megatron takes one of the two ("only one of ... can be set"); pipelab accepts both when they agree.
    if (f.vp > 0 && f.vp != c.vp) {
      throw ConfigError("--num-layers-per-virtual-pipeline-stage=" + std::to_string(f.layers_per_virtual_stage) + " gives vp=" +
                        std::to_string(c.vp) + " (num_layers/pp = " + std::to_string(per_rank) + " layers per rank), but --vp=" +
                        std::to_string(f.vp) + "; give one of them");
    }
  }
  c.mbs = f.mbs;
  c.seq_length = f.seq;
  c.recompute = parse_recompute(f.recompute);
  c.precision = parse_precision(f.precision);
  if (f.sequence_parallel != "auto") c.sequence_parallel = f.sequence_parallel == "on";
  c.distributed_optimizer = !f.no_distributed_optimizer;
  if (!f.stage_layers.empty()) c.stage_layers = parse_int_list("--stage-layers", f.stage_layers);
  for (const auto& [field, value] : f.parallel_overrides) apply_override(c, field, value);
  if (f.optimizer_cpu_offload) {
    c.optimizer_offload_fraction = f.optimizer_offload_fraction.value_or(1.0);
  } else if (f.optimizer_offload_fraction) {
    out.warnings.push_back("--optimizer-offload-fraction has no effect without --optimizer-cpu-offload (as in Megatron)");
  }
  if (f.cpu_offloading && c.cpu_offloading_num_layers == 0) {
    out.warnings.push_back("--cpu-offloading without --cpu-offloading-num-layers offloads no layer (as in Megatron)");
  }
  c.gbs = 1;  // placeholder so resolve() can run; set below once dp is known
  c = resolve(c, out.model);
  // Megatron reads the backend only for the flex dispatcher; given with another one it changes nothing.
  const bool backend_given = std::any_of(f.parallel_overrides.begin(), f.parallel_overrides.end(),
                                         [](const auto& o) { return o.first == "moe_flex_dispatcher_backend"; });
  if (backend_given && c.moe_token_dispatcher_type != MoeDispatcher::kFlex) {
    out.warnings.push_back("--moe-flex-dispatcher-backend has no effect with moe_token_dispatcher_type=" +
                           std::string(to_string(c.moe_token_dispatcher_type)) + " (it picks the flex dispatcher's kernels)");
  }
  if (f.gbs > 0 && f.microbatches > 0) throw InputError("give --gbs or --microbatches, not both");
  c.gbs = f.gbs > 0 ? f.gbs : c.mbs * c.dp * (f.microbatches > 0 ? f.microbatches : 32);
  out.config = c;
  return out;
}

std::vector<std::string> split_comma_list(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

sim::SimulationRequest make_request(const ConfigFlags& f, const ResolvedConfig& r, const std::string& schedule) {
  sim::SimulationRequest req;
  req.model = r.model;
  req.gpu = r.gpu;
  req.config = r.config;
  req.schedule = schedule;
  req.warnings = r.warnings;
  req.cost_model = sim::parse_cost_model(f.cost);
  req.memory.softmax_stored = f.softmax_stored;
  auto ns = [](double us) { return static_cast<std::int64_t>(us * 1000); };
  req.uniform.f_ns = ns(f.t_f_us);
  req.uniform.i_ns = ns(f.t_i_us);
  req.uniform.w_ns = ns(f.t_w_us);
  req.uniform.b_ns = f.t_b_us < 0 ? -1 : ns(f.t_b_us);
  req.uniform.fb_ns = f.t_fb_us < 0 ? -1 : ns(f.t_fb_us);
  req.uniform.comm_ns = ns(f.t_comm_us);
  return req;
}

}  // namespace pipelab::app
