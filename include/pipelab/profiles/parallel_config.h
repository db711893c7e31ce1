// ParallelConfig: how one training iteration is laid out over GPUs (TP/PP/VP/CP/EP/DP, batch sizes,
// recompute, precision), the rules that make a layout legal for a model and GPU, and the stage split.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include <pipelab/profiles/precision.h>

namespace pipelab {

struct GpuSpec;
struct ModelSpec;

enum class Recompute { kNone, kSelective, kFull };

std::string_view to_string(Recompute recompute);
/// "none" | "selective" | "full"; InputError naming the valid values otherwise.
Recompute parse_recompute(std::string_view text);

/// A parallel layout. dp = 0 or world = 0 means "derive it" (resolve()); seq_length = 0 means the
/// model's default; sequence_parallel unset means "on when tp > 1" (Megatron's usual choice).
struct ParallelConfig {
  int tp = 1;     // tensor parallel
  int pp = 1;     // pipeline parallel (ranks)
  int vp = 1;     // virtual pipeline chunks per rank
  int cp = 1;     // context parallel
  int ep = 1;     // expert parallel (inside dp*cp)
  int dp = 0;     // data parallel
  int world = 0;  // GPUs
  int mbs = 1;    // micro-batch size (sequences)
  int gbs = 0;    // global batch size (sequences)
  int seq_length = 0;
  std::optional<bool> sequence_parallel;
  Recompute recompute = Recompute::kNone;
  bool distributed_optimizer = true;
  std::vector<int> stage_layers;  // optional: layers per virtual stage, size pp*vp, in model order
  Precision precision = Precision::kBf16;

  bool operator==(const ParallelConfig&) const = default;

  /// gbs / (mbs * dp): microbatches per iteration per pipeline. Needs a resolved dp (> 0).
  int microbatches() const;
  bool sequence_parallel_enabled() const { return sequence_parallel.value_or(tp > 1); }
  int virtual_stages() const { return pp * vp; }
};

/// Fills the derived fields: dp from world = tp*pp*cp*dp (or world from dp), seq_length from the model,
/// sequence_parallel's default. Throws ConfigError when dp cannot be derived (neither given, or world
/// not a multiple of tp*pp*cp). The other rules are check()'s job.
ParallelConfig resolve(const ParallelConfig& config, const ModelSpec& model);

/// One broken (or risky) rule: the field it is about, a short rule id, and a message naming both.
struct ConfigIssue {
  std::string field;
  std::string rule;
  std::string message;
};

struct ConfigCheck {
  std::vector<ConfigIssue> errors;
  std::vector<ConfigIssue> warnings;

  bool ok() const { return errors.empty(); }
};

/// The issues' messages joined by `separator`: "\n" for require_valid's error, "; " on one line.
std::string join_messages(const std::vector<ConfigIssue>& issues, std::string_view separator);

/// Every rule of docs/profiles.md "Parallel rules", on the config as given (dp/world/seq_length
/// derived on the fly if missing). Schedule-specific constraints belong to the schedule generators.
ConfigCheck check(const ParallelConfig& config, const ModelSpec& model, const GpuSpec& gpu);
/// Throws ConfigError with every error message of check(), one per line.
void require_valid(const ParallelConfig& config, const ModelSpec& model, const GpuSpec& gpu);

/// Transformer layers of each virtual stage in model order (size pp*vp; which rank runs stage s is the
/// schedule's placement, loop or V): stage_layers if given, else an even split. ConfigError if neither
/// works.
std::vector<int> layers_per_stage(const ParallelConfig& config, const ModelSpec& model);

/// Strict JSON with the field names above ("recompute": "selective", "precision": "fp8", ...); gbs is
/// required, every other key optional.
ParallelConfig parallel_config_from_json(const nlohmann::json& json, std::string_view context);
ParallelConfig parse_parallel_config(std::string_view json_text, std::string_view context);
nlohmann::json to_json(const ParallelConfig& config);

/// "19,21,21,19" -> {19, 21, 21, 19}: the command-line form of stage_layers. InputError
/// "<key>=<item>: expected an integer" naming the item that is not one.
std::vector<int> parse_int_list(std::string_view key, std::string_view text);

/// Sets one field from a command-line string. Keys: the JSON names and Megatron's long names
/// (tensor_model_parallel_size, pipeline_model_parallel_size, virtual_pipeline_model_parallel_size,
/// context_parallel_size, expert_model_parallel_size, data_parallel_size, micro_batch_size,
/// global_batch_size, recompute_granularity, use_distributed_optimizer), '-' or '_' separated.
void apply_override(ParallelConfig& config, std::string_view key, std::string_view value);

}  // namespace pipelab
