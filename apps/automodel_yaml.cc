// AutoModel YAML keys → pipelab flags (one table per block; what is not in a table is listed as ignored).
#include "automodel_yaml.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <set>

#include <yaml-cpp/yaml.h>

#include <pipelab/base/error.h>
#include <pipelab/profiles/presets.h>
#include <pipelab/schedules/registry.h>

namespace pipelab::app {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

class Reader {
 public:
  explicit Reader(std::string_view context) : context_(context) {}

  [[noreturn]] void fail(const YAML::Node& node, const std::string& key, const std::string& rule) const {
    throw InputError(context_ + ":" + std::to_string(node.Mark().line + 1) + ": " + key + ": " + rule);
  }

  std::string scalar(const YAML::Node& node, const std::string& key) const {
    if (!node.IsScalar()) fail(node, key, "must be a single value");
    return node.Scalar();
  }

  bool boolean(const YAML::Node& node, const std::string& key) const {
    const std::string v = lower(scalar(node, key));
    if (v == "true" || v == "yes" || v == "on") return true;
    if (v == "false" || v == "no" || v == "off") return false;
    fail(node, key, "must be true or false, got '" + v + "'");
  }

  std::string positive_int(const YAML::Node& node, const std::string& key) const {
    const std::string v = scalar(node, key);
    const bool digits = !v.empty() && v.size() < 10 && std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); });
    if (!digits || std::stoi(v) < 1) fail(node, key, "must be a positive integer, got '" + v + "'");
    return v;
  }

 private:
  std::string context_;
};

// A key's handler appends the pipelab flags that express it.
using Handler = std::function<void(const Reader&, const YAML::Node&, const std::string& key, std::vector<std::string>&)>;

Handler size_flag(const char* flag) {
  return [flag](const Reader& r, const YAML::Node& v, const std::string& key, std::vector<std::string>& out) {
    out.insert(out.end(), {flag, r.positive_int(v, key)});
  };
}

Handler switch_pair(const char* on, const char* off) {
  return [on, off](const Reader& r, const YAML::Node& v, const std::string& key, std::vector<std::string>& out) {
    out.emplace_back(r.boolean(v, key) ? on : off);
  };
}

// AutoModel's strategies (case-insensitive) and the sharding each implies.
void strategy(const Reader& r, const YAML::Node& v, const std::string& key, std::vector<std::string>& out) {
  const std::string s = lower(r.scalar(v, key));
  if (s == "fsdp2") {
    out.emplace_back("--use-torch-fsdp2");
  } else if (s == "megatron_fsdp" || s == "megatron-fsdp" || s == "mfsdp") {
    out.emplace_back("--use-megatron-fsdp");
  } else if (s == "ddp") {
    out.emplace_back("--no-distributed-optimizer");  // torch DDP replicates the optimizer state
  } else {
    r.fail(v, key, "unknown strategy '" + s + "'; valid: fsdp2, megatron_fsdp, ddp");
  }
}

// `true|on|full|enabled|yes` → full recompute, `false|off|none|disabled|no` → none, `selective`.
void activation_checkpointing(const Reader& r, const YAML::Node& v, const std::string& key, std::vector<std::string>& out) {
  const std::string s = lower(r.scalar(v, key));
  std::string granularity;
  if (s == "true" || s == "on" || s == "full" || s == "enabled" || s == "yes") granularity = "full";
  if (s == "false" || s == "off" || s == "none" || s == "disabled" || s == "no") granularity = "none";
  if (s == "selective") granularity = "selective";
  if (granularity.empty()) r.fail(v, key, "must be true, false, full or selective, got '" + s + "'");
  out.insert(out.end(), {"--recompute-granularity", granularity});
}

// Megatron-FSDP's ZeRO stage as a sharding strategy.
void zero_dp_strategy(const Reader& r, const YAML::Node& v, const std::string& key, std::vector<std::string>& out) {
  static const char* const kStrategies[] = {"no_shard", "optim", "optim_grads", "optim_grads_params"};
  const std::string s = r.scalar(v, key);
  if (s.size() != 1 || s[0] < '0' || s[0] > '3') r.fail(v, key, "must be 0, 1, 2 or 3, got '" + s + "'");
  out.insert(out.end(), {"--data-parallel-sharding-strategy", kStrategies[s[0] - '0']});
}

void schedule(const Reader& r, const YAML::Node& v, const std::string& key, std::vector<std::string>& out) {
  const std::string name = r.scalar(v, key);
  try {
    find_schedule(name);  // PyTorch's names are schedule aliases
  } catch (const InputError& e) {
    r.fail(v, key, e.what());  // named here, with the file and line
  }
  out.insert(out.end(), {"--schedule", name});
}

const std::map<std::string, Handler>& distributed_keys() {
  static const std::map<std::string, Handler> keys = {
      {"strategy", strategy},
      {"tp_size", size_flag("--tensor-model-parallel-size")},
      {"pp_size", size_flag("--pipeline-model-parallel-size")},
      {"cp_size", size_flag("--context-parallel-size")},
      {"ep_size", size_flag("--expert-model-parallel-size")},
      {"dp_size", size_flag("--data-parallel-size")},
      {"dp_replicate_size", size_flag("--num-distributed-optimizer-instances")},  // HSDP replicas
      {"sequence_parallel", switch_pair("--sequence-parallel", "--no-sequence-parallel")},
      {"activation_checkpointing", activation_checkpointing},
      {"zero_dp_strategy", zero_dp_strategy},
      {"overlap_grad_reduce", switch_pair("--overlap-grad-reduce", "--no-overlap-grad-reduce")},
      {"overlap_param_gather", switch_pair("--overlap-param-gather", "--no-overlap-param-gather")},
      {"grad_reduce_in_fp32", switch_pair("--accumulate-allreduce-grads-in-fp32", "--grad-reduce-in-bf16")},
  };
  return keys;
}

const std::map<std::string, Handler>& pipeline_keys() {
  static const std::map<std::string, Handler> keys = {
      {"pp_schedule", schedule},
      {"pp_microbatch_size", size_flag("--micro-batch-size")},
      {"layers_per_stage", size_flag("--num-layers-per-virtual-pipeline-stage")},
  };
  return keys;
}

const std::map<std::string, Handler>& step_scheduler_keys() {
  static const std::map<std::string, Handler> keys = {
      {"global_batch_size", size_flag("--global-batch-size")},
  };
  return keys;
}

const std::map<std::string, Handler>& dataset_keys() {
  static const std::map<std::string, Handler> keys = {
      {"seq_length", size_flag("--seq-length")},
  };
  return keys;
}

bool has_model_preset(const std::string& name) {
  try {
    model_preset(name);
    return true;
  } catch (const InputError&) {
    return false;
  }
}

bool is_hydra_key(const std::string& key) { return key == "_target_" || key == "_recursive_" || key == "_convert_"; }

void read_block(const Reader& r, const YAML::Node& block, const std::string& path,
                const std::map<std::string, Handler>& keys, AutoModelFlags& out) {
  if (!block.IsMap()) r.fail(block, path, "must be a mapping of keys");
  std::set<std::string> seen;
  for (const auto& item : block) {
    const std::string key = item.first.Scalar();
    const std::string dotted = path + "." + key;
    // yaml-cpp keeps both entries of a repeated key; YAML forbids it and readers disagree on the winner.
    if (!seen.insert(key).second) r.fail(item.first, dotted, "is given twice in this mapping");
    if (is_hydra_key(key)) continue;
    if (item.second.IsNull()) continue;  // an explicit null keeps AutoModel's default
    const auto handler = keys.find(key);
    if (handler != keys.end()) {
      handler->second(r, item.second, dotted, out.words);
    } else if (item.second.IsMap() && (key == "pipeline" || key == "moe")) {
      continue;  // sub-blocks are read on their own below
    } else {
      out.ignored.push_back(dotted);
    }
  }
}

// The flags of a parsed config (a mapping). `root` is not const: yaml-cpp's non-const operator[]
// gives an undefined node for a missing key, the const one an invalid node that throws when asked
// its type (so every lookup on a const node tests IsDefined() first).
AutoModelFlags read_config(const Reader& r, YAML::Node root) {
  AutoModelFlags out;
  // A whole config has `distributed:`; a pasted block alone starts with its keys.
  const bool whole = root["distributed"].IsDefined();
  const YAML::Node distributed = whole ? root["distributed"] : root;
  read_block(r, distributed, "distributed", distributed_keys(), out);
  // The pipeline settings: `distributed.pipeline`, or the older top-level `autopipeline:` block.
  const YAML::Node pipeline = distributed["pipeline"].IsDefined() ? distributed["pipeline"] : root["autopipeline"];
  if (pipeline.IsDefined() && !pipeline.IsNull()) read_block(r, pipeline, "distributed.pipeline", pipeline_keys(), out);
  if (const YAML::Node moe = distributed["moe"]; moe.IsDefined() && !moe.IsNull()) {
    read_block(r, moe, "distributed.moe", {}, out);
  }
  if (!whole) return out;

  if (const YAML::Node steps = root["step_scheduler"]; steps.IsDefined()) {
    read_block(r, steps, "step_scheduler", step_scheduler_keys(), out);
    // Without PP, AutoModel's per-rank batch is the micro-batch (gradient accumulation makes the rest).
    const bool has_pipeline_mbs = pipeline.IsDefined() && pipeline.IsMap() && pipeline["pp_microbatch_size"].IsDefined();
    if (const YAML::Node local = steps["local_batch_size"]; local.IsDefined() && !has_pipeline_mbs) {
      out.words.insert(out.words.end(), {"--micro-batch-size", r.positive_int(local, "step_scheduler.local_batch_size")});
      std::erase(out.ignored, "step_scheduler.local_batch_size");
    }
  }
  // The model by its Hugging Face id, when a preset has that id as an alias.
  const YAML::Node model = root["model"];
  if (const YAML::Node id_node = model.IsMap() ? model["pretrained_model_name_or_path"] : YAML::Node();
      id_node.IsDefined() && id_node.IsScalar()) {  // a missing key is an invalid node: test IsDefined first
    const std::string id = id_node.Scalar();
    if (has_model_preset(id)) {
      out.words.insert(out.words.end(), {"--model", id});
    } else {
      out.ignored.push_back("model.pretrained_model_name_or_path=" + id + " (no preset of that name; give --model)");
    }
  }
  if (const YAML::Node dataset = root["dataset"]; dataset.IsMap()) read_block(r, dataset, "dataset", dataset_keys(), out);
  for (const auto& item : root) {
    const std::string key = item.first.Scalar();
    if (key != "distributed" && key != "step_scheduler" && key != "autopipeline" && key != "model" && key != "dataset") {
      out.ignored.push_back(key);
    }
  }
  return out;
}

}  // namespace

AutoModelFlags automodel_yaml_flags(std::string_view yaml_text, std::string_view context) {
  const auto refuse = [&](const YAML::Exception& e, const char* what) {
    const std::string line = e.mark.is_null() ? "" : ":" + std::to_string(e.mark.line + 1);
    return InputError(std::string(context) + line + ": " + what + e.msg);
  };
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw refuse(e, "not valid YAML: ");
  }
  if (!root.IsMap()) throw InputError(std::string(context) + ": expected an AutoModel config (a mapping with a distributed: block)");
  try {
    return read_config(Reader(context), root);
  } catch (const YAML::Exception& e) {  // a node of a shape the tables do not expect: bad input, not an internal error
    throw refuse(e, "unexpected YAML structure: ");
  }
}

}  // namespace pipelab::app
