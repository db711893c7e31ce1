// CostModel: the one small interface between the simulator and what things cost. Implementations:
// uniform (fixed times), analytic (model x GPU x parallel layout), profiled (measured per stage/op).
#pragma once

#include <cstdint>

#include "pipelab/schedules/action.h"

namespace pipelab::sim {

class CostModel {
 public:
  virtual ~CostModel() = default;
  /// Compute time of F, B, I, W or an F&B unit of `a` on `rank`, in ns.
  virtual std::int64_t duration_ns(int rank, const Action& a) const = 0;
  /// Time to move `bytes` from src_rank to dst_rank (latency + bytes / bandwidth), in ns.
  virtual std::int64_t p2p_ns(std::int64_t bytes, int src_rank, int dst_rank) const = 0;
  /// Bytes of the activation (forward) or gradient (backward) crossing from `stage` to its neighbour.
  virtual std::int64_t boundary_bytes(int stage) const = 0;
  /// Floating-point operations of a compute action (recorded in the timeline).
  virtual double flops(const Action& a) const = 0;
  /// Data-parallel gradient reduction of one stage's gradients (REDUCE_GRAD): bytes and time.
  virtual std::int64_t reduce_grad_bytes(int /*stage*/) const { return 0; }
  virtual std::int64_t reduce_grad_ns(int /*rank*/, int /*stage*/) const { return 0; }
};

}  // namespace pipelab::sim
