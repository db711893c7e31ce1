// Writing result JSON (docs/formats.md): to_json, the inverse of load_result (result_load.cc).
// Every number keeps its type (integers as integers, fractions as doubles) so a file written from
// loaded structs is the file that was loaded.
#include <algorithm>
#include <cmath>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

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

// Timelines a file writer streams (write_result_file) instead of holding them in the document: the
// document holds a marker string in their place. Null: the timelines go into the document.
using DeferredTimelines = std::vector<const Timeline*>;

std::string timeline_marker(std::size_t k) { return "\u0001pipelab timeline " + std::to_string(k); }

json phases_json(const std::vector<Phase>& phases) {
  json out = json::array();
  for (const Phase& p : phases) {
    out.push_back({{"name", p.name}, {"ns", p.ns}, {"comm_ns", p.comm_ns}, {"exposed_comm_ns", p.exposed_comm_ns}});
  }
  return out;
}

// {"summary", "ranks", "timeline"}, "memory" when the producer tracked it, "device_activity"
// when a GPU run recorded it, "phases" and "phase_totals" when the cost model split actions into phases.
json timeline_result_json(const TimelineResult& t, DeferredTimelines* deferred) {
  json ranks = json::array();
  for (const RankRow& r : t.ranks) ranks.push_back(rank_json(r));
  json timeline;
  if (deferred != nullptr) {
    timeline = timeline_marker(deferred->size());
    deferred->push_back(&t.timeline);
  } else {
    timeline = timeline_to_json(t.timeline);
  }
  json j = {{"summary", detail::summary_json(t.summary)}, {"ranks", std::move(ranks)}, {"timeline", std::move(timeline)}};
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
  if (!t.phases.empty()) {
    json kinds = json::array();
    for (const ActionPhases& k : t.phases) {
      json kind = {{"op", op_name(k.op)}, {"stage", k.stage}, {"phases", phases_json(k.phases)}};
      if (k.op == Op::OverlapFB) kind["b_stage"] = k.b_stage;
      kinds.push_back(std::move(kind));
    }
    j["phases"] = std::move(kinds);
  }
  if (!t.phase_totals.empty()) j["phase_totals"] = phases_json(t.phase_totals);
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

namespace {

json document(const ReportInput& r, DeferredTimelines* deferred) {
  json j = {{"format", std::string(kResultFormat)}, {"version", kResultVersion}, {"kind", r.kind}, {"config", r.config}};
  if (r.kind == "simulate") {
    const ScheduleResult& s = only_schedule(r);
    if (s.runs.size() != 1) throw InputError("a simulate result holds one timeline, this one " + std::to_string(s.runs.size()));
    j.update(timeline_result_json(s.runs.front(), deferred));
    write_simulated_extras(s, j);
  } else if (r.kind == "compare") {
    json results = json::array();
    for (const ScheduleResult& s : r.schedules) {
      if (s.failed()) {
        results.push_back({{"schedule", s.schedule}, {"error", s.error}});
        continue;
      }
      if (s.runs.size() != 1) throw InputError("compare entry " + s.schedule + " holds " + std::to_string(s.runs.size()) + " timelines, not 1");
      json entry = timeline_result_json(s.runs.front(), deferred);
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
      if (j.contains(t.source)) throw InputError("a run result holds one " + t.source + " timeline, this one several");
      j[t.source] = timeline_result_json(t, deferred);
    }
    if (!s.comparison) throw InputError("a run result needs its comparison");
    j["comparison"] = comparison_json(*s.comparison);
    if (s.gradient_check) j["gradient_check"] = gradient_check_json(*s.gradient_check);
  } else {
    throw InputError("unknown result kind \"" + r.kind + "\"; valid: simulate, compare, run");
  }
  return j;
}

// A timeline as timeline_to_json(t).dump(1) would print it at `indent` spaces (the line of its key),
// one event at a time: the same bytes without the document (about 2 KB per event in memory).
void stream_timeline(std::ostream& os, const Timeline& t, std::size_t indent) {
  const std::string event(indent + 1, ' '), field(indent + 2, ' ');
  bool first = true;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const TimelineEvent& e : t.ranks[r]) {
      os << (first ? "[\n" : ",\n") << event << "{\n";
      first = false;
      // Keys in the document's (sorted) order; strings and doubles printed by the JSON library.
      os << field << "\"action\": " << json(to_string(e.action)).dump() << ",\n"
         << field << "\"bytes\": " << e.bytes << ",\n"
         << field << "\"end_ns\": " << e.end_ns << ",\n"
         << field << "\"flops\": " << json(e.flops).dump() << ",\n"
         << field << "\"rank\": " << r << ",\n"
         << field << "\"start_ns\": " << e.start_ns << ",\n"
         << field << "\"stream\": " << json(std::string(stream_name(e.stream))).dump() << "\n"
         << event << "}";
    }
  }
  os << (first ? "[]" : "\n" + std::string(indent, ' ') + "]");
}

}  // namespace

json to_json(const ReportInput& r) { return document(r, nullptr); }

void write_result_file(const std::string& path, const ReportInput& result) {
  // The document without its timelines, then the timelines streamed into their places: a large
  // simulation's file is written without holding it as a JSON tree (docs/simulator.md, "Speed").
  DeferredTimelines deferred;
  const std::string text = document(result, &deferred).dump(1) + "\n";
  // Each marker's place and length; the document's keys are sorted, so places need not follow k.
  std::vector<std::tuple<std::size_t, std::size_t, const Timeline*>> places;
  for (std::size_t k = 0; k < deferred.size(); ++k) {
    const std::string marker = "\"timeline\": " + json(timeline_marker(k)).dump();
    const std::size_t found = text.find(marker);
    if (found == std::string::npos) throw std::logic_error("write_result_file: timeline " + std::to_string(k) + " has no place in the document");
    places.emplace_back(found, marker.size(), deferred[k]);
  }
  std::sort(places.begin(), places.end());
  write_file_streamed(path, "result", [&](std::ostream& os) {
    std::size_t at = 0;
    for (const auto& [found, length, timeline] : places) {
      const std::size_t line = text.rfind('\n', found) + 1;
      const std::size_t indent = found - line;
      const std::size_t value = found + std::string_view("\"timeline\": ").size();
      os.write(text.data() + at, static_cast<std::streamsize>(value - at));
      stream_timeline(os, *timeline, indent);
      at = found + length;
    }
    os.write(text.data() + at, static_cast<std::streamsize>(text.size() - at));
  });
}

}  // namespace pipelab::reports
