// Writing result JSON (docs/formats.md): to_json, the inverse of load_result (result_load.cc).
// Every number keeps its type (integers as integers, fractions as doubles) so a file written from
// loaded structs is the file that was loaded.
#include <cmath>
#include <optional>
#include <type_traits>
#include <variant>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/reports/result.h"
#include "result_fields.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;

// Writes every field of `fields` of `obj` into `j`, each with its member's JSON type.
template <class T, std::size_t N>
void write_fields(const T& obj, const std::array<detail::Field<T>, N>& fields, json& j) {
  for (const detail::Field<T>& f : fields) {
    std::visit(
        [&](auto member) {
          const auto& value = obj.*member;
          if constexpr (std::is_same_v<std::remove_cvref_t<decltype(value)>, std::optional<double>>) {
            j[f.key] = value ? json(*value) : json(nullptr);
          } else {
            j[f.key] = value;
          }
        },
        f.member);
  }
}

json rank_json(const RankRow& r) {
  json j = json::object();
  write_fields(r, detail::kRankFields, j);
  write_fields(r.idle, detail::kIdleFields, j);
  if (r.static_parts) write_fields(*r.static_parts, detail::kStaticPartsFields, j);
  return j;
}

// {"summary", "ranks", "timeline"}, "memory" when the producer tracked it, "device_activity"
// when a GPU run recorded it.
json timeline_result_json(const TimelineResult& t) {
  json ranks = json::array();
  for (const RankRow& r : t.ranks) ranks.push_back(rank_json(r));
  json j = {{"summary", detail::summary_json(t.summary)}, {"ranks", std::move(ranks)}, {"timeline", timeline_to_json(t.timeline)}};
  if (!t.memory.empty()) {
    json memory = json::array();
    for (const MemorySeries& m : t.memory) {
      json samples = json::array();
      for (const auto& [time_ns, bytes] : m.samples) samples.push_back({time_ns, bytes});
      memory.push_back({{"rank", m.rank}, {"samples", std::move(samples)}});
    }
    j["memory"] = std::move(memory);
  }
  if (!t.device_activity.empty()) {
    json activity = json::array();
    for (const DeviceActivity& a : t.device_activity) {
      activity.push_back({{"rank", a.rank}, {"name", a.name}, {"start_ns", a.start_ns}, {"end_ns", a.end_ns},
                          {"bytes", a.bytes}, {"action", a.action}});
    }
    j["device_activity"] = std::move(activity);
  }
  return j;
}

json comparison_json(const RunComparison& c) {
  const FidelityReport& f = c.fidelity;
  json j = {{"makespan_error", f.makespan_error},
            {"bubble_predicted", f.bubble_predicted},
            {"bubble_measured", f.bubble_measured},
            {"actions_compared", f.actions_compared},
            {"compute_time_ratio", f.compute_time_ratio},
            {"makespan_predicted_ns", f.makespan_predicted_ns},
            {"makespan_measured_ns", f.makespan_measured_ns},
            {"measured_makespans_ns", c.measured_makespans_ns},
            {"median_iteration", c.median_iteration}};
  // A percentile the loaded file did not state (NaN) stays unstated.
  if (!std::isnan(f.action_error_p50)) j["action_error_p50"] = f.action_error_p50;
  if (!std::isnan(f.action_error_p90)) j["action_error_p90"] = f.action_error_p90;
  return j;
}

json gradient_check_json(const GradientCheckResult& g) {
  return {{"max_rel_error", g.max_rel_error}, {"passed", g.passed}, {"tolerance", g.tolerance}, {"worst", g.worst}};
}

const ScheduleResult& only_schedule(const ReportInput& r) {
  if (r.schedules.size() != 1) {
    throw InputError("a " + r.kind + " result holds one schedule, this one " + std::to_string(r.schedules.size()));
  }
  return r.schedules.front();
}

// What simulate and compare add to a simulated timeline: the layout and, when it does not fit,
// the nearest change that does (read back by read_simulated_extras).
void write_simulated_extras(const ScheduleResult& s, json& j) {
  if (!s.pipeline_layout.empty()) j["pipeline_layout"] = s.pipeline_layout;
  if (!s.memory_advice.empty()) j["memory_advice"] = s.memory_advice;
}

}  // namespace

json detail::summary_json(const Summary& summary) {
  json j = json::object();
  write_fields(summary, detail::kSummaryFields, j);
  return j;
}

json to_json(const ReportInput& r) {
  json j = {{"format", std::string(kResultFormat)}, {"version", kResultVersion}, {"kind", r.kind}, {"config", r.config}};
  if (r.kind == "simulate") {
    const ScheduleResult& s = only_schedule(r);
    if (s.runs.size() != 1) throw InputError("a simulate result holds one timeline, this one " + std::to_string(s.runs.size()));
    j.update(timeline_result_json(s.runs.front()));
    write_simulated_extras(s, j);
  } else if (r.kind == "compare") {
    json results = json::array();
    for (const ScheduleResult& s : r.schedules) {
      if (s.failed()) {
        results.push_back({{"schedule", s.schedule}, {"error", s.error}});
        continue;
      }
      if (s.runs.size() != 1) throw InputError("compare entry " + s.schedule + " holds " + std::to_string(s.runs.size()) + " timelines, not 1");
      json entry = timeline_result_json(s.runs.front());
      entry["schedule"] = s.schedule;
      entry["vp"] = s.vp;
      entry["warnings"] = s.warnings;
      write_simulated_extras(s, entry);
      results.push_back(std::move(entry));
    }
    j["results"] = std::move(results);
  } else if (r.kind == "run") {
    const ScheduleResult& s = only_schedule(r);
    for (const TimelineResult& t : s.runs) {
      if (t.source != "predicted" && t.source != "measured") {
        throw InputError("a run result holds a predicted and a measured timeline, not \"" + t.source + "\"");
      }
      j[t.source] = timeline_result_json(t);
    }
    if (!s.comparison) throw InputError("a run result needs its comparison");
    j["comparison"] = comparison_json(*s.comparison);
    if (s.gradient_check) j["gradient_check"] = gradient_check_json(*s.gradient_check);
  } else {
    throw InputError("unknown result kind \"" + r.kind + "\"; valid: simulate, compare, run");
  }
  return j;
}

void write_result_file(const std::string& path, const ReportInput& result) {
  write_text_file(path, to_json(result).dump(1) + "\n", "result");
}

}  // namespace pipelab::reports
