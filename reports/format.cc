// Number and time formatting of the renderers.
#include "format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace pipelab::reports::detail {

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  decimals = std::clamp(decimals, 0, 9);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  // "-0.00" -> "0.00"
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

int decimals_for(double max_abs, int significant) {
  if (!std::isfinite(max_abs) || max_abs <= 0) return 2;
  const int magnitude = static_cast<int>(std::floor(std::log10(max_abs)));
  return std::clamp(significant - 1 - magnitude, 0, 6);
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "0";
  return nlohmann::json(v).dump();
}

std::string short_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string milliseconds(std::int64_t ns) { return fixed(static_cast<double>(ns) / 1e6, 3); }

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

TimeUnit time_unit_for(double span_ns) {
  if (span_ns >= 1e10) return {"s", "s", 1e9};
  if (span_ns >= 1e7) return {"ms", "ms", 1e6};
  if (span_ns >= 1e4) return {"\u00b5s", "us", 1e3};
  return {"ns", "ns", 1};
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!(hi > lo) || target < 1) return out;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    if (out.size() > 1000) break;
  }
  return out;
}

}  // namespace pipelab::reports::detail
