// Shared renderer pieces: formatting, configuration rows, the comparison table model.
#include "common.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "pipelab/schedules/text_grid.h"

namespace pipelab::reports::detail {

using nlohmann::json;

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "-";
  decimals = std::clamp(decimals, 0, 9);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  std::string s = buf;
  // "-0.00" -> "0.00"
  if (s[0] == '-' && s.find_first_not_of("-0.") == std::string::npos) s.erase(0, 1);
  return s;
}

int decimals_for(double max_abs, int significant) {
  if (!std::isfinite(max_abs) || max_abs <= 0) return 2;
  const int magnitude = static_cast<int>(std::floor(std::log10(max_abs)));
  return std::clamp(significant - 1 - magnitude, 0, 6);
}

std::string json_number(double v) {
  if (!std::isfinite(v)) return "0";
  return json(v).dump();
}

std::string with_commas(std::int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

TimeUnit time_unit_for(double span_ns) {
  if (span_ns >= 1e10) return {"s", "s", 1e9};
  if (span_ns >= 1e7) return {"ms", "ms", 1e6};
  if (span_ns >= 1e4) return {"\u00b5s", "us", 1e3};
  return {"ns", "ns", 1};
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> out;
  if (!(hi > lo) || target < 1) return out;
  const double raw = (hi - lo) / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) {
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    if (out.size() > 1000) break;
  }
  return out;
}

// --- configuration ---------------------------------------------------------------------------

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
  add("GPU peak dense BF16 / FP8 (TFLOPS)", [](const json& c) {
    const std::string bf16 = config_text(c, {"gpu", "peak_bf16_tflops"});
    const std::string fp8 = config_text(c, {"gpu", "peak_fp8_tflops"});
    if (bf16.empty()) return std::string();
    return fp8.empty() || fp8 == "0" ? bf16 : bf16 + " / " + fp8;
  });
  add("GPU memory (GiB)", [](const json& c) {
    const json* hbm = find_path(c, {"gpu", "hbm_bytes"});
    return hbm && hbm->is_number() ? fixed(hbm->get<double>() / kGiB, 1) : std::string();
  });
  add("parallel layout", [](const json& c) {
    std::string out;
    for (const char* k : {"tp", "pp", "vp", "cp", "ep", "dp"}) {
      const std::string v = config_text(c, {"parallel", k});
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

// --- the comparison table --------------------------------------------------------------------

const std::array<MetricColumn, kNumMetrics>& metric_columns() {
  static const std::array<MetricColumn, kNumMetrics> columns{{
      {"iteration time", "(ms)", false},
      {"bubble", "(%)", false},
      {"TFLOPS/GPU", "(TFLOP/s)", true},
      {"MFU", "(%)", true},
      {"tokens/s/GPU", "(tokens/s)", true},
      {"peak memory", "(GiB, max rank)", false},
      {"exposed comm", "(ms)", false},
  }};
  return columns;
}

ComparisonTable build_comparison(const std::vector<ReportInput>& inputs) {
  ComparisonTable t;
  t.multi_input = inputs.size() > 1;
  std::size_t failed_schedules = 0;
  for (const ReportInput& in : inputs) {
    for (const ScheduleResult& s : in.schedules) {
      if (s.failed()) {
        t.failed.push_back(&s);
        t.failed_input.push_back(&in);
        ++failed_schedules;
        continue;
      }
      for (const TimelineResult& run : s.runs) {
        TableRow row;
        row.input = &in;
        row.schedule = &s;
        row.run = &run;
        row.label = run.source == "simulated" ? s.schedule : s.schedule + " (" + run.source + ")";
        const Summary& m = run.summary;
        row.value[kIterationTime] = static_cast<double>(m.makespan_ns) / 1e6;
        row.value[kBubble] = m.bubble_ratio * 100;
        row.value[kTflops] = m.tflops_per_gpu;
        row.value[kMfu] = m.mfu * 100;
        row.value[kTokens] = m.tokens_per_s_per_gpu;
        row.value[kPeakMemory] = static_cast<double>(m.max_peak_memory_bytes()) / kGiB;
        row.value[kExposedComm] = static_cast<double>(m.exposed_comm_ns) / 1e6;
        row.oom = m.oom;
        t.rows.push_back(std::move(row));
      }
    }
  }
  // Column decimals: bubble and memory fixed at 2; the others 4 significant digits of the column's max.
  for (int c = 0; c < kNumMetrics; ++c) {
    double max_abs = 0;
    for (const TableRow& r : t.rows) max_abs = std::max(max_abs, std::abs(r.value[c]));
    const int decimals = (c == kBubble || c == kPeakMemory)              ? 2
                         : c == kIterationTime ? decimals_for(max_abs, 5)
                         : c == kExposedComm   ? decimals_for(max_abs, 3)
                                               : decimals_for(max_abs);
    for (TableRow& r : t.rows) r.text[c] = fixed(r.value[c], decimals);
  }
  // Best per source group, among the rows that fit in memory, when at least two do (docs/metrics.md).
  std::map<std::string, std::vector<TableRow*>> groups;
  for (TableRow& r : t.rows) {
    if (!r.oom) groups[r.run->source].push_back(&r);
  }
  for (auto& [source, eligible] : groups) {
    if (eligible.size() < 2) continue;
    for (int c = 0; c < kNumMetrics; ++c) {
      const bool higher = metric_columns()[static_cast<std::size_t>(c)].higher_is_better;
      // Compare the printed values, so that equal-looking cells are all marked.
      auto key = [&](const TableRow* r) { return std::stod(r->text[c] == "-" ? "0" : r->text[c]); };
      double best = key(eligible.front());
      for (const TableRow* r : eligible) best = higher ? std::max(best, key(r)) : std::min(best, key(r));
      for (TableRow* r : eligible) r->best[c] = key(r) == best;
    }
  }
  // Footer lines.
  {
    std::size_t schedules = 0;
    for (const ReportInput& in : inputs) schedules += in.schedules.size();
    std::string line = std::to_string(t.rows.size()) + (t.rows.size() == 1 ? " timeline" : " timelines") + " from " +
                       std::to_string(schedules) + (schedules == 1 ? " schedule" : " schedules");
    if (inputs.size() > 1) line += " in " + std::to_string(inputs.size()) + " result files";
    line += "; " + std::to_string(failed_schedules) + " failed" + (failed_schedules ? " (listed below)" : "");
    t.footer.push_back({line, true, /*judged=*/false});
  }
  {
    std::vector<std::string> over;
    std::set<std::int64_t> capacities;
    for (const TableRow& r : t.rows) {
      if (r.oom) over.push_back(t.multi_input ? r.input->name + " " + r.label : r.label);
      if (r.run->summary.memory_capacity_bytes > 0) capacities.insert(r.run->summary.memory_capacity_bytes);
    }
    std::string cap;
    if (capacities.size() == 1) cap = " " + fixed(static_cast<double>(*capacities.begin()) / kGiB, 2) + " GiB";
    Verdict v;
    if (over.empty()) {
      v.text = "memory: every rank fits in" + (cap.empty() ? " its GPU" : cap);
    } else {
      std::string names;
      for (const std::string& n : over) names += (names.empty() ? "" : ", ") + n;
      v.text = "memory: " + std::to_string(over.size()) + " of " + std::to_string(t.rows.size()) + " over capacity" +
               cap + " (" + names + ")";
      v.ok = false;
    }
    if (!t.rows.empty()) t.footer.push_back(v);
  }
  t.fidelity = fidelity_rows(inputs);
  if (!t.fidelity.empty()) {
    std::size_t within = 0;
    for (const FidelityRow& f : t.fidelity) within += f.within ? 1 : 0;
    Verdict v;
    v.ok = within == t.fidelity.size();
    v.text = "fidelity: " + std::to_string(within) + " of " + std::to_string(t.fidelity.size()) +
             " runs within |makespan error| <= 5% and |bubble predicted - measured| <= 0.02";
    t.footer.push_back(v);
  }
  return t;
}

std::vector<FidelityRow> fidelity_rows(const std::vector<ReportInput>& inputs) {
  std::vector<FidelityRow> out;
  for (const ReportInput& in : inputs) {
    if (in.kind != "run") continue;
    for (const ScheduleResult& s : in.schedules) {
      if (s.failed() || s.runs.size() < 2) continue;
      FidelityRow row;
      row.input = &in;
      row.schedule = s.schedule;
      // load() requires makespan_error and both bubbles; an input built otherwise that lacks one
      // shows "-" and fails the verdict: a missing figure is never within the thresholds.
      static const json kNone = json::object();
      const json& c = s.comparison.is_object() ? s.comparison : kNone;
      auto number = [&](const char* key, bool& present) {
        auto it = c.find(key);
        present = it != c.end() && it->is_number() && std::isfinite(it->get<double>());
        return present ? it->get<double>() : 0.0;
      };
      bool has_err = false, has_bp = false, has_bm = false, has_p50 = false, has_p90 = false;
      const double err = number("makespan_error", has_err);
      const double bp = number("bubble_predicted", has_bp);
      const double bm = number("bubble_measured", has_bm);
      const double p50 = number("action_error_p50", has_p50);
      const double p90 = number("action_error_p90", has_p90);
      auto pct = [](double v) { return (v > 0 ? "+" : "") + fixed(v * 100, 2); };
      row.makespan_error = has_err ? pct(err) : "-";
      row.bubble_predicted = has_bp ? fixed(bp * 100, 2) : "-";
      row.bubble_measured = has_bm ? fixed(bm * 100, 2) : "-";
      row.action_p50 = has_p50 ? pct(p50) : "-";
      row.action_p90 = has_p90 ? pct(p90) : "-";
      if (s.gradient_check.is_object()) {
        const json& g = s.gradient_check;
        const bool passed = g.contains("passed") && g["passed"].is_boolean() && g["passed"].get<bool>();
        row.gradients = passed ? "passed" : "FAILED";
        if (g.contains("max_rel_error") && g["max_rel_error"].is_number()) {
          char buf[32];
          std::snprintf(buf, sizeof buf, "%.2e", g["max_rel_error"].get<double>());
          row.gradients += std::string(" (max rel ") + buf + ")";
        }
      }
      row.within = has_err && has_bp && has_bm && std::abs(err) <= kMakespanErrorThreshold &&
                   std::abs(bp - bm) <= kBubbleDiffThreshold;
      out.push_back(std::move(row));
    }
  }
  return out;
}

// --- timelines -------------------------------------------------------------------------------

std::string box_label(const Action& a) {
  if (a.op == Op::OverlapFB) return std::to_string(a.mb) + "/" + std::to_string(a.b_mb);
  return std::to_string(a.mb);
}

std::string op_class(Op op) {
  if (op == Op::OverlapFB) return "FB";
  return std::string(op_name(op));
}

std::vector<std::vector<int>> chunk_of_events(const Timeline& t) {
  std::vector<std::vector<int>> out(t.ranks.size());
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    std::vector<int> stages;
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Compute) stages.push_back(e.action.stage);
    }
    std::sort(stages.begin(), stages.end());
    stages.erase(std::unique(stages.begin(), stages.end()), stages.end());
    out[r].reserve(t.ranks[r].size());
    for (const TimelineEvent& e : t.ranks[r]) {
      const auto it = std::lower_bound(stages.begin(), stages.end(), e.action.stage);
      out[r].push_back(it != stages.end() && *it == e.action.stage ? static_cast<int>(it - stages.begin()) : 0);
    }
  }
  return out;
}

std::vector<std::vector<std::string>> timeline_text_grid(const Timeline& t) {
  struct Ev {
    std::int64_t start, end;
    std::size_t rank;
    const TimelineEvent* e;
    int column = -1;
  };
  std::vector<Ev> evs;
  for (std::size_t r = 0; r < t.ranks.size(); ++r) {
    for (const TimelineEvent& e : t.ranks[r]) {
      if (e.stream == Stream::Compute) evs.push_back({e.start_ns, e.end_ns, r, &e});
    }
  }
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) {
    return std::tie(a.start, a.end, a.rank) < std::tie(b.start, b.end, b.rank);
  });
  std::vector<std::size_t> by_end(evs.size());
  for (std::size_t i = 0; i < evs.size(); ++i) by_end[i] = i;
  std::stable_sort(by_end.begin(), by_end.end(), [&](std::size_t a, std::size_t b) { return evs[a].end < evs[b].end; });
  std::vector<int> next_column(t.ranks.size(), 0);
  std::size_t ended = 0;
  int ended_max = -1;  // largest column among events that ended at or before the current start
  int width = 0;
  for (Ev& ev : evs) {
    while (ended < by_end.size() && evs[by_end[ended]].end <= ev.start && evs[by_end[ended]].column >= 0) {
      ended_max = std::max(ended_max, evs[by_end[ended]].column);
      ++ended;
    }
    ev.column = std::max(next_column[ev.rank], ended_max + 1);
    next_column[ev.rank] = ev.column + 1;
    width = std::max(width, ev.column + 1);
  }
  std::vector<std::vector<std::string>> grid(t.ranks.size(), std::vector<std::string>(static_cast<std::size_t>(width), "."));
  for (const Ev& ev : evs) grid[ev.rank][static_cast<std::size_t>(ev.column)] = compact_label(ev.e->action);
  return grid;
}

}  // namespace pipelab::reports::detail
