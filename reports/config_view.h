// The configuration of the results at the top of a report (model, GPU, layout, batch, ...), read
// from each result's `config` as the producer wrote it, and the lookups the CSV summary shares.
#pragma once

#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "pipelab/reports/result.h"

namespace pipelab::reports::detail {

/// Text of a config value at a path ("parallel.tp"); "" when absent. Strings unquoted, numbers as
/// written, booleans true/false, arrays joined with ", ".
std::string config_text(const nlohmann::json& config, std::initializer_list<const char*> path);

/// The name of a model or GPU (`key` "model" or "gpu"), written either as its spec (an object with
/// "name") or as a preset name (a string); "" when absent.
std::string config_name(const nlohmann::json& config, const char* key);

/// The job's GPU count: `parallel.gpus`, else `parallel.world`; "" when neither is present.
std::string config_gpus(const nlohmann::json& config);

/// How many consecutive iterations the result's timeline holds (`iterations` beside `optimizer_step`, as
/// simulate and compare write them for `--iterations N`); 1 otherwise (a run result's `iterations` is the
/// measured iterations its one timeline was picked from).
int config_iterations(const nlohmann::json& config);

/// The configuration rows (label, per-input text) shown at the top of HTML and Markdown.
struct ConfigRow {
  std::string label;
  std::vector<std::string> values;  // per input; "" when absent
};
std::vector<ConfigRow> config_rows(const std::vector<ReportInput>& inputs);

}  // namespace pipelab::reports::detail
