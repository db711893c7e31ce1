// MeasuredProfile JSON (format "pipelab.profile", version 1; docs/runtime.md).
#include "pipelab/profiles/measured_profile.h"

#include <array>
#include <tuple>

#include <nlohmann/json.hpp>

#include "field_table.h"
#include "pipelab/base/error.h"
#include "pipelab/base/file_io.h"
#include "pipelab/base/json_reader.h"

namespace pipelab {
namespace {

using nlohmann::json;


// One table per JSON object of the format; each drives reading and writing that object.
using OpField = detail::Field<OpTimes, std::int64_t>;
const std::array kOpFields = {
    OpField{"f_ns", &OpTimes::f_ns, true}, OpField{"i_ns", &OpTimes::i_ns, true}, OpField{"w_ns", &OpTimes::w_ns, true},
    OpField{"b_ns", &OpTimes::b_ns, true}, OpField{"fb_ns", &OpTimes::fb_ns, true},
};

using SampleField = detail::Field<P2PSample, std::int64_t>;
const std::array kSampleFields = {SampleField{"bytes", &P2PSample::bytes, true}, SampleField{"ns", &P2PSample::ns, true}};

}  // namespace

namespace detail {

// "per_layer" / "per_stage".
template <>
struct ValueCodec<OpTimes> : ObjectCodec<OpTimes, kOpFields, "op times"> {};

// "samples" of "p2p": an array of {"bytes", "ns"}.
template <>
struct ValueCodec<std::vector<P2PSample>> : ObjectListCodec<P2PSample, kSampleFields, "p2p sample"> {};

}  // namespace detail

namespace {

using P2PField = detail::Field<P2PProfile, std::string, std::int64_t, double, std::vector<P2PSample>>;
const std::array kP2PFields = {
    P2PField{"transport", &P2PProfile::transport},
    P2PField{"latency_ns", &P2PProfile::latency_ns, true},
    P2PField{"bandwidth_bytes_per_s", &P2PProfile::bandwidth_bytes_per_s, true},
    P2PField{"samples", &P2PProfile::samples},
};

}  // namespace

namespace detail {

// "p2p": the measured transport.
template <>
struct ValueCodec<P2PProfile> : ObjectCodec<P2PProfile, kP2PFields, "p2p"> {};

}  // namespace detail

namespace {

// The top-level object (besides "format" and "version"), and the two objects whose keys are flat
// members of MeasuredProfile: "model" (the mock model measured) and "flops_per_layer".
using ProfileField = detail::Field<MeasuredProfile, std::string, int, bool, std::int64_t, double, OpTimes, P2PProfile>;
const std::array kTopFields = {
    ProfileField{"backend", &MeasuredProfile::backend, true},
    ProfileField{"device", &MeasuredProfile::device},
    ProfileField{"threads_per_rank", &MeasuredProfile::threads_per_rank},
    ProfileField{"concurrency", &MeasuredProfile::concurrency},
    ProfileField{"repeats", &MeasuredProfile::repeats},
    ProfileField{"warmup", &MeasuredProfile::warmup},
    ProfileField{"per_layer", &MeasuredProfile::per_layer, true},
    ProfileField{"per_stage", &MeasuredProfile::per_stage, true},
    ProfileField{"loss_ns", &MeasuredProfile::loss_ns},
    ProfileField{"activation_bytes", &MeasuredProfile::activation_bytes, true},
    ProfileField{"p2p", &MeasuredProfile::p2p},
};
const std::array kModelFields = {
    ProfileField{"hidden", &MeasuredProfile::hidden, true},
    ProfileField{"ffn", &MeasuredProfile::ffn, true},
    ProfileField{"heads", &MeasuredProfile::heads, true},
    ProfileField{"seq", &MeasuredProfile::seq, true},
    ProfileField{"mbs", &MeasuredProfile::mbs, true},
    ProfileField{"swiglu", &MeasuredProfile::swiglu},
    ProfileField{"layers_per_stage", &MeasuredProfile::layers_per_stage, true},
};
const std::array kFlopFields = {
    ProfileField{"f", &MeasuredProfile::flops_f, true},
    ProfileField{"i", &MeasuredProfile::flops_i, true},
    ProfileField{"w", &MeasuredProfile::flops_w, true},
};
constexpr std::string_view kModelKey = "model", kFlopsKey = "flops_per_layer";

const std::vector<std::string>& top_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out = {"format", "version", std::string(kModelKey), std::string(kFlopsKey)};
    for (std::string& key : detail::field_keys(kTopFields)) out.push_back(std::move(key));
    return out;
  }();
  return keys;
}

// The ranges of a profile's numbers (docs/validation.md, "Limits"): the mock model's sizes as the
// run and profile commands accept them, op times up to 10^13 ns (hours per layer), FLOPs up to
// 10^18 per layer, a P2P bandwidth of 0 (not measured) or within [1e3, 1e15] B/s.
constexpr std::int64_t kMaxOpNs = 10'000'000'000'000;  // 1e13
constexpr double kMaxLayerFlops = 1e18;
constexpr std::int64_t kMaxBytes = std::int64_t{1} << 40;
constexpr std::size_t kMaxSamples = 1000;

// The sanity rules of a profile that parsed; ConfigError listing every broken one.
void check_values(const MeasuredProfile& p, std::string_view context) {
  std::vector<std::string> errors;
  for (auto [name, v, max] : {std::tuple{"hidden", p.hidden, 65536}, {"ffn", p.ffn, 262144}, {"heads", p.heads, 4096}, {"seq", p.seq, 65536},
                              {"mbs", p.mbs, 4096}, {"layers_per_stage", p.layers_per_stage, 1024}}) {
    if (v < 1 || v > max) errors.push_back(std::string("model.") + name + "=" + std::to_string(v) + " must be in [1, " + std::to_string(max) + "]");
  }
  for (auto [name, t] : {std::pair{"per_layer", p.per_layer}, {"per_stage", p.per_stage}}) {
    for (auto [op, ns] : {std::pair{"f_ns", t.f_ns}, {"i_ns", t.i_ns}, {"w_ns", t.w_ns}, {"b_ns", t.b_ns}, {"fb_ns", t.fb_ns}}) {
      if (ns < 0 || ns > kMaxOpNs) {
        errors.push_back(std::string(name) + "." + op + "=" + std::to_string(ns) + " must be in [0, " + std::to_string(kMaxOpNs) + "]");
      }
    }
  }
  if (p.loss_ns < 0 || p.loss_ns > kMaxOpNs) errors.push_back("loss_ns=" + std::to_string(p.loss_ns) + " must be in [0, " + std::to_string(kMaxOpNs) + "]");
  for (auto [name, flops] : {std::pair{"f", p.flops_f}, {"i", p.flops_i}, {"w", p.flops_w}}) {
    if (!(flops >= 0 && flops <= kMaxLayerFlops)) errors.push_back(std::string("flops_per_layer.") + name + "=" + number_text(flops) + " must be in [0, 1e+18]");
  }
  if (p.activation_bytes < 0 || p.activation_bytes > kMaxBytes) {
    errors.push_back("activation_bytes=" + std::to_string(p.activation_bytes) + " must be in [0, " + std::to_string(kMaxBytes) + "]");
  }
  if (p.threads_per_rank < 1 || p.concurrency < 1) errors.push_back("threads_per_rank and concurrency must be >= 1");
  if (p.p2p.latency_ns < 0 || p.p2p.latency_ns > kMaxOpNs) {
    errors.push_back("p2p.latency_ns=" + std::to_string(p.p2p.latency_ns) + " must be in [0, " + std::to_string(kMaxOpNs) + "]");
  }
  if (p.p2p.bandwidth_bytes_per_s != 0 &&
      !(p.p2p.bandwidth_bytes_per_s >= kMinP2PBandwidth && p.p2p.bandwidth_bytes_per_s <= kMaxP2PBandwidth)) {
    errors.push_back("p2p.bandwidth_bytes_per_s=" + number_text(p.p2p.bandwidth_bytes_per_s) + " must be 0 (not measured) or in [1000, 1e+15]");
  }
  if (p.p2p.samples.size() > kMaxSamples) errors.push_back("p2p.samples has " + std::to_string(p.p2p.samples.size()) + " entries; at most 1000");
  for (std::size_t i = 0; i < p.p2p.samples.size() && i < kMaxSamples; ++i) {
    const P2PSample& sample = p.p2p.samples[i];
    if (sample.bytes < 0 || sample.bytes > kMaxBytes || sample.ns < 0 || sample.ns > kMaxOpNs) {
      errors.push_back("p2p.samples[" + std::to_string(i) + "] needs bytes in [0, 2^40] and ns in [0, 1e13]");
    }
  }
  if (!errors.empty()) throw ConfigError(context_prefix(context) + "profile: " + join(errors, "; "));
}

}  // namespace

json to_json(const MeasuredProfile& p) {
  json j = detail::fields_to_json(kTopFields, p);
  j["format"] = MeasuredProfile::kFormat;
  j["version"] = MeasuredProfile::kVersion;
  j[std::string(kModelKey)] = detail::fields_to_json(kModelFields, p);
  j[std::string(kFlopsKey)] = detail::fields_to_json(kFlopFields, p);
  return j;
}

MeasuredProfile measured_profile_from_json(const json& j, std::string_view context) {
  const JsonReader top(j, context, KeyNames::spec("profile"), top_keys());
  const std::string format = top.get_string("format");
  if (format != MeasuredProfile::kFormat) {
    throw InputError(context_prefix(context) + "format is \"" + format + "\", expected \"" + std::string(MeasuredProfile::kFormat) +
                     "\" (not a measured profile)");
  }
  if (const int v = top.get_int("version"); v != MeasuredProfile::kVersion) {
    throw InputError(context_prefix(context) + "unsupported profile version " + std::to_string(v) + "; this build reads " +
                     std::to_string(MeasuredProfile::kVersion));
  }
  MeasuredProfile p;
  detail::read_fields(kTopFields, top, p);
  detail::read_object(top, kModelKey, kModelFields, "profile model", p);
  detail::read_object(top, kFlopsKey, kFlopFields, "flops", p);
  check_values(p, context);
  return p;
}

MeasuredProfile parse_measured_profile(std::string_view json_text, std::string_view context) {
  return measured_profile_from_json(parse_json_text(json_text, context), context);
}

MeasuredProfile load_measured_profile(const std::string& path) {
  return parse_measured_profile(read_text_file(path, "profile"), path);
}

void save_measured_profile(const MeasuredProfile& p, const std::string& path) {
  write_text_file(path, to_json(p).dump(1) + "\n", "profile");
}

}  // namespace pipelab
