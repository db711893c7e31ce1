// ProfiledCost: a CostModel from a MeasuredProfile (written by `pipelab profile`): the duration of
// an action on a stage is the measured per-stage time when the profile measured stages of this size,
// else layers x the per-layer time; the last stage of a chain adds the loss; an F&B unit costs the
// measured F&B; a message costs latency + bytes / bandwidth of the measured transport.
#pragma once

#include "pipelab/profiles/measured_profile.h"
#include "pipelab/schedules/schedule.h"
#include "pipelab/sim/cost_model.h"

namespace pipelab::sim {

class ProfiledCost final : public CostModel {
 public:
  /// Throws ConfigError when layers_per_stage < 1 or the profile holds no compute times.
  ProfiledCost(const MeasuredProfile& profile, const PipelineShape& shape, int layers_per_stage);

  std::int64_t duration_ns(int rank, const Action& a) const override;
  std::int64_t p2p_ns(std::int64_t bytes, int src_rank, int dst_rank) const override;
  std::int64_t boundary_bytes(int stage) const override;
  double flops(const Action& a) const override;

  /// Times of one stage of `layers_per_stage` layers (per-stage values or layers x per-layer).
  const OpTimes& stage_times() const { return stage_; }
  /// True when the profile's per-stage values were used.
  bool uses_stage_values() const { return uses_stage_values_; }

 private:
  std::int64_t op_ns(Op op, int stage) const;

  MeasuredProfile profile_;
  PipelineShape shape_;
  int layers_;
  OpTimes stage_;
  bool uses_stage_values_ = false;
};

}  // namespace pipelab::sim
