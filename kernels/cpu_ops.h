// Private CPU building blocks of the mock block: a row-major GEMM over OpenBLAS (float and double),
// the counter-based RNG behind every synthetic tensor, and size checks that throw InputError.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "pipelab/base/error.h"

namespace pipelab::kernels::detail {

// ---------------------------------------------------------------------------------------------
// GEMM

/// Row-major C(M, N) = alpha * op(A)(M, K) @ op(B)(K, N) + beta * C, with leading dimensions given
/// in elements (so strided column blocks, e.g. one head of a (T, 3H) QKV matrix, need no copy).
/// OpenBLAS, opened on first use (blas.cc); InputError when it cannot be loaded.
void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc);
void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc);

// ---------------------------------------------------------------------------------------------
// RNG: splitmix64, a pure function of (seed, stream, index) so tensors are reproducible bit for bit.

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

inline std::uint64_t mix_seed(std::uint64_t seed, std::uint64_t stream) {
  return splitmix64(splitmix64(seed) ^ (stream * 0xD1B54A32D192ED03ULL + 1));
}

/// Fills `out` with i.i.d. uniform values in [-bound, bound) from (seed, stream). Values are rounded
/// to float first, so the double instantiation holds exactly the float values (reference checks).
template <class Real>
void fill_uniform(std::vector<Real>& out, std::uint64_t seed, std::uint64_t stream, double bound) {
  const std::uint64_t base = mix_seed(seed, stream);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::uint64_t bits = splitmix64(base + i);
    const double u = static_cast<double>(bits >> 11) * 0x1.0p-53;  // [0, 1)
    out[i] = static_cast<Real>(static_cast<float>((2.0 * u - 1.0) * bound));
  }
}

// ---------------------------------------------------------------------------------------------
// Checks

inline void check_size(const char* what, std::size_t got, std::int64_t expected,
                       const char* formula) {
  if (static_cast<std::int64_t>(got) != expected) {
    throw InputError(std::string(what) + " has " + std::to_string(got) + " elements, expected " +
                     formula + "=" + std::to_string(expected));
  }
}

}  // namespace pipelab::kernels::detail
