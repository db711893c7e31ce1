// The order of point-to-point traffic a lowered schedule implies, for transports that match
// messages by order rather than by tag (NCCL): per directed rank pair, the messages in the order
// the sender's SEND actions post them, and the batches of consecutive SEND/RECV actions a rank
// issues together (ncclGroupStart/End, as Megatron batches its send/recv pairs).
#pragma once

#include <cstddef>
#include <vector>

#include "pipelab/runtime/transport.h"
#include "pipelab/schedules/schedule.h"

namespace pipelab::runtime {

/// One direction of one rank pair and its messages in the sender's order.
struct PairTraffic {
  int src = 0;
  int dst = 0;
  std::vector<MessageKey> messages;
};

/// Every directed pair with traffic in `lowered` (which has SEND/RECV actions), ordered by (src, dst).
std::vector<PairTraffic> pair_traffic(const Schedule& lowered);

/// The list positions of `rank`'s SEND/RECV actions, in runs of consecutive comm actions (compute
/// actions and empty slots end a run).
std::vector<std::vector<std::size_t>> comm_batches(const Schedule& lowered, int rank);

}  // namespace pipelab::runtime
