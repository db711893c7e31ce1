// pipelab run's support: its profile, the mock model's activation table, host facts.
#include "pipelab/runtime/run_support.h"

#include <algorithm>
#include <cstdio>

#include <unistd.h>

#include "pipelab/base/error.h"
#include "pipelab/kernels/shape.h"
#include "pipelab/runtime/profiler.h"

namespace pipelab::runtime {

StageActivationBytes mock_stage_activation(const ModelConfig& model) {
  const std::int64_t saved = kernels::saved_bytes(model.block), stash = kernels::stash_bytes(model.block);
  const std::int64_t layers = model.layers_per_stage;
  return {layers * std::max(saved, stash), layers * std::max<std::int64_t>(0, saved - stash)};
}

std::vector<std::string> check_profile_matches(const MeasuredProfile& p, const ModelConfig& m, const std::string& path,
                                               int ranks, const std::string& transport, const std::string& backend) {
  std::string diff;
  auto compare = [&](const char* name, long long profiled, long long run) {
    if (profiled != run) {
      diff += std::string(diff.empty() ? "" : ", ") + name + " " + std::to_string(profiled) + " (run: " +
              std::to_string(run) + ")";
    }
  };
  compare("hidden", p.hidden, m.block.hidden);
  compare("ffn", p.ffn, m.block.ffn);
  compare("heads", p.heads, m.block.heads);
  compare("seq", p.seq, m.block.seq);
  compare("mbs", p.mbs, m.block.mbs);
  compare("swiglu", p.swiglu, m.block.swiglu);
  if (!diff.empty()) throw ConfigError("--profile " + path + " was measured for another model: " + diff);
  if (p.backend != backend) {
    throw ConfigError("--profile " + path + " was measured on backend \"" + p.backend + "\", the run uses " + backend);
  }
  std::vector<std::string> warnings;
  if (p.layers_per_stage != m.layers_per_stage) {
    warnings.push_back("the profile measured stages of " + std::to_string(p.layers_per_stage) + " layers; predicting " +
                       std::to_string(m.layers_per_stage) + "-layer stages from its per-layer times");
  }
  if (ranks > 1 && p.p2p.transport.empty()) {
    warnings.push_back("the profile holds no P2P measurement: messages are predicted to cost nothing");
  } else if (ranks > 1 && p.p2p.transport != transport) {
    warnings.push_back("the profile's P2P costs were measured on \"" + p.p2p.transport + "\", the run uses \"" +
                       transport + "\"");
  }
  return warnings;
}

RunProfile profile_for_run(const RunProfileRequest& r) {
  RunProfile out;
  if (!r.path.empty()) {
    out.profile = load_measured_profile(r.path);
    out.source = r.path;
    out.warnings = check_profile_matches(out.profile, r.model, r.path, r.ranks, r.transport, r.backend);
    return out;
  }
  if (r.backend == "cuda") {
    ProfileOptions o;
    o.model = r.model;
    o.repeats = r.repeats;
    o.warmup = 3;
    out.profile = measure_cuda_profile(o, r.cuda);
    out.source = "measured on the GPU before the run";
    if (!r.save_path.empty() && r.rank == 0) save_measured_profile(out.profile, r.save_path);
    return out;
  }
  ProfileOptions compute;
  compute.model = r.model;
  compute.repeats = r.repeats;
  compute.warmup = 3;
  compute.core = r.pin ? 0 : -1;
  compute.concurrency = r.concurrency;
  P2PProfileOptions p2p;
  p2p.enabled = r.ranks > 1;
  p2p.repeats = std::max(20, r.repeats);
  p2p.timeout = r.timeout;
  p2p.wait = r.wait;
  p2p.transport = r.make_transport;
  out.profile = measure_profile(compute, p2p);  // with processes: rank 0's numbers
  out.source = "measured before the run";
  if (!r.save_path.empty() && r.rank == 0) save_measured_profile(out.profile, r.save_path);
  return out;
}

std::string core_sharing_warning(int ranks, int cores) {
  if (ranks <= cores) return "";
  return std::to_string(ranks) + " ranks on " + std::to_string(cores) +
         " cores: ranks share cores, so the measured run is not a pipeline and the prediction will not match";
}

std::int64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<std::int64_t>(pages) * size : 0;
}

namespace {

// One stage's weights and gradients (fp32), as CpuBackend::static_bytes counts them.
double stage_static_bytes(const ModelConfig& model) {
  return 2.0 * static_cast<double>(kernels::param_count(model.block)) * model.layers_per_stage * sizeof(float);
}

// What one microbatch in flight holds on a stage: its kept activations, and the activation and
// gradient buffers crossing the stage's boundaries.
double microbatch_bytes(const ModelConfig& model) {
  return static_cast<double>(mock_stage_activation(model).bytes) + 2.0 * static_cast<double>(model.activation_bytes());
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return text;
}

}  // namespace

double cpu_run_memory_bytes(const Schedule& lowered, const ModelConfig& model, int first_rank, int ranks) {
  double total = 0;
  for (int r = first_rank; r < first_rank + ranks && r < lowered.shape.ranks; ++r) {
    std::int64_t held = 0, most = 0;
    for (const Slot& slot : lowered.ranks[static_cast<std::size_t>(r)]) {
      if (!slot) continue;
      if (slot->op == Op::F) ++held;
      if (slot->op == Op::B || slot->op == Op::W) --held;  // OVERLAP_F_B starts one and ends another
      most = std::max(most, held);
    }
    total += static_cast<double>(lowered.shape.stages_of_rank(r).size()) * stage_static_bytes(model) +
             static_cast<double>(most + 1) * microbatch_bytes(model);
  }
  return total;
}

double cpu_profile_memory_bytes(const ModelConfig& model, int threads) {
  return threads * (stage_static_bytes(model) + 2 * microbatch_bytes(model));
}

void require_host_memory(double needed_bytes, std::string_view what) {
  const std::int64_t have = physical_memory_bytes();
  if (have > 0 && needed_bytes > static_cast<double>(have)) {
    throw InputError(std::string(what) + ": the mock model needs about " + gib(needed_bytes) + " of host memory (weights, gradients and " +
                     "the activations of the microbatches in flight), more than this machine's " + gib(static_cast<double>(have)) +
                     " of physical memory; use a smaller --hidden, --ffn, --seq, --mbs or --layers-per-stage");
  }
}

}  // namespace pipelab::runtime
