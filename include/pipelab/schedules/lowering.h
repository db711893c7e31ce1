// Lowering passes, each Schedule -> Schedule. The simulator and the runtime both consume the
// output of add_send_recv(), so they see the same explicit communication.
#pragma once

#include "pipelab/schedules/schedule.h"

namespace pipelab {

/// Adds SEND_F/RECV_F and SEND_B/RECV_B for every dependency between stages on different ranks
/// (none between stages on the same rank), as PyTorch's _add_send_recv: ranks are visited
/// round-robin, a rank's next compute action is placed once its inputs are available, its sends
/// follow it, and the matching receive is appended to the peer's list at that moment. Idle slots
/// are dropped. The input must be a valid compute-only schedule (ScheduleError otherwise).
Schedule add_send_recv(const Schedule& compute);

/// Where REDUCE_GRAD goes: right after each stage's last weight-grad, overlapping the rank's other
/// work (Megatron's --overlap-grad-reduce, PyTorch's _add_reduce_grad), or after the rank's last
/// action (the reduction waits for the whole backward).
enum class ReduceGradPlacement { AfterLastWeightGrad, AtEnd };

/// Adds REDUCE_GRAD (a stage's data-parallel gradient reduction) for every stage: after the last
/// weight-grad (W, B, or an F&B unit's B) of the stage on its rank, so the reduction can start while
/// the rank still computes other stages; or, with AtEnd, after the rank's last action.
Schedule add_reduce_grad(const Schedule& s, ReduceGradPlacement placement = ReduceGradPlacement::AfterLastWeightGrad);
/// The same pass on a schedule the caller gives up: each rank's list is rebuilt in turn, so the
/// pass holds one extra rank list at a time instead of a second schedule.
Schedule add_reduce_grad(Schedule&& s, ReduceGradPlacement placement = ReduceGradPlacement::AfterLastWeightGrad);

/// Megatron's 1F1B all-to-all overlap (--overlap-moe-expert-parallel-comm): a forward F(s, mb) and
/// a full backward B(s', mb') of another microbatch that are adjacent on their rank (either order)
/// run as one F&B unit, so each half's expert-parallel communication can hide behind the other's
/// compute. Where a rank runs F(i) B(i) F(i+1) B(i+1) (1F1B's last rank, PP=1), this pairs B(i) with
/// F(i+1): Megatron's extra warm-up forward. Pairs are taken in a round-robin replay of the
/// dependencies, and only when both halves' inputs are there when the unit could start, so a unit
/// never waits on its own forward's consumers and the result cannot deadlock. Input: a valid
/// compute-only schedule.
Schedule overlap_forward_backward(const Schedule& compute);

/// Drops SEND/RECV/REDUCE_GRAD actions and idle slots: the compute-only view of a lowered schedule.
Schedule remove_comms(const Schedule& s);

/// Replaces every full backward B(s, mb) by I(s, mb) immediately followed by W(s, mb).
/// (Overlapped F&B units keep their full backward.)
Schedule split_backward(const Schedule& s);

/// Replaces every I(s, mb) by B(s, mb) and removes the matching W(s, mb).
Schedule merge_backward(const Schedule& s);

}  // namespace pipelab
