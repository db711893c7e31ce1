// RunRecord: one training run with its layout and measured throughput — a published result (the
// calibration set in calibration/) or a user's own measurement. The table format: CSV with the
// columns model, precision, gpus, gbs, mbs, seq, tp, pp, cp, vp, ep, fsdp, tokens_per_s_per_gpu or
// iteration_s (empty tp/pp/cp/vp/ep = 1), optional release, model_tflops_per_gpu and settings
// (docs/calibration.md).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/parallel_config.h"

namespace pipelab {

struct RunRecord {
  int line = 0;              // in the file, for messages
  std::string release;       // software release, e.g. "25.09" ("" when not given)
  std::string model;         // preset name or alias
  std::string precision;     // as published: "bf16", "fp8", "fp8-cs", "fp8?" (FP8 presumed), "nvfp4"
  int gpus = 0, gbs = 0, mbs = 0, seq = 0;
  int tp = 1, pp = 1, cp = 1, vp = 1, ep = 1;
  bool fsdp = false;         // Megatron-FSDP instead of the distributed optimizer
  double tokens_per_s_per_gpu = 0;  // measured, or gbs * seq / (iteration_s * gpus)
  double iteration_s = 0;           // measured seconds per iteration (0 when not given)
  double model_tflops_per_gpu = 0;  // as published (0 when not given); counted the publisher's way
  /// The recipe's other settings: ParallelConfig fields, or "model.<field>" for the model.
  std::vector<std::pair<std::string, std::string>> settings;

  /// "25.09 llama3-70b fp8 64 GPUs tp4 pp8 cp1 vp5 ep1"
  std::string label() const;
  /// The schedule the recipe runs: Megatron's interleaved 1F1B with vp > 1, 1F1B otherwise.
  std::string schedule() const;
  /// The model with the record's model.* settings applied.
  ModelSpec model_spec(const ModelSpec& preset) const;
  /// The GEMM precision the published one names: any "fp8..." runs in FP8 (the recipe detail is in
  /// settings). Parsed records always have one.
  Precision gemm_precision() const;
  /// The resolved parallel configuration (ConfigError naming the record's line on a broken rule).
  ParallelConfig config(const ModelSpec& model) const;
};

/// Reads a run table; InputError naming the file, line and column of a bad cell.
std::vector<RunRecord> parse_run_records(std::string_view csv_text, const std::string& context);

}  // namespace pipelab
