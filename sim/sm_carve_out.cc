// Compute beside communication kernels; see sm_carve_out.h.
#include "pipelab/sim/sm_carve_out.h"

#include <algorithm>

namespace pipelab::sim {

double sm_carve_out_loss(double held_sms, int sm_count) {
  // GpuSpec::validate() keeps sm_count above every kernel's SMs; a spec built without it is taken as
  // unknown rather than as compute that never runs.
  if (sm_count <= 0 || held_sms <= 0 || held_sms >= sm_count) return 0;
  const double share = held_sms / sm_count;
  return std::min(kSmCarveOutCost * share, 1 - (1 - share) / kSmCarveOutCost);
}

}  // namespace pipelab::sim
