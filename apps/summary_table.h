// The terminal summary table of simulate / compare, in nccl-tests style: a header, a units row,
// one line per schedule, and a footer that names the best schedule and any OOM.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "pipelab/sim/simulation.h"

namespace pipelab::app {

struct TableRow {
  std::string schedule;
  const sim::SimulationOutcome* outcome = nullptr;  // null: error
  std::string error;
};

/// Returns true when every listed schedule ran and none is out of memory.
bool print_summary_table(std::ostream& os, const std::vector<TableRow>& rows);

}  // namespace pipelab::app
