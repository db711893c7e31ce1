// The grid of (schedule, pp, vp, microbatches) cases every generator test runs over: each
// schedule at every shape its constraints allow within small bounds.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "pipelab/base/error.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::testing {

struct GridCase {
  std::string schedule;
  int pp, vp, microbatches;
};

inline std::ostream& operator<<(std::ostream& os, const GridCase& c) {
  return os << c.schedule << "/pp" << c.pp << "/vp" << c.vp << "/m" << c.microbatches;
}

inline std::string grid_case_name(const GridCase& c) {
  std::string s = c.schedule + "_pp" + std::to_string(c.pp) + "_vp" + std::to_string(c.vp) + "_m" + std::to_string(c.microbatches);
  for (char& ch : s) if (ch == '-') ch = '_';
  return s;
}

/// Every (schedule, pp in 1..8, vp in the schedule's range, m in a spread up to 24) that the
/// generator accepts.
inline std::vector<GridCase> schedule_grid() {
  std::vector<GridCase> out;
  for (const ScheduleInfo& info : schedule_registry()) {
    for (int pp : {1, 2, 3, 4, 5, 8}) {
      std::vector<int> vps = info.fixed_vp ? std::vector<int>{info.default_vp} : std::vector<int>{1, 2, 3, 4};
      for (int vp : vps) {
        for (int m : {1, 2, 3, 4, 5, 7, 8, 12, 16, 24}) {
          try {
            make_schedule(info.name, {pp, vp, m, 0});
          } catch (const ScheduleError&) {
            continue;  // outside this schedule's constraints (tested separately)
          }
          out.push_back({info.name, pp, vp, m});
        }
      }
    }
  }
  return out;
}

}  // namespace pipelab::testing
