// MeasuredProfile JSON (format "pipelab.profile", version 1; docs/runtime.md).
#include "pipelab/profiles/measured_profile.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "json_reader.h"
#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"

namespace pipelab {
namespace {

using nlohmann::json;

const std::vector<std::string> kTopKeys = {"format", "version", "backend", "device", "threads_per_rank", "concurrency", "model", "repeats",
                                           "warmup", "per_layer", "per_stage", "loss_ns", "flops_per_layer",
                                           "activation_bytes", "p2p"};
const std::vector<std::string> kModelKeys = {"hidden", "ffn", "heads", "seq", "mbs", "swiglu", "layers_per_stage"};
const std::vector<std::string> kOpKeys = {"f_ns", "i_ns", "w_ns", "b_ns", "fb_ns"};
const std::vector<std::string> kFlopKeys = {"f", "i", "w"};
const std::vector<std::string> kP2PKeys = {"transport", "latency_ns", "bandwidth_bytes_per_s", "samples"};
const std::vector<std::string> kSampleKeys = {"bytes", "ns"};

json op_json(const OpTimes& t) {
  return {{"f_ns", t.f_ns}, {"i_ns", t.i_ns}, {"w_ns", t.w_ns}, {"b_ns", t.b_ns}, {"fb_ns", t.fb_ns}};
}

OpTimes op_from(const json& j, const std::string& where) {
  const detail::JsonReader r(j, where, "op times", kOpKeys);
  OpTimes t;
  t.f_ns = r.get_int64("f_ns");
  t.i_ns = r.get_int64("i_ns");
  t.w_ns = r.get_int64("w_ns");
  t.b_ns = r.get_int64("b_ns");
  t.fb_ns = r.get_int64("fb_ns");
  for (std::int64_t v : {t.f_ns, t.i_ns, t.w_ns, t.b_ns, t.fb_ns}) {
    if (v < 0) throw ConfigError(where + ": op times must be >= 0");
  }
  return t;
}

}  // namespace

json to_json(const MeasuredProfile& p) {
  json samples = json::array();
  for (const P2PSample& s : p.p2p.samples) samples.push_back({{"bytes", s.bytes}, {"ns", s.ns}});
  return {{"format", MeasuredProfile::kFormat},
          {"version", MeasuredProfile::kVersion},
          {"backend", p.backend},
          {"device", p.device},
          {"threads_per_rank", p.threads_per_rank},
          {"concurrency", p.concurrency},
          {"model",
           {{"hidden", p.hidden},
            {"ffn", p.ffn},
            {"heads", p.heads},
            {"seq", p.seq},
            {"mbs", p.mbs},
            {"swiglu", p.swiglu},
            {"layers_per_stage", p.layers_per_stage}}},
          {"repeats", p.repeats},
          {"warmup", p.warmup},
          {"per_layer", op_json(p.per_layer)},
          {"per_stage", op_json(p.per_stage)},
          {"loss_ns", p.loss_ns},
          {"flops_per_layer", {{"f", p.flops_f}, {"i", p.flops_i}, {"w", p.flops_w}}},
          {"activation_bytes", p.activation_bytes},
          {"p2p",
           {{"transport", p.p2p.transport},
            {"latency_ns", p.p2p.latency_ns},
            {"bandwidth_bytes_per_s", p.p2p.bandwidth_bytes_per_s},
            {"samples", std::move(samples)}}}};
}

MeasuredProfile measured_profile_from_json(const json& j, std::string_view context) {
  const std::string ctx(context);
  const detail::JsonReader top(j, context, "profile", kTopKeys);
  const std::string format = top.get_string("format");
  if (format != MeasuredProfile::kFormat) {
    throw InputError(detail::context_prefix(context) + "format is \"" + format + "\", expected \"" +
                     std::string(MeasuredProfile::kFormat) + "\" (not a measured profile)");
  }
  if (const int v = top.get_int("version"); v != MeasuredProfile::kVersion) {
    throw InputError(detail::context_prefix(context) + "unsupported profile version " + std::to_string(v) + "; this build reads " +
                     std::to_string(MeasuredProfile::kVersion));
  }
  MeasuredProfile p;
  p.backend = top.get_string("backend");
  p.device = top.get_string("device", "");
  p.threads_per_rank = top.get_int("threads_per_rank", 1);
  p.concurrency = top.get_int("concurrency", 1);
  const detail::JsonReader model(top.get("model"), detail::context_prefix(context) + "model", "profile model", kModelKeys);
  p.hidden = model.get_int("hidden");
  p.ffn = model.get_int("ffn");
  p.heads = model.get_int("heads");
  p.seq = model.get_int("seq");
  p.mbs = model.get_int("mbs");
  p.swiglu = model.get_bool("swiglu", false);
  p.layers_per_stage = model.get_int("layers_per_stage");
  p.repeats = top.get_int("repeats", 0);
  p.warmup = top.get_int("warmup", 0);
  p.per_layer = op_from(top.get("per_layer"), detail::context_prefix(context) + "per_layer");
  p.per_stage = op_from(top.get("per_stage"), detail::context_prefix(context) + "per_stage");
  p.loss_ns = top.get_int64("loss_ns", 0);
  const detail::JsonReader flops(top.get("flops_per_layer"), detail::context_prefix(context) + "flops_per_layer", "flops", kFlopKeys);
  p.flops_f = flops.get_double("f");
  p.flops_i = flops.get_double("i");
  p.flops_w = flops.get_double("w");
  p.activation_bytes = top.get_int64("activation_bytes");
  if (top.has("p2p")) {
    const detail::JsonReader p2p(top.get("p2p"), detail::context_prefix(context) + "p2p", "p2p", kP2PKeys);
    p.p2p.transport = p2p.get_string("transport", "");
    p.p2p.latency_ns = p2p.get_int64("latency_ns");
    p.p2p.bandwidth_bytes_per_s = p2p.get_double("bandwidth_bytes_per_s");
    if (p2p.has("samples")) {
      const json& samples = p2p.get("samples");
      if (!samples.is_array()) p2p.fail_type("samples", "an array of {\"bytes\", \"ns\"}");
      for (std::size_t i = 0; i < samples.size(); ++i) {
        const detail::JsonReader s(samples[i], detail::context_prefix(context) + "p2p.samples[" + std::to_string(i) + "]", "p2p sample",
                                   kSampleKeys);
        p.p2p.samples.push_back({s.get_int64("bytes"), s.get_int64("ns")});
      }
    }
  }
  std::vector<std::string> errors;
  for (auto [name, v] : {std::pair{"hidden", p.hidden}, {"ffn", p.ffn}, {"heads", p.heads}, {"seq", p.seq}, {"mbs", p.mbs},
                         {"layers_per_stage", p.layers_per_stage}}) {
    if (v < 1) errors.push_back(std::string("model.") + name + "=" + std::to_string(v) + " must be >= 1");
  }
  if (p.activation_bytes < 0) errors.push_back("activation_bytes must be >= 0");
  if (p.threads_per_rank < 1 || p.concurrency < 1) errors.push_back("threads_per_rank and concurrency must be >= 1");
  if (p.loss_ns < 0) errors.push_back("loss_ns must be >= 0");
  if (p.p2p.latency_ns < 0 || p.p2p.bandwidth_bytes_per_s < 0) errors.push_back("p2p latency and bandwidth must be >= 0");
  if (!errors.empty()) {
    std::string msg = detail::context_prefix(context) + "profile: ";
    for (std::size_t i = 0; i < errors.size(); ++i) msg += (i ? "; " : "") + errors[i];
    throw ConfigError(msg);
  }
  return p;
}

MeasuredProfile parse_measured_profile(std::string_view json_text, std::string_view context) {
  return measured_profile_from_json(detail::parse_json_text(json_text, context), context);
}

MeasuredProfile load_measured_profile(const std::string& path) {
  return parse_measured_profile(read_text_file(path, "profile"), path);
}

void save_measured_profile(const MeasuredProfile& p, const std::string& path) {
  write_text_file(path, to_json(p).dump(1) + "\n", "profile");
}

}  // namespace pipelab
