// DualPipe's eight phases. "B" is a full backward; "I" an input-grad whose weight-grad is queued
// (zero-bubble); "W" runs the oldest queued weight-grad.
#include "dualpipe_phases.h"

namespace pipelab::detail {

void emit_dualpipe_phases(RankBuilder& rb, const DualPipePhases& p) {
  const int d = p.depth;
  const int n = p.depth_count;
  // Step 1: nF0, warm-up forwards of chunk 0.
  for (int k = 0; k < (n - d - 1) * 2; ++k) rb.f(p.s0);
  // Step 2: nF0F1.
  for (int k = 0; k < d + 1; ++k) {
    rb.f(p.s0);
    rb.f(p.s1);
  }
  // Step 3: nB1W1F1, zero-bubble backward of chunk 1.
  for (int k = 0; k < n - d - 1; ++k) {
    rb.i(p.s1);
    rb.w();
    rb.f(p.s1);
  }
  // Step 4: main step nF0B1F1B0, two overlapped F&B units.
  for (int k = 0; k < p.main_steps; ++k) {
    if (k == 0 && p.no_first_overlap) {
      rb.f(p.s0);  // not overlapped, to shorten the bubble
      rb.b(p.s1);
    } else {
      rb.fb(p.s0, p.s1);
    }
    rb.fb(p.s1, p.s0);
  }
  // Step 5: nB1F1B0.
  for (int k = 0; k < n - d - 1; ++k) {
    rb.b(p.s1);
    rb.fb(p.s1, p.s0);
  }
  // Step 6: nB1B0; the second half of these backwards defer their weight-grads.
  bool zero_bubble = false;
  const int step6 = d + 1;
  for (int k = 0; k < step6; ++k) {
    if (k == step6 / 2 && d % 2 == 1) zero_bubble = true;
    zero_bubble ? rb.i(p.s1) : rb.b(p.s1);
    if (k == step6 / 2 && d % 2 == 0) zero_bubble = true;
    zero_bubble ? rb.i(p.s0) : rb.b(p.s0);
  }
  // Step 7: nWB0, a queued weight-grad then a zero-bubble backward of chunk 0.
  for (int k = 0; k < n - d - 1; ++k) {
    rb.w();
    rb.i(p.s0);
  }
  // Step 8: nW, the remaining weight-grads.
  for (int k = 0; k < d + 1; ++k) rb.w();
}

}  // namespace pipelab::detail
