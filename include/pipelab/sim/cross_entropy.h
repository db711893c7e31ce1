// The loss's cross-entropy over the vocabulary, per logit of one GPU's share (tokens x vocabulary / tp):
// the HBM bytes each pass moves and what it keeps for the backward, by implementation (Megatron's
// --cross-entropy-loss-fusion and --cross-entropy-fusion-impl; docs/simulator.md, "Cross-entropy").
// The cost model times the passes; the memory model holds what is kept. BF16 logits come in from the
// LM head; the per-token gathers and the TP all-reduces of the max and the sum are left out.
#pragma once

#include "pipelab/profiles/parallel_config.h"

namespace pipelab::sim {

struct CrossEntropyBytes {
  double forward = 0;     // HBM bytes per logit read and written by the forward
  double input_grad = 0;  // the same for the backward, down to the BF16 gradient the LM head takes
  double kept = 0;        // bytes per logit held from the forward to the backward
};

CrossEntropyBytes cross_entropy_bytes(const ParallelConfig& config);

}  // namespace pipelab::sim
