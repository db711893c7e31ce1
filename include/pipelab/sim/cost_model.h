// CostModel: the one small interface between the simulator and what things cost. Implementations:
// uniform (fixed times), analytic (model x GPU x parallel layout), profiled (measured per stage/op).
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/schedules/action.h"
#include "pipelab/schedules/timeline.h"

namespace pipelab::sim {

/// Communication that runs inside a compute action and lengthens it (tensor, expert and context
/// parallel collectives; FSDP's per-layer gathers and reduce-scatters; activation offloading's host
/// copies), in ns of the action's
/// duration: only what the action does not hide behind its own compute.
struct InActionComm {
  double tp_ns = 0;
  double ep_ns = 0;
  double cp_ns = 0;
  double fsdp_ns = 0;
  double offload_ns = 0;  // waits for activation CPU offloading's host-link copies
  double host_ns = 0;     // waits for the host's kernel launches (inside the compute: sim/host_launches.h)
  InActionComm& operator+=(const InActionComm& o) {
    tp_ns += o.tp_ns;
    ep_ns += o.ep_ns;
    cp_ns += o.cp_ns;
    fsdp_ns += o.fsdp_ns;
    offload_ns += o.offload_ns;
    host_ns += o.host_ns;
    return *this;
  }
  bool operator==(const InActionComm&) const = default;
};

/// A stage's share of the distributed optimizer's parameter all-gather, which Megatron overlaps with
/// the stage's first forward of the next iteration (--overlap-param-gather): that forward's layers wait
/// for their buckets one after another (docs/simulator.md, "Parameter all-gather").
struct ParamGather {
  std::int64_t ns = 0;     // the whole gather on the data-parallel link; 0: nothing waits for it
  std::int64_t bytes = 0;  // received by this GPU
  int buckets = 1;         // gathered one after another, the next dispatched as the forward takes the last
  bool aligned = false;    // dispatched ahead of the forward (align_param_gather): chunks 0 and 1 at the
                           // iteration's start, chunk k + 1 (k >= 1) pp_rank forward steps before chunk
                           // k's first forward (the engine takes the rank's index as pp_rank); else at
                           // the stage's own first forward
};

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
  /// The part of reduce_grad_ns that follows the stage's last gradient pass: the rest may run while
  /// that pass produces the gradients (bucketed reduction). Default: all of it.
  virtual std::int64_t reduce_grad_tail_ns(int rank, int stage) const { return reduce_grad_ns(rank, stage); }
  /// The bytes of that tail (the timeline's figure for it). Default: all of them.
  virtual std::int64_t reduce_grad_tail_bytes(int stage) const { return reduce_grad_bytes(stage); }
  /// The share of its speed compute loses while a data-parallel collective's kernels run beside it
  /// (the SMs they hold, sm_carve_out.h): compute beside a REDUCE_GRAD is slowed by that share of the
  /// overlap. 0 for models that do not time it.
  virtual double dp_collective_compute_loss() const { return 0; }
  /// The exposed communication inside compute action `a` on `rank`, by kind. Zero for models that
  /// do not split an action's time (uniform, profiled).
  virtual InActionComm in_action_comm(int /*rank*/, const Action& /*a*/) const { return {}; }
  /// The parameter all-gather before `stage`'s first forward of each iteration; none by default.
  virtual ParamGather param_gather(int /*rank*/, int /*stage*/) const { return {}; }
  /// The optimizer step on one GPU that updates `params` parameters (its shard of them), in ns.
  /// Zero for models that do not time it (uniform, profiled: the runtime runs no optimizer).
  virtual std::int64_t optimizer_step_ns(double /*params*/) const { return 0; }
  /// How compute action `a` on `rank` splits into phases, in order, their times summing to its
  /// duration (docs/simulator.md, "Phases"); empty when the model does not split it.
  virtual std::vector<Phase> phases(int /*rank*/, const Action& /*a*/) const { return {}; }
};

}  // namespace pipelab::sim
