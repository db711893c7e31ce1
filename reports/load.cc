// Loading result JSON (docs/formats.md): checks the format, version, kind and every field the
// renderers read, and reports the first problem with its path (`results[1].summary.mfu`).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <fstream>
#include <sstream>

#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/reports/result.h"

namespace pipelab::reports {
namespace {

using nlohmann::json;

// Error context: the input's name and the JSON path of the object being read.
struct Where {
  const std::string& name;
  std::string path;  // "" for the top level

  Where at(const std::string& key) const { return {name, path.empty() ? key : path + "." + key}; }
  Where index(std::size_t i) const { return {name, path + "[" + std::to_string(i) + "]"}; }
  [[noreturn]] void fail(const std::string& message) const {
    throw InputError(name + ": " + (path.empty() ? "" : path + ": ") + message);
  }
};

const json& field(const json& obj, const char* key, const Where& w) {
  if (!obj.is_object()) w.fail("expected an object");
  auto it = obj.find(key);
  if (it == obj.end()) w.fail(std::string("missing field \"") + key + "\"");
  return *it;
}

// The one reading of an integer: a JSON integer, or an integral double (1e9) — finite, no fraction,
// |v| < 2^63 — so that the conversion to int64 is exact and defined. `w` is the value's own path.
std::int64_t as_int64(const json& v, const Where& w) {
  if (v.is_number_unsigned()) {
    if (v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      w.fail("must be an integer below 2^63 (got " + v.dump() + ")");
    }
    return static_cast<std::int64_t>(v.get<std::uint64_t>());
  }
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (!v.is_number_float()) w.fail("must be an integer");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d != std::trunc(d)) w.fail("must be an integer");
  constexpr double kTwoTo63 = 9223372036854775808.0;
  if (!(std::abs(d) < kTwoTo63)) w.fail("must be an integer of magnitude below 2^63 (got " + v.dump() + ")");
  return static_cast<std::int64_t>(d);
}

std::int64_t get_int(const json& obj, const char* key, const Where& w) {
  return as_int64(field(obj, key, w), w.at(key));
}

double get_number(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_number()) w.at(key).fail("must be a number");
  return v.get<double>();
}

bool get_bool(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_boolean()) w.at(key).fail("must be true or false");
  return v.get<bool>();
}

std::string get_string(const json& obj, const char* key, const Where& w) {
  const json& v = field(obj, key, w);
  if (!v.is_string()) w.at(key).fail("must be a string");
  return v.get<std::string>();
}

Summary read_summary(const json& j, const Where& w) {
  if (!j.is_object()) w.fail("expected an object");
  Summary s;
  s.makespan_ns = get_int(j, "makespan_ns", w);
  s.bubble_ratio = get_number(j, "bubble_ratio", w);
  s.tflops_per_gpu = get_number(j, "tflops_per_gpu", w);
  s.mfu = get_number(j, "mfu", w);
  s.tokens_per_s_per_gpu = get_number(j, "tokens_per_s_per_gpu", w);
  const json& peaks = field(j, "peak_memory_bytes", w);
  if (!peaks.is_array()) w.at("peak_memory_bytes").fail("must be an array of integers (one per rank)");
  for (std::size_t i = 0; i < peaks.size(); ++i) {
    s.peak_memory_bytes.push_back(as_int64(peaks[i], w.at("peak_memory_bytes").index(i)));
  }
  s.exposed_comm_ns = get_int(j, "exposed_comm_ns", w);
  s.memory_capacity_bytes = get_int(j, "memory_capacity_bytes", w);
  s.oom = get_bool(j, "oom", w);
  s.model_flops = get_number(j, "model_flops", w);
  s.tokens_per_iteration = get_int(j, "tokens_per_iteration", w);
  if (s.makespan_ns < 0) w.at("makespan_ns").fail("must not be negative");
  return s;
}

std::vector<RankRow> read_ranks(const json& j, const Where& w) {
  if (!j.is_array()) w.fail("must be an array");
  std::vector<RankRow> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Where e = w.index(i);
    RankRow r;
    r.rank = static_cast<int>(get_int(j[i], "rank", e));
    r.busy_ns = get_int(j[i], "busy_ns", e);
    r.idle_ns = get_int(j[i], "idle_ns", e);
    r.comm_ns = get_int(j[i], "comm_ns", e);
    r.exposed_comm_ns = get_int(j[i], "exposed_comm_ns", e);
    // Memory columns are absent from measured runs on backends that do not track memory.
    if (j[i].contains("static_memory_bytes")) r.static_memory_bytes = get_int(j[i], "static_memory_bytes", e);
    if (j[i].contains("peak_activation_bytes")) r.peak_activation_bytes = get_int(j[i], "peak_activation_bytes", e);
    if (j[i].contains("peak_memory_bytes")) r.peak_memory_bytes = get_int(j[i], "peak_memory_bytes", e);
    out.push_back(r);
  }
  return out;
}

std::vector<MemorySeries> read_memory(const json& j, const Where& w) {
  if (!j.is_array()) w.fail("must be an array");
  std::vector<MemorySeries> out;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const Where e = w.index(i);
    MemorySeries m;
    m.rank = static_cast<int>(get_int(j[i], "rank", e));
    const json& samples = field(j[i], "samples", e);
    if (!samples.is_array()) e.at("samples").fail("must be an array of [time_ns, bytes] pairs");
    m.samples.reserve(samples.size());
    for (std::size_t k = 0; k < samples.size(); ++k) {
      const json& p = samples[k];
      const Where sample = e.at("samples").index(k);
      if (!p.is_array() || p.size() != 2) sample.fail("must be a [time_ns, bytes] pair of integers");
      m.samples.emplace_back(as_int64(p[0], sample.index(0)), as_int64(p[1], sample.index(1)));
    }
    std::stable_sort(m.samples.begin(), m.samples.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    out.push_back(std::move(m));
  }
  return out;
}

TimelineResult read_timeline_result(const json& j, const Where& w, std::string source) {
  if (!j.is_object()) w.fail("expected an object");
  TimelineResult t;
  t.source = std::move(source);
  t.summary = read_summary(field(j, "summary", w), w.at("summary"));
  if (j.contains("ranks")) t.ranks = read_ranks(j["ranks"], w.at("ranks"));
  const json& timeline = field(j, "timeline", w);
  try {
    t.timeline = timeline_from_json(timeline);
  } catch (const InputError& e) {
    w.fail(e.what());
  }
  if (j.contains("memory")) t.memory = read_memory(j["memory"], w.at("memory"));
  return t;
}

std::string schedule_name(const json& config, const Where& w) {
  return get_string(config, "schedule", w.at("config"));
}

}  // namespace

std::int64_t Summary::max_peak_memory_bytes() const {
  return peak_memory_bytes.empty() ? 0 : *std::max_element(peak_memory_bytes.begin(), peak_memory_bytes.end());
}

namespace {

// `label` names the input in errors (the path for files), `name` in tables.
ReportInput load(const json& j, const std::string& name, const std::string& label) {
  const Where top{label, ""};
  if (!j.is_object()) top.fail("not a pipelab result: expected a JSON object with \"format\": \"pipelab.result\"");
  if (!j.contains("format")) top.fail("missing field \"format\" (not a pipelab result file?)");
  if (!j["format"].is_string() || j["format"].get<std::string>() != "pipelab.result") {
    top.fail("field \"format\" is " + j["format"].dump() + ", expected \"pipelab.result\" (not a result file)");
  }
  if (!j.contains("version")) top.fail("missing field \"version\"");
  if (!j["version"].is_number_integer()) top.fail("field \"version\" must be an integer");
  if (const auto v = j["version"].get<long long>(); v != kResultVersion) {
    top.fail("unsupported result version " + std::to_string(v) + "; this build reads " + std::to_string(kResultVersion));
  }
  ReportInput in;
  in.name = name;
  in.kind = get_string(j, "kind", top);
  in.config = field(j, "config", top);
  if (!in.config.is_object()) top.at("config").fail("must be an object");

  if (in.kind == "simulate") {
    ScheduleResult s;
    s.schedule = schedule_name(in.config, top);
    s.runs.push_back(read_timeline_result(j, top, "simulated"));
    in.schedules.push_back(std::move(s));
  } else if (in.kind == "compare") {
    const json& results = field(j, "results", top);
    if (!results.is_array()) top.at("results").fail("must be an array");
    for (std::size_t i = 0; i < results.size(); ++i) {
      const Where e = top.at("results").index(i);
      ScheduleResult s;
      s.schedule = get_string(results[i], "schedule", e);
      if (results[i].contains("error")) {
        s.error = get_string(results[i], "error", e);
        if (s.error.empty()) e.at("error").fail("must not be empty");
      } else {
        if (!results[i].contains("summary")) e.fail("missing field \"summary\" (or \"error\" for a failed schedule)");
        s.runs.push_back(read_timeline_result(results[i], e, "simulated"));
      }
      in.schedules.push_back(std::move(s));
    }
  } else if (in.kind == "run") {
    ScheduleResult s;
    s.schedule = schedule_name(in.config, top);
    s.runs.push_back(read_timeline_result(field(j, "predicted", top), top.at("predicted"), "predicted"));
    s.runs.push_back(read_timeline_result(field(j, "measured", top), top.at("measured"), "measured"));
    // The fidelity verdict reads these three: a run without them cannot be judged, so it is rejected
    // here rather than counted as within the thresholds.
    s.comparison = field(j, "comparison", top);
    const Where cmp = top.at("comparison");
    if (!s.comparison.is_object()) cmp.fail("must be an object");
    for (const char* key : {"makespan_error", "bubble_predicted", "bubble_measured"}) {
      if (!std::isfinite(get_number(s.comparison, key, cmp))) cmp.at(key).fail("must be a finite number");
    }
    if (j.contains("gradient_check")) {
      s.gradient_check = j["gradient_check"];
      if (!s.gradient_check.is_object()) top.at("gradient_check").fail("must be an object");
    }
    in.schedules.push_back(std::move(s));
  } else {
    top.fail("field \"kind\" is \"" + in.kind + "\"; this build renders simulate, compare and run results");
  }
  return in;
}

}  // namespace

ReportInput load_result(const json& j, const std::string& name) { return load(j, name, name); }

ReportInput load_result_file(const std::string& path) {
  const std::string text = read_text_file(path, "result");
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(path + ": not JSON (" + e.what() + ")");
  }
  std::string name = std::filesystem::path(path).stem().string();
  if (name.empty()) name = path;
  return load(j, name, path);
}

}  // namespace pipelab::reports
