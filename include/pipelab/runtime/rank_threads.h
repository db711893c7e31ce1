// Ranks as threads of this process: one thread per rank of an InprocWorld, a failing rank tells its
// peers, and the caller sees the first failure. The one spawn/catch/abort/join/rethrow sequence of
// the in-process drivers (run, profile's ping-pong, and the tests).
#pragma once

#include <functional>

#include "pipelab/runtime/inproc_transport.h"

namespace pipelab::runtime {

/// Runs `fn(rank)` on a thread per rank of `world` (pinned to the rank-th CPU when `pin`), waits
/// for all, then rethrows the first failure: the error of the rank whose abort() came first, or
/// else any rank's. A rank that throws calls world.transport(rank).abort(what) so the others stop
/// with PeerAborted instead of waiting for it.
void run_on_rank_threads(InprocWorld& world, bool pin, const std::function<void(int rank)>& fn);

}  // namespace pipelab::runtime
