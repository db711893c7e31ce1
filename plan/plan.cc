// Plan search; see plan.h and docs/planning.md. Three steps over compact candidates:
//   1. enumerate the search space (TP within the NVLink domain, PP, CP, EP, ETP, DP or FSDP,
//      schedule and its chunks per rank, split, micro-batch size, recompute);
//   2. in parallel, exclude by the first rule broken (ParallelConfig's check(), then the schedule
//      generator's constraints) and by a memory lower bound;
//   3. simulate the survivors in parallel, one memory-saving step at a time (recompute choices in
//      order, each without then with FSDP): a layout that fits with fewer savings is not simulated
//      with more (recompute only adds work; FSDP adds gathers).
// Lowered schedules are built once per (schedule, pp, vp, microbatches, gradient reduction) and
// shared by every layout that runs them.
#include "pipelab/plan/plan.h"

#include <algorithm>
#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <tuple>

#include "parallel_for.h"
#include "pipelab/base/error.h"
#include "pipelab/profiles/pipeline_layout.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/sim/analytic_cost.h"
#include "pipelab/sim/memory_model.h"

namespace pipelab::plan {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
using Clock = std::chrono::steady_clock;

// Warnings of check() that the plan treats as exclusions: legal, but never the best layout.
constexpr std::string_view kExcludingWarnings[] = {"cp_short_chunks", "microbatches_fill_pipeline"};

std::string gib(std::int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / kGiB);
  return text;
}

std::vector<int> divisors(int n) {
  std::vector<int> out;
  for (int d = 1; d <= n; ++d) {
    if (n % d == 0) out.push_back(d);
  }
  return out;
}

// One point of the search space, compact (a ParallelConfig is built from it when needed).
struct Candidate {
  std::int16_t tp = 1, pp = 1, vp = 1, cp = 1, ep = 1, etp = 0;
  std::int32_t dp = 1;
  std::int16_t mbs = 1;
  std::uint8_t schedule = 0;   // index into Space::schedules
  std::uint8_t round = 0;      // memory-saving step: recompute index * fsdp choices + fsdp index
  std::uint8_t fsdp = 0;       // index into request.fsdp
  bool aware = false;          // account for embedding and loss in the split
  std::int32_t family = 0;     // the same layout with other memory savings (recompute, FSDP) shares it
};

enum class Status : std::uint8_t { Pending, Excluded, Survivor, Simulated };

// What layouts share. A candidate's configuration is a function of its fields, so candidates that
// differ only in schedule (1F1B, GPipe, ZB-H1, ZB-H2 on the same stages) have the same rules, memory
// bound, throughput bound and per-stage costs: the key is those fields and the shape's stages, and a
// value is computed once and read by every thread. Candidates of one (tp, pp, cp, ep, etp) are
// enumerated together, so a bounded cache (cleared when full) keeps the hits and little memory.
// Disabled (PlanRequest::share_costs = false), every value is computed afresh.
template <typename Value>
class LayoutCache {
 public:
  explicit LayoutCache(bool enabled, std::size_t max_entries) : enabled_(enabled), max_entries_(max_entries) {}

  // `resolved`: a value of the simulation's (resolved) configuration, kept apart from the screen's.
  template <typename Compute>
  Value get(const Candidate& c, bool resolved, const PipelineShape& shape, Compute compute) {
    if (!enabled_) return compute();
    const Key key{c.tp, c.pp, c.cp, c.ep, c.etp, c.dp, c.mbs, c.round, c.fsdp, c.aware, resolved,
                  shape.ranks, shape.stages, shape.chains, static_cast<int>(shape.placement)};
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = values_.find(key); it != values_.end()) return it->second;
    }
    Value value = compute();  // outside the lock; two threads may compute the same one, identically
    const std::lock_guard<std::mutex> lock(mutex_);
    if (values_.size() >= max_entries_) values_.clear();
    return values_.emplace(key, std::move(value)).first->second;
  }

 private:
  using Key = std::tuple<int, int, int, int, int, int, int, int, int, bool, bool, int, int, int, int>;
  bool enabled_;
  std::size_t max_entries_;
  std::mutex mutex_;
  std::map<Key, Value> values_;
};

// The screen's judgement of a candidate: the rule that excludes it, or (rule empty) its tokens/s/GPU bound.
struct Verdict {
  std::string rule;
  double bound = 0;
};

// A shared AnalyticCost behind the CostModel interface simulate_config takes (make_cost).
class SharedCost final : public sim::CostModel {
 public:
  explicit SharedCost(std::shared_ptr<const sim::AnalyticCost> cost) : cost_(std::move(cost)) {}
  std::int64_t duration_ns(int rank, const Action& a) const override { return cost_->duration_ns(rank, a); }
  std::int64_t p2p_ns(std::int64_t bytes, int src, int dst) const override { return cost_->p2p_ns(bytes, src, dst); }
  std::int64_t boundary_bytes(int stage) const override { return cost_->boundary_bytes(stage); }
  double flops(const Action& a) const override { return cost_->flops(a); }
  std::int64_t reduce_grad_bytes(int stage) const override { return cost_->reduce_grad_bytes(stage); }
  std::int64_t reduce_grad_ns(int rank, int stage) const override { return cost_->reduce_grad_ns(rank, stage); }
  std::int64_t reduce_grad_tail_ns(int rank, int stage) const override { return cost_->reduce_grad_tail_ns(rank, stage); }
  std::int64_t reduce_grad_tail_bytes(int stage) const override { return cost_->reduce_grad_tail_bytes(stage); }
  double dp_collective_compute_loss() const override { return cost_->dp_collective_compute_loss(); }
  sim::InActionComm in_action_comm(int rank, const Action& a) const override { return cost_->in_action_comm(rank, a); }
  std::int64_t optimizer_step_ns(double params) const override { return cost_->optimizer_step_ns(params); }
  sim::ParamGather param_gather(int rank, int stage) const override { return cost_->param_gather(rank, stage); }
  std::vector<Phase> phases(int rank, const Action& a) const override { return cost_->phases(rank, a); }

 private:
  std::shared_ptr<const sim::AnalyticCost> cost_;
};

// Chunks per rank worth trying for an interleaved schedule at `pp`: 2 and 4, and those that split
// the layers evenly (with or without the embedding and loss counted as layers); never more stages
// than layers.
std::vector<int> interleaved_vps(int pp, int layers) {
  std::vector<int> out;
  for (int v = 2; v * pp <= layers; ++v) {
    if (v == 2 || v == 4 || layers % (pp * v) == 0 || (layers + 2) % (pp * v) == 0) out.push_back(v);
  }
  return out;
}

class Search {
 public:
  explicit Search(const PlanRequest& r) : r_(r), start_(Clock::now()), verdicts_(r.share_costs, 1 << 16), costs_(r.share_costs, 4096) {
    if (r.gpus < 1) throw InputError("--gpus=" + std::to_string(r.gpus) + ": must be at least 1");
    if (r.gbs < 1) throw InputError("--gbs=" + std::to_string(r.gbs) + ": must be at least 1");
    if (r.seq_length < 0) throw InputError("--seq=" + std::to_string(r.seq_length) + ": must be positive");
    if (r.time_budget_s < 0) throw InputError("--time-budget: must be positive");
    if (r.memory_headroom_bytes < 0) throw InputError("--memory-headroom: must be >= 0");
    if (r.memory_headroom_bytes >= r.gpu.usable_memory_bytes()) {
      throw InputError("--memory-headroom=" + gib(r.memory_headroom_bytes) + ": must be below the " + gib(r.gpu.usable_memory_bytes()) +
                       " usable memory of '" + r.gpu.name + "' (HBM less its reserve); nothing would fit");
    }
    if (r.mbs.empty() || r.recompute.empty() || r.fsdp.empty()) throw InputError("plan: empty micro-batch, recompute or fsdp list");
    ParallelConfig precision;  // a precision the GPU cannot run is bad input, not a search where nothing fits
    precision.precision = r.precision;
    precision.fp8_recipe = r.fp8_recipe;
    if (const std::optional<ConfigIssue> unsupported = precision_unsupported(precision, r.gpu)) throw InputError(unsupported->message);
    // MoE communication asked of a model that has none is bad input, not a search where every layout breaks a rule.
    const auto moe_only = [&](bool asked, const char* flag, bool applies, const char* what) {
      if (asked && !applies) throw InputError(std::string(flag) + " needs " + what + "; model '" + r.model.name + "' has none");
    };
    moe_only(r.overlap_moe_expert_parallel_comm, "--overlap-moe-expert-parallel-comm", r.model.is_moe(), "routed experts");
    moe_only(r.moe_shared_expert_overlap, "--moe-shared-expert-overlap", r.model.has_shared_experts(), "shared experts");
    // Conflicts between them break Megatron's rules in every layout: bad input too.
    const auto conflict = [](bool broken, const std::string& message) {
      if (broken) throw InputError(message + " (Megatron's rule, in every layout)");
    };
    const bool allgather = r.moe_dispatcher == MoeDispatcher::kAllgather;
    conflict(r.delay_wgrad_compute && !r.overlap_moe_expert_parallel_comm, "--delay-wgrad-compute needs --overlap-moe-expert-parallel-comm");
    conflict(r.overlap_moe_expert_parallel_comm && r.moe_shared_expert_overlap,
             "--moe-shared-expert-overlap excludes --overlap-moe-expert-parallel-comm");
    conflict((r.overlap_moe_expert_parallel_comm || r.moe_shared_expert_overlap) && allgather,
             std::string(r.overlap_moe_expert_parallel_comm ? "--overlap-moe-expert-parallel-comm" : "--moe-shared-expert-overlap") +
                 " needs --moe-token-dispatcher-type alltoall or flex, got allgather");
    gpu_ = r.gpu;
    gpu_.reserved_memory_bytes += r.memory_headroom_bytes;
    std::vector<std::string> names = r.schedules;
    if (names.empty()) {
      for (const ScheduleInfo& info : schedule_registry()) names.push_back(info.name);
    }
    for (const std::string& name : names) {
      const ScheduleInfo* info = &find_schedule(name);  // InputError for an unknown name
      if (std::find(schedules_.begin(), schedules_.end(), info) == schedules_.end()) schedules_.push_back(info);
    }
    threads_ = detail::thread_count(r.threads);
    // The memory-saving ladder runs cheapest first whatever order --recompute lists them in: none adds no
    // work, selective re-runs the attention core, full the whole layer (a layout that fits with a
    // cheaper choice is never tried with a dearer one).
    recompute_ = r.recompute;
    std::sort(recompute_.begin(), recompute_.end());  // Recompute's order: none, selective, full
    recompute_.erase(std::unique(recompute_.begin(), recompute_.end()), recompute_.end());
  }

  PlanOutcome run() {
    enumerate();
    status_.assign(candidates_.size(), Status::Pending);
    rule_.assign(candidates_.size(), 0);
    points_.resize(candidates_.size());
    bound_.assign(candidates_.size(), 0.0);
    build_shapes();
    screen();
    std::vector<char> family_fits(static_cast<std::size_t>(families_), 0);
    const std::size_t rounds = recompute_.size() * r_.fsdp.size();
    for (std::size_t round = 0; round < rounds && !out_of_time(); ++round) simulate_round(round, family_fits);
    return finish();
  }

 private:
  // ---- 1. enumeration ---------------------------------------------------------------------
  void enumerate() {
    const ModelSpec& m = r_.model;
    const int n = r_.gpus;
    std::vector<int> eps = {1};
    if (m.is_moe()) eps = divisors(m.num_experts);
    for (int tp : divisors(n)) {
      if (tp > gpu_.gpus_per_node && !r_.allow_cross_node_tp) continue;
      for (int pp : divisors(n / tp)) {
        if (pp > m.num_layers) continue;
        for (int cp : divisors(n / tp / pp)) {
          if (cp > r_.max_cp) continue;
          const int dp = n / tp / pp / cp;
          std::vector<int> etps = {0};
          if (m.is_moe()) etps = tp > 1 ? std::vector<int>{1, tp} : std::vector<int>{1};
          for (int ep : eps) {
            for (int etp : etps) {
              add_schedules(Candidate{.tp = static_cast<std::int16_t>(tp), .pp = static_cast<std::int16_t>(pp),
                                      .cp = static_cast<std::int16_t>(cp), .ep = static_cast<std::int16_t>(ep),
                                      .etp = static_cast<std::int16_t>(etp), .dp = dp});
            }
          }
        }
      }
    }
  }

  void add_schedules(Candidate c) {
    // With one pipeline rank Megatron runs each microbatch's forward and then its backward
    // (forward_backward_no_pipelining): 1F1B's order, simulated once. Failing 1f1b, another listed
    // schedule that runs one stage per rank; GPipe last, as it holds every microbatch's activations.
    if (c.pp == 1) {
      std::optional<std::size_t> pick;
      auto rank = [&](std::size_t s) { return schedules_[s]->name == "1f1b" ? 0 : schedules_[s]->name == "gpipe" ? 2 : 1; };
      for (std::size_t s = 0; s < schedules_.size(); ++s) {
        if (schedules_[s]->fixed_vp && schedules_[s]->default_vp != 1) continue;
        if (!pick || rank(s) < rank(*pick)) pick = s;
      }
      if (pick) {
        c.schedule = static_cast<std::uint8_t>(*pick);
        c.vp = 1;
        return add_splits(c);
      }
    }
    for (std::size_t s = 0; s < schedules_.size(); ++s) {
      const ScheduleInfo& info = *schedules_[s];
      c.schedule = static_cast<std::uint8_t>(s);
      if (info.fixed_vp || info.default_vp == 1) {  // 1f1b, zb-h1 (as ZB1P), zb-v, dualpipe, ...
        c.vp = static_cast<std::int16_t>(info.default_vp);
        add_splits(c);
      } else {
        for (int v : interleaved_vps(c.pp, r_.model.num_layers)) {
          c.vp = static_cast<std::int16_t>(v);
          add_splits(c);
        }
      }
    }
  }

  void add_splits(Candidate c) {
    for (bool aware : {false, true}) {
      if (aware && (c.pp == 1 || !r_.embedding_loss_aware)) continue;
      c.aware = aware;
      for (int mbs : r_.mbs) {
        c.mbs = static_cast<std::int16_t>(mbs);
        c.family = families_++;
        // The memory savings, cheapest first: recompute choices (sorted so), each without and
        // then with FSDP (nothing to shard without data or context parallelism).
        for (std::size_t k = 0; k < recompute_.size(); ++k) {
          for (std::size_t f = 0; f < r_.fsdp.size(); ++f) {
            if (r_.fsdp[f] != Fsdp::kNone && c.dp * c.cp == 1) continue;
            c.round = static_cast<std::uint8_t>(k * r_.fsdp.size() + f);
            c.fsdp = static_cast<std::uint8_t>(f);
            candidates_.push_back(c);
          }
        }
      }
    }
  }

  ParallelConfig config_of(const Candidate& c) const {
    ParallelConfig p;
    p.tp = c.tp;
    p.pp = c.pp;
    p.vp = c.vp;
    p.cp = c.cp;
    p.ep = c.ep;
    p.etp = c.etp;
    p.dp = c.dp;
    p.world = r_.gpus;
    p.mbs = c.mbs;
    p.gbs = r_.gbs;
    p.seq_length = r_.seq_length > 0 ? r_.seq_length : r_.model.seq_length;
    p.sequence_parallel = c.tp > 1;
    p.precision = r_.precision;
    p.fp8_recipe = r_.fp8_recipe;
    p.recompute = recompute_[c.round / r_.fsdp.size()];
    if (p.recompute == Recompute::kFull) p.recompute_num_layers = 1;  // Megatron's usual: every layer, uniform
    p.fsdp = r_.fsdp[c.fsdp];
    p.account_for_embedding_in_pipeline_split = c.aware;
    p.account_for_loss_in_pipeline_split = c.aware;
    p.moe_token_dispatcher_type = r_.moe_dispatcher;
    p.moe_flex_dispatcher_backend = r_.moe_flex_dispatcher_backend;
    p.overlap_moe_expert_parallel_comm = r_.overlap_moe_expert_parallel_comm;
    p.delay_wgrad_compute = r_.delay_wgrad_compute;
    p.moe_shared_expert_overlap = r_.moe_shared_expert_overlap;
    p.cuda_graph_impl = r_.cuda_graph_impl;
    p.cuda_graph_modules = r_.cuda_graph_modules;
    return p;
  }

  // ---- 2. rules and the memory bound ----------------------------------------------------------
  // The shape of each (schedule, pp, vp): how many model parts a rank holds (DualPipe: one, held
  // twice) and where stages sit. Built from a small schedule (2*pp microbatches satisfies every
  // generator's microbatch rule), so an error here is a rule on pp or vp alone.
  struct ShapeEntry {
    PipelineShape shape;
    std::string error;
  };
  using ShapeKey = std::tuple<int, int, int>;

  void build_shapes() {
    std::set<ShapeKey> keys;
    for (const Candidate& c : candidates_) keys.insert({c.schedule, c.pp, c.vp});
    std::vector<ShapeKey> list(keys.begin(), keys.end());
    std::vector<ShapeEntry> entries(list.size());
    detail::parallel_for(static_cast<std::int64_t>(list.size()), threads_, 1, [&](std::int64_t i) {
      const auto [s, pp, vp] = list[static_cast<std::size_t>(i)];
      try {
        entries[static_cast<std::size_t>(i)].shape = make_schedule(schedules_[static_cast<std::size_t>(s)]->name, {pp, vp, 2 * pp, 0}).shape;
      } catch (const InputError& e) {
        entries[static_cast<std::size_t>(i)].error = e.what();
      }
    });
    for (std::size_t i = 0; i < list.size(); ++i) shapes_.emplace(list[i], std::move(entries[i]));
  }

  const ShapeEntry& shape_of(const Candidate& c) const { return shapes_.at({c.schedule, c.pp, c.vp}); }

  // Rules are interned: many layouts share one text.
  std::uint32_t rule_id(const std::string& rule) {
    const std::lock_guard<std::mutex> lock(rules_mutex_);
    const auto [it, added] = rule_ids_.emplace(rule, static_cast<std::uint32_t>(rules_.size() + 1));
    if (added) rules_.push_back(rule);
    return it->second;
  }

  void exclude(std::size_t i, const std::string& rule) {
    status_[i] = Status::Excluded;
    rule_[i] = rule_id(rule);
    ++done_;
  }

  void screen() {
    const std::string bound_rule = "memory lower bound (weights, gradients, optimizer state, one microbatch's activations) exceeds the usable " +
                                   gib(gpu_.usable_memory_bytes());
    detail::parallel_for(
        static_cast<std::int64_t>(candidates_.size()), threads_, 64,
        [&](std::int64_t index) {
          const auto i = static_cast<std::size_t>(index);
          const Candidate& c = candidates_[i];
          const ShapeEntry& shape = shape_of(c);
          // Megatron refuses its 1F1B EP overlap in 1f1b at pp > 1 (check() only warns: simulate runs such a
          // layout without the overlap); asked for, the plan leaves those layouts out. Before the shared
          // verdict: the rule depends on the schedule.
          if (r_.overlap_moe_expert_parallel_comm && c.pp > 1 && schedules_[c.schedule]->name == "1f1b") {
            return exclude(i, "overlap_moe_expert_parallel_comm with pp > 1 needs vp > 1 in Megatron (it merges F and B of "
                              "adjacent microbatches): 1f1b left out, interleaved-1f1b runs it");
          }
          // The verdict is a function of the configuration and the stages, not of the schedule: the
          // candidates that differ only in schedule share it (a schedule whose shape is an error is
          // judged on its own, since the shape's error comes after the configuration's rules).
          const Verdict v = shape.error.empty() ? verdicts_.get(c, false, shape.shape, [&] { return judge(c, shape, bound_rule); })
                                                : judge(c, shape, bound_rule);
          if (!v.rule.empty()) return exclude(i, v.rule);
          bound_[i] = v.bound;
          status_[i] = Status::Survivor;
        },
        [&] { return out_of_time(); }, [&] { progress(); });
  }

  // A candidate's rules, then its memory lower bound, then its throughput bound.
  Verdict judge(const Candidate& c, const ShapeEntry& shape, const std::string& bound_rule) const {
    ParallelConfig split = config_of(c);
    if (shape.error.empty()) split.vp = shape.shape.stages_per_chain() / c.pp;
    const ConfigCheck check = pipelab::check(split, r_.model, gpu_);
    if (!check.ok()) return {normalize_rule(check.errors.front().message)};
    for (const ConfigIssue& w : check.warnings) {
      if (std::find(std::begin(kExcludingWarnings), std::end(kExcludingWarnings), w.rule) != std::end(kExcludingWarnings)) {
        return {normalize_rule(w.message)};
      }
    }
    if (!shape.error.empty()) return {normalize_rule(shape.error)};
    if (c.aware) {
      ParallelConfig balanced = split;
      balanced.account_for_embedding_in_pipeline_split = balanced.account_for_loss_in_pipeline_split = false;
      if (layers_per_stage(split, r_.model) == layers_per_stage(balanced, r_.model)) {
        return {"the embedding- and loss-aware split equals the balanced one: simulated once, as balanced"};
      }
    }
    const auto geometry = std::make_shared<const sim::LayerGeometry>(r_.model, split);
    const sim::MemoryModel memory(geometry, shape.shape);
    if (memory_bound(memory, shape.shape) > gpu_.usable_memory_bytes()) return {bound_rule};
    return {"", throughput_bound(sim::AnalyticCost(geometry, gpu_, shape.shape), shape.shape, split)};
  }

  // Every schedule runs each stage's forward at least once, holding its activations beside the
  // rank's weights, gradients and optimizer state: the least any rank can need.
  static std::int64_t memory_bound(const sim::MemoryModel& memory, const PipelineShape& shape) {
    std::int64_t bound = 0;
    const auto& acts = memory.stage_activations();
    for (int r = 0; r < shape.ranks; ++r) {
      std::int64_t act = 0;
      for (int s : shape.stages_of_rank(r)) act = std::max(act, acts[static_cast<std::size_t>(s)].bytes);
      bound = std::max(bound, memory.static_memory(r).total() + act);
    }
    return bound;
  }

  // An upper bound of tokens/s/GPU: the busiest rank's compute alone (no bubble, no communication, no
  // wait for the host's launches, which an F&B unit's halves may hide behind each other; an F&B unit
  // takes at least both halves' GPU compute) bounds the iteration time from below.
  double throughput_bound(const sim::AnalyticCost& cost, const PipelineShape& shape, const ParallelConfig& c) const {
    const double microbatches = static_cast<double>(c.gbs) / (static_cast<double>(c.mbs) * c.dp) / shape.chains;
    double busiest_ns = 0;
    for (int r = 0; r < shape.ranks; ++r) {
      double ns = 0;
      for (int s : shape.stages_of_rank(r)) {
        const sim::StageCost& sc = cost.stage(s);
        for (const sim::PassCost* p : {&sc.f, &sc.i, &sc.w}) ns += p->compute_ns() - p->host_wait_ns;
      }
      busiest_ns = std::max(busiest_ns, ns * microbatches);
    }
    const double tokens = static_cast<double>(c.gbs) * c.seq_length;
    return busiest_ns > 0 ? tokens / (busiest_ns * 1e-9) / r_.gpus : std::numeric_limits<double>::infinity();
  }

  // ---- 3. simulation ------------------------------------------------------------------------
  // schedule, pp, vp, microbatches, reduce (0 none, 1 overlapped, 2 at end), F&B merged (EP overlap)
  using ScheduleKey = std::tuple<int, int, int, int, int, bool>;
  struct BuiltSchedule {
    std::shared_ptr<const Schedule> lowered;
    std::string error;
  };

  sim::SimulationRequest request_of(const Candidate& c) const {
    sim::SimulationRequest q;
    q.model = r_.model;
    q.gpu = gpu_;
    q.config = resolve(config_of(c), r_.model);
    q.schedule = schedules_[c.schedule]->name;
    return q;
  }

  ScheduleKey schedule_key(const Candidate& c, const ParallelConfig& config) const {
    const int reduce = config.dp * config.cp > 1 ? (config.overlap_grad_reduce ? 1 : 2) : 0;
    return {c.schedule, c.pp, c.vp, config.microbatches(), reduce, sim::merges_forward_backward(schedules_[c.schedule]->name, config, c.vp)};
  }

  void simulate_round(std::size_t round, std::vector<char>& family_fits) {
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      const Candidate& c = candidates_[i];
      if (c.round != round || status_[i] != Status::Survivor) continue;
      if (family_fits[static_cast<std::size_t>(c.family)]) {
        exclude(i, "fits with fewer memory savings (recompute adds work, FSDP adds communication): not simulated");
      } else {
        todo.push_back(i);
      }
    }
    // Most promising first, in fixed batches: a layout whose throughput bound is below the K-th
    // best fitting layout simulated in an earlier batch cannot enter the top K. Batches do not depend
    // on the thread count, so neither does the outcome.
    std::stable_sort(todo.begin(), todo.end(), [&](std::size_t a, std::size_t b) { return bound_[a] > bound_[b]; });
    constexpr std::size_t kBatch = 256;
    for (std::size_t begin = 0; begin < todo.size() && !out_of_time(); begin += kBatch) {
      std::vector<std::size_t> batch;
      for (std::size_t t = begin; t < std::min(todo.size(), begin + kBatch); ++t) {
        const std::size_t i = todo[t];
        if (bound_[i] < kth_best_) {
          exclude(i, "cannot reach the top " + std::to_string(r_.top_k) +
                         ": its tokens/s/GPU bound (the busiest rank's compute alone) is below the top's slowest");
        } else {
          batch.push_back(i);
        }
      }
      simulate_batch(batch);
      for (std::size_t i : batch) {
        if (status_[i] != Status::Simulated || !points_[i]->fits) continue;
        best_.insert(points_[i]->throughput.tokens_per_s_per_gpu);
        if (static_cast<int>(best_.size()) > r_.top_k) best_.erase(best_.begin());
      }
      if (static_cast<int>(best_.size()) == r_.top_k) kth_best_ = *best_.begin();
    }
    for (std::size_t i : todo) {
      if (status_[i] == Status::Simulated && points_[i]->fits) family_fits[static_cast<std::size_t>(candidates_[i].family)] = 1;
    }
  }

  void simulate_batch(const std::vector<std::size_t>& batch) {
    // The batch's schedules, each built and lowered once for the whole search.
    std::vector<ScheduleKey> keys;
    std::vector<sim::SimulationRequest> key_requests;
    for (std::size_t i : batch) {
      sim::SimulationRequest q = request_of(candidates_[i]);
      const ScheduleKey key = schedule_key(candidates_[i], q.config);
      if (schedules_built_.count(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(key);
      key_requests.push_back(std::move(q));
    }
    std::vector<std::shared_ptr<const Schedule>> built(keys.size());
    std::vector<std::string> errors(keys.size());
    detail::parallel_for(static_cast<std::int64_t>(keys.size()), threads_, 1, [&](std::int64_t k) {
      const auto i = static_cast<std::size_t>(k);
      try {
        built[i] = std::make_shared<const Schedule>(sim::lowered_schedule(key_requests[i]));
      } catch (const InputError& e) {
        errors[i] = e.what();
      }
    }, [&] { return out_of_time(); });
    for (std::size_t k = 0; k < keys.size(); ++k) schedules_built_.emplace(keys[k], BuiltSchedule{built[k], errors[k]});

    detail::parallel_for(
        static_cast<std::int64_t>(batch.size()), threads_, 2,
        [&](std::int64_t t) {
          const std::size_t i = batch[static_cast<std::size_t>(t)];
          sim::SimulationRequest q = request_of(candidates_[i]);
          const auto found = schedules_built_.find(schedule_key(candidates_[i], q.config));
          if (found == schedules_built_.end() || !found->second.lowered) {
            if (found == schedules_built_.end() || found->second.error.empty()) return;  // not built: out of time
            return exclude(i, normalize_rule(found->second.error));
          }
          sim::SimulationOutcome o;
          try {
            o = simulate_candidate(i, std::move(q), found->second.lowered, /*ranking_only=*/true);
          } catch (const InputError& e) {
            return exclude(i, normalize_rule(e.what()));
          }
          points_[i] = std::make_unique<PlanPoint>(to_point(o, static_cast<std::int64_t>(i)));
          status_[i] = Status::Simulated;
          if (!points_[i]->fits) rule_[i] = rule_id("simulated peak memory exceeds the usable " + gib(gpu_.usable_memory_bytes()));
          ++done_;
        },
        [&] { return out_of_time(); }, [&] { progress(); });
  }

  // Candidate i (its request_of) on its lowered schedule. The search ranks by throughput alone
  // (ranking_only); the top K are simulated again in full for their idle split, in-action
  // communication and layout.
  sim::SimulationOutcome simulate_candidate(std::size_t i, sim::SimulationRequest q, std::shared_ptr<const Schedule> lowered,
                                            bool ranking_only) {
    q.lowered = std::move(lowered);
    q.ranking_only = ranking_only;
    if (r_.share_costs) {
      // The cost simulate_config would build (the resolved configuration, vp = the schedule's
      // parts per rank), built once for every schedule with the same stages.
      q.make_cost = [this, &c = candidates_[i], &q](const PipelineShape& shape) -> std::unique_ptr<sim::CostModel> {
        return std::make_unique<SharedCost>(costs_.get(c, true, shape, [&] {
          ParallelConfig split = q.config;
          split.vp = shape.stages_per_chain() / split.pp;
          return std::make_shared<const sim::AnalyticCost>(std::make_shared<const sim::LayerGeometry>(q.model, split), q.gpu, shape);
        }));
      };
    }
    return sim::simulate_config(q);
  }

  PlanPoint to_point(const sim::SimulationOutcome& o, std::int64_t index) const {
    PlanPoint p;
    p.config = o.config;
    p.schedule = o.schedule;
    p.pipeline_layout = o.pipeline_layout;
    p.makespan_ns = o.metrics.makespan_ns;
    p.bubble_ratio = o.metrics.bubble_ratio;
    p.exposed_comm_ns = o.metrics.exposed_comm_ns;
    p.idle = o.metrics;
    p.idle.ranks.clear();
    p.in_action_comm = o.in_action_comm;
    p.optimizer_step_ns = o.optimizer_step_ns;
    p.throughput = o.throughput;
    p.model_flops = o.model_flops;
    p.tokens_per_iteration = o.tokens_per_iteration;
    p.peak_memory_bytes = o.peak_memory_bytes;
    p.memory_capacity_bytes = o.memory_capacity_bytes;
    p.fits = !o.oom;
    p.index = index;
    return p;
  }

  // ---- outcome --------------------------------------------------------------------------------
  PlanOutcome finish() {
    PlanOutcome out;
    out.candidates = static_cast<std::int64_t>(candidates_.size());
    for (std::size_t i = 0; i < candidates_.size(); ++i) {
      if (status_[i] == Status::Simulated) {
        ++out.evaluated;
        out.points.push_back(std::move(*points_[i]));
      }
      if (rule_[i] != 0) ++out.excluded[rules_[rule_[i] - 1]];
      if (status_[i] == Status::Excluded || status_[i] == Status::Simulated) ++out.searched;
    }
    out.complete = out.searched == out.candidates;
    std::stable_sort(out.points.begin(), out.points.end(), [](const PlanPoint& a, const PlanPoint& b) {
      return a.throughput.tokens_per_s_per_gpu > b.throughput.tokens_per_s_per_gpu;
    });
    for (const PlanPoint& p : out.points) {
      if (!p.fits) continue;
      if (static_cast<int>(out.top.size()) >= r_.top_k) break;
      out.top.push_back(p);
    }
    for (PlanPoint& p : out.top) {
      const auto i = static_cast<std::size_t>(p.index);
      sim::SimulationRequest q = request_of(candidates_[i]);
      std::shared_ptr<const Schedule> lowered = schedules_built_.at(schedule_key(candidates_[i], q.config)).lowered;
      p = to_point(simulate_candidate(i, std::move(q), std::move(lowered), /*ranking_only=*/false), p.index);
      ParallelConfig split = p.config;
      const ShapeEntry& shape = shape_of(candidates_[i]);
      split.vp = shape.shape.stages_per_chain() / p.config.pp;
      p.stage_layers = layers_per_stage(split, r_.model);
    }
    if (out.top.size() >= 2) out.why = explain(r_, out.top[0], out.top[1]);
    out.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return out;
  }

  bool out_of_time() const {
    return r_.time_budget_s > 0 && std::chrono::duration<double>(Clock::now() - start_).count() > r_.time_budget_s;
  }

  void progress() const {
    if (!r_.on_progress) return;
    r_.on_progress({.done = done_.load(), .total = static_cast<std::int64_t>(candidates_.size()),
                    .elapsed_s = std::chrono::duration<double>(Clock::now() - start_).count()});
  }

  const PlanRequest& r_;
  std::vector<Recompute> recompute_;  // r_.recompute, cheapest first, each once
  Clock::time_point start_;
  GpuSpec gpu_;  // with the headroom added to its reserve
  std::vector<const ScheduleInfo*> schedules_;
  int threads_ = 1;
  std::vector<Candidate> candidates_;
  std::int32_t families_ = 0;
  std::map<ShapeKey, ShapeEntry> shapes_;
  std::map<ScheduleKey, BuiltSchedule> schedules_built_;
  std::vector<Status> status_;
  std::vector<std::uint32_t> rule_;  // 0 = none, else 1 + index into rules_
  std::vector<std::unique_ptr<PlanPoint>> points_;
  std::vector<double> bound_;   // tokens/s/GPU upper bound per survivor
  std::multiset<double> best_;  // tokens/s/GPU of the top K fitting layouts so far
  double kth_best_ = 0;         // the K-th of them once there are K
  std::mutex rules_mutex_;
  std::map<std::string, std::uint32_t> rule_ids_;
  std::vector<std::string> rules_;
  std::atomic<std::int64_t> done_{0};
  LayoutCache<Verdict> verdicts_;
  LayoutCache<std::shared_ptr<const sim::AnalyticCost>> costs_;  // a few KB each: fewer kept
};

// ---- explanation ------------------------------------------------------------------------------

Breakdown breakdown(const PlanRequest& r, const PlanPoint& p) {
  const sim::SimulationRequest q = point_request(r, p);
  const sim::SimulationOutcome o = sim::simulate_config(q);
  const PipelineShape& shape = o.lowered->shape;
  ParallelConfig split = o.config;
  split.vp = shape.stages_per_chain() / split.pp;
  const sim::AnalyticCost cost(r.model, q.gpu, split, shape);
  Breakdown b;
  const double m = shape.microbatches_per_chain();
  // A schedule that runs W apart from I leaves nothing beside I to hide what the wgrad would.
  const bool splits_backward = find_schedule(o.schedule).splits_backward;
  // No offload_ns: plan never offloads activations (config_of leaves cpu_offloading_num_layers at 0).
  for (int s = 0; s < shape.stages; ++s) {
    const sim::StageCost& c = cost.stage(s);
    const sim::PassCost i = splits_backward ? c.i.without_wgrad() : c.i;
    for (const sim::PassCost* pass : {&c.f, &i, &c.w}) {
      b.compute_ns += m * pass->compute_ns();
      b.tp_comm_ns += m * pass->tp_comm_ns;
      b.ep_comm_ns += m * pass->ep_exposed_ns();
      b.cp_comm_ns += m * pass->cp_comm_ns;
      b.fsdp_comm_ns += m * pass->dp_comm_ns;
    }
  }
  for (double* v : {&b.compute_ns, &b.tp_comm_ns, &b.ep_comm_ns, &b.cp_comm_ns, &b.fsdp_comm_ns}) *v /= shape.ranks;
  b.makespan_ns = o.metrics.makespan_ns;
  b.bubble_ratio = o.metrics.bubble_ratio;
  b.p2p_exposed_ns = static_cast<double>(o.metrics.exposed_pp_comm_ns);
  b.dp_exposed_ns = static_cast<double>(o.metrics.exposed_dp_comm_ns);
  b.optimizer_step_ns = static_cast<double>(o.optimizer_step_ns);
  b.peak_memory_bytes = *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end());
  b.tokens_per_s_per_gpu = o.throughput.tokens_per_s_per_gpu;
  return b;
}

std::string ms(double ns) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f ms", ns / 1e6);
  return text;
}

std::string layout_text(const PlanPoint& p) {
  const ParallelConfig& c = p.config;
  std::string out = p.schedule + " tp" + std::to_string(c.tp) + " pp" + std::to_string(c.pp);
  if (c.vp > 1) out += " vp" + std::to_string(c.vp);
  if (c.cp > 1) out += " cp" + std::to_string(c.cp);
  if (c.ep > 1) out += " ep" + std::to_string(c.ep) + " etp" + std::to_string(c.expert_tp());
  out += " dp" + std::to_string(c.dp) + (c.fsdp != Fsdp::kNone ? " (fsdp)" : "") + " mbs" + std::to_string(c.mbs);
  if (c.recompute != Recompute::kNone) out += " recompute " + std::string(to_string(c.recompute));
  if (c.account_for_embedding_in_pipeline_split) out += " embedding/loss-aware split";
  return out;
}

}  // namespace

std::int64_t PlanPoint::max_peak_memory_bytes() const {
  return peak_memory_bytes.empty() ? 0 : *std::max_element(peak_memory_bytes.begin(), peak_memory_bytes.end());
}

PlanOutcome run_plan(const PlanRequest& request) { return Search(request).run(); }

sim::SimulationRequest point_request(const PlanRequest& r, const PlanPoint& p) {
  sim::SimulationRequest q;
  q.model = r.model;
  q.gpu = r.gpu;
  q.gpu.reserved_memory_bytes += r.memory_headroom_bytes;
  q.config = p.config;
  q.schedule = p.schedule;
  return q;
}

Explanation explain(const PlanRequest& request, const PlanPoint& winner, const PlanPoint& runner_up) {
  Explanation out{.winner = breakdown(request, winner), .runner_up = breakdown(request, runner_up)};
  const Breakdown& a = out.winner;
  const Breakdown& b = out.runner_up;
  char line[256];
  std::snprintf(line, sizeof line, "winner    %s", layout_text(winner).c_str());
  out.lines.emplace_back(line);
  std::snprintf(line, sizeof line, "runner-up %s", layout_text(runner_up).c_str());
  out.lines.emplace_back(line);
  std::snprintf(line, sizeof line, "tokens/s/GPU %.0f vs %.0f (%+.1f%%); iteration %s vs %s", a.tokens_per_s_per_gpu, b.tokens_per_s_per_gpu,
                b.tokens_per_s_per_gpu > 0 ? (a.tokens_per_s_per_gpu / b.tokens_per_s_per_gpu - 1) * 100 : 0.0,
                ms(static_cast<double>(a.makespan_ns) + a.optimizer_step_ns).c_str(),
                ms(static_cast<double>(b.makespan_ns) + b.optimizer_step_ns).c_str());
  out.lines.emplace_back(line);
  std::snprintf(line, sizeof line, "bubble %.1f%% vs %.1f%% (idle per rank %s vs %s)", a.bubble_ratio * 100, b.bubble_ratio * 100,
                ms(a.bubble_ratio * static_cast<double>(a.makespan_ns)).c_str(),
                ms(b.bubble_ratio * static_cast<double>(b.makespan_ns)).c_str());
  out.lines.emplace_back(line);
  std::snprintf(line, sizeof line, "compute per rank %s vs %s (recompute included)", ms(a.compute_ns).c_str(), ms(b.compute_ns).c_str());
  out.lines.emplace_back(line);
  const std::pair<const char*, double Breakdown::*> kinds[] = {
      {"TP collectives", &Breakdown::tp_comm_ns},          {"EP all-to-all", &Breakdown::ep_comm_ns},
      {"CP exchange (exposed)", &Breakdown::cp_comm_ns},   {"FSDP gathers (exposed)", &Breakdown::fsdp_comm_ns},
      {"pipeline P2P (exposed)", &Breakdown::p2p_exposed_ns},
      {"DP communication (exposed: the reduction after the last pass, the forwards' wait for the parameter gather)", &Breakdown::dp_exposed_ns},
      {"optimizer step", &Breakdown::optimizer_step_ns}};
  for (const auto& [name, member] : kinds) {
    if (a.*member < 1e3 && b.*member < 1e3) continue;  // below a microsecond on both
    std::snprintf(line, sizeof line, "%s per rank %s vs %s", name, ms(a.*member).c_str(), ms(b.*member).c_str());
    out.lines.emplace_back(line);
  }
  std::snprintf(line, sizeof line, "peak memory %s vs %s", gib(a.peak_memory_bytes).c_str(), gib(b.peak_memory_bytes).c_str());
  out.lines.emplace_back(line);
  return out;
}

std::string normalize_rule(const std::string& message) {
  // Numbers that stay: a model or batch field's value, a formula's coefficient ("2*pp"), a digit
  // inside a word ("zb-h1", "fp8"), and anything not given by "=" or "got".
  static const std::set<std::string, std::less<>> kKeep = {
      "num_attention_heads", "num_query_groups", "ffn_hidden_size", "moe_ffn_hidden_size", "num_experts", "num_layers",
      "seq_length",          "gbs",              "gpus_per_node",   "hidden_size",         "vocab_size",  "peak_fp8_tflops",
      "peak_fp4_tflops"};
  std::string out;
  const std::size_t n = message.size();
  bool in_product = false;  // after a replaced number: "=8*1" continues with the next factor
  for (std::size_t i = 0; i < n;) {
    const char c = message[i];
    if (!std::isdigit(static_cast<unsigned char>(c))) {
      out += c;
      if (c != '*') in_product = false;
      ++i;
      continue;
    }
    std::size_t end = i;
    while (end < n && (std::isdigit(static_cast<unsigned char>(message[end])) ||
                       (message[end] == '.' && end + 1 < n && std::isdigit(static_cast<unsigned char>(message[end + 1]))))) {
      ++end;
    }
    const bool in_word = (i > 0 && (std::isalpha(static_cast<unsigned char>(message[i - 1])) || message[i - 1] == '_' || message[i - 1] == '-')) ||
                         (end < n && (std::isalpha(static_cast<unsigned char>(message[end])) || message[end] == '_'));
    bool replace = false;
    if (!in_word) {
      std::size_t k = i;
      while (k > 0 && message[k - 1] == ' ') --k;
      if (in_product && k > 0 && message[k - 1] == '*') {
        replace = true;
      } else if (k > 0 && message[k - 1] == '=' && !(k > 1 && (message[k - 2] == '<' || message[k - 2] == '>'))) {
        std::size_t e = k - 1;
        while (e > 0 && message[e - 1] == ' ') --e;
        std::size_t b = e;
        while (b > 0 && (std::isalnum(static_cast<unsigned char>(message[b - 1])) || message[b - 1] == '_')) --b;
        replace = !kKeep.count(message.substr(b, e - b));
      } else if (k >= 3 && message.compare(k - 3, 3, "got") == 0) {
        replace = true;
      }
    }
    out += replace ? std::string("N") : message.substr(i, end - i);
    in_product = replace;
    i = end;
  }
  return out;
}

}  // namespace pipelab::plan
