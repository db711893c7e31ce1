// Plan result JSON (docs/formats.md, "Plan result"): to_json and its inverse load_plan_result.
#include "pipelab/reports/plan_result.h"

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/base/json_reader.h"
#include "result_fields.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;

json layout_json(const PlanLayout& l) {
  return {{"tp", l.tp},
          {"pp", l.pp},
          {"vp", l.vp},
          {"cp", l.cp},
          {"ep", l.ep},
          {"etp", l.etp},
          {"dp", l.dp},
          {"mbs", l.mbs},
          {"schedule", l.schedule},
          {"recompute", l.recompute},
          {"stage_layers", l.stage_layers},
          {"fsdp", l.fsdp},
          {"embedding_loss_aware", l.embedding_loss_aware},
          {"pipeline_layout", l.pipeline_layout}};
}

PlanLayout read_layout(const JsonReader& r) {
  PlanLayout l;
  for (auto [key, member] : {std::pair{"tp", &PlanLayout::tp}, {"pp", &PlanLayout::pp}, {"vp", &PlanLayout::vp}, {"cp", &PlanLayout::cp},
                             {"ep", &PlanLayout::ep}, {"etp", &PlanLayout::etp}, {"dp", &PlanLayout::dp}, {"mbs", &PlanLayout::mbs}}) {
    l.*member = r.get_int(key);
    if (l.*member < 1) r.fail_key(key, "must be at least 1");
  }
  l.schedule = r.get_string("schedule");
  l.recompute = r.get_string("recompute");
  for (std::int64_t v : r.array("stage_layers", "an array of integers").integrals()) l.stage_layers.push_back(static_cast<int>(v));
  l.fsdp = r.get_string("fsdp", "none");
  l.embedding_loss_aware = r.get_bool("embedding_loss_aware", false);
  l.pipeline_layout = r.get_string("pipeline_layout", "");
  return l;
}

}  // namespace

json to_json(const PlanResult& r) {
  json top = json::array();
  for (const PlanEntry& e : r.top) top.push_back({{"layout", layout_json(e.layout)}, {"summary", detail::summary_json(e.summary)}});
  json excluded = json::object();
  for (const auto& [rule, count] : r.excluded) excluded[rule] = count;
  json points = json::array();
  for (const PlanPointRow& p : r.points) {
    points.push_back({{"schedule", p.schedule}, {"tokens_per_s_per_gpu", p.tokens_per_s_per_gpu}, {"peak_memory_bytes", p.peak_memory_bytes},
                      {"fits", p.fits}});
  }
  return {{"format", std::string(kResultFormat)},
          {"version", kResultVersion},
          {"kind", "plan"},
          {"config", r.config},
          {"evaluated", r.evaluated},
          {"excluded", std::move(excluded)},
          {"top", std::move(top)},
          {"recipes",
           {{"megatron_lm", r.recipes.megatron_lm},
            {"megatron_bridge", r.recipes.megatron_bridge},
            {"automodel_yaml", r.recipes.automodel_yaml},
            {"torchtitan", r.recipes.torchtitan}}},
          {"search",
           {{"candidates", r.search.candidates},
            {"searched", r.search.searched},
            {"complete", r.search.complete},
            {"seconds", r.search.seconds},
            {"threads", r.search.threads}}},
          {"why", r.why},
          {"points", std::move(points)}};
}

PlanResult load_plan_result(const json& j, const std::string& name) {
  if (!j.is_object()) throw InputError(name + ": not a pipelab plan result: expected a JSON object");
  const JsonReader top(j, name, KeyNames::paths());
  if (top.get_string("format") != kResultFormat) top.fail_key("format", "must be \"" + std::string(kResultFormat) + "\"");
  if (top.get_int("version") != kResultVersion) {
    top.fail_key("version", "unsupported; this build reads " + std::to_string(kResultVersion));
  }
  if (top.get_string("kind") != "plan") top.fail_key("kind", "must be \"plan\"");
  PlanResult r;
  r.config = top.object("config").value();
  r.evaluated = top.get_integral("evaluated");
  const JsonReader excluded = top.object("excluded");
  for (const auto& [rule, count] : excluded.value().items()) {
    (void)count;
    r.excluded[rule] = excluded.get_integral(rule);
  }
  r.top = top.array("top", "an array").objects([](const JsonReader& e) {
    return PlanEntry{.layout = read_layout(e.object("layout")), .summary = detail::read_summary(e.object("summary"))};
  });
  const JsonReader recipes = top.object("recipes");
  r.recipes = {recipes.get_string("megatron_lm"), recipes.get_string("megatron_bridge"), recipes.get_string("automodel_yaml"),
               recipes.get_string("torchtitan")};
  if (top.has("search")) {
    const JsonReader s = top.object("search");
    r.search = {.candidates = s.get_integral("candidates"), .searched = s.get_integral("searched"), .complete = s.get_bool("complete"),
                .seconds = s.get_double("seconds"), .threads = s.get_int("threads", 1)};
  }
  if (top.has("why")) {
    const JsonArrayReader why = top.array("why", "an array of strings");
    for (std::size_t i = 0; i < why.size(); ++i) r.why.push_back(why.get_string(i));
  }
  if (top.has("points")) {
    r.points = top.array("points", "an array").objects([](const JsonReader& p) {
      return PlanPointRow{.schedule = p.get_string("schedule"), .tokens_per_s_per_gpu = p.get_double("tokens_per_s_per_gpu"),
                          .peak_memory_bytes = p.get_integral("peak_memory_bytes"), .fits = p.get_bool("fits")};
    });
  }
  return r;
}

void write_plan_file(const std::string& path, const PlanResult& result) {
  write_text_file(path, to_json(result).dump(1) + "\n", "plan result");
}

}  // namespace pipelab::reports
