// Recipes of a layout for Megatron-LM, Megatron-Bridge, NeMo AutoModel and torchtitan; see recipes.h.
#include "pipelab/plan/recipes.h"

#include <algorithm>
#include <array>
#include <utility>

#include "pipelab/profiles/pipeline_layout.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::plan {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kPytorchNames = {{
    {"gpipe", "GPipe"},
    {"1f1b", "1F1B"},
    {"interleaved-1f1b", "Interleaved1F1B"},
    {"looped-bfs", "LoopedBFS"},
    {"zb-h1", "InterleavedZeroBubble"},
    {"zb-v", "ZBVZeroBubble"},
    {"dualpipev", "DualPipeV"},
}};

std::string str(long long v) { return std::to_string(v); }

// What the recipes of one layout share.
struct Facts {
  const ModelSpec& model;
  const ParallelConfig& c;
  std::string schedule;  // canonical
  bool even = true;      // every model part holds the same number of decoder layers
  bool interleaved = false;  // Megatron's interleaved 1F1B (vp > 1) or its 1F1B
  int layers_per_part = 0;
  std::string layout;    // Megatron's layout string for an uneven split without the account-for flags
  int parts_per_rank = 1;  // model parts a pipeline rank holds (V schedules: 2)

  // Megatron-Core runs this schedule: 1F1B, or interleaved 1F1B with vp > 1.
  bool megatron_schedule() const { return schedule == "1f1b" || (schedule == "interleaved-1f1b" && c.vp > 1); }
  // Megatron-Core's 1F1B splits the model the same way (DualPipe's parts are one per rank).
  bool megatron_split() const { return megatron_schedule() || parts_per_rank == 1; }
  // The layout ran Megatron's 1F1B EP overlap (merged F&B units). Asked for but not run (a schedule
  // Megatron does not have), the recipes leave it and delay_wgrad_compute, which needs it, out.
  bool ep_overlap() const { return sim::merges_forward_backward(schedule, c, c.vp); }
  std::string ep_overlap_note() const {
    if (!c.overlap_moe_expert_parallel_comm || ep_overlap()) return "";
    return "# note: the plan simulated " + schedule + " without the 1F1B EP overlap (Megatron runs it in its interleaved 1F1B, "
           "or 1F1B without a pipeline); these settings leave it and delay_wgrad_compute out\n";
  }
};

std::string header(const Facts& f) {
  const ParallelConfig& c = f.c;
  return "# pipelab plan: " + f.model.name + " on " + str(static_cast<long long>(c.tp) * c.pp * c.cp * c.dp) + " GPUs, schedule " +
         f.schedule + "\n";
}

std::string megatron_lm(const Facts& f) {
  const ParallelConfig& c = f.c;
  std::string notes;
  std::vector<std::string> flags;
  auto add = [&](std::string flag) { flags.push_back(std::move(flag)); };
  add("--tensor-model-parallel-size " + str(c.tp));
  add("--pipeline-model-parallel-size " + str(c.pp));
  // Megatron refuses a vp flag beside a layout string (it derives vp from the string's stages).
  const bool layout_flag = f.megatron_split() && !f.layout.empty();
  if (f.schedule == "interleaved-1f1b" && c.vp > 1) {
    if (!layout_flag) add("--num-virtual-stages-per-pipeline-rank " + str(c.vp));
  } else if (!f.megatron_schedule()) {
    notes += "# note: Megatron-LM has no " + f.schedule + " schedule; these flags run its 1F1B" +
             (f.megatron_split() ? " with the same split\n" : ", one model part per rank instead of " + str(f.parts_per_rank) + "\n");
  }
  if (c.cp > 1) add("--context-parallel-size " + str(c.cp));
  if (f.model.is_moe()) {
    add("--expert-model-parallel-size " + str(c.ep));
    add("--expert-tensor-parallel-size " + str(c.expert_tp()));
    add("--moe-token-dispatcher-type " + std::string(to_string(c.moe_token_dispatcher_type)));
    if (c.moe_token_dispatcher_type == MoeDispatcher::kFlex) add("--moe-flex-dispatcher-backend " + c.moe_flex_dispatcher_backend);
    if (f.ep_overlap()) add("--overlap-moe-expert-parallel-comm");
    if (f.ep_overlap() && c.delay_wgrad_compute) add("--delay-wgrad-compute");
    if (c.moe_shared_expert_overlap) add("--moe-shared-expert-overlap");
    notes += f.ep_overlap_note();
  }
  if (c.sequence_parallel_enabled()) add("--sequence-parallel");
  add("--micro-batch-size " + str(c.mbs));
  add("--global-batch-size " + str(c.gbs));
  add("--seq-length " + str(c.seq_length));
  if (c.fsdp == Fsdp::kMegatron) {
    add("--use-megatron-fsdp");
    add("--data-parallel-sharding-strategy " + std::string(to_string(c.data_parallel_sharding_strategy)));
    add("--ckpt-format fsdp_dtensor");  // Megatron-LM asserts it with --use-megatron-fsdp
  } else if (c.distributed_optimizer) {
    add("--use-distributed-optimizer");
  }
  if (c.overlap_grad_reduce) add("--overlap-grad-reduce");
  if (c.overlap_param_gather) add("--overlap-param-gather");
  if (c.recompute == Recompute::kSelective) {
    add("--recompute-granularity selective");
  } else if (c.recompute == Recompute::kFull) {
    add("--recompute-granularity full");
    add("--recompute-method " + std::string(to_string(c.recompute_method)));
    add("--recompute-num-layers " + str(std::max(1, c.recompute_num_layers)));
  }
  if (f.megatron_split()) {
    if (c.account_for_embedding_in_pipeline_split) add("--account-for-embedding-in-pipeline-split");
    if (c.account_for_loss_in_pipeline_split) add("--account-for-loss-in-pipeline-split");
    if (layout_flag) add("--pipeline-model-parallel-layout \"" + f.layout + "\"");
  }
  add("--bf16");
  if (c.precision == Precision::kFp8) {
    add("--fp8-format hybrid");
    add("--fp8-recipe " + std::string(to_string(c.fp8_recipe)));
    if (c.fp8_param_gather_enabled()) add("--fp8-param-gather");
  } else if (c.precision == Precision::kNvfp4) {
    add("--fp4-format e2m1");
    add("--fp4-recipe nvfp4");
    if (c.fp4_param_gather_enabled()) add("--fp4-param-gather");
  }
  if (c.cuda_graph_impl != CudaGraphImpl::kNone) {
    std::string modules;
    for (const std::string& m : c.cuda_graph_modules) modules += " " + m;
    add("--cuda-graph-impl " + std::string(to_string(c.cuda_graph_impl)) + (modules.empty() ? "" : " --cuda-graph-modules" + modules));
  }
  if (c.cross_entropy_loss_fusion) {
    // Megatron-LM refuses Transformer Engine's loss since 168cb15d70 (June 2026): ask for its own.
    add("--cross-entropy-loss-fusion");
    add("--cross-entropy-fusion-impl native");
    if (c.cross_entropy_fusion_impl != CrossEntropyFusionImpl::kNative) {
      notes += "# note: the plan simulated Transformer Engine's fused loss (" + std::string(to_string(c.cross_entropy_fusion_impl)) +
               "); Megatron-LM refuses --cross-entropy-fusion-impl te since June 2026, so these flags ask for native\n";
    }
  }
  if (c.first_last_layers_bf16 && c.precision != Precision::kBf16) {
    add("--first-last-layers-bf16");
    add("--num-layers-at-start-in-bf16 " + str(c.num_layers_at_start_in_bf16));
    add("--num-layers-at-end-in-bf16 " + str(c.num_layers_at_end_in_bf16));
  }
  std::string out = header(f) + notes;
  for (std::size_t i = 0; i < flags.size(); ++i) out += flags[i] + (i + 1 < flags.size() ? " \\\n" : "\n");
  return out;
}

// Megatron-Bridge's registered mixed-precision recipe for the run's precision and FP8 scaling
// (training/mixed_precision.py). Where a recipe's own settings differ from the plan's, megatron_bridge()
// says so in a note.
std::string_view bridge_mixed_precision(const ParallelConfig& c) {
  switch (c.precision) {
    case Precision::kBf16: return "bf16_mixed";
    case Precision::kNvfp4: return "bf16_with_nvfp4_mixed";
    case Precision::kFp8: break;
  }
  switch (c.fp8_recipe) {
    case Fp8Recipe::kDelayed: return "bf16_with_fp8_delayed_scaling_mixed";
    case Fp8Recipe::kTensorwise: return "bf16_with_fp8_current_scaling_mixed";
    case Fp8Recipe::kBlockwise: return "bf16_with_fp8_subchannel_scaling_mixed";
    case Fp8Recipe::kMxfp8: return "bf16_with_mxfp8_mixed";
  }
  return "bf16_mixed";
}

std::string megatron_bridge(const Facts& f) {
  const ParallelConfig& c = f.c;
  std::string out = header(f);
  if (!f.megatron_schedule()) {
    out += "# note: Megatron-Bridge (Megatron-Core) has no " + f.schedule + " schedule; these overrides run its 1F1B" +
           (f.megatron_split() ? " with the same split\n" : ", one model part per rank instead of " + str(f.parts_per_rank) + "\n");
  }
  // Bridge's mixed-precision recipe overwrites these model fields with its own, so a plan that differs
  // from the recipe says what to set on the mixed-precision config.
  const bool current_scaling = c.precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kTensorwise;
  if (c.first_last_layers_bf16 && c.precision != Precision::kBf16) {
    out += "# note: keep layers in BF16 on the mixed-precision config: first_last_layers_bf16=True, num_layers_at_start_in_bf16=" +
           str(c.num_layers_at_start_in_bf16) + ", num_layers_at_end_in_bf16=" + str(c.num_layers_at_end_in_bf16) + "\n";
  } else if (current_scaling) {
    out += "# note: bf16_with_fp8_current_scaling_mixed keeps the first and last layer in BF16; set first_last_layers_bf16=False "
           "on it to run this plan (as Bridge's performance scripts do)\n";
  }
  if (c.precision == Precision::kFp8 && c.fp8_recipe == Fp8Recipe::kBlockwise && c.fp8_param_gather_enabled()) {
    out += "# note: bf16_with_fp8_subchannel_scaling_mixed sets fp8_param_gather=False; set it True on the mixed-precision config "
           "to gather FP8 weights as this plan does\n";
  }
  if (c.cross_entropy_loss_fusion && c.cross_entropy_fusion_impl != CrossEntropyFusionImpl::kNative) {
    out += "# note: cross_entropy_fusion_impl=te runs the loss of the Transformer Engine installed: the plan simulated " +
           std::string(c.cross_entropy_fusion_impl == CrossEntropyFusionImpl::kTe ? "TE 2.18 or later (an fp32 gradient)"
                                                                                   : "TE before 2.18 (the gradient over the BF16 logits)") +
           "\n";
  }
  if (f.model.is_moe()) out += f.ep_overlap_note();
  if (f.model.is_moe() && f.ep_overlap()) {
    out += "# note: Bridge applies the EP overlap through the recipe's comm_overlap config (CommOverlapConfig), which "
           "overwrites the model's fields; a recipe whose comm_overlap is None needs one\n";
  }
  auto set = [&](const std::string& key, const std::string& value) { out += key + "=" + value + "\n"; };
  set("model.tensor_model_parallel_size", str(c.tp));
  set("model.pipeline_model_parallel_size", str(c.pp));
  if (f.schedule == "interleaved-1f1b" && c.vp > 1) set("model.virtual_pipeline_model_parallel_size", str(c.vp));
  set("model.context_parallel_size", str(c.cp));
  if (f.model.is_moe()) {
    set("model.expert_model_parallel_size", str(c.ep));
    set("model.expert_tensor_parallel_size", str(c.expert_tp()));
    set("model.moe_token_dispatcher_type", std::string(to_string(c.moe_token_dispatcher_type)));
    if (c.moe_token_dispatcher_type == MoeDispatcher::kFlex) set("model.moe_flex_dispatcher_backend", c.moe_flex_dispatcher_backend);
    // Bridge's CommOverlapConfig writes these two onto the model (comm_overlap.py, setup), as its own
    // performance scripts set them (utils/overrides.py: moe_a2a_overlap).
    if (f.ep_overlap()) set("comm_overlap.overlap_moe_expert_parallel_comm", "true");
    if (f.ep_overlap() && c.delay_wgrad_compute) set("comm_overlap.delay_wgrad_compute", "true");
    if (c.moe_shared_expert_overlap) set("model.moe_shared_expert_overlap", "true");
  }
  set("model.sequence_parallel", c.sequence_parallel_enabled() ? "true" : "false");
  if (c.cuda_graph_impl != CudaGraphImpl::kNone) {
    set("model.cuda_graph_impl", std::string(to_string(c.cuda_graph_impl)));
    std::string modules;
    for (const std::string& m : c.cuda_graph_modules) modules += (modules.empty() ? "" : ",") + m;
    if (!modules.empty()) set("model.cuda_graph_scope", "[" + modules + "]");
  }
  set("model.seq_length", str(c.seq_length));
  set("train.micro_batch_size", str(c.mbs));
  set("train.global_batch_size", str(c.gbs));
  if (c.recompute != Recompute::kNone) set("model.recompute_granularity", std::string(to_string(c.recompute)));
  if (c.recompute == Recompute::kFull) {
    set("model.recompute_method", std::string(to_string(c.recompute_method)));
    set("model.recompute_num_layers", str(std::max(1, c.recompute_num_layers)));
  }
  if (f.megatron_split()) {
    if (c.account_for_embedding_in_pipeline_split) set("model.account_for_embedding_in_pipeline_split", "true");
    if (c.account_for_loss_in_pipeline_split) set("model.account_for_loss_in_pipeline_split", "true");
    if (!f.layout.empty()) set("model.pipeline_model_parallel_layout", "\"" + f.layout + "\"");
  }
  if (c.fsdp == Fsdp::kMegatron) {
    set("ddp.use_megatron_fsdp", "true");
    set("ddp.data_parallel_sharding_strategy", std::string(to_string(c.data_parallel_sharding_strategy)));
    set("checkpoint.ckpt_format", "fsdp_dtensor");  // Bridge asserts it with Megatron-FSDP when saving or loading
  } else {
    set("ddp.use_distributed_optimizer", c.distributed_optimizer ? "true" : "false");
  }
  set("ddp.overlap_grad_reduce", c.overlap_grad_reduce ? "true" : "false");
  set("ddp.overlap_param_gather", c.overlap_param_gather ? "true" : "false");
  set("model.cross_entropy_loss_fusion", c.cross_entropy_loss_fusion ? "true" : "false");
  if (c.cross_entropy_loss_fusion) {
    // te_inplace is pipelab's name for TE's loss before 2.18: Bridge asks for te, the TE installed decides.
    const bool native = c.cross_entropy_fusion_impl == CrossEntropyFusionImpl::kNative;
    set("model.cross_entropy_fusion_impl", native ? "native" : "te");
  }
  set("mixed_precision", std::string(bridge_mixed_precision(c)));
  return out;
}

// The CUDA graphs the plan simulated, which a framework without Megatron's graph options runs without.
std::string graphs_note(const ParallelConfig& c, const std::string& tool) {
  if (c.cuda_graph_impl == CudaGraphImpl::kNone) return "";
  return "# note: the plan simulated Megatron's CUDA graphs (cuda_graph_impl=" + std::string(to_string(c.cuda_graph_impl)) + "); " + tool +
         " launches these kernels its own way, so the host's launch time differs\n";
}

// Megatron's MoE communication options the plan simulated, which a framework without them runs its own way.
std::string moe_comm_note(const Facts& f, const std::string& tool) {
  const ParallelConfig& c = f.c;
  std::vector<std::string> options;
  if (c.moe_token_dispatcher_type == MoeDispatcher::kFlex) options.push_back("the flex dispatcher (" + c.moe_flex_dispatcher_backend + ")");
  if (f.ep_overlap()) options.push_back("the 1F1B EP all-to-all overlap");
  if (c.moe_shared_expert_overlap) options.push_back("the shared experts beside the dispatch");
  if (options.empty()) return "";
  std::string list;
  for (std::size_t i = 0; i < options.size(); ++i) list += (i == 0 ? "" : i + 1 == options.size() ? " and " : ", ") + options[i];
  return "# note: the plan simulated Megatron's MoE communication: " + list + "; " + tool + " moves the tokens its own way, so its EP time differs\n";
}

// PyTorch's schedule for this layout, or empty with a note: none of that name, or a multi-stage one
// (Interleaved1F1B, LoopedBFS, InterleavedZeroBubble, ZBVZeroBubble, DualPipeV) on one stage per rank,
// which PyTorch pipelining refuses (torchtitan: "requires at least 2 stages per rank").
std::string_view pytorch_schedule(const Facts& f, const std::string& tool, const std::string& fallback, std::string& notes) {
  if (f.c.pp <= 1) return {};
  const std::string_view name = pytorch_schedule_name(f.schedule);
  if (name.empty()) {
    notes += "# note: " + tool + " (PyTorch pipelining) has no " + f.schedule + " schedule; " + fallback + "\n";
    return {};
  }
  if (name != "GPipe" && name != "1F1B" && f.parts_per_rank < 2) {
    notes += "# note: " + tool + "'s " + std::string(name) + " needs two or more stages per rank and this layout runs one; " + fallback + "\n";
    return {};
  }
  return name;
}

std::string automodel_yaml(const Facts& f) {
  const ParallelConfig& c = f.c;
  std::string notes;
  const std::string_view pytorch = pytorch_schedule(f, "AutoModel", "pp_schedule left to its default", notes);
  if (c.fsdp == Fsdp::kNone) {
    notes += "# note: AutoModel shards data parallelism with FSDP2 (parameters too) where Megatron's distributed optimizer shards the "
             "optimizer state only\n";
  }
  if (f.model.is_moe()) notes += "# note: AutoModel has no expert tensor parallel size; the layout used etp=" + str(c.expert_tp()) + "\n";
  if (c.recompute == Recompute::kSelective) notes += "# note: AutoModel's activation_checkpointing is whole layers; selective recompute has no equivalent\n";
  const bool per_stage = c.pp > 1 && f.parts_per_rank > 1 && f.even && !c.account_for_embedding_in_pipeline_split;
  if (c.pp > 1 && !f.even) {
    // An uneven split is a layout string, or the embedding- and loss-aware one (no string: the account-for flags).
    const std::string split = f.layout.empty() ? "embedding- and loss-aware split" : "split (" + f.layout + ")";
    notes += "# note: AutoModel splits the layers evenly; this layout's " + split + " has no equivalent\n";
  }
  if (c.account_for_embedding_in_pipeline_split) notes += "# note: AutoModel does not count the embedding and loss as layers in the split\n";
  if (c.precision == Precision::kFp8) notes += "# note: FP8 is AutoModel's fp8: block, outside distributed:\n";
  if (c.precision == Precision::kNvfp4) notes += "# note: AutoModel has no NVFP4 training option; run it in BF16 or FP8\n";
  notes += graphs_note(c, "AutoModel");
  if (f.model.is_moe()) notes += moe_comm_note(f, "AutoModel");
  std::string out = header(f) + notes + "distributed:\n";
  out += std::string("  strategy: ") + (c.fsdp == Fsdp::kMegatron ? "megatron_fsdp" : "fsdp2") + "\n";
  out += "  tp_size: " + str(c.tp) + "\n  cp_size: " + str(c.cp) + "\n  pp_size: " + str(c.pp) + "\n";
  if (f.model.is_moe()) out += "  ep_size: " + str(c.ep) + "\n";
  out += "  dp_size: " + str(c.dp) + "\n";
  out += std::string("  sequence_parallel: ") + (c.sequence_parallel_enabled() ? "true" : "false") + "\n";
  out += std::string("  activation_checkpointing: ") + (c.recompute == Recompute::kFull ? "true" : "false") + "\n";
  if (c.pp > 1) {
    out += "  pipeline:\n";
    if (!pytorch.empty()) out += "    pp_schedule: " + std::string(pytorch) + "\n";
    out += "    pp_microbatch_size: " + str(c.mbs) + "\n";
    if (per_stage) out += "    layers_per_stage: " + str(f.layers_per_part) + "\n";
  }
  out += "step_scheduler:\n  global_batch_size: " + str(c.gbs) + "\n";
  if (c.pp == 1) out += "  local_batch_size: " + str(c.mbs) + "\n";
  return out;
}

std::string torchtitan(const Facts& f) {
  const ParallelConfig& c = f.c;
  std::string notes;
  const std::string_view pytorch = pytorch_schedule(f, "torchtitan", "its default is used", notes);
  notes += "# note: torchtitan shards data parallelism with FSDP2 (ZeRO-3); the simulated layout used " +
           std::string(c.fsdp == Fsdp::kMegatron ? "Megatron-FSDP" : "Megatron's distributed optimizer (ZeRO-1)") + "\n";
  // torchtitan weighs the embedding and the output as *_stage_less_layers layers each when it splits the
  // model (default 1 each), as Megatron's account_for_{embedding,loss}_in_pipeline_split do.
  const int first_less = c.account_for_embedding_in_pipeline_split ? 1 : 0, last_less = c.account_for_loss_in_pipeline_split ? 1 : 0;
  const bool aware = first_less + last_less > 0;
  const int slots = f.model.num_layers + first_less + last_less, parts = c.pp * f.parts_per_rank;
  const bool expressible = c.pp > 1 && (aware ? slots % parts == 0 : f.even);
  if (c.pp > 1 && !expressible) {
    notes += "# note: torchtitan splits layers evenly, counting the embedding and output as a layer each or not; this layout's split has no equivalent\n";
  }
  if (c.recompute == Recompute::kSelective) {
    notes += "# note: torchtitan's op-level selective checkpointing (selective_ac_option \"op\") recomputes every second matmul, not Megatron's core attention\n";
  }
  if (c.precision == Precision::kFp8) notes += "# note: FP8 is torchtitan's [float8] table (converters), outside [parallelism]\n";
  if (c.precision == Precision::kNvfp4) notes += "# note: NVFP4 is outside [parallelism] (torchtitan's quantize converters, MX on Blackwell)\n";
  notes += graphs_note(c, "torchtitan");
  if (f.model.is_moe()) notes += moe_comm_note(f, "torchtitan");
  std::string out = header(f) + notes + "[parallelism]\n";
  out += "data_parallel_replicate_degree = 1\n";
  out += "data_parallel_shard_degree = " + str(c.dp) + "\n";
  out += "tensor_parallel_degree = " + str(c.tp) + "\n";
  out += "context_parallel_degree = " + str(c.cp) + "\n";
  out += "pipeline_parallel_degree = " + str(c.pp) + "\n";
  if (c.pp > 1) {
    if (!pytorch.empty()) out += "pipeline_parallel_schedule = \"" + std::string(pytorch) + "\"\n";
    out += "pipeline_parallel_microbatch_size = " + str(c.mbs) + "\n";
    if (expressible) {
      out += "pipeline_parallel_first_stage_less_layers = " + str(first_less) + "\n";
      out += "pipeline_parallel_last_stage_less_layers = " + str(last_less) + "\n";
      if (f.parts_per_rank > 1) out += "pipeline_parallel_layers_per_stage = " + str(slots / parts) + "\n";
    }
  }
  if (f.model.is_moe()) {
    out += "expert_parallel_degree = " + str(c.ep) + "\n";
    out += "expert_tensor_parallel_degree = " + str(c.expert_tp()) + "\n";
  }
  out += "\n[training]\n";
  // Without PP torchtitan runs local_batch_size sequences at once and accumulates to the global batch:
  // the micro-batch. With PP it is the rank's share, split into pipeline_parallel_microbatch_size.
  out += "local_batch_size = " + str(c.pp == 1 ? c.mbs : c.gbs / c.dp) + "\n";
  out += "global_batch_size = " + str(c.gbs) + "\n";
  out += "seq_len = " + str(c.seq_length) + "\n";
  out += "\n[activation_checkpoint]\n";
  out += std::string("mode = \"") + (c.recompute == Recompute::kNone ? "none" : std::string(to_string(c.recompute))) + "\"\n";
  // Without an option torchtitan's "selective" checkpoints every second layer whole ("2").
  if (c.recompute == Recompute::kSelective) out += "selective_ac_option = \"op\"\n";
  return out;
}

}  // namespace

std::string_view pytorch_schedule_name(std::string_view schedule) {
  const std::string canonical = find_schedule(schedule).name;
  for (const auto& [ours, theirs] : kPytorchNames) {
    if (ours == canonical) return theirs;
  }
  return {};
}

Recipes make_recipes(const ModelSpec& model, const ParallelConfig& config, std::string_view schedule, const std::vector<int>& stage_layers) {
  Facts f{.model = model, .c = config, .schedule = find_schedule(schedule).name};
  f.even = std::adjacent_find(stage_layers.begin(), stage_layers.end(), std::not_equal_to<>()) == stage_layers.end();
  f.layers_per_part = stage_layers.empty() ? 0 : stage_layers.front();
  f.parts_per_rank = std::max<int>(1, static_cast<int>(stage_layers.size()) / std::max(1, config.pp));
  if (!f.even && !config.account_for_embedding_in_pipeline_split && !config.account_for_loss_in_pipeline_split) {
    f.layout = layout_from_decoder_counts(stage_layers, model.mtp_num_layers).to_megatron();
  }
  return {megatron_lm(f), megatron_bridge(f), automodel_yaml(f), torchtitan(f)};
}

}  // namespace pipelab::plan
