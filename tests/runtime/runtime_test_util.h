// Helpers shared by the runtime tests: tiny models, lowered schedules, the schedule matrix.
#pragma once

#include <string>
#include <vector>

#include "pipelab/runtime/backend.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::testing {

/// A block small enough that a whole pipeline iteration takes well under a millisecond.
inline runtime::ModelConfig tiny_model(int layers_per_stage = 1, bool swiglu = false) {
  runtime::ModelConfig m;
  m.block = kernels::BlockShape{.hidden = 8, .ffn = 16, .heads = 2, .seq = 4, .mbs = 1, .swiglu = swiglu};
  m.layers_per_stage = layers_per_stage;
  m.seed = 7;
  return m;
}

inline Schedule lowered(const std::string& name, int pp, int vp, int m) {
  return add_send_recv(make_schedule(name, ScheduleOptions{.pp = pp, .vp = vp, .microbatches = m, .group_size = 0}));
}

struct Case {
  std::string schedule;
  int pp;
  int vp;  // 0 = the schedule's default
  int m;
  std::string label() const {
    std::string s = schedule + "_pp" + std::to_string(pp) + "_vp" + std::to_string(vp) + "_m" + std::to_string(m);
    for (char& c : s) {
      if (c == '-') c = '_';
    }
    return s;
  }
};

/// Every schedule at several pipeline depths, chunk counts and microbatch counts.
inline std::vector<Case> schedule_matrix() {
  return {
      {"gpipe", 2, 1, 4},          {"gpipe", 3, 1, 3},          {"gpipe", 4, 1, 6},
      {"1f1b", 2, 1, 4},           {"1f1b", 3, 1, 5},           {"1f1b", 4, 1, 8},
      {"interleaved-1f1b", 2, 2, 4}, {"interleaved-1f1b", 2, 3, 6}, {"interleaved-1f1b", 4, 2, 8},
      {"looped-bfs", 2, 2, 4},     {"looped-bfs", 3, 2, 3},
      {"zb-h1", 2, 1, 4},          {"zb-h1", 3, 1, 6},          {"zb-h1", 2, 2, 4},
      {"zb-h2", 2, 1, 4},          {"zb-h2", 4, 1, 8},
      {"zb-v", 2, 2, 4},           {"zb-v", 3, 2, 6},           {"zb-v", 4, 2, 8},
      {"dualpipe", 2, 2, 4},       {"dualpipe", 4, 2, 8},       {"dualpipe", 2, 2, 6},
      {"dualpipev", 2, 2, 4},      {"dualpipev", 3, 2, 6},      {"dualpipev", 4, 2, 8},
  };
}

}  // namespace pipelab::testing
