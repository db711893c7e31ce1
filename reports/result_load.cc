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
#include "pipelab/base/json_reader.h"
#include "pipelab/base/limits.h"
#include "pipelab/reports/result.h"
#include "result_fields.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;
using detail::read_summary;

// Every number of the flat tables is a time, a byte or FLOP count, a rank or a ratio: none may be
// negative; integers fit their member (a rank below limits::kMaxWorldSize), reals are finite and at
// most limits::kMaxFlops, so no renderer's sum or product of them overflows.
std::int64_t checked_count(const JsonReader& r, std::string_view key, std::int64_t value, std::int64_t max) {
  if (value < 0 || value > max) r.fail_key(key, "must be in [0, " + std::to_string(max) + "], got " + std::to_string(value));
  return value;
}
double checked_real(const JsonReader& r, std::string_view key, double value) {
  if (!(value >= 0 && value <= limits::kMaxFlops)) r.fail_key(key, "must be in [0, 1e30], got " + number_text(value));
  return value;
}

// Reads every field of `fields` from `r`'s object into `out`.
template <class T, std::size_t N>
void read_fields(const JsonReader& r, const std::array<detail::Field<T>, N>& fields, T& out) {
  constexpr std::int64_t kMaxInt64 = std::numeric_limits<std::int64_t>::max();
  for (const detail::Field<T>& f : fields) {
    if (!f.required && !r.has(f.key)) continue;
    std::visit(
        [&](auto member) {
          using Value = std::remove_reference_t<decltype(out.*member)>;
          if constexpr (std::is_same_v<Value, std::optional<double>>) {
            const json& v = r.get(f.key);
            if (!v.is_number() && !v.is_null()) r.fail_type(f.key, "a number (or null)");
            out.*member = v.is_null() ? std::nullopt : std::optional<double>(checked_real(r, f.key, v.get<double>()));
          } else if constexpr (std::is_same_v<Value, bool>) {
            out.*member = r.get_bool(f.key);
          } else if constexpr (std::is_same_v<Value, double>) {
            out.*member = checked_real(r, f.key, r.get_double(f.key));
          } else if constexpr (std::is_same_v<Value, std::vector<std::int64_t>>) {
            const JsonArrayReader values = r.array(f.key, "an array of integers");
            if (values.size() > static_cast<std::size_t>(limits::kMaxWorldSize)) {
              values.fail("has " + std::to_string(values.size()) + " entries, more than the limit of " + std::to_string(limits::kMaxWorldSize));
            }
            out.*member = values.integrals();
            for (std::size_t i = 0; i < values.size(); ++i) {
              if ((out.*member)[i] < 0) values.fail("[" + std::to_string(i) + "] must not be negative, got " + std::to_string((out.*member)[i]));
            }
          } else {
            const std::int64_t max = std::is_same_v<Value, int> ? limits::kMaxWorldSize - 1 : kMaxInt64;
            out.*member = static_cast<Value>(checked_count(r, f.key, r.get_integral(f.key), max));
          }
        },
        f.member);
  }
}

RankRow read_rank(const JsonReader& r) {
  RankRow row;
  read_fields(r, detail::kRankFields, row);
  read_fields(r, detail::kIdleFields, row.idle);
  if (r.has(detail::kStaticPartsFields[0].key)) read_fields(r, detail::kStaticPartsFields, row.static_parts.emplace());
  return row;
}

MemorySeries read_memory_series(const JsonReader& r) {
  constexpr std::string_view kPair = "a [time_ns, bytes] pair of integers";
  MemorySeries m;
  m.rank = static_cast<int>(checked_count(r, "rank", r.get_integral("rank"), limits::kMaxWorldSize - 1));
  const JsonArrayReader samples = r.array("samples", "an array of [time_ns, bytes] pairs");
  m.samples.reserve(samples.size());
  for (std::size_t k = 0; k < samples.size(); ++k) {
    const JsonArrayReader pair = samples.array(k, kPair);
    if (pair.size() != 2) pair.fail("must be " + std::string(kPair));
    const std::int64_t time_ns = pair.get_integral(0), bytes = pair.get_integral(1);
    if (time_ns < -limits::kMaxSimulatedNs || time_ns > limits::kMaxSimulatedNs || bytes < 0) {
      pair.fail("needs a time within +-" + std::to_string(limits::kMaxSimulatedNs) + " ns and bytes >= 0, got [" + std::to_string(time_ns) +
                ", " + std::to_string(bytes) + "]");
    }
    m.samples.emplace_back(time_ns, bytes);
  }
  std::stable_sort(m.samples.begin(), m.samples.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  return m;
}

DeviceActivity read_device_activity(const JsonReader& r) {
  DeviceActivity a;
  a.rank = static_cast<int>(checked_count(r, "rank", r.get_integral("rank"), limits::kMaxWorldSize - 1));
  a.name = r.get_string("name");
  a.start_ns = r.get_integral("start_ns");
  a.end_ns = r.get_integral("end_ns");
  a.bytes = r.get_integral("bytes");
  a.action = r.get_string("action");
  const auto within = [](std::int64_t ns) { return ns >= -limits::kMaxSimulatedNs && ns <= limits::kMaxSimulatedNs; };
  if (a.end_ns < a.start_ns || !within(a.start_ns) || !within(a.end_ns) || a.bytes < 0) {
    r.fail("needs end_ns >= start_ns, both within +-" + std::to_string(limits::kMaxSimulatedNs) + " ns, and bytes >= 0");
  }
  return a;
}

Phase read_phase(const JsonReader& r) {
  Phase p;
  p.name = r.get_string("name");
  if (p.name.empty()) r.fail_key("name", "must not be empty");
  p.ns = checked_count(r, "ns", r.get_integral("ns"), limits::kMaxSimulatedNs);
  p.comm_ns = checked_count(r, "comm_ns", r.get_integral("comm_ns"), limits::kMaxSimulatedNs);
  p.exposed_comm_ns = checked_count(r, "exposed_comm_ns", r.get_integral("exposed_comm_ns"), p.ns);
  return p;
}

// One entry of "phases": a compute op, its stage (and an F&B unit's b_stage), and its phases.
ActionPhases read_action_phases(const JsonReader& r) {
  ActionPhases k;
  const std::string op = r.get_string("op");
  bool known = false;
  for (Op candidate : {Op::F, Op::B, Op::I, Op::W, Op::OverlapFB}) {
    if (op_name(candidate) == op) {
      k.op = candidate;
      known = true;
    }
  }
  if (!known) r.fail_key("op", "must be a compute op (F, B, I, W or OVERLAP_F_B), got \"" + op + "\"");
  k.stage = static_cast<int>(checked_count(r, "stage", r.get_integral("stage"), limits::kMaxWorldSize - 1));
  if (k.op == Op::OverlapFB) {
    k.b_stage = static_cast<int>(checked_count(r, "b_stage", r.get_integral("b_stage"), limits::kMaxWorldSize - 1));
  } else if (r.has("b_stage")) {
    r.fail_key("b_stage", "belongs to OVERLAP_F_B entries only");
  }
  k.phases = r.array("phases", "an array").objects(read_phase);
  if (k.phases.empty()) r.fail_key("phases", "must not be empty");
  return k;
}

TimelineResult read_timeline_result(const JsonReader& r, std::string source) {
  TimelineResult t;
  t.source = std::move(source);
  t.summary = read_summary(r.object("summary"));
  if (r.has("ranks")) t.ranks = r.array("ranks", "an array").objects(read_rank);
  const json& timeline = r.get("timeline");
  try {
    t.timeline = timeline_from_json(timeline);
  } catch (const InputError& e) {
    r.fail(e.what());
  }
  if (r.has("memory")) t.memory = r.array("memory", "an array").objects(read_memory_series);
  if (r.has("device_activity")) t.device_activity = r.array("device_activity", "an array").objects(read_device_activity);
  if (r.has("phases")) t.phases = r.array("phases", "an array").objects(read_action_phases);
  if (r.has("phase_totals")) t.phase_totals = r.array("phase_totals", "an array").objects(read_phase);
  return t;
}

// The optional fields write_simulated_extras adds (result_write.cc).
void read_simulated_extras(const JsonReader& r, ScheduleResult& s) {
  s.pipeline_layout = r.get_string("pipeline_layout", "");
  s.memory_advice = r.get_string("memory_advice", "");
}

// A compare entry: a simulated schedule, or the error that kept it from running.
ScheduleResult read_compared_schedule(const JsonReader& r) {
  ScheduleResult s;
  s.schedule = r.get_string("schedule");
  if (r.has("error")) {
    s.error = r.get_string("error");
    if (s.error.empty()) r.fail_key("error", "must not be empty");
    return s;
  }
  if (!r.has("summary")) r.fail("missing field \"summary\" (or \"error\" for a failed schedule)");
  s.runs.push_back(read_timeline_result(r, "simulated"));
  s.vp = static_cast<int>(r.get_integral("vp", 0));
  if (r.has("warnings")) s.warnings = r.array("warnings", "an array of strings").strings();
  read_simulated_extras(r, s);
  return s;
}

// The fidelity verdict reads makespan_error and both bubbles: a run without them cannot be judged,
// so it is rejected here rather than counted as within the thresholds.
RunComparison read_comparison(const JsonReader& r) {
  auto finite = [&](const char* key) {
    const double v = r.get_double(key);
    if (!std::isfinite(v)) r.fail_key(key, "must be a finite number");
    return v;
  };
  RunComparison out;
  FidelityReport& f = out.fidelity;
  f.makespan_error = finite("makespan_error");
  f.bubble_predicted = finite("bubble_predicted");
  f.bubble_measured = finite("bubble_measured");
  const double kNotStated = std::numeric_limits<double>::quiet_NaN();
  f.action_error_p50 = r.get_double("action_error_p50", kNotStated);
  f.action_error_p90 = r.get_double("action_error_p90", kNotStated);
  f.actions_compared = static_cast<std::size_t>(std::max<std::int64_t>(0, r.get_integral("actions_compared", 0)));
  if (r.has("compute_time_ratio")) {
    f.compute_time_ratio = r.array("compute_time_ratio", "an array of numbers (one per rank)").doubles();
  }
  f.makespan_predicted_ns = r.get_integral("makespan_predicted_ns", 0);
  f.makespan_measured_ns = r.get_integral("makespan_measured_ns", 0);
  if (r.has("measured_makespans_ns")) {
    out.measured_makespans_ns = r.array("measured_makespans_ns", "an array of integers").integrals();
  }
  out.median_iteration = r.get_integral("median_iteration", 0);
  return out;
}

GradientCheckResult read_gradient_check(const JsonReader& r) {
  GradientCheckResult out;
  out.passed = r.get_bool("passed");
  // JSON has no infinity: a check that found a part missing wrote null.
  const json& error = r.get("max_rel_error");
  if (!error.is_number() && !error.is_null()) r.fail_type("max_rel_error", "a number (or null)");
  out.max_rel_error = error.is_null() ? std::numeric_limits<double>::infinity() : error.get<double>();
  out.tolerance = r.get_double("tolerance", 0);
  out.worst = r.get_string("worst", "");
  return out;
}

}  // namespace

Summary detail::read_summary(const JsonReader& r) {
  Summary s;
  read_fields(r, detail::kSummaryFields, s);
  if (s.makespan_ns < 0) r.fail_key("makespan_ns", "must not be negative");
  return s;
}

std::int64_t Summary::max_peak_memory_bytes() const {
  return peak_memory_bytes.empty() ? 0 : *std::max_element(peak_memory_bytes.begin(), peak_memory_bytes.end());
}

namespace {

// `label` names the input in errors (the path for files), `name` in tables.
ReportInput load(const json& j, const std::string& name, const std::string& label) {
  if (!j.is_object()) {
    throw InputError(label + ": not a pipelab result: expected a JSON object with \"format\": \"" + std::string(kResultFormat) +
                     "\"");
  }
  const JsonReader top(j, label, KeyNames::paths());
  if (!top.has("format")) top.fail("missing field \"format\" (not a pipelab result file?)");
  if (const json& format = top.get("format"); !format.is_string() || format.get<std::string>() != kResultFormat) {
    top.fail("field \"format\" is " + format.dump() + ", expected \"" + std::string(kResultFormat) + "\" (not a result file)");
  }
  const json& version = top.get("version");
  if (!version.is_number_integer()) top.fail("field \"version\" must be an integer");
  if (const auto v = version.get<long long>(); v != kResultVersion) {
    top.fail("unsupported result version " + std::to_string(v) + "; this build reads " + std::to_string(kResultVersion));
  }
  ReportInput in;
  in.name = name;
  in.kind = top.get_string("kind");
  const JsonReader config = top.object("config");
  in.config = config.value();

  if (in.kind == "simulate") {
    ScheduleResult s;
    s.schedule = config.get_string("schedule");
    s.runs.push_back(read_timeline_result(top, "simulated"));
    read_simulated_extras(top, s);
    in.schedules.push_back(std::move(s));
  } else if (in.kind == "compare") {
    in.schedules = top.array("results", "an array").objects(read_compared_schedule);
  } else if (in.kind == "run") {
    ScheduleResult s;
    s.schedule = config.get_string("schedule");
    s.runs.push_back(read_timeline_result(top.object("predicted"), "predicted"));
    s.runs.push_back(read_timeline_result(top.object("measured"), "measured"));
    s.comparison = read_comparison(top.object("comparison"));
    if (top.has("gradient_check")) s.gradient_check = read_gradient_check(top.object("gradient_check"));
    in.schedules.push_back(std::move(s));
  } else {
    top.fail("field \"kind\" is \"" + in.kind + "\"; this build renders simulate, compare and run results");
  }
  return in;
}

}  // namespace

ReportInput load_result(const json& j, const std::string& name) { return load(j, name, name); }

ReportInput load_result_file(const std::string& path) {
  const Result<json> document = parse_json_document(read_text_file(path, "result"), DuplicateKeys::kKeepLast);
  if (!document) throw InputError(path + ": not JSON (" + document.error().message + ")");
  std::string name = std::filesystem::path(path).stem().string();
  if (name.empty()) name = path;
  return load(document.value(), name, path);
}

}  // namespace pipelab::reports
