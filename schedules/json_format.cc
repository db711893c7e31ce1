// JSON schedule files (docs/formats.md, "pipelab.schedule" version 1).
#include <set>

#include <nlohmann/json.hpp>

#include "pipelab/schedules/formats.h"
#include "shape_inference.h"

namespace pipelab {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "pipelab.schedule";
constexpr int kVersion = 1;

ParseError located(std::string_view text, std::size_t byte, std::string message) {
  int line = 1, column = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return ParseError{std::move(message), line, column};
}

Result<int> get_int(const json& j, const char* field, int min) {
  if (!j.contains(field)) return ParseError{std::string("missing field \"") + field + "\""};
  const json& v = j.at(field);
  if (!v.is_number_integer()) return ParseError{std::string("field \"") + field + "\" must be an integer"};
  const auto value = v.get<long long>();
  if (value < min || value > 1'000'000) {
    return ParseError{std::string("field \"") + field + "\" must be in [" + std::to_string(min) + ", 1000000], got " +
                      std::to_string(value)};
  }
  return static_cast<int>(value);
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
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    return located(text, e.byte > 0 ? e.byte - 1 : 0, "malformed JSON: " + std::string(e.what()));
  }
  if (!j.is_object()) return ParseError{"a schedule file must be a JSON object"};
  static const std::set<std::string> known = {"format", "version", "name", "pp", "stages", "microbatches",
                                              "chains", "placement", "stage_to_rank", "ranks"};
  for (const auto& [key, value] : j.items()) {
    if (!known.count(key)) return ParseError{"unknown field \"" + key + "\""};
  }
  if (!j.contains("format") || j["format"] != kFormat) {
    return ParseError{std::string("field \"format\" must be \"") + kFormat + "\" (is this a schedule file?)"};
  }
  auto version = get_int(j, "version", 1);
  if (!version) return version.error();
  if (version.value() != kVersion) {
    return ParseError{"unsupported schedule version " + std::to_string(version.value()) + "; this build reads version " +
                      std::to_string(kVersion)};
  }
  if (!j.contains("ranks") || !j["ranks"].is_array()) return ParseError{"field \"ranks\" must be an array of per-rank lists"};

  std::vector<std::vector<Slot>> ranks;
  for (std::size_t r = 0; r < j["ranks"].size(); ++r) {
    const json& row = j["ranks"][r];
    if (!row.is_array()) return ParseError{"ranks[" + std::to_string(r) + "] must be an array"};
    std::vector<Slot> slots;
    for (std::size_t i = 0; i < row.size(); ++i) {
      const std::string where = "ranks[" + std::to_string(r) + "][" + std::to_string(i) + "]";
      if (row[i].is_null()) {
        slots.emplace_back(std::nullopt);
        continue;
      }
      if (!row[i].is_string()) return ParseError{where + " must be an action string or null"};
      Result<Action> a = parse_action(row[i].get<std::string>());
      if (!a) return ParseError{where + ": " + a.error().message};
      slots.emplace_back(a.value());
    }
    ranks.push_back(std::move(slots));
  }
  if (j.contains("name")) {
    if (!j["name"].is_string()) return ParseError{"field \"name\" must be a string"};
    name = j["name"].get<std::string>();
  }
  auto pp = get_int(j, "pp", 1);
  auto stages = get_int(j, "stages", 1);
  auto microbatches = get_int(j, "microbatches", 1);
  for (const auto* r : {&pp, &stages, &microbatches}) {
    if (!*r) return r->error();
  }
  int chains = 1;
  if (j.contains("chains")) {
    auto c = get_int(j, "chains", 1);
    if (!c) return c.error();
    chains = c.value();
  }
  if (static_cast<long long>(stages.value()) * microbatches.value() > kMaxStageMicrobatches) {
    return ParseError{"stages x microbatches = " + std::to_string(static_cast<long long>(stages.value()) * microbatches.value()) +
                      " exceeds the limit of " + std::to_string(kMaxStageMicrobatches)};
  }
  if (static_cast<int>(ranks.size()) != pp.value()) {
    return ParseError{"field \"ranks\" has " + std::to_string(ranks.size()) + " lists but \"pp\" is " + std::to_string(pp.value())};
  }
  if (stages.value() % chains != 0 || microbatches.value() % chains != 0) {
    return ParseError{"field \"chains\"=" + std::to_string(chains) + " must divide stages and microbatches"};
  }
  Placement placement = Placement::Loop;
  const std::string placement_text = j.value("placement", std::string("loop"));
  if (placement_text == "loop") placement = Placement::Loop;
  else if (placement_text == "v") placement = Placement::V;
  else if (placement_text == "explicit") placement = Placement::Explicit;
  else return ParseError{"field \"placement\" must be \"loop\", \"v\" or \"explicit\", got \"" + placement_text + "\""};

  Schedule s;
  s.name = std::move(name);
  s.shape.ranks = pp.value();
  s.shape.stages = stages.value();
  s.shape.microbatches = microbatches.value();
  s.shape.chains = chains;
  s.shape.placement = placement;
  if (j.contains("stage_to_rank")) {
    const json& m = j["stage_to_rank"];
    if (!m.is_array()) return ParseError{"field \"stage_to_rank\" must be an array of ranks"};
    for (const json& v : m) {
      if (!v.is_number_integer()) return ParseError{"field \"stage_to_rank\" must hold integers"};
      s.shape.stage_to_rank.push_back(v.get<int>());
    }
    if (static_cast<int>(s.shape.stage_to_rank.size()) != s.shape.stages) {
      return ParseError{"field \"stage_to_rank\" has " + std::to_string(s.shape.stage_to_rank.size()) +
                        " entries but \"stages\" is " + std::to_string(s.shape.stages)};
    }
    // A declared Loop/V placement must match the explicit map; validate() reports the stage.
  } else if (placement == Placement::Explicit) {
    return ParseError{"field \"stage_to_rank\" is required with placement \"explicit\""};
  } else {
    if (placement == Placement::V && s.shape.stages % (2 * s.shape.ranks) != 0) {
      return ParseError{"placement \"v\" needs stages to be a multiple of 2*pp"};
    }
    for (int st = 0; st < s.shape.stages; ++st) s.shape.stage_to_rank.push_back(placed_rank(placement, s.shape.ranks, s.shape.stages, st));
  }
  s.ranks = std::move(ranks);
  return s;
}

}  // namespace pipelab
