// The SVG charts of the HTML report: a schedule's timeline (every run stacked on the schedule's time
// axis), memory over time per rank against the capacity, and the throughput bars of the comparison.
// Element classes and data attributes are stable hooks (docs/metrics.md, "Report formats").
#pragma once

#include <sstream>

#include "pipelab/reports/result.h"
#include "table_model.h"
#include "time_axis.h"

namespace pipelab::reports::detail {

/// One timeline SVG for a schedule: every run (predicted, measured) stacked on `axis`.
void timeline_svg(std::ostringstream& os, const ReportInput& in, const ScheduleResult& s, const TimeAxis& axis);

/// Memory over time of one run, one polyline per rank, against the capacity line, on `axis` (the
/// same x for the same time as the schedule's timeline). Nothing when the run has no memory series.
void memory_svg(std::ostringstream& os, const ReportInput& in, const ScheduleResult& s, const TimelineResult& run,
                const TimeAxis& axis);

/// Model TFLOP/s per GPU of every row of the comparison, as bars (red: out of memory).
void throughput_chart(std::ostringstream& os, const ComparisonTable& t);

}  // namespace pipelab::reports::detail
