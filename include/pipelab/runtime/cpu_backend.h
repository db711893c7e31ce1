// The cpu backend: the stages of one rank as kernels::StageModel (fp32, OpenBLAS), activations in
// pooled host memory. DualPipe's mirrored stages hold the same model part as their twin (same
// weights), each with its own gradient accumulator.
#pragma once

#include <vector>

#include "pipelab/kernels/stage.h"
#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/microbatch_states.h"

namespace pipelab::runtime {

class CpuBackend final : public Backend {
 public:
  /// Builds the stages `shape` places on `rank`: stage s holds layers
  /// [part_of_stage(s) * layers_per_stage, +layers_per_stage) of the model. Throws InputError.
  CpuBackend(const ModelConfig& model, const PipelineShape& shape, int rank);
  ~CpuBackend() override;

  std::string_view name() const override { return "cpu"; }
  BufferPool& pool() override { return pool_; }
  std::size_t activation_bytes() const override;
  const std::vector<int>& stages() const override { return states_.stages(); }

  void load_input(int mb, Buffer& act) override;
  void forward(int stage, int mb, Buffer& act) override;
  double loss(int stage, int mb, Buffer& act) override;
  void backward_input(int stage, int mb, Buffer& grad) override;
  void backward_weight(int stage, int mb) override;
  void backward(int stage, int mb, Buffer& grad) override;

  double flops(const Action& a) const override { return action_flops(model_, a); }
  void zero_grads() override;
  std::vector<kernels::BlockGrads> gradients(int stage) const override;
  std::int64_t state_bytes() const override { return states_.bytes(); }
  std::int64_t static_bytes() const override;
  std::vector<std::string> held_state() const override { return states_.held_state(); }
  void discard_state() override;

  const kernels::StageModel& stage_model(int stage) const;
  const ModelConfig& model() const { return model_; }

 private:
  ModelConfig model_;
  PipelineShape shape_;
  int rank_;
  MicrobatchStates states_;
  std::vector<kernels::StageModel> models_;    // parallel to stages()
  std::vector<kernels::StageSaved> saved_;     // per states_.index(stage, mb)
  std::vector<kernels::StageStash> stash_;     // per states_.index(stage, mb)
  std::vector<std::vector<float>> inputs_;     // per microbatch (first stages only)
  std::vector<std::vector<float>> targets_;    // per microbatch (last stages only)
  BufferPool pool_;
};

}  // namespace pipelab::runtime
