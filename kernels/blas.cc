// OpenBLAS, opened on first use: the only translation unit that reaches the library. Linking it
// would start its worker threads (which spin on sched_yield while idle) and load libgfortran in
// every `pipelab` process, the simulator commands included, which never run a GEMM
// (docs/simulator.md, "Speed"). The CPU kernels call the GEMMs below; cblas.h supplies the types.
#include "pipelab/kernels/blas.h"

#include <cblas.h>

#include <string>

#include "cpu_ops.h"
#include "shared_library.h"
#include "pipelab/base/error.h"

namespace pipelab::kernels {
namespace {

using detail::SharedLibrary;

// Their types are taken from cblas.h's declarations, so a mismatch with the header is a compile error.
struct BlasApi {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_set_num_threads) set_threads = nullptr;
  decltype(&openblas_get_num_threads) get_threads = nullptr;
  std::string error;  // why loading failed; empty once loaded
};

// The library found at configure time, then the soname on the loader's path.
BlasApi load() {
  BlasApi api;
  SharedLibrary lib("OpenBLAS", {PIPELAB_BLAS_PATH, "libopenblas.so.0"});
  lib.resolve("cblas_sgemm", api.sgemm);
  lib.resolve("cblas_dgemm", api.dgemm);
  lib.resolve("openblas_set_num_threads", api.set_threads);
  lib.resolve("openblas_get_num_threads", api.get_threads);
  api.error = lib.error();
  return api;
}

const BlasApi& api() {
  static const BlasApi loaded = load();  // thread-safe initialization: rank threads may race here
  if (!loaded.error.empty()) throw InputError(loaded.error + " (the CPU backend needs it; install libopenblas0-pthread)");
  return loaded;
}

CBLAS_TRANSPOSE op(bool transpose) { return transpose ? CblasTrans : CblasNoTrans; }

}  // namespace

void set_blas_threads(int threads) {
  if (threads < 1) {
    throw InputError("set_blas_threads: threads=" + std::to_string(threads) + " must be >= 1");
  }
  api().set_threads(threads);
}

int blas_threads() { return api().get_threads(); }

namespace detail {

void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  api().sgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool trans_a, bool trans_b, int m, int n, int k, double alpha, const double* a, int lda, const double* b, int ldb,
          double beta, double* c, int ldc) {
  api().dgemm(CblasRowMajor, op(trans_a), op(trans_b), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace detail
}  // namespace pipelab::kernels
