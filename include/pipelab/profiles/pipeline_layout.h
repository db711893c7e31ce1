// PipelineLayout: what each virtual pipeline stage holds, in model order — the embedding, decoder
// layers, multi-token-prediction (MTP) layers and the loss (final norm, LM head, cross-entropy).
// One representation, filled from whichever way a user gives the split:
//   - Megatron's --pipeline-model-parallel-layout string ("Et*3|(tt|)*29,m|L");
//   - explicit decoder counts per stage (--stage-layers);
//   - --decoder-first/last-pipeline-num-layers;
//   - --account-for-embedding/loss-in-pipeline-split;
//   - an even split, or, when the layers do not divide, a cost-balanced one (with a warning that
//     gives the Megatron layout string reproducing it).
// Stage i of the model is Megatron's stage i: virtual stage i / pp on pipeline rank i % pp for loop
// placement (a V-shaped schedule places the same model-order stages its own way).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "pipelab/base/result.h"

namespace pipelab {

struct ModelSpec;
struct ParallelConfig;

enum class LayerKind : std::uint8_t { Embedding, Decoder, Mtp, Loss };

/// One virtual stage's layers, in order.
struct StageLayout {
  std::vector<LayerKind> layers;
  int count(LayerKind kind) const;
  int decoders() const { return count(LayerKind::Decoder); }
  bool has(LayerKind kind) const { return count(kind) > 0; }
  bool operator==(const StageLayout&) const = default;
};

struct PipelineLayout {
  std::vector<StageLayout> stages;  // model order

  int size() const { return static_cast<int>(stages.size()); }
  /// Decoder layers of each stage.
  std::vector<int> decoder_counts() const;
  /// Megatron's layout string, compressed with its repeats: "Et|(tt|)*30mL".
  std::string to_megatron() const;
  bool operator==(const PipelineLayout&) const = default;
};

/// Megatron's grammar (megatron/core/transformer/pipeline_parallel_layer_layout.py): `E`, `t`, `m`,
/// `L`; `|` between stages (empty stages allowed); `X*N` repeats one symbol, `(...)*N` a group that
/// may hold `|` (no nesting); commas are ignored. Errors carry the 1-based column.
Result<PipelineLayout> parse_pipeline_layout(std::string_view text);

/// Embedding on the first stage, `decoders[i]` decoder layers on stage i, then `mtp_layers` MTP
/// layers and the loss on the last stage (Megatron's placement without a layout string).
PipelineLayout layout_from_decoder_counts(const std::vector<int>& decoders, int mtp_layers);

/// How the layout of a configuration was decided, and the layout.
struct ResolvedLayout {
  PipelineLayout layout;
  std::string source;   // "layout", "stage_layers", "first_last", "account_for", "even", "balanced"
  std::string warning;  // non-empty for a cost-balanced split: what was chosen and the Megatron flag for it
};

/// The layout of `config` for `model` over `stages` virtual stages (pp * chunks per rank), from the
/// first of the sources above the config sets. Throws ConfigError naming the field and the rule
/// (e.g. "pipeline_layout: 60 decoder layers, num_layers=61", "decoder_first_pipeline_num_layers=3
/// must be divisible by vp=2").
ResolvedLayout resolve_pipeline_layout(const ParallelConfig& config, const ModelSpec& model, int stages);

}  // namespace pipelab
