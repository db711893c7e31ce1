// Profiled cost model; see profiled_cost.h.
#include "pipelab/sim/profiled_cost.h"

#include <string>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"

namespace pipelab::sim {

ProfiledCost::ProfiledCost(const MeasuredProfile& profile, const PipelineShape& shape, int layers_per_stage)
    : profile_(profile), shape_(shape), layers_(layers_per_stage) {
  if (layers_per_stage < 1) {
    throw ConfigError("profiled cost: layers_per_stage=" + std::to_string(layers_per_stage) + " must be >= 1");
  }
  const OpTimes& l = profile.per_layer;
  if (l.f_ns <= 0 || l.i_ns <= 0 || l.w_ns <= 0) {
    throw ConfigError("profiled cost: the profile holds no per-layer F/I/W times (f_ns, i_ns, w_ns must be > 0)");
  }
  const OpTimes& s = profile.per_stage;
  uses_stage_values_ = profile.layers_per_stage == layers_per_stage && s.f_ns > 0 && s.i_ns > 0 && s.w_ns > 0;
  if (uses_stage_values_) {
    stage_ = s;
  } else {
    // A stage of n layers; the profile's times are range-checked, n is not: refuse rather than overflow.
    const auto times_n = [&](std::int64_t ns) {
      const std::optional<std::int64_t> t = limits::checked_mul(layers_per_stage, ns);
      if (!t || *t > limits::kMaxDurationNs) {
        throw ConfigError("profiled cost: layers_per_stage=" + std::to_string(layers_per_stage) + " times a per-layer time of " +
                          std::to_string(ns) + " ns exceeds the limit of " + std::to_string(limits::kMaxDurationNs) + " ns per action");
      }
      return *t;
    };
    stage_ = OpTimes{times_n(l.f_ns), times_n(l.i_ns), times_n(l.w_ns), times_n(l.b_ns), times_n(l.fb_ns)};
  }
  // Missing composite times fall back to their parts (no overlap benefit).
  if (stage_.b_ns <= 0) stage_.b_ns = stage_.i_ns + stage_.w_ns;
  if (stage_.fb_ns <= 0) stage_.fb_ns = stage_.f_ns + stage_.b_ns;
}

std::int64_t ProfiledCost::op_ns(Op op, int stage) const {
  switch (op) {
    case Op::F: return stage_.f_ns + (shape_.last_in_chain(stage) ? profile_.loss_ns : 0);
    case Op::I: return stage_.i_ns;
    case Op::W: return stage_.w_ns;
    case Op::B: return stage_.b_ns;
    default: return 0;
  }
}

std::int64_t ProfiledCost::duration_ns(int, const Action& a) const {
  if (a.op == Op::OverlapFB) return stage_.fb_ns + (shape_.last_in_chain(a.stage) ? profile_.loss_ns : 0);
  return op_ns(a.op, a.stage);
}

std::int64_t ProfiledCost::p2p_ns(std::int64_t bytes, int src_rank, int dst_rank) const {
  if (src_rank == dst_rank) return 0;
  return profile_.p2p.time_ns(bytes);
}

std::int64_t ProfiledCost::boundary_bytes(int) const { return profile_.activation_bytes; }

double ProfiledCost::flops(const Action& a) const {
  const double n = layers_;
  switch (a.op) {
    case Op::F: return n * profile_.flops_f;
    case Op::I: return n * profile_.flops_i;
    case Op::W: return n * profile_.flops_w;
    case Op::B: return n * (profile_.flops_i + profile_.flops_w);
    case Op::OverlapFB: return n * (profile_.flops_f + profile_.flops_i + profile_.flops_w);
    default: return 0;
  }
}

}  // namespace pipelab::sim
