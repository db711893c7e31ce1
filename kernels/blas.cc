// OpenBLAS thread control: the only translation unit that calls openblas_* functions.
#include "pipelab/kernels/blas.h"

#include <cblas.h>

#include <string>

#include "pipelab/base/error.h"

namespace pipelab::kernels {

void set_blas_threads(int threads) {
  if (threads < 1) {
    throw InputError("set_blas_threads: threads=" + std::to_string(threads) + " must be >= 1");
  }
  openblas_set_num_threads(threads);
}

int blas_threads() { return openblas_get_num_threads(); }

}  // namespace pipelab::kernels
