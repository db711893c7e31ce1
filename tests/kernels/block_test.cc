// Tests of kernels/block.cc: finite-difference gradient checks (double), float vs double, the F/I/W
// split, causality, determinism, memory accounting and input errors.
#include "pipelab/kernels/block.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/kernels/data.h"
#include "test_util.h"

namespace pipelab::kernels {
namespace {

using testing::central_difference;
using testing::convert;
using testing::grad_close;
using testing::perturb_gains;
using testing::sample_indices;
using testing::tiny_shape;

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

std::string mlp_name(const ::testing::TestParamInfo<bool>& info) {
  return info.param ? "SwiGlu" : "Gelu";
}

// ---------------------------------------------------------------------------------------------
// Finite differences, in double: L = sum(z * w) for a fixed random w, so dL/dz = w.

class KernelBlockGrad : public ::testing::TestWithParam<bool> {};

TEST_P(KernelBlockGrad, MatchesFiniteDifferences) {
  const BlockShape s = tiny_shape(GetParam());
  auto params = convert<double>(init_params<float>(s, 11));
  perturb_gains(params);
  auto x = synthetic_input<double>(s, 0, 5);
  const auto w = synthetic_target<double>(s, 0, 5);
  const std::size_t n = x.size();

  auto loss = [&]() {
    std::vector<double> z(n);
    BasicBlockSaved<double> saved;
    forward(params, x, z, saved);
    return dot(z, w);
  };

  std::vector<double> z(n);
  BasicBlockSaved<double> saved;
  forward(params, x, z, saved);
  std::vector<double> dx(n);
  auto grads = zero_params<double>(s);
  backward(params, std::move(saved), w, dx, grads);

  // Input gradient: every element.
  int failures = 0;
  double max_dx = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double fd = central_difference(x[i], loss);
    max_dx = std::max(max_dx, std::abs(dx[i]));
    if (!grad_close(fd, dx[i]) && ++failures <= 5) {
      ADD_FAILURE() << "dx[" << i << "]: analytic " << dx[i] << " vs finite difference " << fd;
    }
  }
  EXPECT_GT(max_dx, 1e-2) << "gradients too small for the check to mean anything";

  // Weights: a spread of samples from every tensor (all of each gain).
  auto pt = params.tensors();
  auto gt = grads.tensors();
  ASSERT_EQ(pt.size(), gt.size());
  for (std::size_t k = 0; k < pt.size(); ++k) {
    double max_g = 0;
    for (std::size_t idx : sample_indices(pt[k].data.size(), 24)) {
      const double analytic = gt[k].data[idx];
      const double fd = central_difference(pt[k].data[idx], loss);
      max_g = std::max(max_g, std::abs(analytic));
      if (!grad_close(fd, analytic) && ++failures <= 10) {
        ADD_FAILURE() << pt[k].name << "[" << idx << "]: analytic " << analytic
                      << " vs finite difference " << fd;
      }
    }
    EXPECT_GT(max_g, 1e-3) << pt[k].name << " gradients too small for the check to mean anything";
  }
  EXPECT_EQ(failures, 0);
}

INSTANTIATE_TEST_SUITE_P(Mlp, KernelBlockGrad, ::testing::Values(false, true), mlp_name);

// The tolerance is tight enough to fail: a 0.1% error in one weight gradient is caught.
TEST(KernelBlockGradCheck, ToleranceCatchesSmallErrors) {
  const BlockShape s = tiny_shape(false);
  auto params = convert<double>(init_params<float>(s, 2));
  auto x = synthetic_input<double>(s, 0, 3);
  const auto w = synthetic_target<double>(s, 0, 3);
  std::vector<double> z(x.size()), dx(x.size());
  BasicBlockSaved<double> saved;
  forward(params, x, z, saved);
  auto grads = zero_params<double>(s);
  backward(params, std::move(saved), w, dx, grads);

  const auto it = std::max_element(grads.w_out.begin(), grads.w_out.end(),
                                   [](double a, double b) { return std::abs(a) < std::abs(b); });
  const std::size_t idx = static_cast<std::size_t>(it - grads.w_out.begin());
  const double fd = central_difference(params.w_out[idx], [&]() {
    std::vector<double> zz(x.size());
    BasicBlockSaved<double> sv;
    forward(params, x, zz, sv);
    return dot(zz, w);
  });
  EXPECT_TRUE(grad_close(fd, grads.w_out[idx]));
  EXPECT_FALSE(grad_close(fd, grads.w_out[idx] * 1.001));
  EXPECT_FALSE(grad_close(fd, grads.w_out[idx] * 0.999));
}

// ---------------------------------------------------------------------------------------------
// float (the runtime's precision) against double (the checked reference).

class KernelBlockPrecision : public ::testing::TestWithParam<bool> {};

TEST_P(KernelBlockPrecision, FloatMatchesDouble) {
  const BlockShape s = tiny_shape(GetParam());
  auto pf = init_params<float>(s, 21);
  perturb_gains(pf);
  const auto pd = convert<double>(pf);
  const auto xf = synthetic_input<float>(s, 1, 8);
  const auto xd = synthetic_input<double>(s, 1, 8);
  ASSERT_EQ(convert<double>(xf), xd) << "double data must hold exactly the float values";
  const auto wf = synthetic_target<float>(s, 1, 8);
  const auto wd = convert<double>(wf);

  std::vector<float> zf(xf.size()), dxf(xf.size());
  std::vector<double> zd(xd.size()), dxd(xd.size());
  BlockSaved sf;
  BasicBlockSaved<double> sd;
  forward(pf, xf, zf, sf);
  forward(pd, xd, zd, sd);
  auto gf = zero_params<float>(s);
  auto gd = zero_params<double>(s);
  backward(pf, std::move(sf), wf, dxf, gf);
  backward(pd, std::move(sd), wd, dxd, gd);

  auto expect_close = [](const auto& a, const std::vector<double>& ref, const std::string& what) {
    double scale = 0;
    for (double v : ref) scale = std::max(scale, std::abs(v));
    for (std::size_t i = 0; i < ref.size(); ++i) {
      ASSERT_NEAR(a[i], ref[i], 1e-5 * (1 + scale)) << what << "[" << i << "]";
    }
  };
  expect_close(zf, zd, "z");
  expect_close(dxf, dxd, "dx");
  const auto tf = gf.tensors();
  const auto td = gd.tensors();
  for (std::size_t k = 0; k < td.size(); ++k) {
    expect_close(tf[k].data, std::vector<double>(td[k].data.begin(), td[k].data.end()),
                 std::string(td[k].name));
  }
}

INSTANTIATE_TEST_SUITE_P(Mlp, KernelBlockPrecision, ::testing::Values(false, true), mlp_name);

// ---------------------------------------------------------------------------------------------
// The F / I / W split

struct Microbatch {
  std::vector<float> x, z, dz, dx;
  BlockSaved saved;
  WeightGradStash stash;
};

std::vector<Microbatch> make_microbatches(const BlockShape& s, int count) {
  std::vector<Microbatch> mbs(count);
  for (int m = 0; m < count; ++m) {
    mbs[m].x = synthetic_input(s, m, 4);
    mbs[m].dz = synthetic_target(s, m, 4);
    mbs[m].z.resize(mbs[m].x.size());
    mbs[m].dx.resize(mbs[m].x.size());
  }
  return mbs;
}

TEST(KernelBlock, BackwardEqualsInputThenWeight) {
  for (bool swiglu : {false, true}) {
    const BlockShape s = tiny_shape(swiglu);
    const auto params = init_params<float>(s, 1);
    auto a = make_microbatches(s, 1);
    auto b = make_microbatches(s, 1);
    forward(params, a[0].x, a[0].z, a[0].saved);
    forward(params, b[0].x, b[0].z, b[0].saved);
    auto ga = zero_params<float>(s);
    auto gb = zero_params<float>(s);
    backward(params, std::move(a[0].saved), a[0].dz, a[0].dx, ga);
    backward_input(params, std::move(b[0].saved), b[0].dz, b[0].dx, b[0].stash);
    EXPECT_EQ(gb.w_qkv, zero_params<float>(s).w_qkv) << "I must not touch weight gradients";
    backward_weight(std::move(b[0].stash), gb);
    EXPECT_EQ(a[0].dx, b[0].dx);
    const auto ta = ga.tensors();
    const auto tb = gb.tensors();
    for (std::size_t k = 0; k < ta.size(); ++k) {
      EXPECT_TRUE(std::equal(ta[k].data.begin(), ta[k].data.end(), tb[k].data.begin()))
          << ta[k].name;
    }
  }
}

// A zero-bubble-style order (I early, W late and out of order) gives the gradients of the plain
// F...F B...B order: dx bit for bit, weight gradients up to summation order.
TEST(KernelBlock, DeferredWeightGradsMatchFusedBackward) {
  for (bool swiglu : {false, true}) {
    const BlockShape s = tiny_shape(swiglu);
    const auto params = init_params<float>(s, 9);

    auto fused = make_microbatches(s, 3);
    auto g_fused = zero_params<float>(s);
    for (auto& mb : fused) forward(params, mb.x, mb.z, mb.saved);
    for (auto& mb : fused) backward(params, std::move(mb.saved), mb.dz, mb.dx, g_fused);

    // F0 F1 I0 F2 I1 I2 W2 W0 W1
    auto split = make_microbatches(s, 3);
    auto g_split = zero_params<float>(s);
    auto fwd = [&](int m) { forward(params, split[m].x, split[m].z, split[m].saved); };
    auto inp = [&](int m) {
      backward_input(params, std::move(split[m].saved), split[m].dz, split[m].dx, split[m].stash);
    };
    auto wgt = [&](int m) { backward_weight(std::move(split[m].stash), g_split); };
    fwd(0), fwd(1), inp(0), fwd(2), inp(1), inp(2), wgt(2), wgt(0), wgt(1);

    for (int m = 0; m < 3; ++m) {
      EXPECT_EQ(fused[m].z, split[m].z);
      EXPECT_EQ(fused[m].dx, split[m].dx);
    }
    const auto tf = g_fused.tensors();
    const auto ts = g_split.tensors();
    for (std::size_t k = 0; k < tf.size(); ++k) {
      for (std::size_t i = 0; i < tf[k].data.size(); ++i) {
        ASSERT_NEAR(tf[k].data[i], ts[k].data[i], 1e-5 * (1 + std::abs(tf[k].data[i])))
            << tf[k].name << "[" << i << "]";
      }
    }
  }
}

TEST(KernelBlock, WeightGradsAccumulate) {
  const BlockShape s = tiny_shape(true);
  const auto params = init_params<float>(s, 5);
  auto once = zero_params<float>(s);
  auto twice = zero_params<float>(s);
  for (BlockGrads* g : {&once, &twice, &twice}) {
    auto mb = make_microbatches(s, 1);
    forward(params, mb[0].x, mb[0].z, mb[0].saved);
    backward(params, std::move(mb[0].saved), mb[0].dz, mb[0].dx, *g);
  }
  const auto t1 = once.tensors();
  const auto t2 = twice.tensors();
  for (std::size_t k = 0; k < t1.size(); ++k) {
    for (std::size_t i = 0; i < t1[k].data.size(); ++i) {
      ASSERT_EQ(2 * t1[k].data[i], t2[k].data[i]) << t1[k].name << "[" << i << "]";
    }
  }
}

TEST(KernelBlock, PassesConsumeTheirState) {
  const BlockShape s = tiny_shape(false);
  const auto params = init_params<float>(s, 1);
  auto mb = make_microbatches(s, 1);
  forward(params, mb[0].x, mb[0].z, mb[0].saved);
  EXPECT_GT(mb[0].saved.bytes(), 0);
  backward_input(params, std::move(mb[0].saved), mb[0].dz, mb[0].dx, mb[0].stash);
  EXPECT_EQ(mb[0].saved.bytes(), 0);  // NOLINT(bugprone-use-after-move): consumed by contract
  EXPECT_GT(mb[0].stash.bytes(), 0);
  EXPECT_THROW(backward_input(params, std::move(mb[0].saved), mb[0].dz, mb[0].dx, mb[0].stash),
               InputError);
  auto grads = zero_params<float>(s);
  auto stash = std::move(mb[0].stash);
  backward_weight(std::move(stash), grads);
  EXPECT_EQ(stash.bytes(), 0);  // NOLINT(bugprone-use-after-move)
  EXPECT_THROW(backward_weight(std::move(stash), grads), InputError);
}

// Saved/stash sizes follow the documented formulas (docs/kernels.md), in floats:
// saved = 8TH + 2T + mbs*heads*seq^2 + (2|3)TF; stash = 12TH + (2|3)TF.
TEST(KernelBlock, SavedAndStashBytesMatchFormula) {
  for (bool swiglu : {false, true}) {
    const BlockShape s = tiny_shape(swiglu);
    const std::int64_t t = s.tokens(), h = s.hidden, f = s.ffn, ff = swiglu ? 3 : 2;
    const auto params = init_params<float>(s, 1);
    auto mb = make_microbatches(s, 1);
    forward(params, mb[0].x, mb[0].z, mb[0].saved);
    EXPECT_EQ(mb[0].saved.bytes(),
              4 * (8 * t * h + 2 * t + std::int64_t{s.mbs} * s.heads * s.seq * s.seq + ff * t * f));
    EXPECT_EQ(mb[0].saved.bytes(), saved_bytes(s));
    backward_input(params, std::move(mb[0].saved), mb[0].dz, mb[0].dx, mb[0].stash);
    EXPECT_EQ(mb[0].stash.bytes(), 4 * (12 * t * h + ff * t * f));
    EXPECT_EQ(mb[0].stash.bytes(), stash_bytes(s));
  }
}

// ---------------------------------------------------------------------------------------------
// Causality, independence of sequences, determinism

class KernelBlockCausal : public ::testing::TestWithParam<bool> {};

TEST_P(KernelBlockCausal, OutputIgnoresFutureTokensAndOtherSequences) {
  const BlockShape s = tiny_shape(GetParam());
  const auto params = init_params<float>(s, 3);
  const auto x = synthetic_input(s, 0, 1);
  std::vector<float> z0(x.size()), z1(x.size());
  BlockSaved saved;
  forward(params, x, z0, saved);

  const int h = s.hidden;
  for (int p = 1; p < s.seq; ++p) {  // perturb token p of sequence 0
    auto xp = x;
    for (int c = 0; c < h; ++c) xp[static_cast<std::size_t>(p) * h + c] += 0.5f;
    forward(params, xp, z1, saved);
    for (int row = 0; row < s.seq * s.mbs; ++row) {
      const bool may_change = row >= p && row < s.seq;  // token >= p of sequence 0
      const bool same = std::equal(z0.begin() + row * h, z0.begin() + (row + 1) * h,
                                   z1.begin() + row * h);
      if (!may_change) {
        EXPECT_TRUE(same) << "perturbing token " << p << " changed output row " << row;
      } else if (row == p) {
        EXPECT_FALSE(same) << "perturbing token " << p << " left its own output unchanged";
      } else {
        EXPECT_FALSE(same) << "token " << row << " does not attend to earlier token " << p;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Mlp, KernelBlockCausal, ::testing::Values(false, true), mlp_name);

TEST(KernelBlock, DeterministicForSeed) {
  const BlockShape s = tiny_shape(true);
  const auto a = init_params<float>(s, 42);
  const auto b = init_params<float>(s, 42);
  const auto c = init_params<float>(s, 43);
  EXPECT_EQ(a.w_qkv, b.w_qkv);
  EXPECT_EQ(a.w_gate, b.w_gate);
  EXPECT_NE(a.w_qkv, c.w_qkv);
  EXPECT_NE(a.w_up, a.w_gate) << "tensors of one block use distinct streams";

  std::vector<std::vector<float>> dxs;
  std::vector<BlockGrads> grads;
  for (int rep = 0; rep < 2; ++rep) {
    auto mb = make_microbatches(s, 1);
    forward(a, mb[0].x, mb[0].z, mb[0].saved);
    grads.push_back(zero_params<float>(s));
    backward(a, std::move(mb[0].saved), mb[0].dz, mb[0].dx, grads.back());
    dxs.push_back(mb[0].dx);
  }
  EXPECT_EQ(dxs[0], dxs[1]);
  EXPECT_EQ(grads[0].w_qkv, grads[1].w_qkv);
  EXPECT_EQ(grads[0].norm1_gain, grads[1].norm1_gain);
}

TEST(KernelBlock, InitKeepsActivationsOrderOne) {
  const BlockShape s{.hidden = 64, .ffn = 256, .heads = 4, .seq = 16, .mbs = 2, .swiglu = false};
  const auto params = init_params<float>(s, 7);
  const auto x = synthetic_input(s, 0, 7);
  std::vector<float> z(x.size());
  BlockSaved saved;
  forward(params, x, z, saved);
  double sq = 0;
  for (float v : z) sq += static_cast<double>(v) * v;
  const double rms = std::sqrt(sq / z.size());
  EXPECT_GT(rms, 0.8);
  EXPECT_LT(rms, 3.0);
}

TEST(KernelBlock, InPlaceMatchesOutOfPlace) {
  const BlockShape s = tiny_shape(false);
  const auto params = init_params<float>(s, 1);
  auto mb = make_microbatches(s, 1);
  forward(params, mb[0].x, mb[0].z, mb[0].saved);
  std::vector<float> buf = mb[0].x;
  BlockSaved saved;
  forward(params, buf, buf, saved);
  EXPECT_EQ(buf, mb[0].z);

  WeightGradStash stash;
  backward_input(params, std::move(mb[0].saved), mb[0].dz, mb[0].dx, stash);
  std::vector<float> dbuf = mb[0].dz;
  backward_input(params, std::move(saved), dbuf, dbuf, stash);
  EXPECT_EQ(dbuf, mb[0].dx);
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(KernelBlock, SizeMismatchNamesTheBuffer) {
  const BlockShape s = tiny_shape(false);
  const auto params = init_params<float>(s, 1);
  std::vector<float> x(10), z(256);
  BlockSaved saved;
  try {
    forward(params, x, z, saved);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "forward: x has 10 elements, expected mbs*seq*hidden=256");
  }
  std::vector<float> big(300);
  EXPECT_THROW(forward(params, std::span<const float>(big).subspan(0, 256),
                       std::span<float>(big).subspan(10, 256), saved),
               InputError);

  auto wrong = params;
  wrong.w_out.pop_back();
  x.resize(256);
  EXPECT_THAT([&] { forward(wrong, x, z, saved); },
              ::testing::ThrowsMessage<InputError>(::testing::HasSubstr("params.w_out has 255")));

  auto grads = zero_params<float>(tiny_shape(true));  // other shape
  forward(params, x, z, saved);
  WeightGradStash stash;
  std::vector<float> dx(256);
  backward_input(params, std::move(saved), z, dx, stash);
  EXPECT_THROW(backward_weight(std::move(stash), grads), InputError);
}

}  // namespace
}  // namespace pipelab::kernels
