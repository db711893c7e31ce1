// Activation CPU offloading as Transformer Engine's default scheduling runs it (Megatron's
// --cpu-offloading-num-layers N; TE docs/features/other_optimizations/cpu_offloading): the first N
// decoder layers' saved activations are copied to host memory as the forward saves them and copied
// back for the backward, over the GPU's host link, on their own stream. At most L - N layers'
// activations are on the GPU at any time; compute waits where a copy has not made room, and a
// backward waits for its layer's reload. This file times those waits (docs/simulator.md, "Activation
// CPU offloading"); the memory model drops the offloaded layers' bytes.
#pragma once

#include <span>

namespace pipelab::sim {

/// One decoder layer of the stage, in model order.
struct OffloadLayer {
  double forward_ns = 0;   // its forward, as the GPU runs it without waits
  double backward_ns = 0;  // its whole backward (input and weight gradients)
  double copy_ns = 0;      // its saved activations over the host link, one way; 0 = kept on the GPU
};

/// The GPU's wait for the copies in one forward and in one backward of the stage.
struct OffloadStall {
  double forward_ns = 0;
  double backward_ns = 0;
};

/// The layers with copy_ns > 0 must be the first ones (TE offloads the first N). Per layer, in the
/// forward: layer j starts once layer j - 1 ended and, when j >= K = L - N, layer j - K's offload
/// ended (that frees the slot); an offload starts with its layer or when the previous one ended,
/// and ends copy_ns later, not before its layer does. In the backward (last layer first): the
/// reload of layer i starts when the reload of i + 1 ended and the backward of layer i + K freed a
/// slot; layer i's backward starts after layer i + 1's and after its own reload.
OffloadStall activation_offload_stall(std::span<const OffloadLayer> layers);

}  // namespace pipelab::sim
