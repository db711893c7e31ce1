// Schedule files: JSON (docs/formats.md) and PyTorch pipelining CSV (one row per rank, a cell per
// action in IR text, an empty cell = an idle step). Parsers take bytes and return a Schedule or a
// located error; they never throw on bad input, so a fuzzer can drive them.
#pragma once

#include <string>
#include <string_view>

#include "pipelab/base/result.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab {

enum class CsvFormat {
  ComputeOnly,   // PyTorch `compute_only`: compute actions, empty cells are idle steps
  ComputeComms,  // PyTorch `compute_comms`: lowered lists with SEND/RECV, no empty cells
};

/// Writes one row per rank. A lowered schedule is written in the compute_comms sense. InputError for
/// a schedule of two chains (DualPipe), which CSV cannot express.
std::string to_csv(const Schedule& s);

/// Parses a CSV schedule. The shape is inferred: ranks = rows, stages and microbatches from the
/// largest indices, placement from where each stage's actions appear (Loop or V when they match).
Result<Schedule> parse_csv(std::string_view text, CsvFormat format, std::string name = "csv");

std::string to_json_text(const Schedule& s);
Result<Schedule> parse_json(std::string_view text, std::string name = "json");

/// compute_comms when any SEND/RECV/REDUCE_GRAD cell is present, else compute_only.
CsvFormat sniff_csv_format(std::string_view text);

/// Parses by sniffing: JSON if the first non-blank byte is '{', otherwise CSV (sniff_csv_format).
Result<Schedule> parse_schedule(std::string_view text, std::string name);

}  // namespace pipelab
