// Consecutive iterations; see iterations.h.
#include "pipelab/sim/iterations.h"

#include <string>

#include "pipelab/base/error.h"

namespace pipelab::sim {

RepeatedSchedule repeat_iterations(const Schedule& lowered, int iterations) {
  if (iterations < 1) throw InputError("iterations must be at least 1, got " + std::to_string(iterations));
  const PipelineShape& shape = lowered.shape;
  if (static_cast<long long>(shape.stages) * shape.microbatches * iterations > kMaxStageMicrobatches) {
    throw InputError("iterations: " + std::to_string(iterations) + " x " + std::to_string(shape.microbatches) + " microbatches x " +
                     std::to_string(shape.stages) + " stages exceeds the limit of " + std::to_string(kMaxStageMicrobatches));
  }
  RepeatedSchedule out;
  out.schedule = lowered;
  out.schedule.shape.microbatches = shape.microbatches * iterations;
  const int per_chain = shape.microbatches_per_chain();
  // Keeps each microbatch in its chain's block, so chain_of_microbatch still holds.
  auto renumber = [&](int mb, int k) { return mb < 0 ? mb : (mb / per_chain) * per_chain * iterations + k * per_chain + mb % per_chain; };
  out.iteration_starts.resize(lowered.ranks.size());
  for (std::size_t r = 0; r < lowered.ranks.size(); ++r) {
    std::vector<Slot>& list = out.schedule.ranks[r];
    list.clear();
    for (int k = 0; k < iterations; ++k) {
      if (k > 0) out.iteration_starts[r].push_back(list.size());
      for (const Slot& slot : lowered.ranks[r]) {
        if (!slot) {
          list.push_back(slot);
          continue;
        }
        Action a = *slot;
        if (a.op != Op::ReduceGrad) a.mb = renumber(a.mb, k);
        if (a.op == Op::OverlapFB) a.b_mb = renumber(a.b_mb, k);
        list.emplace_back(a);
      }
    }
  }
  return out;
}

}  // namespace pipelab::sim
