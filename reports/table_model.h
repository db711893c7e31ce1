// The comparison table model that HTML, Markdown and the terminal summary all print, so they
// always carry the same table: rows per timeline with unit-converted values and their text, the
// best value per column, failed schedules, footer verdicts, and the predicted-vs-measured rows of
// run results with their column spec and threshold text.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/reports/result.h"

namespace pipelab::reports::detail {

/// Calls fn(input, schedule, timeline) for every timeline, in input, schedule and run order (a
/// failed schedule has none): the one walk of the renderers over their inputs.
template <class Fn>
void for_each_timeline(const std::vector<ReportInput>& inputs, Fn&& fn) {
  for (const ReportInput& in : inputs) {
    for (const ScheduleResult& s : in.schedules) {
      for (const TimelineResult& run : s.runs) fn(in, s, run);
    }
  }
}

// --- the comparison table --------------------------------------------------------------------

enum Metric { kIterationTime, kBubble, kPipelineBubble, kTflops, kMfu, kTokens, kPeakMemory, kExposedComm, kNumMetrics };

struct MetricColumn {
  const char* header;      // "iteration time"
  const char* unit;        // "(ms)"
  bool higher_is_better;
};
const std::array<MetricColumn, kNumMetrics>& metric_columns();

struct TableRow {
  const ReportInput* input = nullptr;             // into ComparisonTable::inputs
  const ScheduleResult* schedule = nullptr;
  const TimelineResult* run = nullptr;
  std::string label;                              // "zb-v", or "1f1b (measured)" for runs
  std::array<double, kNumMetrics> value{};        // unit-converted (ms, %, %, TFLOPS, %, tokens/s, GiB, ms)
  std::array<bool, kNumMetrics> missing{};        // the result states no value (null): text "-", never best
  std::array<std::string, kNumMetrics> text{};    // formatted with the column's decimals; "-" when missing
  std::array<bool, kNumMetrics> best{};
  bool oom = false;
};

struct FailedSchedule {
  const ReportInput* input = nullptr;             // into ComparisonTable::inputs
  const ScheduleResult* schedule = nullptr;
};

/// A footer line. Verdicts (`judged`) end in an OK or FAILED word, which is not part of `text`:
/// each renderer prints `text`, ": " and verdict_word(), styled its own way.
struct Verdict {
  std::string text;     // one line, without the closing OK/FAILED word
  bool ok = true;
  bool judged = true;   // false: a plain line (the count line), no OK/FAILED word
};
/// "OK" or "FAILED", from `ok`.
inline const char* verdict_word(const Verdict& v) { return v.ok ? "OK" : "FAILED"; }

// --- predicted vs measured -------------------------------------------------------------------

enum FidelityColumn {
  kFidelitySchedule, kMakespanError, kBubblePredicted, kBubbleMeasured, kActionErrorP50, kActionErrorP90,
  kGradients, kWithin, kNumFidelityColumns
};

struct ColumnSpec {
  const char* header;  // "makespan error"
  const char* unit;    // "(%)", or "" for text columns
  bool numeric;        // right-aligned
};
const std::array<ColumnSpec, kNumFidelityColumns>& fidelity_columns();

/// "makespan error = predicted / measured - 1": the definition the predicted-vs-measured notes print.
inline constexpr std::string_view kMakespanErrorDefinition = "makespan error = predicted / measured - 1";

/// Predicted-vs-measured rows for run results: the producer's `comparison` figures, formatted.
struct FidelityRow {
  const ReportInput* input = nullptr;  // into ComparisonTable::inputs
  std::string schedule;
  std::string makespan_error;    // "%", signed; "-" when the result has none
  std::string bubble_predicted;  // "%"; "-" when the result has none
  std::string bubble_measured;   // "%"; "-" when the result has none
  std::string action_p50;        // "%"
  std::string action_p90;        // "%"
  std::string gradients;         // "passed (max rel 3.1e-07)", "FAILED (...)", or ""
  bool within = false;           // within_fidelity() of the figures (a missing one is never within)
};

// --- the table -------------------------------------------------------------------------------

struct ComparisonTable {
  /// The table's own inputs: every pointer of its rows points into them, so a table (or a copy of
  /// one) stays valid after the vector it was built from is gone.
  std::shared_ptr<const std::vector<ReportInput>> inputs;
  bool multi_input = false;            // more than one input: rows carry the input name
  std::vector<TableRow> rows;          // one per timeline, in input then schedule order
  std::vector<FailedSchedule> failed;  // schedules the configuration broke, in input order
  std::vector<FidelityRow> fidelity;   // one per run result's schedule
  std::vector<Verdict> footer;         // count line, memory verdict, fidelity verdict (runs)
};

/// Builds the table: one row per timeline; best values per column among the rows of the same
/// source (simulated / predicted / measured) that fit in memory, marked only when at least two rows
/// of the group fit (an OOM row is never best; a group with fewer than two fitting rows has none).
ComparisonTable build_comparison(std::vector<ReportInput> inputs);

/// Whether a result states any memory (uniform costs model none: every rank's peak is 0).
bool states_memory(const TimelineResult& run);
/// Whether any row of the table does.
bool states_memory(const ComparisonTable& t);

/// The memory footer line: "memory: K of N fit in X GiB[; over: names]" (a verdict; OK when all fit),
/// or a plain "memory: not modelled" line when no row states any memory (uniform costs).
Verdict memory_verdict(const ComparisonTable& t);

}  // namespace pipelab::reports::detail
