// `pipelab plan`: search every layout and schedule for a model on N GPUs (pipelab/plan/plan.h),
// print the ranked table, the exclusions, why the winner wins and its recipes; --json and
// --report write the plan result (pipelab/reports/plan_result.h).
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include "commands.h"
#include "config_flags.h"
#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/base/names.h"
#include "pipelab/plan/plan.h"
#include "pipelab/plan/recipes.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/reports/plan_result.h"
#include "sim_results.h"

namespace pipelab::app {
namespace {

struct PlanOptions {
  std::string model = "llama3-70b";
  std::string gpu = "h100-sxm";
  int gpus = 0, gbs = 0, seq = 0;
  std::string precision = "bf16";
  std::optional<std::string> fp8_recipe;
  std::string schedules = "all";
  double memory_headroom_gib = 0;
  int top = 10;
  std::optional<double> time_budget_s;  // not given: search everything
  std::string json_out, report_out;
  bool allow_cross_node_tp = false;
  std::string moe_dispatcher = "alltoall";
  std::optional<std::string> moe_flex_backend;
  bool overlap_moe_expert_parallel_comm = false, delay_wgrad_compute = false, moe_shared_expert_overlap = false;
  std::string cuda_graph_impl = "none";
  std::vector<std::string> cuda_graph_modules;
  int threads = 0;
  std::string mbs = "1,2";
  std::string recompute = "none,selective,full";
  bool no_progress = false;
};

plan::PlanRequest make_plan_request(const PlanOptions& o) {
  plan::PlanRequest r;
  r.model = load_model(o.model);
  r.gpu = load_gpu(o.gpu);
  r.gpus = o.gpus;
  r.gbs = o.gbs;
  r.seq_length = o.seq;
  r.precision = parse_precision(o.precision);
  if (o.fp8_recipe) {
    if (r.precision != Precision::kFp8) throw InputError("--fp8-recipe applies to --precision fp8, got --precision " + o.precision);
    r.fp8_recipe = parse_fp8_recipe(*o.fp8_recipe);
  }
  if (o.schedules != "all") {
    r.schedules = split_comma_list(o.schedules);
    if (r.schedules.empty()) throw InputError("--schedules is empty: give all or a comma-separated list");
  }
  if (!(o.memory_headroom_gib >= 0)) throw InputError("--memory-headroom=" + std::to_string(o.memory_headroom_gib) + ": must be >= 0 GiB");
  r.memory_headroom_bytes = static_cast<std::int64_t>(o.memory_headroom_gib * 1024.0 * 1024.0 * 1024.0);
  r.allow_cross_node_tp = o.allow_cross_node_tp;
  r.moe_dispatcher = parse_moe_dispatcher(o.moe_dispatcher);
  if (o.moe_flex_backend) {
    if (r.moe_dispatcher != MoeDispatcher::kFlex) {
      throw InputError("--moe-flex-dispatcher-backend applies to --moe-token-dispatcher-type flex, got " + o.moe_dispatcher);
    }
    r.moe_flex_dispatcher_backend = *o.moe_flex_backend;
  }
  r.overlap_moe_expert_parallel_comm = o.overlap_moe_expert_parallel_comm;
  r.delay_wgrad_compute = o.delay_wgrad_compute;
  r.moe_shared_expert_overlap = o.moe_shared_expert_overlap;
  r.cuda_graph_impl = parse_cuda_graph_impl(o.cuda_graph_impl);
  const std::vector<std::string>& names = cuda_graph_module_names();
  for (const std::string& words : o.cuda_graph_modules) {
    for (const std::string& m : split_comma_list(words)) {
      if (std::find(names.begin(), names.end(), m) == names.end()) {
        throw InputError("--cuda-graph-modules: '" + m + "' is not one of " + join(names));
      }
      r.cuda_graph_modules.push_back(m);
    }
  }
  if (o.top < 1) throw InputError("--top=" + std::to_string(o.top) + ": must be at least 1");
  r.top_k = o.top;
  if (o.time_budget_s && !(*o.time_budget_s > 0)) {
    char given[32];
    std::snprintf(given, sizeof given, "%g", *o.time_budget_s);
    throw InputError("--time-budget=" + std::string(given) + ": must be > 0 seconds (leave it out to search everything)");
  }
  r.time_budget_s = o.time_budget_s.value_or(0);
  r.threads = o.threads;
  r.mbs.clear();
  for (const int m : parse_int_list("--mbs", o.mbs)) {  // an empty item is an error, as a bad number is
    if (m < 1) throw InputError("--mbs=" + std::to_string(m) + ": must be at least 1");
    r.mbs.push_back(m);
  }
  if (r.mbs.empty()) throw InputError("--mbs is empty");
  r.recompute.clear();
  for (const std::string& m : split_comma_list(o.recompute)) r.recompute.push_back(parse_recompute(m));
  if (r.recompute.empty()) throw InputError("--recompute is empty");
  return r;
}

reports::Summary summary_of(const plan::PlanPoint& p) {
  return {.makespan_ns = p.makespan_ns,
          .bubble_ratio = p.bubble_ratio,
          .tflops_per_gpu = p.throughput.tflops_per_gpu,
          .mfu = p.throughput.mfu,
          .tokens_per_s_per_gpu = p.throughput.tokens_per_s_per_gpu,
          .peak_memory_bytes = p.peak_memory_bytes,
          .exposed_comm_ns = p.exposed_comm_ns,
          .memory_capacity_bytes = p.memory_capacity_bytes,
          .oom = !p.fits,
          .model_flops = p.model_flops,
          .tokens_per_iteration = p.tokens_per_iteration,
          .pipeline_bubble_ratio = p.idle.pipeline_bubble_ratio,
          .stage_imbalance = p.idle.stage_imbalance,
          .span_bubble_rate = p.idle.span_bubble_rate,
          .exposed_pp_comm_ns = p.idle.exposed_pp_comm_ns,
          .exposed_dp_comm_ns = p.idle.exposed_dp_comm_ns,
          .other_idle_ns = p.idle.other_idle_ns,
          .exposed_tp_comm_ns = std::llround(p.in_action_comm.tp_ns),
          .exposed_ep_comm_ns = std::llround(p.in_action_comm.ep_ns),
          .exposed_cp_comm_ns = std::llround(p.in_action_comm.cp_ns),
          .exposed_fsdp_comm_ns = std::llround(p.in_action_comm.fsdp_ns),
          .exposed_offload_ns = std::llround(p.in_action_comm.offload_ns),
          .host_wait_ns = std::llround(p.in_action_comm.host_ns),
          .optimizer_step_ns = p.optimizer_step_ns};
}

reports::PlanLayout layout_of(const plan::PlanPoint& p) {
  const ParallelConfig& c = p.config;
  return {.tp = c.tp, .pp = c.pp, .vp = c.vp, .cp = c.cp, .ep = c.ep, .etp = c.expert_tp(), .dp = c.dp, .mbs = c.mbs,
          .schedule = p.schedule, .recompute = std::string(to_string(c.recompute)), .stage_layers = p.stage_layers,
          .fsdp = std::string(to_string(c.fsdp)), .embedding_loss_aware = c.account_for_embedding_in_pipeline_split,
          .pipeline_layout = p.pipeline_layout};
}

reports::PlanResult plan_result(const PlanOptions& o, const plan::PlanRequest& r, const plan::PlanOutcome& out, int threads) {
  reports::PlanResult res;
  std::vector<std::string> schedules;
  for (const std::string& s : r.schedules) schedules.push_back(s);
  res.config = {{"model", to_json(r.model)},
                {"gpu", to_json(r.gpu)},
                {"gpus", r.gpus},
                {"gbs", r.gbs},
                {"seq_length", r.seq_length > 0 ? r.seq_length : r.model.seq_length},
                {"precision", std::string(to_string(r.precision))},
                {"fp8_recipe", std::string(to_string(r.fp8_recipe))},
                {"schedules", o.schedules == "all" ? nlohmann::json("all") : nlohmann::json(schedules)},
                {"memory_headroom_bytes", r.memory_headroom_bytes},
                {"allow_cross_node_tp", r.allow_cross_node_tp},
                {"moe_token_dispatcher_type", std::string(to_string(r.moe_dispatcher))},
                {"moe_flex_dispatcher_backend", r.moe_flex_dispatcher_backend},
                {"overlap_moe_expert_parallel_comm", r.overlap_moe_expert_parallel_comm},
                {"delay_wgrad_compute", r.delay_wgrad_compute},
                {"moe_shared_expert_overlap", r.moe_shared_expert_overlap},
                {"cuda_graph_impl", std::string(to_string(r.cuda_graph_impl))},
                {"cuda_graph_modules", r.cuda_graph_modules},
                {"mbs", r.mbs},
                {"top", r.top_k},
                {"time_budget_s", r.time_budget_s}};
  std::vector<std::string> recompute;
  for (Recompute c : r.recompute) recompute.emplace_back(to_string(c));
  res.config["recompute"] = recompute;
  res.evaluated = out.evaluated;
  res.excluded = out.excluded;
  for (const plan::PlanPoint& p : out.top) res.top.push_back({layout_of(p), summary_of(p)});
  if (!out.top.empty()) {
    const plan::PlanPoint& w = out.top.front();
    const plan::Recipes recipes = plan::make_recipes(r.model, w.config, w.schedule, w.stage_layers);
    res.recipes = {recipes.megatron_lm, recipes.megatron_bridge, recipes.automodel_yaml, recipes.torchtitan};
  }
  res.search = {.candidates = out.candidates, .searched = out.searched, .complete = out.complete, .seconds = out.seconds, .threads = threads};
  if (out.why) res.why = out.why->lines;
  for (const plan::PlanPoint& p : out.points) {
    res.points.push_back({.schedule = p.schedule, .tokens_per_s_per_gpu = p.throughput.tokens_per_s_per_gpu,
                          .peak_memory_bytes = p.max_peak_memory_bytes(), .fits = p.fits});
  }
  return res;
}

// "[#########.........]  45%  12,345 of 40,320 layouts  ETA 3 s" on stderr, redrawn in place.
void draw_progress(const plan::PlanProgress& p) {
  const double fraction = p.total > 0 ? static_cast<double>(p.done) / static_cast<double>(p.total) : 0;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(fraction * kWidth);
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar += std::string(static_cast<std::size_t>(kWidth - filled), '.');
  char eta[32] = "";
  if (p.done > 0 && fraction < 1) std::snprintf(eta, sizeof eta, "  ETA %.0f s", p.elapsed_s * (1 - fraction) / fraction);
  std::fprintf(stderr, "\r[%s] %3.0f%%  %lld of %lld layouts%s   ", bar.c_str(), fraction * 100, static_cast<long long>(p.done),
               static_cast<long long>(p.total), eta);
  std::fflush(stderr);
}

}  // namespace

void add_plan_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("plan", "Search every layout and schedule for a model on N GPUs; rank, explain, export recipes");
  auto o = std::make_shared<PlanOptions>();
  cmd->add_option("--model", o->model, "Model preset (pipelab list models) or a model JSON file")->capture_default_str();
  cmd->add_option("--gpu", o->gpu, "GPU preset (pipelab list gpus) or a GPU JSON file")->capture_default_str();
  cmd->add_option("--gpus,--world-size", o->gpus, "Total GPUs")->required();
  cmd->add_option("--gbs,--global-batch-size", o->gbs, "Global batch size (sequences)")->required();
  cmd->add_option("--seq,--seq-length", o->seq, "Sequence length (default: the model's)")->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--precision", o->precision, "bf16 | fp8 | nvfp4")->capture_default_str()->check(CLI::IsMember({"bf16", "fp8", "nvfp4"}));
  cmd->add_option("--fp8-recipe", o->fp8_recipe, "With --precision fp8: delayed (default) | tensorwise | blockwise | mxfp8 (Blackwell)")
      ->check(CLI::IsMember({"delayed", "tensorwise", "blockwise", "mxfp8"}));
  cmd->add_option("--schedules", o->schedules, "all, or a comma-separated list of schedules")->capture_default_str();
  cmd->add_option("--memory-headroom", o->memory_headroom_gib, "GiB kept free on every GPU besides its reserve")->capture_default_str();
  cmd->add_option("--top", o->top, "Layouts in the ranked table")->capture_default_str();
  cmd->add_option("--time-budget", o->time_budget_s, "Seconds; stop then and report the best found so far (default: search everything)");
  cmd->add_option("--json", o->json_out, "Write the plan result JSON here (docs/formats.md)");
  cmd->add_option("--report", o->report_out, "Write an HTML report here");
  cmd->add_flag("--allow-cross-node-tp", o->allow_cross_node_tp, "Let TP span more GPUs than one NVLink domain");
  cmd->add_option("--moe-token-dispatcher-type", o->moe_dispatcher, "MoE dispatcher every layout uses: allgather | alltoall | flex")
      ->capture_default_str();
  cmd->add_option("--moe-flex-dispatcher-backend", o->moe_flex_backend, "With the flex dispatcher: deepep (default) | hybridep")
      ->check(CLI::IsMember({"deepep", "hybridep"}));
  cmd->add_flag("--overlap-moe-expert-parallel-comm", o->overlap_moe_expert_parallel_comm,
                "Megatron's 1F1B EP all-to-all overlap in every layout (interleaved-1f1b, or 1f1b at pp=1; needs ep > 1)");
  cmd->add_flag("--delay-wgrad-compute", o->delay_wgrad_compute, "With --overlap-moe-expert-parallel-comm (Megatron needs it): weight gradients after the combine");
  cmd->add_flag("--moe-shared-expert-overlap", o->moe_shared_expert_overlap, "Shared experts on their own stream beside the dispatch and combine");
  cmd->add_option("--cuda-graph-impl", o->cuda_graph_impl, "CUDA graphs every layout runs with: none | local | transformer_engine | full_iteration")
      ->capture_default_str();
  cmd->add_option("--cuda-graph-modules,--cuda-graph-scope", o->cuda_graph_modules, "The regions graphed: attn mlp moe moe_router moe_preprocess (none: whole layers)")
      ->expected(1, -1);
  cmd->add_option("--threads", o->threads, "Threads (default: every core)")->check(CLI::Range(0, 1024));
  cmd->add_option("--mbs", o->mbs, "Micro-batch sizes to try, comma-separated")->capture_default_str();
  cmd->add_option("--recompute", o->recompute, "Recompute choices to try, comma-separated (tried cheapest first: none, selective, full)")->capture_default_str();
  cmd->add_flag("--no-progress", o->no_progress, "No progress bar (it shows only on a terminal)");
  cmd->callback([o, &exit_code] {
    plan::PlanRequest request = make_plan_request(*o);
    const bool tty = !o->no_progress && isatty(STDERR_FILENO);
    if (tty) request.on_progress = draw_progress;
    const plan::PlanOutcome outcome = plan::run_plan(request);
    if (tty) std::fprintf(stderr, "\r%80s\r", "");
    const int threads = request.threads > 0 ? request.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const reports::PlanResult result = plan_result(*o, request, outcome, threads);
    std::cout << reports::render_plan_text(result);
    if (!o->json_out.empty()) reports::write_plan_file(o->json_out, result);
    if (!o->report_out.empty()) {
      std::optional<reports::ReportInput> winner;
      if (!outcome.top.empty()) {
        const sim::SimulationRequest q = plan::point_request(request, outcome.top.front());
        const sim::SimulationOutcome sim = sim::simulate_config(q);
        winner = simulate_result(config_json(q.model, q.gpu, sim.config, "analytic"), sim, "");
      }
      write_text_file(o->report_out, reports::render_plan_html(result, winner ? &*winner : nullptr), "report");
      std::cout << "# report: " << o->report_out << "\n";
    }
    exit_code = outcome.top.empty() ? 1 : 0;
  });
}

}  // namespace pipelab::app
