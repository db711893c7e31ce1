// Registry of schedule generators by name, with the aliases users know from Megatron, PyTorch and
// the zero-bubble repository. Lookup is case-insensitive and treats '_' like '-'.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "pipelab/schedules/generators.h"

namespace pipelab {

struct ScheduleInfo {
  std::string name;                  // canonical, e.g. "interleaved-1f1b"
  std::vector<std::string> aliases;  // e.g. "interleaved1f1b", "Interleaved1F1B"
  std::string summary;               // one line
  std::string constraints;           // one line, human readable
  Schedule (*make)(const ScheduleOptions&);
  int default_vp;                    // chunks per rank when the user gives none
  bool fixed_vp;                     // true when vp must be exactly default_vp
  bool splits_backward;              // emits I and W instead of (only) B
};

const std::vector<ScheduleInfo>& schedule_registry();

/// Finds a schedule by name or alias; throws InputError listing the valid names otherwise.
const ScheduleInfo& find_schedule(std::string_view name);

/// Comma-separated canonical names, for help texts and errors.
std::string schedule_names();

/// Builds a schedule by name (vp 0 means the generator's default).
Schedule make_schedule(std::string_view name, const ScheduleOptions& options);

}  // namespace pipelab
