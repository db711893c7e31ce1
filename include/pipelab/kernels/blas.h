// The one place that configures the BLAS library (OpenBLAS) behind the CPU kernels.
#pragma once

namespace pipelab::kernels {

/// Sets the number of threads OpenBLAS uses per GEMM. Process-wide. When several rank threads run
/// kernels concurrently, set 1 (one BLAS thread per rank): OpenBLAS then runs each GEMM on the
/// calling thread and concurrent calls do not contend for its thread pool. Throws InputError if
/// threads < 1.
void set_blas_threads(int threads);

/// Threads OpenBLAS currently uses per GEMM.
int blas_threads();

}  // namespace pipelab::kernels
