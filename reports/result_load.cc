// Reading result JSON (docs/formats.md), the inverse of to_json (result_write.cc): checks the
// format, version, kind and every field, and reports the first problem with its path
// (`results[1].summary.mfu`). Keys older files or hand-made inputs may lack get the defaults of
// result.h; to_json writes them all.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <type_traits>
#include <variant>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/reports/result.h"
#include "result_fields.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;

// Error context: the input's name and the JSON path of the object being read.
struct Where {
  const std::string& name;
  std::string path;  // "" for the top level

  Where at(const std::string& key) const { return {name, path.empty() ? key : path + "." + key}; }
  Where index(std::size_t i) const { return {name, path + "[" + std::to_string(i) + "]"}; }
  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(name + ": " + (path.empty() ? "" : path + ": ") + message);
  }
};

const json& field(const json& obj, const char* key, const Where& w) {
  if (!obj.is_object()) w.fail("expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) w.fail(std::string("missing field \"") + key + "\"");
  return *it;
}

// The one reading of an integer: a JSON integer, or an integral double (1e9) — finite, no fraction,
// |v| < 2^63 — so that the conversion to int64 is exact and defined. `w` is the value's own path.
std::int64_t as_int64(const json& v, const Where& w) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      w.fail("must be an integer below 2^63 (got " + v.dump() + ")");
    }
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (!v.is_number_float()) w.fail("must be an integer");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::trunc(d)) w.fail("must be an integer");
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(std::abs(d) < kTwoTo63)) w.fail("must be an integer of magnitude below 2^63 (got " + v.dump() + ")");
  return static_cast<std::int64_t>(d);
}

std::int64_t get_int(const json& obj, const char* key, const Where& w) {
  return as_int64(field(obj, key, w), w.at(key));
}

double get_number(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_number()) w.at(key).fail("must be a number");
  return v.get<double>();
}

bool get_bool(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_boolean()) w.at(key).fail("must be true or false");
  return v.get<bool>();
}

std::string get_string(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_string()) w.at(key).fail("must be a string");
  return v.get<std::string>();
}

// Optional fields: the default when the key is absent, else checked as the required readers do.
std::int64_t optional_int(const json& obj, const char* key, const Where& w, std::int64_t fallback = 0) {
  return obj.contains(key) ? get_int(obj, key, w) : fallback;
}

double optional_number(const json& obj, const char* key, const Where& w, double fallback) {
  return obj.contains(key) ? get_number(obj, key, w) : fallback;
}

std::vector<std::int64_t> int_array(const json& obj, const char* key, const Where& w) {
  std::vector<std::int64_t> out;
  if (!obj.contains(key)) return out;
  const json& a = obj[key];
  if (!a.is_array()) w.at(key).fail("must be an array of integers");
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back(as_int64(a[i], w.at(key).index(i)));
  return out;
}

// Reads every field of `fields` from `obj` into `out`.
template <class T, std::size_t N>
void read_fields(const json& obj, const std::array<detail::Field<T>, N>& fields, T& out, const Where& w) {
  for (const detail::Field<T>& f : fields) {
    if (!f.required && !obj.contains(f.key)) continue;
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(out.*member)>;
          if constexpr (std::is_same_v<Value, bool>) {
            out.*member = get_bool(obj, f.key, w);
          } else if constexpr (std::is_same_v<Value, double>) {
            out.*member = get_number(obj, f.key, w);
          } else if constexpr (std::is_same_v<Value, std::vector<std::int64_t>>) {
            field(obj, f.key, w);  // present (a required field), then read as an array
            out.*member = int_array(obj, f.key, w);
          } else {
            out.*member = static_cast<Value>(get_int(obj, f.key, w));
          }
        },
        f.member);
  }
}

Summary read_summary(const json& j, const Where& w) {
  if (!j.is_object()) w.fail("expected an object");
  Summary s;
  read_fields(j, detail::kSummaryFields, s, w);
  if (s.makespan_ns < 0) w.at("makespan_ns").fail("must not be negative");
  return s;
}

std::vector<RankRow> read_ranks(const json& j, const Where& w) {
  if (!j.is_array()) w.fail("must be an array");
  std::vector<RankRow> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Where e = w.index(i);
    RankRow r;
    if (!j[i].is_object()) e.fail("expected an object");
    read_fields(j[i], detail::kRankFields, r, e);
    if (j[i].contains(detail::kStaticPartsFields[0].key)) {
      read_fields(j[i], detail::kStaticPartsFields, r.static_parts.emplace(), e);
    }
    out.push_back(r);
  }
  return out;
}

std::vector<MemorySeries> read_memory(const json& j, const Where& w) {
  if (!j.is_array()) w.fail("must be an array");
  std::vector<MemorySeries> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Where e = w.index(i);
    MemorySeries m;
    m.rank = static_cast<int>(get_int(j[i], "rank", e));
    const json& samples = field(j[i], "samples", e);
    if (!samples.is_array()) e.at("samples").fail("must be an array of [time_ns, bytes] pairs");
    m.samples.reserve(samples.size());
    for (std::size_t k = 0; k < samples.size(); ++k) {
      const json& p = samples[k];
      const Where sample = e.at("samples").index(k);
      if (!p.is_array() || p.size() != 2) sample.fail("must be a [time_ns, bytes] pair of integers");
      m.samples.emplace_back(as_int64(p[0], sample.index(0)), as_int64(p[1], sample.index(1)));
    }
    std::stable_sort(m.samples.begin(), m.samples.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<DeviceActivity> read_device_activity(const json& j, const Where& w) {
  if (!j.is_array()) w.fail("must be an array");
  std::vector<DeviceActivity> out;
  out.reserve(j.size());
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Where e = w.index(i);
    DeviceActivity a;
    a.rank = static_cast<int>(get_int(j[i], "rank", e));
    a.name = get_string(j[i], "name", e);
    a.start_ns = get_int(j[i], "start_ns", e);
    a.end_ns = get_int(j[i], "end_ns", e);
    a.bytes = get_int(j[i], "bytes", e);
    a.action = get_string(j[i], "action", e);
    if (a.rank < 0 || a.end_ns < a.start_ns) e.fail("needs rank >= 0 and end_ns >= start_ns");
    out.push_back(std::move(a));
  }
  return out;
}

TimelineResult read_timeline_result(const json& j, const Where& w, std::string source) {
  if (!j.is_object()) w.fail("expected an object");
  TimelineResult t;
  t.source = std::move(source);
  t.summary = read_summary(field(j, "summary", w), w.at("summary"));
  if (j.contains("ranks")) t.ranks = read_ranks(j["ranks"], w.at("ranks"));
  const json& timeline = field(j, "timeline", w);
  try {
    t.timeline = timeline_from_json(timeline);
  } catch (const InputError& e) {
    w.fail(e.what());
  }
  if (j.contains("memory")) t.memory = read_memory(j["memory"], w.at("memory"));
  if (j.contains("device_activity")) t.device_activity = read_device_activity(j["device_activity"], w.at("device_activity"));
  return t;
}

std::string schedule_name(const json& config, const Where& w) {
  return get_string(config, "schedule", w.at("config"));
}

std::vector<std::string> string_array(const json& obj, const char* key, const Where& w) {
  std::vector<std::string> out;
  if (!obj.contains(key)) return out;
  const json& a = obj[key];
  if (!a.is_array()) w.at(key).fail("must be an array of strings");
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_string()) w.at(key).index(i).fail("must be a string");
    out.push_back(a[i].get<std::string>());
  }
  return out;
}

// The fidelity verdict reads makespan_error and both bubbles: a run without them cannot be judged,
// so it is rejected here rather than counted as within the thresholds.
RunComparison read_comparison(const json& c, const Where& w) {
  if (!c.is_object()) w.fail("must be an object");
  auto finite = [&](const char* key) {
    const double v = get_number(c, key, w);
    if (!std::isfinite(v)) w.at(key).fail("must be a finite number");
    return v;
  };
  RunComparison out;
  FidelityReport& f = out.fidelity;
  f.makespan_error = finite("makespan_error");
  f.bubble_predicted = finite("bubble_predicted");
  f.bubble_measured = finite("bubble_measured");
  const double kNotStated = std::numeric_limits<double>::quiet_NaN();
  f.action_error_p50 = optional_number(c, "action_error_p50", w, kNotStated);
  f.action_error_p90 = optional_number(c, "action_error_p90", w, kNotStated);
  f.actions_compared = static_cast<std::size_t>(std::max<std::int64_t>(0, optional_int(c, "actions_compared", w)));
  if (c.contains("compute_time_ratio")) {
    const json& ratios = c["compute_time_ratio"];
    if (!ratios.is_array()) w.at("compute_time_ratio").fail("must be an array of numbers (one per rank)");
    for (std::size_t i = 0; i < ratios.size(); ++i) {
      if (!ratios[i].is_number()) w.at("compute_time_ratio").index(i).fail("must be a number");
      f.compute_time_ratio.push_back(ratios[i].get<double>());
    }
  }
  f.makespan_predicted_ns = optional_int(c, "makespan_predicted_ns", w);
  f.makespan_measured_ns = optional_int(c, "makespan_measured_ns", w);
  out.measured_makespans_ns = int_array(c, "measured_makespans_ns", w);
  out.median_iteration = optional_int(c, "median_iteration", w);
  return out;
}

GradientCheckResult read_gradient_check(const json& g, const Where& w) {
  if (!g.is_object()) w.fail("must be an object");
  GradientCheckResult out;
  out.passed = get_bool(g, "passed", w);
  // JSON has no infinity: a check that found a part missing wrote null.
  const json& error = field(g, "max_rel_error", w);
  if (!error.is_number() && !error.is_null()) w.at("max_rel_error").fail("must be a number (or null)");
  out.max_rel_error = error.is_null() ? std::numeric_limits<double>::infinity() : error.get<double>();
  out.tolerance = optional_number(g, "tolerance", w, 0);
  if (g.contains("worst")) out.worst = get_string(g, "worst", w);
  return out;
}

}  // namespace

std::int64_t Summary::max_peak_memory_bytes() const {
  return peak_memory_bytes.empty() ? 0 : *std::max_element(peak_memory_bytes.begin(), peak_memory_bytes.end());
}

namespace {

// `label` names the input in errors (the path for files), `name` in tables.
ReportInput load(const json& j, const std::string& name, const std::string& label) {
  const Where top{label, ""};
  if (!j.is_object()) {
    top.fail("not a pipelab result: expected a JSON object with \"format\": \"" + std::string(kResultFormat) + "\"");
  }
  if (!j.contains("format")) top.fail("missing field \"format\" (not a pipelab result file?)");
  if (!j["format"].is_string() || j["format"].get<std::string>() != kResultFormat) {
    top.fail("field \"format\" is " + j["format"].dump() + ", expected \"" + std::string(kResultFormat) +
             "\" (not a result file)");
  }
  if (!j.contains("version")) top.fail("missing field \"version\"");
  if (!j["version"].is_number_integer()) top.fail("field \"version\" must be an integer");
  if (const auto v = j["version"].get<long long>(); v != kResultVersion) {
    top.fail("unsupported result version " + std::to_string(v) + "; this build reads " + std::to_string(kResultVersion));
  }
  ReportInput in;
  in.name = name;
  in.kind = get_string(j, "kind", top);
  in.config = field(j, "config", top);
  if (!in.config.is_object()) top.at("config").fail("must be an object");

  if (in.kind == "simulate") {
    ScheduleResult s;
    s.schedule = schedule_name(in.config, top);
    s.runs.push_back(read_timeline_result(j, top, "simulated"));
    in.schedules.push_back(std::move(s));
  } else if (in.kind == "compare") {
    const json& results = field(j, "results", top);
    if (!results.is_array()) top.at("results").fail("must be an array");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Where e = top.at("results").index(i);
      ScheduleResult s;
      s.schedule = get_string(results[i], "schedule", e);
      if (results[i].contains("error")) {
        s.error = get_string(results[i], "error", e);
        if (s.error.empty()) e.at("error").fail("must not be empty");
      } else {
        if (!results[i].contains("summary")) e.fail("missing field \"summary\" (or \"error\" for a failed schedule)");
        s.runs.push_back(read_timeline_result(results[i], e, "simulated"));
        s.vp = static_cast<int>(optional_int(results[i], "vp", e));
        s.warnings = string_array(results[i], "warnings", e);
      }
      in.schedules.push_back(std::move(s));
    }
  } else if (in.kind == "run") {
    ScheduleResult s;
    s.schedule = schedule_name(in.config, top);
    s.runs.push_back(read_timeline_result(field(j, "predicted", top), top.at("predicted"), "predicted"));
    s.runs.push_back(read_timeline_result(field(j, "measured", top), top.at("measured"), "measured"));
    s.comparison = read_comparison(field(j, "comparison", top), top.at("comparison"));
    if (j.contains("gradient_check")) s.gradient_check = read_gradient_check(j["gradient_check"], top.at("gradient_check"));
    in.schedules.push_back(std::move(s));
  } else {
    top.fail("field \"kind\" is \"" + in.kind + "\"; this build renders simulate, compare and run results");
  }
  return in;
}

}  // namespace

ReportInput load_result(const json& j, const std::string& name) { return load(j, name, name); }

ReportInput load_result_file(const std::string& path) {
  const std::string text = read_text_file(path, "result");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path + ": not JSON (" + e.what() + ")");
  }
  std::string name = std::filesystem::path(path).stem().string();
  if (name.empty()) name = path;
  return load(j, name, path);
}

}  // namespace pipelab::reports
