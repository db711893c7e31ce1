// Row-major GEMM requests mapped onto column-major BLAS (cuBLAS). Plain C++ so the mapping is
// tested on the CPU against column-major OpenBLAS (tests/kernels/gemm_layout_test.cc).
#pragma once

namespace pipelab::kernels::cuda {

/// A column-major call C' (m x n) = op(first) op(second), where `first` is the row-major request's
/// B operand (with ldb, stride_b) and `second` its A operand.
struct ColMajorGemm {
  bool trans_first;
  bool trans_second;
  int m, n, k;
};

/// Row-major C(M, N) = op(A)(M, K) op(B)(K, N) is column-major C^T(N, M) = op(B)^T op(A)^T: the
/// same buffers and leading dimensions, operands swapped, M and N swapped, transposes kept.
constexpr ColMajorGemm row_major_to_col_major(bool trans_a, bool trans_b, int m, int n, int k) {
  return ColMajorGemm{trans_b, trans_a, n, m, k};
}

}  // namespace pipelab::kernels::cuda
