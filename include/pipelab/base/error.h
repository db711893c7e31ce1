// The one error hierarchy of pipelab. Libraries throw these; only main() catches and maps them to
// exit codes (docs/cli.md): InputError and DeviceError -> 2; a failed check is an exit code of 1 a command
// returns, not an exception; anything else (a bug) -> 3.
#pragma once

#include <stdexcept>
#include <string>

namespace pipelab {

/// Base of every pipelab error.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Bad user input: a flag, a config field, a file. The message names the field and the rule.
class InputError : public Error {
 public:
  using Error::Error;
};

/// A schedule that cannot be built or executed (generator constraint, malformed IR, deadlock).
class ScheduleError : public InputError {
 public:
  using InputError::InputError;
};

/// A parallel/model/GPU configuration that breaks a rule.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

/// A device or transport failure (CUDA, NCCL, MPI); carries where it happened.
class DeviceError : public Error {
 public:
  using Error::Error;
};

}  // namespace pipelab
