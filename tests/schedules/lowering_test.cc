// Lowering passes: send/recv placement and B <-> I+W.
#include <gtest/gtest.h>

#include <tuple>

#include "pipelab/base/error.h"
#include "pipelab/schedules/dependencies.h"
#include "pipelab/schedules/formats.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/validate.h"

namespace pipelab {
namespace {

std::string row(const Schedule& s, int r) {
  std::string out;
  for (const Slot& a : s.ranks[r]) out += (out.empty() ? "" : " ") + (a ? to_string(*a) : std::string("."));
  return out;
}

TEST(AddSendRecv, OneFOneBOnTwoRanks) {
  const Schedule s = add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}));
  EXPECT_EQ(row(s, 0), "0F0 0SEND_F0 0F1 0SEND_F1 0RECV_B0 0B0 0RECV_B1 0B1");
  // Receives are posted when the sender is placed (round-robin), so RECV_F1 lands before 1B0.
  EXPECT_EQ(row(s, 1), "1RECV_F0 1F0 1RECV_F1 1B0 1SEND_B0 1F1 1B1 1SEND_B1");
}

TEST(AddSendRecv, NoCommsBetweenStagesOnTheSameRank) {
  // ZB-V: stages P-1 and P both live on rank P-1.
  const Schedule s = add_send_recv(make_schedule("zb-v", {2, 2, 4, 0}));
  for (const Slot& a : s.ranks[1]) {
    if (!a || is_compute(a->op)) continue;
    EXPECT_FALSE((a->op == Op::SendF && a->stage == 1) || (a->op == Op::RecvF && a->stage == 2)) << to_string(*a);
    EXPECT_FALSE((a->op == Op::SendB && a->stage == 2) || (a->op == Op::RecvB && a->stage == 1)) << to_string(*a);
  }
}

TEST(AddSendRecv, OverlappedUnitsSendBothHalves) {
  const Schedule s = add_send_recv(make_schedule("dualpipev", {2, 2, 4, 0}));
  // (0F3;3B1) on rank 0: F of stage 0 goes to stage 1, B of stage 3 goes to stage 2, both on rank 1.
  const auto& r0 = s.ranks[0];
  auto unit = std::find(r0.begin(), r0.end(), Slot(Action::overlap(0, 3, 3, 1)));
  ASSERT_NE(unit, r0.end());
  EXPECT_EQ(*(unit + 1), Slot(Action::make(Op::SendF, 0, 3)));
  EXPECT_EQ(*(unit + 2), Slot(Action::make(Op::SendB, 3, 1)));
}

TEST(AddSendRecv, RejectsAnInvalidOrAlreadyLoweredSchedule) {
  auto bad = parse_schedule("0B0,0F0\n", "bad");
  ASSERT_TRUE(bad.ok());
  EXPECT_THROW(add_send_recv(bad.value()), ScheduleError);
  const Schedule lowered = add_send_recv(make_schedule("1f1b", {2, 1, 2, 0}));
  EXPECT_THROW(add_send_recv(lowered), ScheduleError);
}

// A structurally sound schedule that deadlocks: the pass's own replay stalls and the error is the
// validator's deadlock report (rule and grid), as when the full validator ran first.
TEST(AddSendRecv, ReportsADeadlockWithTheValidatorsReport) {
  // Rank 0 waits for 1B0's gradient before it sends F0; rank 1 cannot run B0 without F0.
  auto stuck = parse_schedule("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", "stuck");
  ASSERT_TRUE(stuck.ok());
  ASSERT_TRUE(validate(stuck.value(), ValidationScope::WithoutDeadlock).ok());
  ASSERT_FALSE(validate(stuck.value()).ok());
  try {
    add_send_recv(stuck.value());
    FAIL() << "no error";
  } catch (const ScheduleError& e) {
    EXPECT_NE(std::string(e.what()).find("[deadlock]"), std::string::npos) << e.what();
  }
}

TEST(AddSendRecv, DropsIdleSlots) {
  const Schedule s = make_schedule("zb-v", {2, 2, 4, 0});
  ASSERT_FALSE(s.ranks[1][0].has_value());
  for (const auto& list : add_send_recv(s).ranks) {
    for (const Slot& a : list) EXPECT_TRUE(a.has_value());
  }
}

TEST(OverlapForwardBackward, PairsEachBackwardWithTheNextForward) {
  // Without a pipeline: Megatron's extra warm-up forward, then B(i) with F(i+1).
  const Schedule s = overlap_forward_backward(make_schedule("1f1b", {1, 1, 4, 0}));
  EXPECT_EQ(row(s, 0), "0F0 (0F1;0B0)OVERLAP_F_B (0F2;0B1)OVERLAP_F_B (0F3;0B2)OVERLAP_F_B 0B3");
}

TEST(OverlapForwardBackward, NeverPairsAForwardWithItsOwnMicrobatch) {
  for (auto [pp, vp, m] : {std::tuple{4, 2, 8}, {8, 4, 64}, {2, 24, 32}, {4, 3, 12}}) {
    const Schedule s = overlap_forward_backward(make_schedule("interleaved-1f1b", {pp, vp, m, 0}));
    EXPECT_TRUE(validate(s).ok()) << pp << " " << vp << " " << m;
    int units = 0;
    for (const auto& rank : s.ranks) {
      for (const Slot& a : rank) {
        if (!a || a->op != Op::OverlapFB) continue;
        ++units;
        EXPECT_NE(a->mb, a->b_mb) << to_string(*a);
      }
    }
    EXPECT_GT(units, 0);
    EXPECT_NO_THROW(add_send_recv(s));  // lowers without deadlock
  }
}

TEST(OverlapForwardBackward, RejectsALoweredSchedule) {
  EXPECT_THROW(overlap_forward_backward(add_send_recv(make_schedule("1f1b", {2, 1, 4, 0}))), ScheduleError);
}

TEST(SplitBackward, ReplacesBByIThenW) {
  const Schedule s = split_backward(make_schedule("1f1b", {1, 1, 2, 0}));
  EXPECT_EQ(row(s, 0), "0F0 0I0 0W0 0F1 0I1 0W1");
}

TEST(MergeBackward, ReplacesIAndDropsItsW) {
  const Schedule s = merge_backward(make_schedule("zb-h1", {2, 1, 3, 0}));
  EXPECT_TRUE(validate(s).ok());
  EXPECT_EQ(row(s, 1), "1F0 1B0 1F1 1B1 1F2 1B2");
}

TEST(MergeBackward, UndoesSplit) {
  const Schedule s = make_schedule("interleaved-1f1b", {4, 2, 8, 0});
  EXPECT_EQ(merge_backward(split_backward(s)), s);
}

TEST(PeerStage, PairsEverySendWithItsReceive) {
  EXPECT_EQ(peer_stage(Action::make(Op::SendF, 2, 5)), 3);
  EXPECT_EQ(peer_stage(Action::make(Op::RecvF, 3, 5)), 2);
  EXPECT_EQ(peer_stage(Action::make(Op::SendB, 3, 5)), 2);
  EXPECT_EQ(peer_stage(Action::make(Op::RecvB, 2, 5)), 3);
  for (Op op : {Op::SendF, Op::RecvF, Op::SendB, Op::RecvB}) {
    const Action a = Action::make(op, 4, 7);
    EXPECT_EQ(matching_p2p(matching_p2p(a)), a) << to_string(a);
  }
  EXPECT_EQ(matching_p2p(Action::make(Op::SendF, 1, 0)), Action::make(Op::RecvF, 2, 0));
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  EXPECT_TRUE(p2p_past_chain_end(Action::make(Op::SendF, 1, 0), shape));
  EXPECT_TRUE(p2p_past_chain_end(Action::make(Op::SendB, 0, 0), shape));
  EXPECT_FALSE(p2p_past_chain_end(Action::make(Op::SendF, 0, 0), shape));
}

TEST(PeerStage, TheReceiveForASentSignalMatchesItsSend) {
  for (Op op : {Op::SendF, Op::SendB}) {
    const Action send = Action::make(op, 3, 5);
    EXPECT_EQ(receive_for(completions(send).items[0]), matching_p2p(send)) << to_string(send);
  }
}

}  // namespace
}  // namespace pipelab
