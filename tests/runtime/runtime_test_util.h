// Helpers shared by the runtime tests: tiny models, lowered schedules, the schedule matrix.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "pipelab/runtime/backend.h"
#include "pipelab/runtime/null_backend.h"
#include "pipelab/runtime/transport.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::testing {

/// Forwards every call to another transport (an in-process endpoint standing in for a process's
/// own transport); tests derive from it and override what they change, e.g. to inject a failure.
class ForwardingTransport : public runtime::Transport {
 public:
  explicit ForwardingTransport(runtime::Transport& t) : t_(t) {}
  std::string_view name() const override { return t_.name(); }
  int rank() const override { return t_.rank(); }
  int size() const override { return t_.size(); }
  runtime::Clock::time_point barrier(std::chrono::nanoseconds timeout) override { return t_.barrier(timeout); }
  void isend(int dst, const runtime::MessageKey& k, runtime::Buffer b, std::int64_t now) override { t_.isend(dst, k, std::move(b), now); }
  void irecv(int src, const runtime::MessageKey& k, std::size_t bytes, runtime::BufferPool& pool) override { t_.irecv(src, k, bytes, pool); }
  std::optional<runtime::Received> wait_recv(const runtime::MessageKey& k, std::chrono::nanoseconds timeout) override {
    return t_.wait_recv(k, timeout);
  }
  void progress() override { t_.progress(); }
  std::vector<runtime::SendCompletion> flush_sends(std::chrono::nanoseconds timeout) override { return t_.flush_sends(timeout); }
  void cancel_all() noexcept override { t_.cancel_all(); }
  void check_abort() override { t_.check_abort(); }
  void abort(const std::string& message) noexcept override { t_.abort(message); }
  std::vector<std::vector<std::byte>> gather(std::span<const std::byte> d, std::chrono::nanoseconds timeout) override {
    return t_.gather(d, timeout);
  }
  bool any_failed(bool failed, std::chrono::nanoseconds timeout) override { return t_.any_failed(failed, timeout); }

 private:
  runtime::Transport& t_;
};

/// Forwards every call to another backend; tests derive from it and override what they change.
class ForwardingBackend : public runtime::Backend {
 public:
  explicit ForwardingBackend(runtime::Backend& inner) : b_(inner) {}
  std::string_view name() const override { return b_.name(); }
  runtime::BufferPool& pool() override { return b_.pool(); }
  std::size_t activation_bytes() const override { return b_.activation_bytes(); }
  const std::vector<int>& stages() const override { return b_.stages(); }
  void begin_iteration() override { b_.begin_iteration(); }
  void load_input(int mb, runtime::Buffer& a) override { b_.load_input(mb, a); }
  void forward(int s, int mb, runtime::Buffer& a) override { b_.forward(s, mb, a); }
  double loss(int s, int mb, runtime::Buffer& a) override { return b_.loss(s, mb, a); }
  void backward_input(int s, int mb, runtime::Buffer& g) override { b_.backward_input(s, mb, g); }
  void backward_weight(int s, int mb) override { b_.backward_weight(s, mb); }
  void backward(int s, int mb, runtime::Buffer& g) override { b_.backward(s, mb, g); }
  double flops(const Action& a) const override { return b_.flops(a); }
  void synchronize() override { b_.synchronize(); }
  runtime::DeviceClock* clock() override { return b_.clock(); }
  runtime::DeviceClock::Token begin_action(const Action& a) override { return b_.begin_action(a); }
  runtime::DeviceClock::Token end_action(const Action& a) override { return b_.end_action(a); }
  double finish_iteration() override { return b_.finish_iteration(); }
  void zero_grads() override { b_.zero_grads(); }
  std::vector<kernels::BlockGrads> gradients(int s) const override { return b_.gradients(s); }
  std::int64_t state_bytes() const override { return b_.state_bytes(); }
  std::int64_t static_bytes() const override { return b_.static_bytes(); }
  std::vector<std::string> held_state() const override { return b_.held_state(); }
  void discard_state() override { b_.discard_state(); }

 private:
  runtime::Backend& b_;
};

/// One NullBackend per rank of a schedule, owned by the test and lent to a run through
/// ForwardingBackend, so that after a run that failed the test can check what each rank left.
class OwnedNullBackends {
 public:
  OwnedNullBackends(const Schedule& s, std::size_t activation_bytes) {
    for (int r = 0; r < s.shape.ranks; ++r) owned_.push_back(std::make_unique<runtime::NullBackend>(s.shape, r, activation_bytes));
  }
  /// The backend factory for run_inprocess: rank r borrows the r-th backend.
  auto factory() {
    return [this](int r) { return std::make_unique<ForwardingBackend>(*owned_[static_cast<std::size_t>(r)]); };
  }
  /// Every buffer is back in its pool and every rank's state is discarded.
  void expect_released() const {
    for (const auto& b : owned_) {
      EXPECT_EQ(b->pool().outstanding(), 0) << "buffers leaked";
      EXPECT_EQ(b->state_bytes(), 0) << "state not discarded";
    }
  }

 private:
  std::vector<std::unique_ptr<runtime::NullBackend>> owned_;
};

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
