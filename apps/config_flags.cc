// Model / GPU / layout flags.
#include "config_flags.h"

#include "pipelab/base/error.h"
#include "pipelab/profiles/presets.h"

namespace pipelab::app {
namespace {

// A Megatron-named model override: `--num-layers 40` sets num_layers.
void add_model_override(CLI::App* cmd, ConfigFlags& f, const std::string& flag, const std::string& field,
                        const std::string& help) {
  cmd->add_option_function<std::string>(
      flag, [&f, field](const std::string& value) { f.model_overrides.emplace_back(field, value); }, help);
}

}  // namespace

void add_config_flags(CLI::App* cmd, ConfigFlags& c) {
  cmd->add_option("--model", c.model, "Model preset (pipelab list models) or a model JSON file")->capture_default_str();
  cmd->add_option("--gpu", c.gpu, "GPU preset (pipelab list gpus) or a GPU JSON file")->capture_default_str();
  cmd->add_option("--tp,--tensor-model-parallel-size", c.tp, "Tensor-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--pp,--pipeline-model-parallel-size", c.pp, "Pipeline-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--vp,--virtual-pipeline-model-parallel-size,--num-virtual-stages-per-pipeline-rank", c.vp,
                  "Chunks per rank for interleaved schedules (0 = the schedule's default)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--num-layers-per-virtual-pipeline-stage", c.layers_per_virtual_stage,
                  "Megatron's way to give vp: vp = (num_layers / pp) / this");
  cmd->add_option("--cp,--context-parallel-size", c.cp, "Context-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--ep,--expert-model-parallel-size", c.ep, "Expert-parallel size")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--dp,--data-parallel-size", c.dp, "Data-parallel size (0 = derive from --gpus)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--gpus,--world-size", c.gpus, "Total GPUs (default tp*pp*cp*4 when --dp is not given)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--mbs,--micro-batch-size", c.mbs, "Micro-batch size (sequences)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--gbs,--global-batch-size", c.gbs, "Global batch size (sequences); default mbs*dp*32")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--microbatches,--num-microbatches", c.microbatches, "Microbatches per iteration (instead of --gbs)")
      ->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--seq,--seq-length", c.seq, "Sequence length (default: the model's)")->check(CLI::Range(0, 1 << 30));
  cmd->add_option("--recompute,--recompute-granularity", c.recompute, "none | selective | full")
      ->capture_default_str()
      ->check(CLI::IsMember({"none", "selective", "full"}));
  cmd->add_option("--precision", c.precision, "bf16 | fp8 (peak used for MFU and GEMMs)")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "fp8"}));
  cmd->add_flag_callback("--sequence-parallel", [&c] { c.sequence_parallel = "on"; }, "Sequence parallel (default: on when tp > 1)");
  cmd->add_flag_callback("--no-sequence-parallel", [&c] { c.sequence_parallel = "off"; }, "No sequence parallel");
  cmd->add_flag("--no-distributed-optimizer", c.no_distributed_optimizer, "Replicate optimizer state over DP");
  cmd->add_option("--stage-layers", c.stage_layers, "Layers per model part, e.g. 2,3,3,3,2,3,3,3 (uneven first/last stages)");
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
  add_model_override(cmd, c, "--moe-ffn-hidden-size", "moe_ffn_hidden_size", "Override moe_ffn_hidden_size");
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
}

ResolvedConfig resolve_flags(const ConfigFlags& f) {
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
  }
  c.mbs = f.mbs;
  c.seq_length = f.seq;
  c.recompute = parse_recompute(f.recompute);
  c.precision = parse_precision(f.precision);
  if (f.sequence_parallel != "auto") c.sequence_parallel = f.sequence_parallel == "on";
  c.distributed_optimizer = !f.no_distributed_optimizer;
  if (!f.stage_layers.empty()) c.stage_layers = parse_int_list("--stage-layers", f.stage_layers);
  c.gbs = 1;  // placeholder so resolve() can run; set below once dp is known
  c = resolve(c, out.model);
  if (f.gbs > 0 && f.microbatches > 0) throw InputError("give --gbs or --microbatches, not both");
  c.gbs = f.gbs > 0 ? f.gbs : c.mbs * c.dp * (f.microbatches > 0 ? f.microbatches : 32);
  out.config = c;
  return out;
}

sim::SimulationRequest make_request(const ConfigFlags& f, const ResolvedConfig& r, const std::string& schedule) {
  sim::SimulationRequest req;
  req.model = r.model;
  req.gpu = r.gpu;
  req.config = r.config;
  req.schedule = schedule;
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
