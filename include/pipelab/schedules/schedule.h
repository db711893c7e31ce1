// Schedule: the shape of a pipeline (ranks, virtual stages, microbatches, stage -> rank placement)
// and, per rank, the ordered list of actions that rank runs. Both the simulator and the runtime
// consume this type (after lowering), so a schedule means the same thing to both.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/schedules/action.h"

namespace pipelab {

/// How virtual stages map to ranks.
enum class Placement : std::uint8_t {
  Loop,      // rank(s) = s % P (Megatron interleaved, looped BFS)
  V,         // rank(s) = s for s < P, 2P-1-s otherwise (ZB-V, DualPipeV, DualPipe's two directions)
  Explicit,  // any other map, e.g. from a CSV file
};

std::string_view placement_name(Placement p);
/// "loop" | "v" | "explicit"; InputError naming the valid names otherwise.
Placement parse_placement(std::string_view name);

/// The shape of a pipeline. Stages are split into `chains` equal runs of consecutive stages; each
/// microbatch flows through one chain. A normal pipeline has one chain. DualPipe has two (its two
/// directions): chain 0 = stages [0, P) and chain 1 = stages [P, 2P), and microbatches
/// [0, m/2) use chain 0, [m/2, m) chain 1. Stage k of every chain holds the same model part.
struct PipelineShape {
  int ranks = 1;         // P: pipeline-parallel ranks
  int stages = 1;        // S: virtual stages over all chains
  int microbatches = 1;  // m: microbatches per iteration, over all chains
  int chains = 1;
  Placement placement = Placement::Loop;
  std::vector<int> stage_to_rank;  // size S

  int stages_per_chain() const { return stages / chains; }
  int microbatches_per_chain() const { return microbatches / chains; }
  int chain_of_stage(int s) const { return s / stages_per_chain(); }
  int chain_of_microbatch(int mb) const { return mb / microbatches_per_chain(); }
  /// Model part held by a stage: its position within its chain.
  int part_of_stage(int s) const { return s % stages_per_chain(); }
  bool first_in_chain(int s) const { return part_of_stage(s) == 0; }
  bool last_in_chain(int s) const { return part_of_stage(s) == stages_per_chain() - 1; }
  int rank_of(int s) const { return stage_to_rank[static_cast<std::size_t>(s)]; }
  /// Stages held by a rank, ascending.
  std::vector<int> stages_of_rank(int r) const;

  bool operator==(const PipelineShape&) const = default;
};

/// Largest stages x microbatches a schedule may have: the validator and the simulator keep a few
/// entries per (signal, stage, microbatch), so this bounds their memory. Parsers enforce it.
inline constexpr long long kMaxStageMicrobatches = 20'000'000;

/// Largest schedule: make_schedule builds at most this many actions (about 3 per stage and
/// microbatch), and a schedule file may hold at most this many list entries (actions and idle
/// steps), so a file of commas or nulls cannot allocate without bound.
inline constexpr long long kMaxScheduleActions = 50'000'000;

/// Builds a shape with a computed Loop or V placement. Throws ScheduleError on impossible shapes.
PipelineShape make_shape(int ranks, int stages, int microbatches, Placement placement, int chains = 1);

/// Rank of stage s under a placement rule (Loop or V).
int placed_rank(Placement placement, int ranks, int stages, int s);

/// A schedule step: an action, or an idle step kept from a generator's lock-step layout.
using Slot = std::optional<Action>;

struct Schedule {
  std::string name;      // generator name, or the file it came from
  PipelineShape shape;
  std::vector<std::vector<Slot>> ranks;  // per rank, in execution order

  /// Number of actions (idle slots excluded).
  std::size_t action_count() const;
  /// True when the schedule carries explicit SEND/RECV actions (add_send_recv has run).
  bool has_comms() const;

  bool operator==(const Schedule&) const = default;
};

}  // namespace pipelab
