// Activation CPU offloading waits; see activation_offload.h.
#include "pipelab/sim/activation_offload.h"

#include <algorithm>
#include <vector>

namespace pipelab::sim {

OffloadStall activation_offload_stall(std::span<const OffloadLayer> layers) {
  const std::size_t n_layers = layers.size();
  std::size_t offloaded = 0;
  while (offloaded < n_layers && layers[offloaded].copy_ns > 0) ++offloaded;
  OffloadStall stall;
  if (offloaded == 0 || offloaded == n_layers) return stall;  // check() refuses offloading every layer
  const std::size_t slots = n_layers - offloaded;  // K: layer sets the GPU may hold

  // Forward: each layer's end, each offload's end.
  std::vector<double> offload_end(offloaded, 0);
  double end = 0, offload_free = 0, busy = 0;
  for (std::size_t j = 0; j < n_layers; ++j) {
    double start = end;
    if (j >= slots) start = std::max(start, offload_end[j - slots]);  // j - K < offloaded since j < L
    end = start + layers[j].forward_ns;
    busy += layers[j].forward_ns;
    if (j < offloaded) {
      offload_free = std::max(std::max(start, offload_free) + layers[j].copy_ns, end);
      offload_end[j] = offload_free;
    }
  }
  stall.forward_ns = end - busy;

  // Backward, from the last layer: each layer's backward end, each reload's end.
  std::vector<double> reload_end(offloaded, 0);
  double reload_free = 0;
  end = 0;
  busy = 0;
  for (std::size_t j = n_layers; j-- > 0;) {
    double start = end;
    if (j < offloaded) start = std::max(start, reload_end[j]);  // issued when layer j + K ended, below
    end = start + layers[j].backward_ns;
    busy += layers[j].backward_ns;
    // Layer j's backward frees a slot: the reload of layer j - K may start (reloads run in order,
    // the last offloaded layer first).
    if (j >= slots && j - slots < offloaded) {
      const std::size_t i = j - slots;
      reload_free = std::max(reload_free, end) + layers[i].copy_ns;
      reload_end[i] = reload_free;
    }
  }
  stall.backward_ns = end - busy;
  return stall;
}

}  // namespace pipelab::sim
