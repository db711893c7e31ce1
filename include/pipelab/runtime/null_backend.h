// A backend without compute, for executor tests and the overhead benchmark. It keeps the same
// per-microbatch bookkeeping as a real backend (so leak checks apply), can spin for a fixed time
// per op, and can stamp every activation with its producer so a test proves that each consumer got
// the buffer the schedule says it should (routing through transports and local hand-offs).
#pragma once

#include <cstdint>
#include <vector>

#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/microbatch_states.h"

namespace pipelab::runtime {

struct NullTimes {
  std::int64_t f_ns = 0;  // busy-wait per F (and per F half of an F&B unit)
  std::int64_t i_ns = 0;
  std::int64_t w_ns = 0;  // B spins i_ns + w_ns
};

class NullBackend final : public Backend {
 public:
  /// `activation_bytes` >= 16 when `check_routing` (the stamp uses the first four floats).
  NullBackend(const PipelineShape& shape, int rank, std::size_t activation_bytes, NullTimes times = {},
              bool check_routing = true);

  std::string_view name() const override { return "null"; }
  BufferPool& pool() override { return pool_; }
  std::size_t activation_bytes() const override { return bytes_; }
  const std::vector<int>& stages() const override { return states_.stages(); }

  void begin_iteration() override { calls_.clear(); }
  void load_input(int mb, Buffer& act) override;
  void forward(int stage, int mb, Buffer& act) override;
  double loss(int stage, int mb, Buffer& act) override;
  void backward_input(int stage, int mb, Buffer& grad) override;
  void backward_weight(int stage, int mb) override;
  void backward(int stage, int mb, Buffer& grad) override;

  double flops(const Action&) const override { return 0; }
  void zero_grads() override {}
  std::vector<kernels::BlockGrads> gradients(int) const override { return {}; }
  /// The number of microbatches holding state (the null backend holds no bytes).
  std::int64_t state_bytes() const override { return states_.held(); }
  std::int64_t static_bytes() const override { return 0; }
  std::vector<std::string> held_state() const override { return states_.held_state(); }
  void discard_state() override { states_.discard(); }

  /// Compute calls of the last iteration in the order they ran, e.g. 0F0, 0I0, 0W0.
  const std::vector<Action>& calls() const { return calls_; }

 private:
  void check_stamp(const Buffer& b, float kind, int stage, int mb, const char* what) const;
  void stamp(Buffer& b, float kind, int stage, int mb) const;

  PipelineShape shape_;
  std::size_t bytes_;
  NullTimes times_;
  bool check_;
  MicrobatchStates states_;
  std::vector<Action> calls_;
  BufferPool pool_;
};

}  // namespace pipelab::runtime
