// Private (runtime/cuda): kernel and memory-copy activity of a GPU run through CUPTI's activity
// API, each record tied to the action that launched it by an external correlation id the cuda
// backend pushes around the action's launches. CUPTI is process-wide, so this is one object.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "pipelab/schedules/timeline.h"

namespace pipelab::runtime::cuda {

class CuptiTrace {
 public:
  static CuptiTrace& instance();

  /// Starts recording (idempotent). Throws DeviceError naming the CUPTI call that failed.
  void enable();
  /// A rank's next iteration starts now (right after its barrier): times of its activity are taken
  /// from here. Iterations count from 0 at the first mark (warm-up included).
  void mark_epoch(int rank);
  /// Around an action's launches, on the rank's thread: records the action and pushes its id.
  void push_action(int rank, const Action& action);
  void pop_action();
  /// "N kernel/copy records, M correlations, K actions" held now (diagnostics).
  std::string summary();
  /// The activity of `rank`'s actions in its iteration `iteration`, by start time (flushes CUPTI
  /// first); that iteration's records are released, earlier ones dropped.
  std::vector<DeviceActivity> take(int rank, int iteration);

  struct Record {
    std::uint32_t correlation = 0;
    std::string name;
    std::uint64_t start = 0, end = 0;
    std::int64_t bytes = 0;
  };
  // Filled from CUPTI's buffer callbacks.
  void add(Record r);
  void correlate(std::uint32_t correlation, std::uint64_t external);

 private:
  CuptiTrace() = default;
  struct ActionRef {
    int rank;
    int iteration;
    std::string label;
  };
  std::mutex mutex_;
  bool enabled_ = false;
  std::uint64_t next_id_ = 1;
  std::unordered_map<std::uint64_t, ActionRef> actions_;          // external id -> action
  std::unordered_map<std::uint32_t, std::uint64_t> external_of_;  // CUPTI correlation -> external id
  std::vector<Record> records_;
  std::unordered_map<int, std::vector<std::uint64_t>> epochs_;    // rank -> per iteration, CUPTI timestamp
};

}  // namespace pipelab::runtime::cuda
