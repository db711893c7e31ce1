// Interleaved 1F1B (Megatron virtual pipeline): v chunks per rank in Loop placement, chunks visited
// in microbatch groups of N (default P), warm-up (P-r-1)*2 + (v-1)*N.
#include "pipelab/schedules/generators.h"
#include "interleaved_table.h"
#include "rank_builder.h"

#include <algorithm>

namespace pipelab {

Schedule make_interleaved_1f1b(const ScheduleOptions& o) {
  const int v = o.vp > 0 ? o.vp : 2;
  const int m = o.microbatches;
  const int n = detail::check_interleaving("interleaved-1f1b", o.pp, v, m, o.group_size);
  PipelineShape shape = make_shape(o.pp, o.pp * v, m, Placement::Loop);
  const std::vector<int> chunk = detail::interleaved_chunk_order(m, v, n);
  const int total = m * v;
  std::vector<std::vector<Slot>> ranks;
  for (int r = 0; r < o.pp; ++r) {
    detail::RankBuilder rb(shape);
    auto stage = [&](int c) { return c * o.pp + r; };
    auto fwd = [&](int k) { rb.f(stage(chunk[static_cast<std::size_t>(k)])); };
    auto bwd = [&](int k) { rb.b(stage(v - 1 - chunk[static_cast<std::size_t>(k)])); };
    const int warmup = std::min((o.pp - r - 1) * 2 + (v - 1) * n, total);
    // Step 1: warm-up forwards, through the chunks one microbatch group at a time.
    for (int k = 0; k < warmup; ++k) fwd(k);
    // Step 2: steady state, forward k+warmup then backward k.
    for (int k = 0; k < total - warmup; ++k) {
      fwd(k + warmup);
      bwd(k);
    }
    // Step 3: cool-down backwards.
    for (int k = total - warmup; k < total; ++k) bwd(k);
    ranks.push_back(rb.take());
  }
  return detail::assemble("interleaved-1f1b", std::move(shape), std::move(ranks));
}

}  // namespace pipelab
