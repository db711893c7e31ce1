// ModelConfig checks and the FLOPs of an action.
#include "pipelab/runtime/backend.h"

#include <algorithm>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/base/names.h"
#include "pipelab/kernels/shape.h"

namespace pipelab::runtime {

void ModelConfig::validate() const {
  block.validate();
  if (layers_per_stage < 1 || layers_per_stage > kMaxLayersPerStage) {
    throw InputError("model: layers_per_stage=" + std::to_string(layers_per_stage) + " must be in [1, " +
                     std::to_string(kMaxLayersPerStage) + "]");
  }
  // A stage's kept bytes (layers x a block's, mock_stage_activation) must be an int64 too.
  const double stage_bytes = static_cast<double>(layers_per_stage) *
                             static_cast<double>(std::max(kernels::saved_bytes(block), kernels::stash_bytes(block)));
  if (stage_bytes > 4611686018427387904.0) {  // 2^62
    throw InputError("model: layers_per_stage=" + std::to_string(layers_per_stage) + " blocks of this shape keep about " +
                     number_text(stage_bytes) + " bytes per microbatch; the limit is 2^62");
  }
}

std::int64_t ModelConfig::activation_bytes() const { return kernels::activation_bytes(block); }

double action_flops(const ModelConfig& model, const Action& a) {
  const kernels::OpFlops f = kernels::block_flops(model.block);
  const double n = model.layers_per_stage;
  switch (a.op) {
    case Op::F: return n * static_cast<double>(f.forward);
    case Op::I: return n * static_cast<double>(f.backward_input);
    case Op::W: return n * static_cast<double>(f.backward_weight);
    case Op::B: return n * static_cast<double>(f.backward());
    case Op::OverlapFB: return n * static_cast<double>(f.forward + f.backward());
    default: return 0;
  }
}

}  // namespace pipelab::runtime
