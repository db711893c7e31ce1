// validate(): checks a schedule and returns diagnostics (rank, position, rule); it never throws or
// asserts on a bad schedule. Rules are listed in docs/validation.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pipelab/schedules/schedule.h"

namespace pipelab {

struct Diagnostic {
  int rank = -1;       // -1: not tied to one rank
  int position = -1;   // index into the rank's list; -1: not tied to one position (e.g. missing)
  std::string rule;    // short id: shape, range, placement, exactly-once, order, comm, deadlock
  std::string message;
};

struct Validation {
  /// Diagnostics kept in full; past this many only a count is kept, so a small file that breaks a
  /// rule a million times (one microbatch index of 299999) yields a short report, not gigabytes.
  static constexpr std::size_t kMaxListed = 1000;

  std::vector<Diagnostic> diagnostics;  // the first kMaxListed problems found
  std::size_t omitted = 0;              // problems found beyond them

  bool ok() const { return diagnostics.empty(); }
  /// Every problem found, listed or not.
  std::size_t problems() const { return diagnostics.size() + omitted; }
  /// Every diagnostic on its own line, then the rank x position grid with offending cells marked.
  std::string report(const Schedule& s) const;
};

/// Which rules validate() checks: all of them, or every rule but the deadlock replay, for a pass
/// that replays the dependencies itself (add_send_recv) and calls the full check only when its own
/// replay stalls, so a valid schedule is not replayed twice.
enum class ValidationScope : std::uint8_t { All, WithoutDeadlock };

Validation validate(const Schedule& s, ValidationScope scope = ValidationScope::All);

/// Throws ScheduleError carrying validate()'s report unless the schedule is valid.
void require_valid(const Schedule& s, ValidationScope scope = ValidationScope::All);

/// The rank x position grid of a schedule; cells in `marked` (rank, position) are shown >like<
/// this, and only a window of columns around the first marked cell is printed for long lists.
std::string format_order_grid(const Schedule& s, const std::vector<std::pair<int, int>>& marked);

}  // namespace pipelab
