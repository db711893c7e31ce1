// The configuration rows of a report, read from each result's `config` as written.
#include "config_view.h"

#include "format.h"

namespace pipelab::reports::detail {

using nlohmann::json;

namespace {

const json* find_path(const json& config, std::initializer_list<const char*> path) {
  const json* cur = &config;
  for (const char* key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur;
}

std::string value_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return json_number(v.get<double>());
  if (v.is_array()) {
    std::string out;
    for (const json& e : v) out += (out.empty() ? "" : ", ") + value_text(e);
    return out;
  }
  if (v.is_null()) return "";
  return v.dump();
}

}  // namespace

std::string config_text(const json& config, std::initializer_list<const char*> path) {
  const json* v = find_path(config, path);
  return v ? value_text(*v) : "";
}

std::string config_name(const json& config, const char* key) {
  const std::string n = config_text(config, {key, "name"});
  if (!n.empty()) return n;
  const json* v = find_path(config, {key});
  return v && v->is_string() ? v->get<std::string>() : std::string();
}

std::string config_gpus(const json& config) {
  const std::string gpus = config_text(config, {"parallel", "gpus"});
  return gpus.empty() ? config_text(config, {"parallel", "world"}) : gpus;
}

int config_iterations(const nlohmann::json& config) {
  // simulate and compare write `iterations` with `optimizer_step`; a run result's `iterations` counts the
  // measured iterations its timeline (one of them) was picked from, and it writes no `optimizer_step`.
  if (find_path(config, {"optimizer_step"}) == nullptr) return 1;
  const json* n = find_path(config, {"iterations"});
  return n != nullptr && n->is_number_integer() && n->get<std::int64_t>() >= 1 ? static_cast<int>(n->get<std::int64_t>()) : 1;
}

std::vector<ConfigRow> config_rows(const std::vector<ReportInput>& inputs) {
  std::vector<ConfigRow> rows;
  auto add = [&](const char* label, auto&& text_of) {
    ConfigRow row{label, {}};
    bool any = false;
    for (const ReportInput& in : inputs) {
      row.values.push_back(text_of(in.config));
      any = any || !row.values.back().empty();
    }
    if (any) rows.push_back(std::move(row));
  };
  add("model", [](const json& c) { return config_name(c, "model"); });
  add("GPU", [](const json& c) { return config_name(c, "gpu"); });
  add("GPU peak dense BF16 / FP8 / FP4 (TFLOPS)", [](const json& c) {
    std::string out = config_text(c, {"gpu", "peak_bf16_tflops"});
    if (out.empty()) return out;
    for (const char* key : {"peak_fp8_tflops", "peak_fp4_tflops"}) {
      const std::string peak = config_text(c, {"gpu", key});
      if (!peak.empty() && peak != "0") out += " / " + peak;
    }
    return out;
  });
  add("GPU memory (GiB)", [](const json& c) {
    const json* hbm = find_path(c, {"gpu", "hbm_bytes"});
    return hbm && hbm->is_number() ? fixed(hbm->get<double>() / kGiB, 1) : std::string();
  });
  add("parallel layout", [](const json& c) {
    std::string out;
    for (const char* k : {"tp", "pp", "vp", "cp", "ep", "dp"}) {
      std::string v = config_text(c, {"parallel", k});
      if (std::string_view(k) == "vp" && v == "0") v = "per schedule";  // each schedule's own chunks (compare)
      if (!v.empty()) out += (out.empty() ? "" : " ") + std::string(k) + "=" + v;
    }
    const std::string gpus = config_gpus(c);
    if (!gpus.empty()) out += (out.empty() ? "" : " ") + ("(" + gpus + " GPUs)");
    return out;
  });
  add("batch", [](const json& c) {
    std::string out;
    for (auto [k, label] : {std::pair{"mbs", "mbs"}, std::pair{"gbs", "gbs"}, std::pair{"microbatches", "microbatches"},
                            std::pair{"seq_length", "seq"}}) {
      const std::string v = config_text(c, {"parallel", k});
      if (!v.empty()) out += (out.empty() ? "" : " ") + std::string(label) + "=" + v;
    }
    return out;
  });
  add("precision, recompute", [](const json& c) {
    std::string out = config_text(c, {"parallel", "precision"});
    auto put = [&](const char* label, const std::string& v) {
      if (!v.empty()) out += (out.empty() ? "" : " ") + std::string(label) + "=" + v;
    };
    put("recompute", config_text(c, {"parallel", "recompute"}));
    put("sequence_parallel", config_text(c, {"parallel", "sequence_parallel"}));
    put("distributed_optimizer", config_text(c, {"parallel", "distributed_optimizer"}));
    return out;
  });
  add("layers per stage", [](const json& c) { return config_text(c, {"parallel", "stage_layers"}); });
  add("schedules", [](const json& c) {
    const std::string list = config_text(c, {"schedules"});
    return list.empty() ? config_text(c, {"schedule"}) : list;
  });
  add("iterations", [](const json& c) {
    const int iterations = config_iterations(c);
    if (iterations == 1) return std::string();
    const std::string n = std::to_string(iterations);
    return n + " (optimizer step " + config_text(c, {"optimizer_step"}) +
           "): times per iteration, (makespan + the last optimizer step) / " + n + "; idle ratios over all";
  });
  add("cost model", [](const json& c) { return config_text(c, {"cost_model"}); });
  add("backend", [](const json& c) { return config_text(c, {"backend"}); });
  add("warnings", [](const json& c) {
    const json* w = find_path(c, {"warnings"});
    if (!w || !w->is_array()) return std::string();
    std::string out;
    for (const json& e : *w) out += (out.empty() ? "" : "; ") + value_text(e);
    return out;
  });
  return rows;
}

}  // namespace pipelab::reports::detail
