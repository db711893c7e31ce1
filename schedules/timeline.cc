// Timeline helpers and JSON form (docs/formats.md).
#include "pipelab/schedules/timeline.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "pipelab/base/error.h"

namespace pipelab {

std::string_view stream_name(Stream s) {
  switch (s) {
    case Stream::Compute: return "compute";
    case Stream::Send: return "send";
    case Stream::Recv: return "recv";
    case Stream::Collective: return "collective";
  }
  return "?";
}

std::int64_t Timeline::makespan_ns() const {
  std::int64_t end = 0;
  for (const auto& rank : ranks) {
    for (const auto& e : rank) end = std::max(end, e.end_ns);
  }
  return end;
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
    const auto& e = j[i];
    const std::string where = "timeline[" + std::to_string(i) + "]";
    for (const char* field : {"rank", "action", "stream", "start_ns", "end_ns"}) {
      if (!e.is_object() || !e.contains(field)) throw InputError(where + ": missing field \"" + field + "\"");
    }
    if (!e["rank"].is_number_integer() || e["rank"].get<long long>() < 0 || e["rank"].get<long long>() > 1'000'000) {
      throw InputError(where + ": field \"rank\" must be a non-negative integer");
    }
    if (!e["action"].is_string()) throw InputError(where + ": field \"action\" must be a string");
    if (!e["start_ns"].is_number_integer() || !e["end_ns"].is_number_integer()) {
      throw InputError(where + ": fields \"start_ns\" and \"end_ns\" must be integers");
    }
    TimelineEvent ev;
    auto action = parse_action(e["action"].get<std::string>());
    if (!action) throw InputError(where + ": field \"action\": " + action.error().message);
    ev.action = action.value();
    const std::string stream = e["stream"].is_string() ? e["stream"].get<std::string>() : "";
    if (stream == "compute") ev.stream = Stream::Compute;
    else if (stream == "send") ev.stream = Stream::Send;
    else if (stream == "recv") ev.stream = Stream::Recv;
    else if (stream == "collective") ev.stream = Stream::Collective;
    else throw InputError(where + ": field \"stream\" must be compute, send, recv or collective");
    ev.start_ns = e["start_ns"].get<std::int64_t>();
    ev.end_ns = e["end_ns"].get<std::int64_t>();
    if (ev.end_ns < ev.start_ns) throw InputError(where + ": end_ns is before start_ns");
    if (e.contains("bytes") && e["bytes"].is_number()) ev.bytes = e["bytes"].get<std::int64_t>();
    if (e.contains("flops") && e["flops"].is_number()) ev.flops = e["flops"].get<double>();
    const auto rank = static_cast<std::size_t>(e["rank"].get<long long>());
    if (t.ranks.size() <= rank) t.ranks.resize(rank + 1);
    t.ranks[rank].push_back(ev);
  }
  return t;
}

}  // namespace pipelab
