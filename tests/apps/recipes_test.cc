// Every recipe `pipelab plan` exports parses back into the layout it came from: Megatron-LM flags
// and Megatron-Bridge overrides through pipelab's Megatron flag parser (--megatron-args), the
// AutoModel YAML through yaml-cpp (--automodel-yaml), the torchtitan TOML through toml++.
#include "pipelab/plan/recipes.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include <toml++/toml.h>

#include "config_flags.h"
#include "pasted_args.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::app {
namespace {

struct Layout {
  std::string model;
  ParallelConfig config;  // resolved, vp = chunks per rank as the plan simulated it
  std::string schedule;
  std::vector<int> stage_layers;
};

Layout layout(const std::string& model_name, ParallelConfig c, const std::string& schedule) {
  const ModelSpec model = model_preset(model_name);
  c.sequence_parallel = c.tp > 1;
  c = resolve(c, model);
  const ScheduleInfo& info = find_schedule(schedule);
  ParallelConfig split = c;
  const Schedule s = make_schedule(info.name, {c.pp, c.vp, 2 * c.pp, 0});
  split.vp = s.shape.stages_per_chain() / c.pp;
  return {model_name, c, info.name, layers_per_stage(split, model)};
}

struct Parsed {
  ResolvedConfig resolved;
  std::string schedule;
};

// The command line a `pipelab simulate` would read, through the same flag tables and pasting.
Parsed parse(std::vector<std::string> args) {
  CLI::App root;
  auto* cmd = root.add_subcommand("t");
  ConfigFlags flags;
  std::string schedule = "1f1b";
  add_config_flags(cmd, flags);
  cmd->add_option("--schedule", schedule);
  args.insert(args.begin(), "t");
  const ExpandedArgs expanded = expand_pasted_args(root, args);
  std::vector<std::string> reversed(expanded.args.rbegin(), expanded.args.rend());
  root.parse(reversed);
  return {resolve_flags(flags), find_schedule(schedule).name};
}

std::vector<std::string> base_args(const Layout& l) {
  return {"--model", l.model, "--gpus", std::to_string(l.config.world), "--seq", std::to_string(l.config.seq_length)};
}

// PyTorch pipelining runs the schedule of that name: single-stage ones always, multi-stage ones only
// with two or more stages per rank (plan/recipes.cc notes the rest).
bool pytorch_runs(const Layout& l) {
  const std::string_view name = plan::pytorch_schedule_name(l.schedule);
  const std::size_t parts = l.stage_layers.size() / static_cast<std::size_t>(l.config.pp);
  return !name.empty() && (name == "GPipe" || name == "1F1B" || parts >= 2);
}

bool megatron_runs(const Layout& l) { return l.schedule == "1f1b" || (l.schedule == "interleaved-1f1b" && l.config.vp > 1); }

void expect_core(const ParallelConfig& got, const ParallelConfig& want, const std::string& what) {
  EXPECT_EQ(got.tp, want.tp) << what;
  EXPECT_EQ(got.pp, want.pp) << what;
  EXPECT_EQ(got.cp, want.cp) << what;
  EXPECT_EQ(got.dp, want.dp) << what;
  EXPECT_EQ(got.mbs, want.mbs) << what;
  EXPECT_EQ(got.gbs, want.gbs) << what;
  EXPECT_EQ(got.seq_length, want.seq_length) << what;
  EXPECT_EQ(got.ep, want.ep) << what;
}

// Megatron-LM flags and Megatron-Bridge overrides describe the layout in full, schedule aside.
void expect_megatron(const Parsed& p, const Layout& l, const std::string& what) {
  const ParallelConfig& got = p.resolved.config;
  const ParallelConfig& want = l.config;
  expect_core(got, want, what);
  EXPECT_EQ(got.expert_tp(), want.expert_tp()) << what;
  EXPECT_EQ(got.recompute, want.recompute) << what;
  if (want.recompute == Recompute::kFull) {
    EXPECT_EQ(got.recompute_num_layers, want.recompute_num_layers) << what;
  }
  EXPECT_EQ(got.fsdp, want.fsdp) << what;
  EXPECT_EQ(got.precision, want.precision) << what;
  EXPECT_EQ(got.sequence_parallel_enabled(), want.sequence_parallel_enabled()) << what;
  EXPECT_EQ(got.delay_wgrad_compute, want.delay_wgrad_compute) << what;
  if (model_preset(l.model).is_moe()) {
    EXPECT_EQ(got.moe_token_dispatcher_type, want.moe_token_dispatcher_type) << what;
    EXPECT_EQ(got.moe_flex_dispatcher_backend, want.moe_flex_dispatcher_backend) << what;
    EXPECT_EQ(got.overlap_moe_expert_parallel_comm, want.overlap_moe_expert_parallel_comm) << what;
    EXPECT_EQ(got.moe_shared_expert_overlap, want.moe_shared_expert_overlap) << what;
  }
  if (megatron_runs(l)) {
    ParallelConfig split = got;
    split.vp = got.vp > 0 ? got.vp : std::max(1, vp_from_layout(got));  // Megatron derives vp from a layout string
    EXPECT_EQ(split.vp, want.vp) << what;
    EXPECT_EQ(layers_per_stage(split, model_preset(l.model)), l.stage_layers) << what;
  }
}

// "model.tensor_model_parallel_size=4" -> "--tensor-model-parallel-size 4"; true -> a switch.
std::string bridge_to_megatron(const std::string& overrides) {
  std::istringstream in(overrides);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const std::size_t eq = line.find('=');
    const std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    std::string field = key.substr(key.rfind('.') + 1);
    if (key == "mixed_precision") {
      out += value.find("fp8") != std::string::npos     ? " --fp8-format hybrid"
             : value.find("nvfp4") != std::string::npos ? " --fp4-format e2m1"
                                                        : " --bf16";
      continue;
    }
    for (char& c : field) c = c == '_' ? '-' : c;
    if (value == "true") {
      out += " --" + field;
    } else if (value != "false") {
      out += " --" + field + " " + value;
    }
  }
  return out;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::filesystem::path path = std::filesystem::path(PIPELAB_BINARY_DIR) / "tests" / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path) << text;
  return path.string();
}

void check_all(const Layout& l) {
  SCOPED_TRACE(l.schedule + " on " + l.model);
  const plan::Recipes r = plan::make_recipes(model_preset(l.model), l.config, l.schedule, l.stage_layers);

  std::vector<std::string> args = base_args(l);
  args.insert(args.end(), {"--megatron-args", r.megatron_lm});
  const Parsed lm = parse(args);
  expect_megatron(lm, l, "megatron-lm:\n" + r.megatron_lm);
  // Megatron-LM's own argument checks: vp comes from a layout string, never beside it; Megatron-FSDP
  // asserts the fsdp_dtensor checkpoint format.
  const bool has_layout = r.megatron_lm.find("--pipeline-model-parallel-layout") != std::string::npos;
  const bool has_vp = r.megatron_lm.find("--num-virtual-stages-per-pipeline-rank") != std::string::npos;
  EXPECT_FALSE(has_layout && has_vp) << r.megatron_lm;
  EXPECT_EQ(r.megatron_lm.find("--ckpt-format fsdp_dtensor") != std::string::npos, l.config.fsdp == Fsdp::kMegatron) << r.megatron_lm;

  args = base_args(l);
  args.insert(args.end(), {"--megatron-args", bridge_to_megatron(r.megatron_bridge)});
  expect_megatron(parse(args), l, "megatron-bridge:\n" + r.megatron_bridge);

  // AutoModel: its sizes, micro-batch, batch and schedule; FSDP2 stands for the distributed optimizer.
  args = base_args(l);
  args.insert(args.end(), {"--automodel-yaml", write_temp("recipe_" + l.schedule + ".yaml", r.automodel_yaml)});
  const Parsed am = parse(args);
  expect_core(am.resolved.config, l.config, "automodel:\n" + r.automodel_yaml);
  EXPECT_EQ(am.resolved.config.fsdp, l.config.fsdp == Fsdp::kNone ? Fsdp::kTorch : l.config.fsdp);
  if (l.config.pp > 1 && pytorch_runs(l)) {
    EXPECT_EQ(am.schedule, l.schedule) << r.automodel_yaml;
  }
  if (l.config.recompute != Recompute::kSelective) {
    EXPECT_EQ(am.resolved.config.recompute, l.config.recompute);
  }
  const int parts_per_rank = static_cast<int>(l.stage_layers.size()) / l.config.pp;
  if (r.automodel_yaml.find("layers_per_stage") != std::string::npos) {
    EXPECT_EQ(am.resolved.config.vp, parts_per_rank);
  }

  // torchtitan: toml++ reads it; the degrees multiply back to the GPUs.
  const toml::table t = toml::parse(r.torchtitan);
  const auto& par = *t["parallelism"].as_table();
  const int dp = par["data_parallel_replicate_degree"].value_or(1) * par["data_parallel_shard_degree"].value_or(1);
  EXPECT_EQ(par["tensor_parallel_degree"].value_or(0), l.config.tp);
  EXPECT_EQ(par["pipeline_parallel_degree"].value_or(0), l.config.pp);
  EXPECT_EQ(par["context_parallel_degree"].value_or(0), l.config.cp);
  EXPECT_EQ(dp, l.config.dp);
  EXPECT_EQ(par["expert_parallel_degree"].value_or(1), l.config.ep);
  if (model_preset(l.model).is_moe()) {
    EXPECT_EQ(par["expert_tensor_parallel_degree"].value_or(0), l.config.expert_tp());
  }
  EXPECT_EQ(t["training"]["global_batch_size"].value_or(0), l.config.gbs);
  EXPECT_EQ(t["training"]["seq_len"].value_or(0), l.config.seq_length);
  if (l.config.pp > 1) {
    EXPECT_EQ(par["pipeline_parallel_microbatch_size"].value_or(0), l.config.mbs);
    if (pytorch_runs(l)) {
      EXPECT_EQ(find_schedule(par["pipeline_parallel_schedule"].value_or(std::string())).name, l.schedule);
    }
    // torchtitan's stage count: ceil((layers + first_less + last_less) / layers_per_stage), each *_less
    // defaulting to 1 (torchtitan/distributed/pipeline_parallel.py); it must give pp x parts stages.
    if (const auto per_stage = par["pipeline_parallel_layers_per_stage"].value<int>()) {
      const int first_less = par["pipeline_parallel_first_stage_less_layers"].value_or(1);
      const int last_less = par["pipeline_parallel_last_stage_less_layers"].value_or(1);
      const int slots = model_preset(l.model).num_layers + first_less + last_less;
      EXPECT_EQ((slots + *per_stage - 1) / *per_stage, l.config.pp * parts_per_rank) << r.torchtitan;
      EXPECT_EQ(first_less, l.config.account_for_embedding_in_pipeline_split ? 1 : 0) << r.torchtitan;
    }
  }
  // The micro-batch: local_batch_size without PP (torchtitan accumulates to the global batch), the
  // pipeline's microbatch size with it.
  EXPECT_EQ(t["training"]["local_batch_size"].value_or(0), l.config.pp == 1 ? l.config.mbs : l.config.gbs / l.config.dp) << r.torchtitan;
  EXPECT_EQ(t["activation_checkpoint"]["mode"].value_or(std::string()),
            l.config.recompute == Recompute::kNone ? "none" : std::string(to_string(l.config.recompute)));
  EXPECT_EQ(t["activation_checkpoint"]["selective_ac_option"].value_or(std::string()), l.config.recompute == Recompute::kSelective ? "op" : "");
}

TEST(Recipes, InterleavedLlamaParsesBack) {
  check_all(layout("llama3-70b", {.tp = 4, .pp = 8, .vp = 5, .world = 64, .gbs = 128, .seq_length = 8192, .precision = Precision::kFp8},
                   "interleaved-1f1b"));
}

// NVFP4 leaves as Megatron's --fp4-* flags and Bridge's bf16_with_nvfp4_mixed, and parses back to nvfp4
// with its weights gathered in NVFP4; each FP8 recipe names Bridge's own mixed-precision recipe.
TEST(Recipes, Nvfp4AndFp8RecipesUseTheirFrameworksNames) {
  const Layout l = layout("llama3-70b", {.tp = 2, .pp = 4, .vp = 5, .world = 64, .gbs = 256, .seq_length = 8192, .precision = Precision::kNvfp4},
                          "interleaved-1f1b");
  check_all(l);
  plan::Recipes r = plan::make_recipes(model_preset(l.model), l.config, l.schedule, l.stage_layers);
  EXPECT_NE(r.megatron_lm.find("--fp4-format e2m1 \\\n--fp4-recipe nvfp4 \\\n--fp4-param-gather"), std::string::npos) << r.megatron_lm;
  EXPECT_NE(r.megatron_bridge.find("mixed_precision=bf16_with_nvfp4_mixed"), std::string::npos) << r.megatron_bridge;
  std::vector<std::string> args = base_args(l);
  args.insert(args.end(), {"--megatron-args", r.megatron_lm});
  EXPECT_EQ(parse(args).resolved.config.fp4_param_gather, std::optional<bool>(true));  // set by the flag, not defaulted
  // Layers kept in BF16 leave as Megatron's flags and come back.
  ParallelConfig kept = l.config;
  kept.first_last_layers_bf16 = true;
  kept.num_layers_at_end_in_bf16 = 4;
  r = plan::make_recipes(model_preset(l.model), kept, l.schedule, l.stage_layers);
  args = base_args(l);
  args.insert(args.end(), {"--megatron-args", r.megatron_lm});
  const ParallelConfig back = parse(args).resolved.config;
  EXPECT_TRUE(back.first_last_layers_bf16) << r.megatron_lm;
  EXPECT_EQ(back.num_layers_at_start_in_bf16, 1);
  EXPECT_EQ(back.num_layers_at_end_in_bf16, 4);
  EXPECT_NE(r.megatron_bridge.find("first_last_layers_bf16=True"), std::string::npos) << r.megatron_bridge;

  const std::pair<Fp8Recipe, const char*> bridge_names[] = {{Fp8Recipe::kDelayed, "bf16_with_fp8_delayed_scaling_mixed"},
                                                            {Fp8Recipe::kTensorwise, "bf16_with_fp8_current_scaling_mixed"},
                                                            {Fp8Recipe::kBlockwise, "bf16_with_fp8_subchannel_scaling_mixed"},
                                                            {Fp8Recipe::kMxfp8, "bf16_with_mxfp8_mixed"}};
  for (const auto& [recipe, name] : bridge_names) {
    ParallelConfig c = l.config;
    c.precision = Precision::kFp8;
    c.fp8_recipe = recipe;
    r = plan::make_recipes(model_preset(l.model), c, l.schedule, l.stage_layers);
    EXPECT_NE(r.megatron_bridge.find(std::string("mixed_precision=") + name), std::string::npos) << r.megatron_bridge;
    EXPECT_NE(r.megatron_lm.find("--fp8-recipe " + std::string(to_string(recipe)) + " \\\n--fp8-param-gather"), std::string::npos)
        << r.megatron_lm;
    // Where Bridge's recipe differs from the plan, a note says what to set on it.
    EXPECT_EQ(r.megatron_bridge.find("keeps the first and last layer in BF16") != std::string::npos, recipe == Fp8Recipe::kTensorwise)
        << r.megatron_bridge;
    EXPECT_EQ(r.megatron_bridge.find("sets fp8_param_gather=False") != std::string::npos, recipe == Fp8Recipe::kBlockwise)
        << r.megatron_bridge;
  }
}

// The fused cross-entropy leaves as flags each framework accepts: Megatron-LM's own kernel (it refuses
// Transformer Engine's, with a note when the plan simulated TE's), Bridge's te for either TE kernel.
TEST(Recipes, CrossEntropyExportsWhatEachFrameworkRuns) {
  const Layout l = layout("llama3-8b", {.tp = 1, .pp = 2, .world = 8, .gbs = 64, .seq_length = 8192}, "1f1b");
  check_all(l);
  for (const CrossEntropyFusionImpl impl : {CrossEntropyFusionImpl::kNative, CrossEntropyFusionImpl::kTe, CrossEntropyFusionImpl::kTeInplace}) {
    ParallelConfig c = l.config;
    c.cross_entropy_fusion_impl = impl;
    const plan::Recipes r = plan::make_recipes(model_preset(l.model), c, l.schedule, l.stage_layers);
    const bool native = impl == CrossEntropyFusionImpl::kNative;
    EXPECT_NE(r.megatron_lm.find("--cross-entropy-loss-fusion \\\n--cross-entropy-fusion-impl native"), std::string::npos) << r.megatron_lm;
    EXPECT_EQ(r.megatron_lm.find("Megatron-LM refuses --cross-entropy-fusion-impl te") != std::string::npos, !native) << r.megatron_lm;
    EXPECT_NE(r.megatron_bridge.find(std::string("model.cross_entropy_fusion_impl=") + (native ? "native" : "te")), std::string::npos)
        << r.megatron_bridge;
    EXPECT_EQ(r.megatron_bridge.find("TE before 2.18") != std::string::npos, impl == CrossEntropyFusionImpl::kTeInplace) << r.megatron_bridge;
    std::vector<std::string> args = base_args(l);
    args.insert(args.end(), {"--megatron-args", r.megatron_lm});
    const ParallelConfig back = parse(args).resolved.config;
    EXPECT_TRUE(back.cross_entropy_loss_fusion);
    EXPECT_EQ(back.cross_entropy_fusion_impl, CrossEntropyFusionImpl::kNative);
  }
}

TEST(Recipes, EmbeddingAndLossAwareSplitParsesBack) {
  ParallelConfig c{.tp = 8, .pp = 8, .world = 128, .gbs = 64, .seq_length = 8192};
  c.account_for_embedding_in_pipeline_split = c.account_for_loss_in_pipeline_split = true;
  c.recompute = Recompute::kFull;
  c.recompute_num_layers = 1;
  check_all(layout("llama3.1-405b", c, "1f1b"));
}

TEST(Recipes, UnevenSplitGoesThroughTheLayoutString) {
  check_all(layout("llama3-8b", {.tp = 1, .pp = 3, .world = 3, .gbs = 12, .seq_length = 4096}, "1f1b"));
  // Interleaved with an uneven split: the layout string alone (Megatron derives vp from it).
  check_all(layout("llama3.1-405b", {.tp = 8, .pp = 8, .vp = 4, .world = 512, .gbs = 512, .seq_length = 8192}, "interleaved-1f1b"));
}

// zb-h1 at one stage per rank: PyTorch's InterleavedZeroBubble refuses it; the recipes say so.
TEST(Recipes, MultiStagePytorchSchedulesNeedTwoStagesPerRank) {
  const Layout l = layout("llama3-70b", {.tp = 4, .pp = 4, .vp = 1, .world = 32, .gbs = 64, .seq_length = 8192}, "zb-h1");
  check_all(l);
  const plan::Recipes r = plan::make_recipes(model_preset(l.model), l.config, l.schedule, l.stage_layers);
  EXPECT_NE(r.torchtitan.find("# note: torchtitan's InterleavedZeroBubble needs two or more stages per rank"), std::string::npos) << r.torchtitan;
  EXPECT_EQ(r.torchtitan.find("pipeline_parallel_schedule"), std::string::npos) << r.torchtitan;
  EXPECT_EQ(r.automodel_yaml.find("pp_schedule:"), std::string::npos) << r.automodel_yaml;
}

TEST(Recipes, WithoutPipelineTheMicroBatchIsTorchtitansLocalBatch) {
  ParallelConfig c{.tp = 1, .pp = 1, .world = 8, .mbs = 2, .gbs = 128, .seq_length = 8192};
  c.fsdp = Fsdp::kMegatron;
  check_all(layout("llama3-8b", c, "1f1b"));
}

TEST(Recipes, MoeWithFsdpAndASchedulePyTorchHas) {
  ParallelConfig c{.tp = 2, .pp = 8, .vp = 2, .ep = 8, .etp = 1, .world = 256, .gbs = 2048, .seq_length = 4096, .precision = Precision::kFp8};
  c.fsdp = Fsdp::kMegatron;
  check_all(layout("qwen3-235b-a22b", c, "dualpipev"));
}

// Megatron's MoE communication options leave as its flags and Bridge's model fields and parse back;
// AutoModel and torchtitan, which move tokens their own way, say so.
TEST(Recipes, MoeCommunicationOptionsParseBack) {
  ParallelConfig c{.tp = 2, .pp = 8, .vp = 4, .ep = 64, .etp = 1, .world = 1024, .gbs = 8192, .seq_length = 4096, .precision = Precision::kFp8};
  c.moe_token_dispatcher_type = MoeDispatcher::kFlex;
  c.moe_flex_dispatcher_backend = "hybridep";
  c.overlap_moe_expert_parallel_comm = true;
  c.delay_wgrad_compute = true;
  const Layout l = layout("deepseek-v3", c, "interleaved-1f1b");
  check_all(l);
  const plan::Recipes r = plan::make_recipes(model_preset(l.model), l.config, l.schedule, l.stage_layers);
  EXPECT_NE(r.megatron_bridge.find("model.moe_flex_dispatcher_backend=hybridep"), std::string::npos) << r.megatron_bridge;
  const std::string note = "# note: the plan simulated Megatron's MoE communication: the flex dispatcher (hybridep) and the 1F1B EP all-to-all overlap";
  EXPECT_NE(r.automodel_yaml.find(note), std::string::npos) << r.automodel_yaml;
  EXPECT_NE(r.torchtitan.find(note), std::string::npos) << r.torchtitan;
  EXPECT_NE(r.megatron_bridge.find("comm_overlap.overlap_moe_expert_parallel_comm=true"), std::string::npos) << r.megatron_bridge;
  ParallelConfig shared{.tp = 1, .pp = 16, .ep = 8, .etp = 1, .world = 256, .gbs = 2048, .seq_length = 4096};
  shared.moe_shared_expert_overlap = true;
  check_all(layout("deepseek-v3", shared, "1f1b"));
  // A schedule Megatron does not have ran without the overlap: its recipes run Megatron's 1F1B without it
  // (pp > 1 without vp, where Megatron would refuse it) and say so.
  c.vp = 0;
  const Layout v = layout("deepseek-v3", c, "dualpipev");
  const plan::Recipes rv = plan::make_recipes(model_preset(v.model), v.config, v.schedule, v.stage_layers);
  for (const std::string* text : {&rv.megatron_lm, &rv.megatron_bridge}) {
    EXPECT_EQ(text->find("overlap-moe-expert-parallel-comm"), std::string::npos) << *text;
    EXPECT_EQ(text->find("overlap_moe_expert_parallel_comm=true"), std::string::npos) << *text;
    EXPECT_EQ(text->find("--delay-wgrad-compute"), std::string::npos) << *text;
    EXPECT_EQ(text->find("delay_wgrad_compute=true"), std::string::npos) << *text;
    EXPECT_NE(text->find("# note: the plan simulated dualpipev without the 1F1B EP overlap"), std::string::npos) << *text;
  }
  for (const std::string* text : {&rv.automodel_yaml, &rv.torchtitan}) {
    EXPECT_NE(text->find("MoE communication: the flex dispatcher (hybridep);"), std::string::npos) << *text;
  }
}

TEST(Recipes, SchedulesWithoutAnEquivalentSayWhere) {
  ParallelConfig c{.tp = 2, .pp = 4, .vp = 2, .world = 16, .mbs = 1, .gbs = 64, .seq_length = 4096};
  c.recompute = Recompute::kSelective;
  const Layout l = layout("llama3-8b", c, "dualpipe");
  check_all(l);
  const plan::Recipes r = plan::make_recipes(model_preset(l.model), l.config, l.schedule, l.stage_layers);
  EXPECT_NE(r.megatron_lm.find("# note: Megatron-LM has no dualpipe schedule"), std::string::npos) << r.megatron_lm;
  EXPECT_NE(r.automodel_yaml.find("# note: AutoModel (PyTorch pipelining) has no dualpipe"), std::string::npos) << r.automodel_yaml;
  EXPECT_NE(r.torchtitan.find("# note: torchtitan (PyTorch pipelining) has no dualpipe"), std::string::npos) << r.torchtitan;
  check_all(layout("llama3-8b", {.tp = 1, .pp = 4, .vp = 2, .world = 8, .gbs = 64, .seq_length = 4096}, "zb-v"));
}

}  // namespace
}  // namespace pipelab::app
