// Gradient equivalence: the single-device sequential reference of the mock model, and the
// comparison of a pipelined run's gradients with it. Equal gradients (to float rounding) prove
// that the executor ran every F, I and W of the schedule on the right data.
#pragma once

#include <string>
#include <vector>

#include "pipelab/kernels/block.h"
#include "pipelab/runtime/backend.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::runtime {

/// Per model part, one BlockGrads per layer.
using PartGradients = std::vector<std::vector<kernels::BlockGrads>>;

/// Gradients of `parts` x layers_per_stage layers after one iteration of `microbatches` microbatches
/// run one after the other on one device (F then B each, loss scaled by 1/microbatches).
PartGradients reference_gradients(const ModelConfig& model, int parts, int microbatches);

/// Sums stage gradients (index = stage) per model part: DualPipe's two copies of a part add up.
PartGradients part_gradients(const PipelineShape& shape, const std::vector<std::vector<kernels::BlockGrads>>& stage_grads);

struct GradientCheck {
  double max_rel_error = 0;  // max over tensors of max|actual - ref| / max|ref|
  double tolerance = 1e-5;
  bool passed = false;
  std::string worst;         // "part 1 layer 0 w_qkv" (the tensor with the largest error)
};

/// Compares per tensor; a missing part or layer, or a size mismatch, fails with max_rel_error = inf.
GradientCheck compare_gradients(const PartGradients& actual, const PartGradients& reference, double tolerance = 1e-5);

}  // namespace pipelab::runtime
