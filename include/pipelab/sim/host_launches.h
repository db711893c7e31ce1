// The host's side of a training step: the kernels the CPU launches eagerly, one by one, per decoder
// layer and pass (Python, PyTorch dispatch, Transformer Engine's module code, then the launch). The GPU
// cannot run a kernel before the host has launched it, so a pass whose kernels are short takes as long
// as the host needs to launch them: Megatron's "CPU overhead bottleneck" (MoE README). CUDA graphs
// (--cuda-graph-impl, --cuda-graph-modules) replay a captured region with one launch. Counts are read
// off Megatron-Core and Transformer Engine's code (docs/simulator.md, "Host launches"), not traced.
#pragma once

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab::sim {

/// Eager kernel launches of one decoder layer, per pass. I holds the input-gradient backward and what
/// selective or full recompute re-runs; W the weight-gradient GEMMs (zero-bubble schedules run it
/// apart); F of a MoE layer whose dispatch waits for the host ends at that wait.
struct LayerLaunches {
  double forward = 0;
  double input_grad = 0;
  double weight_grad = 0;
};

/// `layer` (0-based, model order) under `config` (resolved), with the CUDA graphs it names.
LayerLaunches layer_launches(const ModelSpec& model, const ParallelConfig& config, int layer, bool full_recompute);

}  // namespace pipelab::sim
