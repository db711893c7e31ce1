// Timeline helpers and JSON form (docs/formats.md).
#include "pipelab/schedules/timeline.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"
#include "pipelab/base/json_reader.h"
#include "pipelab/base/limits.h"
#include "pipelab/base/names.h"

namespace pipelab {
namespace {

constexpr std::array<EnumName<Stream>, 4> kStreamNames = {
    {{Stream::Compute, "compute"}, {Stream::Send, "send"}, {Stream::Recv, "recv"}, {Stream::Collective, "collective"}}};

Stream parse_stream(std::string_view name) { return parse_name(kStreamNames, "stream", name); }

const std::vector<std::string> kEventKeys = {"rank", "action", "stream", "start_ns", "end_ns", "bytes", "flops"};

}  // namespace

std::string_view stream_name(Stream s) { return name_of(kStreamNames, s); }

std::int64_t Timeline::makespan_ns() const {
  std::int64_t end = 0;
  for (const auto& rank : ranks) {
    for (const auto& e : rank) end = std::max(end, e.end_ns);
  }
  return end;
}

const ActionPhases* find_phases(const std::vector<ActionPhases>& kinds, const Action& a) {
  for (const ActionPhases& k : kinds) {
    if (k.matches(a)) return &k;
  }
  return nullptr;
}

namespace {

// How an event's time spreads over its phases. The phases' exposed communication keeps the cost
// model's figure and the rest (compute, and communication hidden behind it) stretches or shrinks to the
// event: an event longer than its phases was slowed in its compute (a data-parallel collective beside
// it). When the event is shorter than the exposed parts, everything scales alike.
struct PhaseStretch {
  double compute_scale = 1;  // of each phase's ns minus its exposed part
  double exposed_scale = 1;  // of its exposed part
};
PhaseStretch phase_stretch(double event_ns, const std::vector<Phase>& phases, double events = 1) {
  double total = 0, exposed = 0;
  for (const Phase& p : phases) {
    total += static_cast<double>(p.ns) * events;
    exposed += static_cast<double>(std::min(p.exposed_comm_ns, p.ns)) * events;
  }
  if (total - exposed > 0 && event_ns >= exposed) return {(event_ns - exposed) / (total - exposed), 1};
  const double scale = total > 0 ? event_ns / total : 0;
  return {scale, scale};
}

double stretched_ns(const Phase& p, const PhaseStretch& k) {
  const double exposed = static_cast<double>(std::min(p.exposed_comm_ns, p.ns));
  return exposed * k.exposed_scale + (static_cast<double>(p.ns) - exposed) * k.compute_scale;
}

}  // namespace

std::vector<PhaseSpan> lay_out_phases(const TimelineEvent& e, const ActionPhases& split) {
  double total = 0;
  for (const Phase& p : split.phases) total += static_cast<double>(p.ns);
  std::vector<PhaseSpan> out;
  if (total <= 0) return out;
  out.reserve(split.phases.size());
  const PhaseStretch k = phase_stretch(static_cast<double>(e.duration_ns()), split.phases);
  // Cumulative rounding: the spans tile [start, end] without gaps, whatever the stretch.
  double before = 0;
  for (const Phase& p : split.phases) {
    // Clamped: near the largest durations a double's rounding could pass the event's end.
    const std::int64_t start = std::min<std::int64_t>(e.end_ns, e.start_ns + std::llround(before));
    before += stretched_ns(p, k);
    const std::int64_t end = &p == &split.phases.back() ? e.end_ns : std::min<std::int64_t>(e.end_ns, e.start_ns + std::llround(before));
    const double exposed = static_cast<double>(std::min(p.exposed_comm_ns, p.ns)) * k.exposed_scale;
    out.push_back({&p, start, end, std::min<std::int64_t>(end - start, std::llround(exposed))});
  }
  return out;
}

std::vector<Phase> phase_totals(const Timeline& t, const std::vector<ActionPhases>& kinds) {
  if (kinds.empty() || t.ranks.empty()) return {};
  // Every occurrence of a kind splits in the same proportions: sum each kind's event time and count
  // first, then spread the sums over its phases once.
  std::vector<double> kind_ns(kinds.size(), 0), kind_events(kinds.size(), 0);
  for (const std::vector<TimelineEvent>& rank : t.ranks) {
    std::size_t last = 0;  // a rank repeats a few kinds: try the previous one first
    for (const TimelineEvent& e : rank) {
      if (e.stream != Stream::Compute) continue;
      if (!kinds[last].matches(e.action)) {
        const ActionPhases* kind = find_phases(kinds, e.action);
        if (kind == nullptr) continue;
        last = static_cast<std::size_t>(kind - kinds.data());
      }
      kind_ns[last] += static_cast<double>(e.duration_ns());
      kind_events[last] += 1;
    }
  }
  struct Sum {
    std::string_view name;
    double ns = 0, comm_ns = 0, exposed_ns = 0;
  };
  std::vector<Sum> sums;
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    double total = 0;
    for (const Phase& p : kinds[k].phases) total += static_cast<double>(p.ns);
    if (total <= 0 || kind_events[k] == 0) continue;
    const PhaseStretch stretch = phase_stretch(kind_ns[k], kinds[k].phases, kind_events[k]);  // as lay_out_phases
    for (const Phase& p : kinds[k].phases) {
      auto it = std::find_if(sums.begin(), sums.end(), [&](const Sum& s) { return s.name == p.name; });
      if (it == sums.end()) it = sums.insert(sums.end(), Sum{p.name});
      it->ns += stretched_ns(p, stretch) * kind_events[k];
      it->comm_ns += static_cast<double>(p.comm_ns) * kind_events[k];
      it->exposed_ns += static_cast<double>(std::min(p.exposed_comm_ns, p.ns)) * stretch.exposed_scale * kind_events[k];
    }
  }
  std::vector<Phase> out;
  const double n = static_cast<double>(t.ranks.size());
  for (const Sum& s : sums) {
    out.push_back({std::string(s.name), std::llround(s.ns / n), std::llround(s.comm_ns / n), std::llround(s.exposed_ns / n)});
  }
  return out;
}

nlohmann::json timeline_to_json(const Timeline& t) {
  nlohmann::json out = nlohmann::json::array();
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const TimelineEvent& e : t.ranks[r]) {
      out.push_back({{"rank", r},
                     {"action", to_string(e.action)},
                     {"stream", stream_name(e.stream)},
                     {"start_ns", e.start_ns},
                     {"end_ns", e.end_ns},
                     {"bytes", e.bytes},
                     {"flops", e.flops}});
    }
  }
  return out;
}

Timeline timeline_from_json(const nlohmann::json& j) {
  if (!j.is_array()) throw InputError("timeline must be an array of events");
  Timeline t;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const JsonReader e(j[i], "timeline[" + std::to_string(i) + "]", KeyNames::fields("a timeline event"), kEventKeys);
    const std::int64_t rank = e.get_int64("rank");
    if (rank < 0 || rank >= limits::kMaxWorldSize) {
      e.fail_key("rank", "must be in [0, " + std::to_string(limits::kMaxWorldSize - 1) + "], got " + std::to_string(rank));
    }
    TimelineEvent ev;
    Result<Action> action = parse_action(e.get_string("action"));
    if (!action) e.fail_key("action", "is not an action: " + action.error().message);
    ev.action = action.value();
    ev.stream = e.get_parsed("stream", parse_stream);
    // Times within +-kMaxSimulatedNs, so that durations and sums of them cannot overflow.
    const auto time_ns = [&](std::string_view key) {
      const std::int64_t ns = e.get_int64(key);
      if (ns < -limits::kMaxSimulatedNs || ns > limits::kMaxSimulatedNs) {
        e.fail_key(key, "must be within +-" + std::to_string(limits::kMaxSimulatedNs) + " ns, got " + std::to_string(ns));
      }
      return ns;
    };
    ev.start_ns = time_ns("start_ns");
    ev.end_ns = time_ns("end_ns");
    if (ev.end_ns < ev.start_ns) e.fail_key("end_ns", "is before start_ns");
    ev.bytes = e.get_int64("bytes", 0);
    if (ev.bytes < 0) e.fail_key("bytes", "must not be negative, got " + std::to_string(ev.bytes));
    ev.flops = e.get_double("flops", 0);
    if (!(ev.flops >= 0 && ev.flops <= limits::kMaxFlops)) {
      e.fail_key("flops", "must be in [0, 1e30], got " + number_text(ev.flops));
    }
    if (t.ranks.size() <= static_cast<std::size_t>(rank)) t.ranks.resize(static_cast<std::size_t>(rank) + 1);
    t.ranks[static_cast<std::size_t>(rank)].push_back(ev);
  }
  return t;
}

}  // namespace pipelab
