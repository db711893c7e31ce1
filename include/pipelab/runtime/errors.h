// Errors of the runtime: a failed execution (a rank threw, a peer stopped, a wait timed out). All are
// DeviceError, so the command line maps them to exit code 2 with a "device error" prefix.
#pragma once

#include <string>

#include "pipelab/base/error.h"

namespace pipelab::runtime {

/// A rank could not execute its schedule (transport failure, missing data, leaked state).
class ExecutionError : public DeviceError {
 public:
  using DeviceError::DeviceError;
};

/// The watchdog fired: a rank waited longer than the configured timeout. The message names the rank,
/// the action (position and IR text) and what it waits for.
class WatchdogTimeout : public ExecutionError {
 public:
  using ExecutionError::ExecutionError;
};

/// Another rank failed; this rank stopped. The message carries the failing rank's error.
class PeerAborted : public ExecutionError {
 public:
  using ExecutionError::ExecutionError;
};

}  // namespace pipelab::runtime
