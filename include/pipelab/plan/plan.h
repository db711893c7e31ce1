// Plan search (docs/planning.md): every parallel layout and schedule for a model on N GPUs of one
// type, pruned by the configuration rules (ParallelConfig's check(), the schedule generators' own
// constraints) and by a memory lower bound, the survivors simulated with the event simulator in
// parallel on all cores, ranked by tokens/s/GPU among those that fit, and the winner explained
// against the runner-up. Deterministic: the same request gives the same outcome on any core count
// (a time budget aside, which stops the search where it is).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::plan {

/// Progress of a running search, for a progress bar.
struct PlanProgress {
  std::int64_t done = 0;   // candidates decided (excluded or simulated)
  std::int64_t total = 0;  // candidates enumerated
  double elapsed_s = 0;
};

/// What to search. Each list is a dimension of the search space; an empty list takes the default.
struct PlanRequest {
  ModelSpec model;
  GpuSpec gpu;
  int gpus = 0;
  int gbs = 0;
  int seq_length = 0;  // 0 = the model's
  Precision precision = Precision::kBf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::kDelayed;  // with precision fp8 (Megatron's default); exported in the recipes
  std::vector<std::string> schedules;  // names or aliases; empty = every registered schedule
  std::int64_t memory_headroom_bytes = 0;  // kept free on every GPU besides the GPU's reserve
  bool allow_cross_node_tp = false;        // TP beyond gpus_per_node
  std::vector<int> mbs = {1, 2};
  std::vector<Recompute> recompute = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  std::vector<Fsdp> fsdp = {Fsdp::kNone, Fsdp::kMegatron};  // distributed optimizer, or Megatron-FSDP
  bool embedding_loss_aware = true;  // also try Megatron's account-for-embedding/loss split
  // MoE: NCCL all-to-all, as NVIDIA's recipes run (Megatron's own default, allgather, moves every
  // token to every EP rank); exported in the recipes.
  MoeDispatcher moe_dispatcher = MoeDispatcher::kAlltoall;
  std::string moe_flex_dispatcher_backend = "deepep";  // with the flex dispatcher: deepep | hybridep
  // Megatron's MoE communication overlaps, for every layout; exported in the recipes. The 1F1B EP
  // overlap runs in 1f1b at pp = 1 and interleaved-1f1b (Megatron refuses 1f1b at pp > 1 with it: those
  // layouts are excluded; other schedules run without it, DualPipe with its own F&B units).
  bool overlap_moe_expert_parallel_comm = false;
  bool delay_wgrad_compute = false;
  bool moe_shared_expert_overlap = false;
  // CUDA graphs every layout runs with (Megatron's --cuda-graph-impl, --cuda-graph-modules); exported in
  // the recipes. Layouts Megatron would refuse them for (a whole dropless MoE layer) are excluded.
  CudaGraphImpl cuda_graph_impl = CudaGraphImpl::kNone;
  std::vector<std::string> cuda_graph_modules;
  int max_cp = 16;
  int top_k = 10;
  double time_budget_s = 0;  // > 0: stop after this long and return the best found so far
  int threads = 0;           // 0 = every core
  /// Share each layout's per-stage costs with the layouts that only differ in schedule (same
  /// stages, configuration and memory savings). The ranking is the same either way; false is for
  /// the test that checks it.
  bool share_costs = true;
  std::function<void(const PlanProgress&)> on_progress;  // called from the calling thread only
};

/// One simulated layout.
struct PlanPoint {
  ParallelConfig config;             // as simulated: vp = the schedule's chunks per rank
  std::string schedule;              // canonical name
  std::vector<int> stage_layers;     // decoder layers per model part, in model order
  std::string pipeline_layout;       // the same split in Megatron's layout grammar
  std::int64_t makespan_ns = 0;
  // Timeline figures and pipeline_layout: filled for the top K only (the search ranks by throughput
  // and simulates the top again for these); zero (empty) in the other points.
  double bubble_ratio = 0;
  std::int64_t exposed_comm_ns = 0;  // P2P not hidden by compute, mean over ranks
  TimelineMetrics idle;              // the simulated metrics, for the idle split (ranks dropped)
  sim::InActionComm in_action_comm;  // mean over ranks
  std::int64_t optimizer_step_ns = 0;  // after the pipeline; in the throughput
  Throughput throughput;
  double model_flops = 0;
  std::int64_t tokens_per_iteration = 0;
  std::vector<std::int64_t> peak_memory_bytes;  // per pipeline rank
  std::int64_t memory_capacity_bytes = 0;       // usable memory less the headroom
  bool fits = false;
  std::int64_t index = 0;  // the candidate's position in the enumeration (ties keep this order)

  std::int64_t max_peak_memory_bytes() const;
};

/// Why the winner beats the runner-up, per iteration of one pipeline (means over its ranks).
struct Breakdown {
  std::int64_t makespan_ns = 0;
  double bubble_ratio = 0;
  double compute_ns = 0;      // GEMMs, attention, element-wise, launches (recompute included)
  double tp_comm_ns = 0;      // tensor-parallel collectives inside the passes
  double ep_comm_ns = 0;      // expert-parallel all-to-all
  double cp_comm_ns = 0;      // context-parallel exchange not hidden behind attention
  double fsdp_comm_ns = 0;    // FSDP weight gathers / gradient reduce-scatters not hidden
  double p2p_exposed_ns = 0;  // pipeline sends and receives a rank waits for (exposed PP communication)
  double dp_exposed_ns = 0;   // the gradient reduction left after the last compute and the forwards' waits for
                              // the parameter all-gather (exposed DP communication)
  double optimizer_step_ns = 0;  // after the pipeline; the iteration is makespan + this
  std::int64_t peak_memory_bytes = 0;
  double tokens_per_s_per_gpu = 0;
};

struct Explanation {
  Breakdown winner, runner_up;
  std::vector<std::string> lines;  // "bubble 3.1% vs 6.2% (-0.21 s)", ...
};

struct PlanOutcome {
  std::int64_t candidates = 0;  // layouts enumerated
  std::int64_t evaluated = 0;   // layouts simulated
  std::int64_t searched = 0;    // candidates decided before the search stopped (= candidates when complete)
  bool complete = true;         // false: the time budget ran out first
  double seconds = 0;
  /// Rule text (normalised: the layout's own numbers read N) -> layouts it excluded. A layout is
  /// counted once, under the first rule it breaks in the order of ParallelConfig's check().
  std::map<std::string, std::int64_t> excluded;
  std::vector<PlanPoint> points;  // every simulated layout, best tokens/s/GPU first, fitting or not
  std::vector<PlanPoint> top;     // the fitting ones, best first, at most top_k
  std::optional<Explanation> why;  // with two or more fitting layouts
};

/// Runs the search. Throws InputError naming the field for a request that cannot be searched at all
/// (gpus or gbs < 1, a headroom at or above the GPU's usable memory, an unknown schedule).
PlanOutcome run_plan(const PlanRequest& request);

/// The simulation request of one point (to re-simulate the winner for its timeline).
sim::SimulationRequest point_request(const PlanRequest& request, const PlanPoint& point);

/// Explains `winner` against `runner_up` from their cost models and simulations.
Explanation explain(const PlanRequest& request, const PlanPoint& winner, const PlanPoint& runner_up);

/// A rule message with the layout's own numbers replaced by N, so counts over many layouts group:
/// "tp=16 must divide num_query_groups=8" -> "tp=N must divide num_query_groups=8" (numbers after a
/// model or batch field stay, a formula's coefficient "2*pp" stays).
std::string normalize_rule(const std::string& message);

}  // namespace pipelab::plan
