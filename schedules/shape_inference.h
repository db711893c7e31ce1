// Infers a PipelineShape from per-rank action lists (for CSV files, which carry no shape).
// Private to schedules/.
#pragma once

#include <string>
#include <vector>

#include "pipelab/base/result.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::detail {

/// ranks = lists, stages/microbatches from the largest indices, stage -> rank from where each
/// stage's compute actions run; placement Loop or V when the map matches, else Explicit.
/// `columns[r][i]` is the 1-based text column of slot i of rank r (on line r + 1), so an error about
/// one action names its cell.
Result<Schedule> infer_shape(std::string name, std::vector<std::vector<Slot>> ranks, const std::vector<std::vector<int>>& columns);

/// Loop or V if `stage_to_rank` matches that rule, else Explicit.
Placement detect_placement(int ranks, const std::vector<int>& stage_to_rank);

}  // namespace pipelab::detail
