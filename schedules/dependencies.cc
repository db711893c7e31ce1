// Prerequisites and completions of every op; see dependencies.h for the model.
#include "pipelab/schedules/dependencies.h"

namespace pipelab {
namespace {

void add_forward_prereqs(SignalSet& out, int s, int mb, const PipelineShape& shape, CommMode mode) {
  if (shape.first_in_chain(s)) return;
  const int prev = s - 1;
  if (mode == CommMode::Explicit && crosses_ranks(shape, prev, s)) {
    out.add({Signal::SentF, prev, mb});
  } else {
    out.add({Signal::Forward, prev, mb});
  }
}

void add_backward_prereqs(SignalSet& out, int s, int mb, const PipelineShape& shape, CommMode mode) {
  out.add({Signal::Forward, s, mb});
  if (shape.last_in_chain(s)) return;  // the loss is computed here: only the own forward is needed
  const int next = s + 1;
  if (mode == CommMode::Explicit && crosses_ranks(shape, next, s)) {
    out.add({Signal::SentB, next, mb});
  } else {
    out.add({Signal::InputGrad, next, mb});
  }
}

}  // namespace

std::string describe(const SignalKey& k) {
  const std::string at = "(" + std::to_string(k.stage) + ", mb " + std::to_string(k.mb) + ")";
  switch (k.signal) {
    case Signal::Forward: return "F" + at + " done";
    case Signal::InputGrad: return "I/B" + at + " done";
    case Signal::WeightGrad: return "W/B" + at + " done";
    case Signal::SentF: return "SEND_F" + at + " posted";
    case Signal::SentB: return "SEND_B" + at + " posted";
  }
  return "?";
}

SignalSet prerequisites(const Action& a, const PipelineShape& shape, CommMode mode) {
  SignalSet out;
  switch (a.op) {
    case Op::F: add_forward_prereqs(out, a.stage, a.mb, shape, mode); break;
    case Op::B:
    case Op::I: add_backward_prereqs(out, a.stage, a.mb, shape, mode); break;
    case Op::W: out.add({Signal::InputGrad, a.stage, a.mb}); break;
    case Op::SendF: out.add({Signal::Forward, a.stage, a.mb}); break;
    case Op::SendB: out.add({Signal::InputGrad, a.stage, a.mb}); break;
    case Op::RecvF:
    case Op::RecvB: break;  // posting a receive never blocks; the consumer waits for the data
    case Op::ReduceGrad: break;  // placed after the stage's last weight-grad: list order suffices
    case Op::OverlapFB:
      add_forward_prereqs(out, a.stage, a.mb, shape, mode);
      add_backward_prereqs(out, a.b_stage, a.b_mb, shape, mode);
      break;
  }
  return out;
}

SignalSet completions(const Action& a) {
  SignalSet out;
  switch (a.op) {
    case Op::F: out.add({Signal::Forward, a.stage, a.mb}); break;
    case Op::B:
      out.add({Signal::InputGrad, a.stage, a.mb});
      out.add({Signal::WeightGrad, a.stage, a.mb});
      break;
    case Op::I: out.add({Signal::InputGrad, a.stage, a.mb}); break;
    case Op::W: out.add({Signal::WeightGrad, a.stage, a.mb}); break;
    case Op::SendF: out.add({Signal::SentF, a.stage, a.mb}); break;
    case Op::SendB: out.add({Signal::SentB, a.stage, a.mb}); break;
    case Op::RecvF:
    case Op::RecvB:
    case Op::ReduceGrad: break;
    case Op::OverlapFB:
      out.add({Signal::Forward, a.stage, a.mb});
      out.add({Signal::InputGrad, a.b_stage, a.b_mb});
      out.add({Signal::WeightGrad, a.b_stage, a.b_mb});
      break;
  }
  return out;
}

}  // namespace pipelab
