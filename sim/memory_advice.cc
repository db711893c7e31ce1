// Candidate changes for a configuration that does not fit; see memory_advice.h.
#include "pipelab/sim/memory_advice.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "pipelab/base/error.h"

namespace pipelab::sim {
namespace {

struct Candidate {
  std::string change;
  ParallelConfig config;
};

// Each candidate changes one thing, in Megatron's flags. Layout changes keep the GPU count: a larger
// TP, PP or EP takes its GPUs from DP.
std::vector<Candidate> candidates(const SimulationRequest& r) {
  const ParallelConfig& c = r.config;
  std::vector<Candidate> out;
  auto add = [&](std::string change, const std::function<void(ParallelConfig&)>& edit) {
    ParallelConfig n = c;
    edit(n);
    out.push_back({std::move(change), n});
  };
  auto relayout = [&](const char* flag, int ParallelConfig::*size) {
    add(std::string(flag) + " " + std::to_string(c.*size * 2), [&](ParallelConfig& n) {
      n.*size *= 2;
      if (size != &ParallelConfig::ep) {  // EP folds into the same GPUs; TP and PP take DP's
        n.dp = 0;
        n.world = c.tp * c.pp * c.cp * c.dp;
      }
      if (size == &ParallelConfig::tp) n.sequence_parallel.reset();  // on with TP, as Megatron recipes run
    });
  };
  if (c.recompute == Recompute::kNone) {
    add("--recompute-activations", [](ParallelConfig& n) { n.recompute = Recompute::kSelective; });
  }
  if (c.recompute != Recompute::kFull) {
    add("--recompute-granularity full --recompute-method uniform --recompute-num-layers 1", [](ParallelConfig& n) {
      n.recompute = Recompute::kFull;
      n.recompute_method = RecomputeMethod::kUniform;
      n.recompute_num_layers = 1;
      n.recompute_modules.clear();
    });
  }
  // Activation offloading where Megatron allows it (pp = 1, no recompute, a host link to time): half
  // the layers it keeps on the GPU, or all but two (Transformer Engine's advice for full overlap).
  const int layers = r.model.num_layers, offloaded = c.cpu_offloading_num_layers;
  if (c.pp == 1 && c.recompute == Recompute::kNone && r.gpu.host_link_bandwidth_gbps > 0) {
    const int half = offloaded + (layers - offloaded) / 2, all_but_two = layers - 2;
    for (const int n : {half, all_but_two}) {
      if (n <= offloaded || (n == all_but_two && n == half)) continue;  // no more than now, or said already
      add("--cpu-offloading-num-layers " + std::to_string(n), [n](ParallelConfig& x) { x.cpu_offloading_num_layers = n; });
    }
  }
  if (!c.use_precision_aware_optimizer) {
    add("--use-precision-aware-optimizer", [](ParallelConfig& n) { n.use_precision_aware_optimizer = true; });
  }
  if (!c.distributed_optimizer && c.fsdp == Fsdp::kNone) {
    add("--use-distributed-optimizer", [](ParallelConfig& n) { n.distributed_optimizer = true; });
  }
  if (c.mbs > 1) add("--micro-batch-size " + std::to_string(c.mbs / 2), [](ParallelConfig& n) { n.mbs /= 2; });
  if (c.fsdp == Fsdp::kNone && c.dp * c.cp > 1) {
    add("--use-megatron-fsdp", [](ParallelConfig& n) {
      n.fsdp = Fsdp::kMegatron;
      n.data_parallel_sharding_strategy = Sharding::kOptimGradsParams;
    });
  }
  if (c.tp * 2 <= r.gpu.gpus_per_node) relayout("--tensor-model-parallel-size", &ParallelConfig::tp);
  relayout("--pipeline-model-parallel-size", &ParallelConfig::pp);
  if (r.model.is_moe()) relayout("--expert-model-parallel-size", &ParallelConfig::ep);
  return out;
}

}  // namespace

std::string MemoryAdvice::text() const {
  char numbers[96];
  std::snprintf(numbers, sizeof numbers, " (peak %.1f GiB, %.0f tokens/s/GPU)",
                static_cast<double>(peak_memory_bytes) / (1024.0 * 1024 * 1024), tokens_per_s_per_gpu);
  return change + numbers;
}

std::optional<MemoryAdvice> nearest_fitting_change(const SimulationRequest& request) {
  std::optional<MemoryAdvice> best;
  for (const Candidate& candidate : candidates(request)) {
    SimulationRequest q = request;
    try {
      q.config = resolve(candidate.config, request.model);
      const SimulationOutcome o = simulate_config(q);
      if (o.oom) continue;
      const double tokens = o.throughput.tokens_per_s_per_gpu;
      if (!best || tokens > best->tokens_per_s_per_gpu) {
        best = MemoryAdvice{.change = candidate.change,
                            .peak_memory_bytes = *std::max_element(o.peak_memory_bytes.begin(), o.peak_memory_bytes.end()),
                            .tokens_per_s_per_gpu = tokens};
      }
    } catch (const Error&) {
      continue;  // a rule the change breaks (layers over a larger PP, TP over the query groups, ...)
    }
  }
  return best;
}

}  // namespace pipelab::sim
