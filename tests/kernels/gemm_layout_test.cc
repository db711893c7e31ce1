// Tests of pipelab/kernels/gemm_layout.h on the CPU: row-major requests mapped to column-major calls,
// executed by column-major OpenBLAS (standing in for cuBLAS), equal a naive row-major GEMM,
// including the strided-batched per-head calls the CUDA attention makes.
#include "pipelab/kernels/gemm_layout.h"

#include <cblas.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "pipelab/kernels/data.h"

namespace pipelab::kernels::cuda {
namespace {

struct Operand {
  const float* data;
  int ld;
  std::int64_t stride;
};

// What cublasGemmStridedBatchedEx computes, column-major, emulated with OpenBLAS.
void col_major_batched(const ColMajorGemm& g, float alpha, Operand first, Operand second,
                       float beta, float* c, int ldc, std::int64_t stride_c, int batch) {
  for (int i = 0; i < batch; ++i) {
    cblas_sgemm(CblasColMajor, g.trans_first ? CblasTrans : CblasNoTrans,
                g.trans_second ? CblasTrans : CblasNoTrans, g.m, g.n, g.k, alpha,
                first.data + i * first.stride, first.ld, second.data + i * second.stride,
                second.ld, beta, c + i * stride_c, ldc);
  }
}

// The device wrapper's path: map, then call with (B, A).
void via_col_major(bool ta, bool tb, int m, int n, int k, float alpha, Operand a, Operand b,
                   float beta, float* c, int ldc, std::int64_t stride_c, int batch) {
  col_major_batched(row_major_to_col_major(ta, tb, m, n, k), alpha, b, a, beta, c, ldc, stride_c,
                    batch);
}

// Naive row-major reference for one matrix.
void reference(bool ta, bool tb, int m, int n, int k, float alpha, Operand a, Operand b,
               float beta, float* c, int ldc) {
  for (int i = 0; i < m; ++i) {
    for (int j = 0; j < n; ++j) {
      double acc = 0;
      for (int p = 0; p < k; ++p) {
        const float av = ta ? a.data[p * a.ld + i] : a.data[i * a.ld + p];
        const float bv = tb ? b.data[j * b.ld + p] : b.data[p * b.ld + j];
        acc += static_cast<double>(av) * bv;
      }
      c[i * ldc + j] = static_cast<float>(alpha * acc + beta * c[i * ldc + j]);
    }
  }
}

std::vector<float> noise(std::size_t n, int stream) {
  const BlockShape s{.hidden = static_cast<int>(n), .ffn = 1, .heads = 1, .seq = 1, .mbs = 1};
  return synthetic_input(s, stream, 17);
}

TEST(KernelGemmLayout, AllTransposeCombinationsWithPaddedLeadingDims) {
  const int m = 5, n = 7, k = 3, pad = 2;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      // Stored shapes: A is (m, k) or (k, m); B is (k, n) or (n, k); rows padded by `pad`.
      const int a_rows = ta ? k : m, a_cols = ta ? m : k;
      const int b_rows = tb ? n : k, b_cols = tb ? k : n;
      const auto a = noise(static_cast<std::size_t>(a_rows) * (a_cols + pad), 1);
      const auto b = noise(static_cast<std::size_t>(b_rows) * (b_cols + pad), 2);
      auto c = noise(static_cast<std::size_t>(m) * (n + pad), 3);
      auto want = c;
      const Operand oa{a.data(), a_cols + pad, 0};
      const Operand ob{b.data(), b_cols + pad, 0};
      via_col_major(ta, tb, m, n, k, 0.5f, oa, ob, 0.25f, c.data(), n + pad, 0, 1);
      reference(ta, tb, m, n, k, 0.5f, oa, ob, 0.25f, want.data(), n + pad);
      for (std::size_t i = 0; i < c.size(); ++i) {
        ASSERT_NEAR(c[i], want[i], 1e-5) << "ta=" << ta << " tb=" << tb << " i=" << i;
      }
    }
  }
}

// The CUDA attention's calls: heads are a strided batch inside one sequence of a (seq, 3H) QKV.
TEST(KernelGemmLayout, PerHeadStridedBatchesMatchPerHeadLoops) {
  const int seq = 6, heads = 3, d = 4, h = heads * d;
  const std::int64_t nn = seq * seq;
  const auto qkv = noise(static_cast<std::size_t>(seq) * 3 * h, 4);
  const auto dout = noise(static_cast<std::size_t>(seq) * h, 5);
  const float* q = qkv.data();
  const float* k = q + h;

  // S_h = scale Q_h K_h^T  (seq, seq), batch stride seq^2.
  std::vector<float> s(heads * nn, 0.f), s_ref(heads * nn, 0.f);
  via_col_major(false, true, seq, seq, d, 0.5f, {q, 3 * h, d}, {k, 3 * h, d}, 0.f, s.data(), seq,
                nn, heads);
  for (int hh = 0; hh < heads; ++hh) {
    reference(false, true, seq, seq, d, 0.5f, {q + hh * d, 3 * h, 0}, {k + hh * d, 3 * h, 0}, 0.f,
              s_ref.data() + hh * nn, seq);
  }
  for (std::size_t i = 0; i < s.size(); ++i) ASSERT_NEAR(s[i], s_ref[i], 1e-5) << i;

  // dV_h = P_h^T dO_h written into a (seq, 3H) buffer at column 2H + h*d.
  std::vector<float> dqkv(static_cast<std::size_t>(seq) * 3 * h, 0.f), dqkv_ref = dqkv;
  via_col_major(true, false, seq, d, seq, 1.f, {s.data(), seq, nn}, {dout.data(), h, d}, 0.f,
                dqkv.data() + 2 * h, 3 * h, d, heads);
  for (int hh = 0; hh < heads; ++hh) {
    reference(true, false, seq, d, seq, 1.f, {s.data() + hh * nn, seq, 0},
              {dout.data() + hh * d, h, 0}, 0.f, dqkv_ref.data() + 2 * h + hh * d, 3 * h);
  }
  for (std::size_t i = 0; i < dqkv.size(); ++i) ASSERT_NEAR(dqkv[i], dqkv_ref[i], 1e-5) << i;
}

}  // namespace
}  // namespace pipelab::kernels::cuda
