// Shared pieces of the renderers: number formatting, escaping, and the comparison table model
// (rows, unit-converted cells, best values, verdicts) that HTML and Markdown both print, so the two
// always carry the same table.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/reports/result.h"

namespace pipelab::reports::detail {

// --- formatting -----------------------------------------------------------------------------

/// Fixed-point with `decimals` digits; never prints "-0", "nan" or "inf" (those print as "0"/"-").
std::string fixed(double v, int decimals);
/// Decimals that give `significant` digits for the largest magnitude of a column (0..6).
int decimals_for(double max_abs, int significant = 4);
/// The shortest text that reads back as the same double (JSON number syntax).
std::string json_number(double v);
/// 1234567 -> "1,234,567".
std::string with_commas(std::int64_t v);

std::string html_escape(std::string_view s);
/// Quotes a CSV field when it holds a comma, quote or newline (RFC 4180).
std::string csv_field(std::string_view s);

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

/// A time unit for an axis or a column: the largest of ns, us, ms, s not above `span_ns`.
struct TimeUnit {
  const char* name;    // "ns", "µs", "ms", "s"
  const char* ascii;   // "ns", "us", "ms", "s"
  double ns;           // nanoseconds per unit
};
TimeUnit time_unit_for(double span_ns);

/// Evenly spaced "nice" tick values (1, 2, 5 x 10^k) covering [lo, hi], at most about `target`.
std::vector<double> nice_ticks(double lo, double hi, int target);

// --- configuration ---------------------------------------------------------------------------

/// Text of a config value at a path ("parallel.tp"); "" when absent. Strings unquoted, numbers as
/// written, booleans true/false, arrays joined with ", ".
std::string config_text(const nlohmann::json& config, std::initializer_list<const char*> path);

/// The configuration rows (label, per-input text) shown at the top of HTML and Markdown.
struct ConfigRow {
  std::string label;
  std::vector<std::string> values;  // per input; "" when absent
};
std::vector<ConfigRow> config_rows(const std::vector<ReportInput>& inputs);

// --- the comparison table --------------------------------------------------------------------

enum Metric { kIterationTime, kBubble, kTflops, kMfu, kTokens, kPeakMemory, kExposedComm, kNumMetrics };

struct MetricColumn {
  const char* header;      // "iteration time"
  const char* unit;        // "(ms)"
  bool higher_is_better;
};
const std::array<MetricColumn, kNumMetrics>& metric_columns();

struct TableRow {
  const ReportInput* input = nullptr;
  const ScheduleResult* schedule = nullptr;
  const TimelineResult* run = nullptr;
  std::string label;                              // "zb-v", or "1f1b (measured)" for runs
  std::array<double, kNumMetrics> value{};        // unit-converted (ms, %, TFLOPS, %, tokens/s, GiB, ms)
  std::array<std::string, kNumMetrics> text{};    // formatted with the column's decimals
  std::array<bool, kNumMetrics> best{};
  bool oom = false;
};

struct Verdict {
  std::string text;  // one line, ending in OK or FAILED
  bool ok = true;
};

struct ComparisonTable {
  bool multi_input = false;            // more than one input: rows carry the input name
  std::vector<TableRow> rows;          // one per timeline, in input then schedule order
  std::vector<const ScheduleResult*> failed;
  std::vector<const ReportInput*> failed_input;  // parallel to `failed`
  std::vector<Verdict> footer;         // count line, memory verdict, fidelity verdict (runs)
};

/// Builds the table: one row per timeline; best values per column among rows of the same source
/// (simulated / predicted / measured) that fit in memory, marked only when the group has two rows.
ComparisonTable build_comparison(const std::vector<ReportInput>& inputs);

/// Predicted-vs-measured rows for run results: the producer's `comparison` figures, formatted.
struct FidelityRow {
  const ReportInput* input = nullptr;
  std::string schedule;
  std::string makespan_error;   // "%", signed
  std::string bubble_predicted;  // "%"
  std::string bubble_measured;   // "%"
  std::string action_p50;        // "%"
  std::string action_p90;        // "%"
  std::string gradients;         // "passed (max rel 3.1e-07)", "FAILED (...)", or ""
  bool within = true;            // |makespan error| <= 5% and |bubble difference| <= 0.02
};
std::vector<FidelityRow> fidelity_rows(const std::vector<ReportInput>& inputs);

inline constexpr double kMakespanErrorThreshold = 0.05;  // DESIGN.md §8 fidelity targets
inline constexpr double kBubbleDiffThreshold = 0.02;

// --- timelines -------------------------------------------------------------------------------

/// Short label of an action for boxes: the microbatch ("3"), or "3/1" for an F&B unit.
std::string box_label(const Action& a);
/// CSS class suffix of an op: "F", "B", "I", "W", "FB", "SEND_F", ...
std::string op_class(Op op);
/// The index of each event's stage among the stages its rank computes ("chunk"), per rank.
std::vector<std::vector<int>> chunk_of_events(const Timeline& t);

/// A lock-step-like grid from a timeline's compute events: each event takes the column after every
/// compute event (any rank) that ended before it started, and after its rank's previous event.
/// Cells are compact IR labels, "." where a rank computes nothing in a column.
std::vector<std::vector<std::string>> timeline_text_grid(const Timeline& t);

}  // namespace pipelab::reports::detail
