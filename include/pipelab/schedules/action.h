// Action: one step of a pipeline schedule, (virtual stage, op, microbatch), with the text form of
// PyTorch's torch.distributed.pipelining IR (`2F0`, `1I3`, `1SEND_F0`, `(0F3;3B1)OVERLAP_F_B`).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "pipelab/base/result.h"

namespace pipelab {

enum class Op : std::uint8_t {
  F,          // forward of one stage for one microbatch
  B,          // full backward (input grad + weight grad)
  I,          // backward for the input only (ZB's "B")
  W,          // backward for the weights only
  SendF,      // send the forward activation of (stage, mb) to the next stage's rank
  RecvF,      // receive the forward activation of (stage, mb) from the previous stage's rank
  SendB,      // send the input gradient of (stage, mb) to the previous stage's rank
  RecvB,      // receive the output gradient of (stage, mb) from the next stage's rank
  OverlapFB,   // DualPipe's F&B unit: one F and one full B run as one overlapped unit
  ReduceGrad,  // data-parallel gradient reduction of a stage, once its last weight-grad is done (no mb)
};

inline constexpr int kNumOps = 10;

constexpr bool is_compute(Op op) { return op == Op::F || op == Op::B || op == Op::I || op == Op::W || op == Op::OverlapFB; }
constexpr bool is_comm(Op op) { return !is_compute(op); }
/// Point-to-point transfers between pipeline stages (the ops add_send_recv inserts).
constexpr bool is_p2p(Op op) { return op == Op::SendF || op == Op::RecvF || op == Op::SendB || op == Op::RecvB; }

/// PyTorch's spelling of an op: "F", "SEND_F", "OVERLAP_F_B", ...
std::string_view op_name(Op op);

/// One action. For OverlapFB, (stage, mb) is the forward half and (b_stage, b_mb) the backward half.
struct Action {
  std::int32_t stage = 0;
  std::int32_t mb = 0;
  Op op = Op::F;
  std::int32_t b_stage = -1;  // OverlapFB only
  std::int32_t b_mb = -1;     // OverlapFB only

  static constexpr Action make(Op op, int stage, int mb) { return Action{stage, mb, op, -1, -1}; }
  static constexpr Action overlap(int f_stage, int f_mb, int b_stage, int b_mb) {
    return Action{f_stage, f_mb, Op::OverlapFB, b_stage, b_mb};
  }
  /// The F half of an OverlapFB unit (or the action itself).
  constexpr Action forward_half() const { return make(op == Op::OverlapFB ? Op::F : op, stage, mb); }
  /// The B half of an OverlapFB unit.
  constexpr Action backward_half() const { return make(Op::B, b_stage, b_mb); }

  bool operator==(const Action&) const = default;
};

/// `2F0`, `1SEND_B3`, `(0F3;3B1)OVERLAP_F_B`, `0REDUCE_GRAD` (no microbatch).
std::string to_string(const Action& a);

/// Parses the text form. Never throws; errors say what was expected at which column.
Result<Action> parse_action(std::string_view text);

}  // namespace pipelab
