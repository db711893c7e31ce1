// Shared pieces of the renderers: number formatting, escaping, and the comparison table model
// (rows, unit-converted cells, best values, verdicts) that HTML and Markdown both print, so the two
// always carry the same table.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
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

/// A time unit for an axis or a column: the largest of ns, us, ms, s in which `span_ns` is at least
/// 10 units (s from 10 s, ms from 10 ms, us from 10 us, else ns), so a span never reads below 10.
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

/// The name of a model or GPU (`key` "model" or "gpu"), written either as its spec (an object with
/// "name") or as a preset name (a string); "" when absent.
std::string config_name(const nlohmann::json& config, const char* key);

/// The job's GPU count: `parallel.gpus`, else `parallel.world`; "" when neither is present.
std::string config_gpus(const nlohmann::json& config);

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

/// A footer line. Verdicts (`judged`) end in an OK or FAILED word, which is not part of `text`:
/// each renderer prints `text`, ": " and verdict_word(), styled its own way.
struct Verdict {
  std::string text;     // one line, without the closing OK/FAILED word
  bool ok = true;
  bool judged = true;   // false: a plain line (the count line), no OK/FAILED word
};
/// "OK" or "FAILED", from `ok`.
inline const char* verdict_word(const Verdict& v) { return v.ok ? "OK" : "FAILED"; }

/// Predicted-vs-measured rows for run results: the producer's `comparison` figures, formatted.
struct FidelityRow {
  const ReportInput* input = nullptr;
  std::string schedule;
  std::string makespan_error;    // "%", signed; "-" when the result has none
  std::string bubble_predicted;  // "%"; "-" when the result has none
  std::string bubble_measured;   // "%"; "-" when the result has none
  std::string action_p50;        // "%"
  std::string action_p90;        // "%"
  std::string gradients;         // "passed (max rel 3.1e-07)", "FAILED (...)", or ""
  bool within = false;           // |makespan error| <= 5% and |bubble difference| <= 0.02, every
                                 // figure present (a missing one never counts as within)
};
std::vector<FidelityRow> fidelity_rows(const std::vector<ReportInput>& inputs);

inline constexpr double kMakespanErrorThreshold = 0.05;  // DESIGN.md §8 fidelity targets
inline constexpr double kBubbleDiffThreshold = 0.02;

struct ComparisonTable {
  bool multi_input = false;            // more than one input: rows carry the input name
  std::vector<TableRow> rows;          // one per timeline, in input then schedule order
  std::vector<const ScheduleResult*> failed;
  std::vector<const ReportInput*> failed_input;  // parallel to `failed`
  std::vector<FidelityRow> fidelity;   // fidelity_rows(inputs): one per run result's schedule
  std::vector<Verdict> footer;         // count line, memory verdict, fidelity verdict (runs)
};

/// Builds the table: one row per timeline; best values per column among the rows of the same
/// source (simulated / predicted / measured) that fit in memory, marked only when at least two rows
/// of the group fit (an OOM row is never best; a group with fewer than two fitting rows has none).
ComparisonTable build_comparison(const std::vector<ReportInput>& inputs);

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
