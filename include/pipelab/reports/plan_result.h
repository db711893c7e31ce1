// The result of `pipelab plan` (docs/formats.md, "Plan result"): the one home of its schema, as
// result.h is for simulate/compare/run. to_json writes the file `--json` asks for, load_plan_result
// reads it back (the inverse), and the renderers (terminal table, HTML with the Pareto chart) read
// only this type, never recompute.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/reports/result.h"

namespace pipelab::reports {

/// `top[i].layout`: the layout as the plan simulated it.
struct PlanLayout {
  int tp = 1, pp = 1, vp = 1, cp = 1, ep = 1, etp = 1, dp = 1, mbs = 1;
  std::string schedule;
  std::string recompute;          // none | selective | full
  std::vector<int> stage_layers;  // decoder layers per model part, model order
  // Additions to the contract (documented in docs/formats.md):
  std::string fsdp = "none";      // none (Megatron's distributed optimizer) | megatron
  bool embedding_loss_aware = false;  // --account-for-embedding/loss-in-pipeline-split
  std::string pipeline_layout;    // the split in Megatron's layout grammar
  bool operator==(const PlanLayout&) const = default;
};

struct PlanEntry {
  PlanLayout layout;
  Summary summary;  // as `simulate` writes it
  bool operator==(const PlanEntry&) const = default;
};

/// One evaluated layout of the Pareto chart (every simulated layout, fitting or not).
struct PlanPointRow {
  std::string schedule;
  double tokens_per_s_per_gpu = 0;
  std::int64_t peak_memory_bytes = 0;
  bool fits = false;
  bool operator==(const PlanPointRow&) const = default;
};

struct PlanRecipes {
  std::string megatron_lm, megatron_bridge, automodel_yaml, torchtitan;
  bool operator==(const PlanRecipes&) const = default;
};

/// How much was searched.
struct PlanSearch {
  std::int64_t candidates = 0;  // layouts enumerated
  std::int64_t searched = 0;    // decided (excluded or simulated) before the search stopped
  bool complete = true;         // false: --time-budget ran out first
  double seconds = 0;
  int threads = 1;
  bool operator==(const PlanSearch&) const = default;
};

struct PlanResult {
  nlohmann::json config;  // model, gpu, gpus, gbs, seq_length, precision, schedules, memory_headroom_bytes, ...
  std::int64_t evaluated = 0;  // layouts simulated
  std::map<std::string, std::int64_t> excluded;  // rule text -> layouts it excluded
  std::vector<PlanEntry> top;  // fitting layouts, best tokens/s/GPU first
  PlanRecipes recipes;         // of top[0]; empty strings when nothing fits
  PlanSearch search;
  std::vector<std::string> why;     // why top[0] beats top[1], one finding a line
  std::vector<PlanPointRow> points; // every simulated layout
  bool operator==(const PlanResult&) const = default;
};

/// {"format", "version", "kind": "plan", "config", "evaluated", "excluded", "top", "recipes",
/// "search", "why", "points"}.
nlohmann::json to_json(const PlanResult& result);
/// The inverse of to_json; InputError naming the field (e.g. "top[0].layout: missing field \"tp\"").
PlanResult load_plan_result(const nlohmann::json& j, const std::string& name);
/// Writes to_json(result) (one space of indent), creating parent directories.
void write_plan_file(const std::string& path, const PlanResult& result);

/// The terminal report: the search line, the top table (header, units row), exclusions by rule,
/// why the winner wins, and the recipes.
std::string render_plan_text(const PlanResult& result);

/// For a pull request: the search line, the top table, exclusions, why the winner wins, the recipes.
std::string render_plan_markdown(const PlanResult& result);

/// The top table, one row per layout (rank first; unknown hardware figures empty).
std::string render_plan_csv(const PlanResult& result);

/// One self-contained page: the search, a Pareto scatter of tokens/s/GPU against peak memory for
/// every evaluated layout coloured by schedule, the top table, the explanation, the recipes and,
/// when `winner` holds the winner's simulation (a simulate result), its timeline.
std::string render_plan_html(const PlanResult& result, const ReportInput* winner);

}  // namespace pipelab::reports
