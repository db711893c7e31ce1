// Shape and placement helpers of the schedule IR.
#include "pipelab/schedules/schedule.h"

#include <array>

#include "pipelab/base/error.h"
#include "pipelab/base/names.h"

namespace pipelab {
namespace {

constexpr std::array<EnumName<Placement>, 3> kPlacementNames = {
    {{Placement::Loop, "loop"}, {Placement::V, "v"}, {Placement::Explicit, "explicit"}}};

}  // namespace

std::string_view placement_name(Placement p) { return name_of(kPlacementNames, p); }

Placement parse_placement(std::string_view name) { return parse_name(kPlacementNames, "placement", name); }

int placed_rank(Placement placement, int ranks, int stages, int s) {
  if (placement == Placement::V) {
    // Stages fold back at the middle: 0..P-1 down the ranks, P..2P-1 back up.
    int within = s % (2 * ranks);
    (void)stages;
    return within < ranks ? within : 2 * ranks - 1 - within;
  }
  return s % ranks;
}

PipelineShape make_shape(int ranks, int stages, int microbatches, Placement placement, int chains) {
  if (ranks < 1) throw ScheduleError("pp must be >= 1, got " + std::to_string(ranks));
  if (stages < ranks) {
    throw ScheduleError("stages=" + std::to_string(stages) + " must be >= pp=" + std::to_string(ranks));
  }
  if (microbatches < 1) throw ScheduleError("microbatches must be >= 1, got " + std::to_string(microbatches));
  if (chains < 1 || stages % chains != 0 || microbatches % chains != 0) {
    throw ScheduleError("chains=" + std::to_string(chains) + " must divide stages=" + std::to_string(stages) +
                        " and microbatches=" + std::to_string(microbatches));
  }
  if (placement == Placement::Explicit) throw ScheduleError("make_shape needs a Loop or V placement");
  if (placement == Placement::V && stages % (2 * ranks) != 0) {
    throw ScheduleError("V placement needs stages to be a multiple of 2*pp=" + std::to_string(2 * ranks) +
                        ", got " + std::to_string(stages));
  }
  PipelineShape shape;
  shape.ranks = ranks;
  shape.stages = stages;
  shape.microbatches = microbatches;
  shape.chains = chains;
  shape.placement = placement;
  shape.stage_to_rank.resize(static_cast<std::size_t>(stages));
  for (int s = 0; s < stages; ++s) shape.stage_to_rank[static_cast<std::size_t>(s)] = placed_rank(placement, ranks, stages, s);
  return shape;
}

std::vector<int> PipelineShape::stages_of_rank(int r) const {
  std::vector<int> out;
  for (int s = 0; s < stages; ++s) {
    if (rank_of(s) == r) out.push_back(s);
  }
  return out;
}

std::size_t Schedule::action_count() const {
  std::size_t n = 0;
  for (const auto& rank : ranks) {
    for (const auto& slot : rank) n += slot.has_value();
  }
  return n;
}

bool Schedule::has_comms() const {
  for (const auto& rank : ranks) {
    for (const auto& slot : rank) {
      if (slot && is_p2p(slot->op)) return true;
    }
  }
  return false;
}

}  // namespace pipelab
