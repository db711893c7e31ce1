// ModelConfig checks and the FLOPs of an action.
#include "pipelab/runtime/backend.h"

#include <string>

#include "pipelab/base/error.h"

namespace pipelab::runtime {

void ModelConfig::validate() const {
  block.validate();
  if (layers_per_stage < 1) {
    throw InputError("model: layers_per_stage=" + std::to_string(layers_per_stage) + " must be >= 1");
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
