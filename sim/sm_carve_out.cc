// Compute beside communication kernels; see sm_carve_out.h.
#include "pipelab/sim/sm_carve_out.h"

#include <algorithm>

namespace pipelab::sim {

double sm_carve_out_loss(double held_sms, int sm_count) {
  if (sm_count <= 0 || held_sms <= 0) return 0;
  const double share = std::min(1.0, held_sms / sm_count);
  return std::min(kSmCarveOutCost * share, 1 - (1 - share) / kSmCarveOutCost);
}

}  // namespace pipelab::sim
