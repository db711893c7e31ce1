// The eight phases shared by DualPipe and DualPipeV (deepseek-ai/DualPipe `step()`); the two differ
// only in which stages a rank's chunks are and in the phase counts. Private to schedules/.
#pragma once

#include "rank_builder.h"

namespace pipelab::detail {

struct DualPipePhases {
  int s0;                  // chunk 0's stage
  int s1;                  // chunk 1's stage
  int depth;               // DualPipe: min(r, P-1-r); DualPipeV: r
  int depth_count;         // DualPipe: P/2; DualPipeV: P
  int main_steps;          // phase 4 trip count
  bool no_first_overlap;   // run phase 4's first F0 and B1 separately (middle / last rank)
};

void emit_dualpipe_phases(RankBuilder& rb, const DualPipePhases& p);

}  // namespace pipelab::detail
