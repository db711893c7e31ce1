// MeasuredProfile JSON (format "pipelab.profile", version 1; docs/runtime.md).
#include "pipelab/profiles/measured_profile.h"

#include <array>

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

// The sanity rules of a profile that parsed; ConfigError listing every broken one.
void check_values(const MeasuredProfile& p, std::string_view context) {
  std::vector<std::string> errors;
  for (auto [name, v] : {std::pair{"hidden", p.hidden}, {"ffn", p.ffn}, {"heads", p.heads}, {"seq", p.seq}, {"mbs", p.mbs},
                         {"layers_per_stage", p.layers_per_stage}}) {
    if (v < 1) errors.push_back(std::string("model.") + name + "=" + std::to_string(v) + " must be >= 1");
  }
  for (auto [name, t] : {std::pair{"per_layer", p.per_layer}, {"per_stage", p.per_stage}}) {
    if (t.f_ns < 0 || t.i_ns < 0 || t.w_ns < 0 || t.b_ns < 0 || t.fb_ns < 0) errors.push_back(std::string(name) + " op times must be >= 0");
  }
  if (p.activation_bytes < 0) errors.push_back("activation_bytes must be >= 0");
  if (p.threads_per_rank < 1 || p.concurrency < 1) errors.push_back("threads_per_rank and concurrency must be >= 1");
  if (p.loss_ns < 0) errors.push_back("loss_ns must be >= 0");
  if (p.p2p.latency_ns < 0 || p.p2p.bandwidth_bytes_per_s < 0) errors.push_back("p2p latency and bandwidth must be >= 0");
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
