// Flags that describe what to simulate: model, GPU, parallel layout, batch, cost model. They mirror
// the config keys (--tp, --pp, ...) and accept Megatron's long names as aliases
// (--tensor-model-parallel-size, --num-layers, ...), so users describe a run the way they launch it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"
#include "pipelab/sim/simulation.h"

namespace pipelab::app {

struct ConfigFlags {
  std::string model = "llama3-70b";
  std::string gpu = "h100-sxm";
  int tp = 4, pp = 4, vp = 0, cp = 1, ep = 1, dp = 0, gpus = 0;
  int mbs = 1, gbs = 0, microbatches = 0, seq = 0;
  int layers_per_virtual_stage = 0;
  std::string recompute = "none";
  std::string precision = "bf16";
  std::string sequence_parallel = "auto";  // auto (on when tp > 1) | on | off
  bool no_distributed_optimizer = false;
  std::string stage_layers;  // "2,3,3,3,2,3,3,3"
  bool softmax_stored = false;
  bool optimizer_cpu_offload = false;                  // --optimizer-cpu-offload
  std::optional<double> optimizer_offload_fraction;    // --optimizer-offload-fraction (Megatron's default 1)
  bool cpu_offloading = false;                         // --cpu-offloading (the layer count is a layout option)
  // Megatron-named model and layout overrides, applied in command-line order (every config flag
  // triggers on parse): (field, value).
  std::vector<std::pair<std::string, std::string>> model_overrides;
  std::vector<std::pair<std::string, std::string>> parallel_overrides;
  // --megatron-args and --automodel-yaml are expanded in main() before parsing (pasted_args.h).
  std::string unused_megatron_args, unused_automodel_yaml;
  // Cost model.
  std::string cost = "analytic";
  double t_f_us = 1000, t_i_us = 1000, t_w_us = 1000, t_b_us = -1, t_fb_us = -1, t_comm_us = 0;
};

/// Registers the flags, filling `flags` when the command line is parsed (it must outlive the
/// parse). Defaults: llama3-70b on h100-sxm, TP4 PP4, 64 GPUs, mbs 1, 32 microbatches.
void add_config_flags(CLI::App* cmd, ConfigFlags& flags);

/// Model, GPU and resolved parallel config from the flags; errors name the flag and the rule.
struct ResolvedConfig {
  ModelSpec model;
  GpuSpec gpu;
  ParallelConfig config;
  std::vector<std::string> warnings;  // flags given that change nothing (as in Megatron)
};
ResolvedConfig resolve_flags(const ConfigFlags& flags);

/// "a,b,,c" -> {"a", "b", "c"}: a comma-separated flag value (--schedules, --mbs), empty items dropped.
std::vector<std::string> split_comma_list(const std::string& list);

/// A simulation request for one schedule from the flags.
sim::SimulationRequest make_request(const ConfigFlags& flags, const ResolvedConfig& resolved, const std::string& schedule);

}  // namespace pipelab::app
