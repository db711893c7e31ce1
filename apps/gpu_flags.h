// The GPU flags shared by `run` and `profile` with --backend cuda: --math, --device,
// --no-sm-partition (and --single-gpu for run, --ranks-per-gpu for profile).
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "pipelab/kernels/device_block.h"

namespace pipelab::app {

struct GpuFlags {
  std::string math = "bf16";    // a kernels::GemmMath name
  int device = 0;               // the first GPU used
  bool no_sm_partition = false; // single-GPU mode: ranks share every SM instead of green-context groups
  kernels::GemmMath gemm_math() const { return kernels::parse_gemm_math(math); }
};

void add_gpu_flags(CLI::App* cmd, GpuFlags& flags);

/// Throws InputError when a GPU flag was given with a backend other than cuda.
void require_cuda_backend_for_gpu_flags(CLI::App* cmd, const std::string& backend);

}  // namespace pipelab::app
