// Tests of kernels/blas.cc and of running stages from several threads at once, as the cpu runtime
// does with one BLAS thread per rank.
#include "pipelab/kernels/blas.h"

#include <gtest/gtest.h>

#include <thread>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "pipelab/kernels/stage.h"
#include "test_util.h"

namespace pipelab::kernels {
namespace {

TEST(KernelBlas, SetThreads) {
  const int before = blas_threads();
  set_blas_threads(1);
  EXPECT_EQ(blas_threads(), 1);
  EXPECT_THROW(set_blas_threads(0), InputError);
  set_blas_threads(before);
}

struct RunResult {
  std::vector<float> out, dx;
  std::vector<BlockGrads> grads;
};

RunResult run_stage(const BlockShape& s, int first_layer, int microbatches) {
  StageModel stage(s, first_layer, 2, 77);
  RunResult r;
  for (int m = 0; m < microbatches; ++m) {
    const auto x = synthetic_input(s, m, 77);
    std::vector<float> out(x.size()), dx(x.size());
    StageSaved saved;
    stage.forward(x, out, saved);
    stage.backward(std::move(saved), synthetic_target(s, m, 77), dx);
    r.out = out;
    r.dx = dx;
  }
  r.grads = stage.grads();
  return r;
}

TEST(KernelBlas, ConcurrentStagesMatchSerialRuns) {
  const BlockShape s{.hidden = 32, .ffn = 64, .heads = 2, .seq = 8, .mbs = 2, .swiglu = true};
  const int before = blas_threads();
  set_blas_threads(1);
  const RunResult serial0 = run_stage(s, 0, 4);
  const RunResult serial1 = run_stage(s, 2, 4);
  RunResult par0, par1;
  std::thread t0([&] { par0 = run_stage(s, 0, 4); });
  std::thread t1([&] { par1 = run_stage(s, 2, 4); });
  t0.join();
  t1.join();
  set_blas_threads(before);
  EXPECT_EQ(serial0.out, par0.out);
  EXPECT_EQ(serial1.dx, par1.dx);
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(serial0.grads[l].w_qkv, par0.grads[l].w_qkv);
    EXPECT_EQ(serial1.grads[l].w_gate, par1.grads[l].w_gate);
  }
}

}  // namespace
}  // namespace pipelab::kernels
