// Shape inference for CSV schedules.
#include "shape_inference.h"

#include <algorithm>

namespace pipelab::detail {

Placement detect_placement(int ranks, const std::vector<int>& stage_to_rank) {
  const int stages = static_cast<int>(stage_to_rank.size());
  for (Placement p : {Placement::Loop, Placement::V}) {
    if (p == Placement::V && stages % (2 * ranks) != 0) continue;
    bool match = true;
    for (int s = 0; s < stages && match; ++s) match = stage_to_rank[static_cast<std::size_t>(s)] == placed_rank(p, ranks, stages, s);
    if (match) return p;
  }
  return Placement::Explicit;
}

Result<Schedule> infer_shape(std::string name, std::vector<std::vector<Slot>> ranks, const std::vector<std::vector<int>>& columns) {
  int max_stage = -1, max_mb = -1;
  for (const auto& list : ranks) {
    for (const Slot& a : list) {
      if (!a) continue;
      max_stage = std::max({max_stage, a->stage, a->b_stage});
      max_mb = std::max({max_mb, a->mb, a->b_mb});
    }
  }
  if (max_stage < 0) return ParseError{"schedule has no actions"};
  if (static_cast<long long>(max_stage + 1) * (max_mb + 1) > kMaxStageMicrobatches) {
    return ParseError{"stages x microbatches = " + std::to_string(static_cast<long long>(max_stage + 1) * (max_mb + 1)) +
                      " (from the largest indices) exceeds the limit of " + std::to_string(kMaxStageMicrobatches)};
  }
  const int stages = max_stage + 1;
  std::vector<int> stage_to_rank(static_cast<std::size_t>(stages), -1);
  for (int r = 0; r < static_cast<int>(ranks.size()); ++r) {
    const std::vector<Slot>& list = ranks[static_cast<std::size_t>(r)];
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Slot& a = list[i];
      if (!a || !is_compute(a->op)) continue;
      for (int s : {a->stage, a->op == Op::OverlapFB ? a->b_stage : -1}) {
        if (s < 0) continue;
        int& owner = stage_to_rank[static_cast<std::size_t>(s)];
        if (owner >= 0 && owner != r) {
          return ParseError{"stage " + std::to_string(s) + " has compute actions on rank " + std::to_string(owner) + " and on rank " +
                            std::to_string(r) + "; each stage must live on one rank",
                            r + 1, columns[static_cast<std::size_t>(r)][i]};
        }
        owner = r;
      }
    }
  }
  for (int s = 0; s < stages; ++s) {
    if (stage_to_rank[static_cast<std::size_t>(s)] < 0) {
      return ParseError{"stage " + std::to_string(s) + " has no compute actions, so its rank is unknown"};
    }
  }
  Schedule out;
  out.name = std::move(name);
  out.shape.ranks = static_cast<int>(ranks.size());
  out.shape.stages = stages;
  out.shape.microbatches = max_mb + 1;
  out.shape.chains = 1;
  out.shape.placement = detect_placement(out.shape.ranks, stage_to_rank);
  out.shape.stage_to_rank = std::move(stage_to_rank);
  out.ranks = std::move(ranks);
  return out;
}

}  // namespace pipelab::detail
