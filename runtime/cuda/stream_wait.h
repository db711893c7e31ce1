// Private (runtime/cuda): waiting for device work with the watchdog's deadline instead of a
// blocking synchronize that could hang forever on a dead peer.
#pragma once

#include <cuda_runtime.h>

#include "pipelab/runtime/transport.h"

namespace pipelab::runtime::cuda {

/// Polls `stream` until its work completed (true) or `deadline` passed (false); throws on a CUDA
/// error other than "not ready".
bool wait_stream(cudaStream_t stream, Clock::time_point deadline);

}  // namespace pipelab::runtime::cuda
