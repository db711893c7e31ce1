// JSON schedule files (docs/formats.md, "pipelab.schedule" version 1).
#include <nlohmann/json.hpp>

#include "pipelab/base/json_reader.h"
#include "pipelab/schedules/formats.h"
#include "shape_inference.h"

namespace pipelab {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "pipelab.schedule";
constexpr int kVersion = 1;

const std::vector<std::string> kKeys = {"format", "version", "name", "pp", "stages", "microbatches",
                                        "chains", "placement", "stage_to_rank", "ranks"};

// A shape count: an integer in [min, 1000000].
int get_count(const JsonReader& r, std::string_view key, int min) {
  const std::int64_t value = r.get_int64(key);
  if (value < min || value > 1'000'000) {
    r.fail_key(key, "must be in [" + std::to_string(min) + ", 1000000], got " + std::to_string(value));
  }
  return static_cast<int>(value);
}

std::vector<std::vector<Slot>> read_ranks(const JsonReader& r) {
  const json& lists = r.get("ranks");
  if (!lists.is_array()) r.fail_type("ranks", "an array of per-rank lists");
  std::vector<std::vector<Slot>> ranks;
  std::size_t entries = 0;
  for (std::size_t rank = 0; rank < lists.size(); ++rank) {
    const json& row = lists[rank];
    if (!row.is_array()) throw InputError("ranks[" + std::to_string(rank) + "] must be an array");
    entries += row.size();
    if (static_cast<long long>(entries) > kMaxScheduleActions) {
      throw InputError("field \"ranks\" holds more than " + std::to_string(kMaxScheduleActions) + " entries (the limit)");
    }
    std::vector<Slot> slots;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string where = "ranks[" + std::to_string(rank) + "][" + std::to_string(i) + "]";
      if (row[i].is_null()) {
        slots.emplace_back(std::nullopt);
        continue;
      }
      if (!row[i].is_string()) throw InputError(where + " must be an action string or null");
      Result<Action> a = parse_action(row[i].get<std::string>());
      if (!a) throw InputError(where + ": " + a.error().message);
      slots.emplace_back(a.value());
    }
    ranks.push_back(std::move(slots));
  }
  return ranks;
}

// The body of parse_json: throws InputError naming the field; parse_json turns it into a ParseError.
Schedule read_schedule(const json& j, std::string name) {
  const JsonReader r(j, "", KeyNames::fields("a schedule file"), kKeys);
  if (!r.has("format") || r.get("format") != kFormat) {
    throw InputError(std::string("field \"format\" must be \"") + kFormat + "\" (is this a schedule file?)");
  }
  if (const int version = get_count(r, "version", 1); version != kVersion) {
    throw InputError("unsupported schedule version " + std::to_string(version) + "; this build reads version " +
                     std::to_string(kVersion));
  }
  std::vector<std::vector<Slot>> ranks = read_ranks(r);
  Schedule s;
  s.name = r.get_string("name", name);
  s.shape.ranks = get_count(r, "pp", 1);
  s.shape.stages = get_count(r, "stages", 1);
  s.shape.microbatches = get_count(r, "microbatches", 1);
  s.shape.chains = r.has("chains") ? get_count(r, "chains", 1) : 1;
  const long long cells = static_cast<long long>(s.shape.stages) * s.shape.microbatches;
  if (cells > kMaxStageMicrobatches) {
    throw InputError("stages x microbatches = " + std::to_string(cells) + " exceeds the limit of " + std::to_string(kMaxStageMicrobatches));
  }
  if (static_cast<int>(ranks.size()) != s.shape.ranks) {
    throw InputError("field \"ranks\" has " + std::to_string(ranks.size()) + " lists but \"pp\" is " + std::to_string(s.shape.ranks));
  }
  if (s.shape.stages % s.shape.chains != 0 || s.shape.microbatches % s.shape.chains != 0) {
    throw InputError("field \"chains\"=" + std::to_string(s.shape.chains) + " must divide stages and microbatches");
  }
  s.shape.placement = r.has("placement") ? r.get_parsed("placement", parse_placement) : Placement::Loop;
  if (r.has("stage_to_rank")) {
    const JsonArrayReader map = r.array("stage_to_rank", "an array of integer ranks");
    for (std::size_t st = 0; st < map.size(); ++st) {
      const std::int64_t rank = map.get_integral(st);
      if (rank < 0 || rank >= s.shape.ranks) {
        throw InputError("field \"stage_to_rank\"[" + std::to_string(st) + "]=" + std::to_string(rank) + " must be a rank in [0, pp=" +
                         std::to_string(s.shape.ranks) + ")");
      }
      s.shape.stage_to_rank.push_back(static_cast<int>(rank));
    }
    if (static_cast<int>(s.shape.stage_to_rank.size()) != s.shape.stages) {
      throw InputError("field \"stage_to_rank\" has " + std::to_string(s.shape.stage_to_rank.size()) + " entries but \"stages\" is " +
                       std::to_string(s.shape.stages));
    }
    // A declared Loop/V placement must match the explicit map; validate() reports the stage.
  } else if (s.shape.placement == Placement::Explicit) {
    throw InputError("field \"stage_to_rank\" is required with placement \"explicit\"");
  } else {
    if (s.shape.placement == Placement::V && s.shape.stages % (2 * s.shape.ranks) != 0) {
      throw InputError("placement \"v\" needs stages to be a multiple of 2*pp");
    }
    for (int st = 0; st < s.shape.stages; ++st) {
      s.shape.stage_to_rank.push_back(placed_rank(s.shape.placement, s.shape.ranks, s.shape.stages, st));
    }
  }
  s.ranks = std::move(ranks);
  return s;
}

}  // namespace

std::string to_json_text(const Schedule& s) {
  json ranks = json::array();
  for (const auto& list : s.ranks) {
    json row = json::array();
    for (const Slot& slot : list) row.push_back(slot ? json(to_string(*slot)) : json(nullptr));
    ranks.push_back(std::move(row));
  }
  json j = {{"format", kFormat},
            {"version", kVersion},
            {"name", s.name},
            {"pp", s.shape.ranks},
            {"stages", s.shape.stages},
            {"microbatches", s.shape.microbatches},
            {"chains", s.shape.chains},
            {"placement", placement_name(s.shape.placement)},
            {"stage_to_rank", s.shape.stage_to_rank},
            {"ranks", std::move(ranks)}};
  return j.dump(1) + "\n";
}

Result<Schedule> parse_json(std::string_view text, std::string name) {
  Result<json> document = parse_json_document(text);
  if (!document) {
    const ParseError& e = document.error();
    return ParseError{"malformed JSON: " + e.message, e.line, e.column};
  }
  try {
    return read_schedule(document.value(), std::move(name));
  } catch (const InputError& e) {
    return ParseError{e.what()};
  }
}

}  // namespace pipelab
