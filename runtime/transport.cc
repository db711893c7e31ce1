// Shared pieces of the transport interface.
#include "pipelab/runtime/transport.h"

#include "pipelab/schedules/dependencies.h"

namespace pipelab::runtime {

std::string describe(const MessageKey& key) {
  return std::string(key.dir == Direction::Forward ? "activation" : "gradient") + " for stage " + std::to_string(key.stage) +
         ", mb " + std::to_string(key.mb);
}

MessageKey message_of(const Action& p2p) {
  const Action recv = (p2p.op == Op::RecvF || p2p.op == Op::RecvB) ? p2p : matching_p2p(p2p);
  return MessageKey{recv.op == Op::RecvF ? Direction::Forward : Direction::Backward, recv.stage, recv.mb};
}

}  // namespace pipelab::runtime
