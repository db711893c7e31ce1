// The null backend: bookkeeping, optional spinning and routing stamps, no math.
#include "pipelab/runtime/null_backend.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/runtime/errors.h"

namespace pipelab::runtime {
namespace {

constexpr float kInput = 1, kActivation = 2, kLossGrad = 3, kGradient = 4;

void spin_for(std::int64_t ns) {
  if (ns <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

const char* kind_name(float k) {
  if (k == kInput) return "input";
  if (k == kActivation) return "activation";
  if (k == kLossGrad) return "loss gradient";
  if (k == kGradient) return "gradient";
  return "garbage";
}

}  // namespace

NullBackend::NullBackend(const PipelineShape& shape, int rank, std::size_t activation_bytes, NullTimes times, bool check_routing)
    : shape_(shape),
      bytes_(activation_bytes),
      times_(times),
      check_(check_routing),
      states_("null", shape, rank),
      pool_(std::make_shared<HostMemory>()) {
  if (bytes_ == 0 || (check_ && bytes_ < 4 * sizeof(float))) {
    throw InputError("null backend: activation_bytes=" + std::to_string(bytes_) + " too small");
  }
  calls_.reserve(static_cast<std::size_t>(4 * shape.stages * shape.microbatches));
}

void NullBackend::stamp(Buffer& b, float kind, int stage, int mb) const {
  if (!check_) return;
  float* p = b.floats().data();
  p[0] = kind;
  p[1] = static_cast<float>(stage);
  p[2] = static_cast<float>(mb);
  p[3] = 12345.f;
}

void NullBackend::check_stamp(const Buffer& b, float kind, int stage, int mb, const char* what) const {
  if (!b || b.bytes() != bytes_) throw ExecutionError(std::string("null backend: ") + what + ": wrong buffer size");
  if (!check_) return;
  const float* p = b.floats().data();
  if (p[0] != kind || p[1] != static_cast<float>(stage) || p[2] != static_cast<float>(mb) || p[3] != 12345.f) {
    throw ExecutionError(std::string("null backend: ") + what + " expected the " + kind_name(kind) + " of (stage " +
                         std::to_string(stage) + ", mb " + std::to_string(mb) + "), got the " + kind_name(p[0]) + " of (stage " +
                         std::to_string(static_cast<int>(p[1])) + ", mb " + std::to_string(static_cast<int>(p[2])) + ")");
  }
}

void NullBackend::load_input(int mb, Buffer& act) { stamp(act, kInput, -1, mb); }

void NullBackend::forward(int stage, int mb, Buffer& act) {
  states_.require(Op::F, stage, mb);
  if (shape_.first_in_chain(stage)) {
    check_stamp(act, kInput, -1, mb, "F");
  } else {
    check_stamp(act, kActivation, stage - 1, mb, "F");
  }
  spin_for(times_.f_ns);
  states_.record(Op::F, stage, mb);
  stamp(act, kActivation, stage, mb);
  calls_.push_back(Action::make(Op::F, stage, mb));
}

double NullBackend::loss(int stage, int mb, Buffer& act) {
  check_stamp(act, kActivation, stage, mb, "loss");
  stamp(act, kLossGrad, stage, mb);
  return 0;
}

void NullBackend::backward_input(int stage, int mb, Buffer& grad) {
  states_.require(Op::I, stage, mb);
  if (shape_.last_in_chain(stage)) {
    check_stamp(grad, kLossGrad, stage, mb, "I");
  } else {
    check_stamp(grad, kGradient, stage + 1, mb, "I");
  }
  spin_for(times_.i_ns);
  states_.record(Op::I, stage, mb);
  stamp(grad, kGradient, stage, mb);
  calls_.push_back(Action::make(Op::I, stage, mb));
}

void NullBackend::backward_weight(int stage, int mb) {
  states_.require(Op::W, stage, mb);
  spin_for(times_.w_ns);
  states_.record(Op::W, stage, mb);
  calls_.push_back(Action::make(Op::W, stage, mb));
}

void NullBackend::backward(int stage, int mb, Buffer& grad) {
  backward_input(stage, mb, grad);
  backward_weight(stage, mb);
}

}  // namespace pipelab::runtime
