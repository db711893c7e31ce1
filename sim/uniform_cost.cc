// Uniform cost model.
#include "pipelab/sim/uniform_cost.h"

#include "pipelab/base/error.h"

namespace pipelab::sim {

UniformCost::UniformCost(UniformTimes t) : t_(t) {
  if (t_.f_ns < 0 || t_.i_ns < 0 || t_.w_ns < 0 || t_.comm_ns < 0) {
    throw ConfigError("uniform costs must be >= 0 (t_f, t_i, t_w, t_comm)");
  }
}

std::int64_t UniformCost::duration_ns(int, const Action& a) const {
  switch (a.op) {
    case Op::F: return t_.f_ns;
    case Op::B: return t_.full_backward_ns();
    case Op::I: return t_.i_ns;
    case Op::W: return t_.w_ns;
    case Op::OverlapFB: return t_.overlap_ns();
    default: return 0;
  }
}

std::int64_t UniformCost::p2p_ns(std::int64_t, int, int) const { return t_.comm_ns; }

}  // namespace pipelab::sim
