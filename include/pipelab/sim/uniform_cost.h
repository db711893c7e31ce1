// UniformCost: fixed F, B, I, W, F&B and P2P times, for closed-form tests and teaching.
#pragma once

#include "pipelab/sim/cost_model.h"

namespace pipelab::sim {

struct UniformTimes {
  std::int64_t f_ns = 1000;
  std::int64_t i_ns = 1000;
  std::int64_t w_ns = 1000;
  std::int64_t b_ns = -1;    // full backward; -1 = i_ns + w_ns
  std::int64_t fb_ns = -1;   // overlapped F&B unit; -1 = f_ns + b_ns (no overlap benefit)
  std::int64_t comm_ns = 0;  // one P2P transfer
  std::int64_t activation_bytes = 0;

  std::int64_t full_backward_ns() const { return b_ns >= 0 ? b_ns : i_ns + w_ns; }
  std::int64_t overlap_ns() const { return fb_ns >= 0 ? fb_ns : f_ns + full_backward_ns(); }
};

class UniformCost : public CostModel {
 public:
  explicit UniformCost(UniformTimes t);
  std::int64_t duration_ns(int rank, const Action& a) const override;
  std::int64_t p2p_ns(std::int64_t bytes, int src_rank, int dst_rank) const override;
  std::int64_t boundary_bytes(int /*stage*/) const override { return t_.activation_bytes; }
  double flops(const Action&) const override { return 0; }
  const UniformTimes& times() const { return t_; }

 private:
  UniformTimes t_;
};

}  // namespace pipelab::sim
