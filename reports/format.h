// Number and time formatting shared by the renderers: fixed decimals that never print "-0", "nan"
// or "inf", column decimals, JSON numbers, thousands separators, time units and axis ticks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipelab::reports::detail {

/// Fixed-point with `decimals` digits; never prints "-0", "nan" or "inf" (those print as "0"/"-").
std::string fixed(double v, int decimals);
/// Decimals that give `significant` digits for the largest magnitude of a column (0..6).
int decimals_for(double max_abs, int significant = 4);
/// The shortest text that reads back as the same double (JSON number syntax).
std::string json_number(double v);
/// The shortest plain text of a limit: 5 -> "5", 0.02 -> "0.02" (up to 6 significant digits).
std::string short_number(double v);
/// Nanoseconds as milliseconds with 3 decimals, no unit: 1234567 -> "1.235".
std::string milliseconds(std::int64_t ns);
/// 1234567 -> "1,234,567".
std::string with_commas(std::int64_t v);

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

}  // namespace pipelab::reports::detail
