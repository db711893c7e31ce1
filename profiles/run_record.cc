// Run tables: CSV rows of layout + measured throughput; see run_record.h.
#include <pipelab/profiles/run_record.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

#include <pipelab/base/csv_table.h>
#include <pipelab/base/error.h>
#include <pipelab/profiles/model_spec.h>
#include <pipelab/profiles/parallel_config.h>

#include "field_table.h"


namespace pipelab {

std::string RunRecord::label() const {
  std::ostringstream os;
  if (!release.empty()) os << release << " ";
  os << model << " " << precision << " " << gpus << " GPUs tp" << tp << " pp" << pp << " cp" << cp << " vp" << vp << " ep" << ep;
  if (fsdp) os << " fsdp";
  return os.str();
}

std::string RunRecord::schedule() const { return vp > 1 ? "interleaved-1f1b" : "1f1b"; }

namespace {

// The GEMM precision of a published precision cell: "bf16"; "fp8" with any recipe suffix ("fp8-cs",
// "fp8-mx", "fp8?"); "nvfp4". None for anything else.
std::optional<Precision> published_precision(std::string_view text) {
  if (text == "bf16") return Precision::kBf16;
  if (text.starts_with("fp8")) return Precision::kFp8;
  if (text == "nvfp4") return Precision::kNvfp4;
  return std::nullopt;
}

// Errors from a record's settings or rules name the record.
template <class Fn>
auto for_record(const RunRecord& r, Fn&& fn) {
  try {
    return fn();
  } catch (const InputError& e) {
    throw ConfigError("line " + std::to_string(r.line) + " (" + r.label() + "): " + e.what());
  }
}

}  // namespace

ModelSpec RunRecord::model_spec(const ModelSpec& preset) const {
  return for_record(*this, [&] {
    ModelSpec m = preset;
    for (const auto& [key, value] : settings) {
      if (key.starts_with("model.")) apply_override(m, key.substr(6), value);
    }
    return m;
  });
}

Precision RunRecord::gemm_precision() const {
  const std::optional<Precision> p = published_precision(precision);
  if (!p) throw InputError("line " + std::to_string(line) + ": precision '" + precision + "' is not bf16, fp8[-recipe] or nvfp4");
  return *p;
}

ParallelConfig RunRecord::config(const ModelSpec& model) const {
  ParallelConfig c;
  c.tp = tp;
  c.pp = pp;
  c.cp = cp;
  c.ep = ep;
  c.vp = vp;
  c.world = gpus;
  c.mbs = mbs;
  c.gbs = gbs;
  c.seq_length = seq;
  c.precision = gemm_precision();
  if (fsdp) {
    c.fsdp = Fsdp::kMegatron;
    c.data_parallel_sharding_strategy = Sharding::kOptimGradsParams;
  }
  return for_record(*this, [&] {
    for (const auto& [key, value] : settings) {
      if (!key.starts_with("model.")) apply_override(c, key, value);
    }
    return resolve(c, model);
  });
}

std::vector<RunRecord> parse_run_records(std::string_view csv_text, const std::string& context) {
  static const std::vector<std::string> kColumns = {"model", "precision", "gpus", "gbs", "mbs", "seq", "tp", "pp",
                                                    "cp", "vp", "ep", "fsdp"};
  std::vector<RunRecord> out;
  for (const CsvRow& row : parse_csv_table(csv_text, context, kColumns)) {
    RunRecord r;
    r.line = row.line();
    auto optional_text = [&](const std::string& column) { return row.has(column) ? row.text(column) : std::string(); };
    auto positive = [&](const std::string& column, std::int64_t fallback) {
      const std::int64_t v = row.integer(column, fallback);
      if (v < 1 || v > (1 << 24)) row.fail(column, "must be in [1, 16777216], got " + std::to_string(v));
      return static_cast<int>(v);
    };
    r.release = optional_text("release");
    r.model = row.text("model");
    if (r.model.empty()) row.fail("model", "is empty");
    r.precision = row.text("precision");
    if (!published_precision(r.precision)) row.fail("precision", "must be bf16, fp8[-recipe] or nvfp4, got '" + r.precision + "'");
    r.gpus = positive("gpus", CsvRow::kRequired);
    r.gbs = positive("gbs", CsvRow::kRequired);
    r.mbs = positive("mbs", CsvRow::kRequired);
    r.seq = positive("seq", CsvRow::kRequired);
    r.tp = positive("tp", 1);
    r.pp = positive("pp", 1);
    r.cp = positive("cp", 1);
    r.vp = positive("vp", 1);
    r.ep = positive("ep", 1);
    const std::int64_t fsdp = row.integer("fsdp", 0);
    if (fsdp != 0 && fsdp != 1) row.fail("fsdp", "must be 0 or 1");
    r.fsdp = fsdp == 1;
    // Throughput as tokens/s/GPU, or as seconds per iteration (gbs * seq tokens over all GPUs).
    if (!row.has("tokens_per_s_per_gpu") && !row.has("iteration_s")) {
      row.fail("tokens_per_s_per_gpu", "the header names neither tokens_per_s_per_gpu nor iteration_s");
    }
    const bool timed = !optional_text("iteration_s").empty();
    if (timed) {
      r.iteration_s = row.number("iteration_s");
      if (r.iteration_s <= 0) row.fail("iteration_s", "must be positive");
    }
    if (!timed || !optional_text("tokens_per_s_per_gpu").empty()) {
      if (!row.has("tokens_per_s_per_gpu")) row.fail("iteration_s", "is empty; it needs seconds per iteration");
      r.tokens_per_s_per_gpu = row.number("tokens_per_s_per_gpu");
      if (r.tokens_per_s_per_gpu <= 0) row.fail("tokens_per_s_per_gpu", "must be positive");
    }
    if (r.iteration_s > 0) {
      const double from_time = static_cast<double>(r.gbs) * r.seq / (r.iteration_s * r.gpus);
      if (r.tokens_per_s_per_gpu > 0 && std::abs(from_time / r.tokens_per_s_per_gpu - 1) > 0.02) {
        row.fail("iteration_s", "gives " + std::to_string(from_time) + " tokens/s/GPU, more than 2% from tokens_per_s_per_gpu");
      }
      if (r.tokens_per_s_per_gpu == 0) r.tokens_per_s_per_gpu = from_time;
    }
    if (!optional_text("model_tflops_per_gpu").empty()) r.model_tflops_per_gpu = row.number("model_tflops_per_gpu");
    std::istringstream settings(optional_text("settings"));
    for (std::string item; settings >> item;) {
      const std::size_t eq = item.find('=');
      if (eq == std::string::npos || eq == 0) row.fail("settings", "'" + item + "' is not key=value");
      std::string value = item.substr(eq + 1);
      std::replace(value.begin(), value.end(), '+', ',');  // list items
      const std::string key = item.substr(0, eq);
      // An unknown key or an unparsable value is a bad row (exit 2), not a run left out of the fit: set
      // it on a default config or model here, where the row and column can be named. Rules that need the
      // whole run are checked when it is simulated.
      try {
        if (key.starts_with("model.")) {
          ModelSpec probe;
          apply_override(probe, key.substr(6), value);
        } else {
          ParallelConfig probe;
          apply_override(probe, key, value);
        }
      } catch (const ConfigError&) {
        // a well-formed value that breaks a rule on its own: judged with the whole run
      } catch (const InputError& e) {
        row.fail("settings", e.what());
      }
      // One field once, however it is spelled (recompute / recompute_granularity, num-layers / num_layers).
      const auto field = [](const std::string& k) {
        return k.starts_with("model.") ? "model." + detail::normalize_key(k.substr(6)) : canonical_parallel_key(k);
      };
      if (std::any_of(r.settings.begin(), r.settings.end(), [&](const auto& kv) { return field(kv.first) == field(key); })) {
        row.fail("settings", "'" + key + "' sets a field given before in this cell");
      }
      r.settings.emplace_back(key, value);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace pipelab
