// Shared pieces of the transport interface.
#include "pipelab/runtime/transport.h"

namespace pipelab::runtime {

std::string describe(const MessageKey& key) {
  return std::string(key.dir == Direction::Forward ? "activation" : "gradient") + " for stage " + std::to_string(key.stage) +
         ", mb " + std::to_string(key.mb);
}

}  // namespace pipelab::runtime
