// cuBLAS, loaded on first use: the few cuBLAS entry points kernels/cuda calls, defined here with
// cuBLAS's own C names and forwarded to libcublas opened with dlopen. Linking libcublas instead
// would load it (and libcublasLt, whose static constructors take ~0.4 s and ~200 MB) into every
// `pipelab` process, including the simulator commands that never touch a GPU (docs/simulator.md,
// "Speed"). The compiler checks each definition against the declaration in cublas_api.h.
#include <cublas_v2.h>

#include <mutex>
#include <string>

#include "../shared_library.h"
#include "pipelab/base/error.h"

namespace {

using CreateFn = cublasStatus_t (*)(cublasHandle_t*);
using DestroyFn = cublasStatus_t (*)(cublasHandle_t);
using SetStreamFn = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
using StatusTextFn = const char* (*)(cublasStatus_t);
using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                    const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                    cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                                  const void*, const void*, cudaDataType, int, long long int,
                                                  const void*, cudaDataType, int, long long int, const void*, void*,
                                                  cudaDataType, int, long long int, int, cublasComputeType_t,
                                                  cublasGemmAlgo_t);

struct CublasApi {
  CreateFn create = nullptr;
  DestroyFn destroy = nullptr;
  SetStreamFn set_stream = nullptr;
  StatusTextFn status_name = nullptr;
  StatusTextFn status_string = nullptr;
  GemmExFn gemm_ex = nullptr;
  GemmStridedBatchedExFn gemm_strided_batched_ex = nullptr;
  std::string error;  // why loading failed; empty once loaded
};

// Opens the toolkit's libcublas found at configure time, then the soname on the loader's path.
CublasApi load() {
  CublasApi api;
  pipelab::kernels::detail::SharedLibrary lib("cuBLAS", {PIPELAB_CUBLAS_PATH, PIPELAB_CUBLAS_SONAME});
  lib.resolve("cublasCreate_v2", api.create);
  lib.resolve("cublasDestroy_v2", api.destroy);
  lib.resolve("cublasSetStream_v2", api.set_stream);
  lib.resolve("cublasGetStatusName", api.status_name);
  lib.resolve("cublasGetStatusString", api.status_string);
  lib.resolve("cublasGemmEx", api.gemm_ex);
  lib.resolve("cublasGemmStridedBatchedEx", api.gemm_strided_batched_ex);
  api.error = lib.error();
  return api;  // the library stays open for the life of the process
}

const CublasApi& api() {
  static const CublasApi loaded = load();
  return loaded;
}

// Every call but the status texts goes through here: a DeviceError names what could not be loaded.
const CublasApi& loaded_api() {
  const CublasApi& a = api();
  if (!a.error.empty()) throw pipelab::DeviceError(a.error);
  return a;
}

}  // namespace

extern "C" {

cublasStatus_t CUBLASWINAPI cublasCreate_v2(cublasHandle_t* handle) { return loaded_api().create(handle); }

cublasStatus_t CUBLASWINAPI cublasDestroy_v2(cublasHandle_t handle) {
  const CublasApi& a = api();  // no throw: called from noexcept cleanup, only with a handle cuBLAS made
  return a.destroy ? a.destroy(handle) : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t CUBLASWINAPI cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  return loaded_api().set_stream(handle, stream);
}

const char* CUBLASWINAPI cublasGetStatusName(cublasStatus_t status) {
  const CublasApi& a = api();
  return a.status_name ? a.status_name(status) : "CUBLAS_STATUS_NOT_INITIALIZED";
}

const char* CUBLASWINAPI cublasGetStatusString(cublasStatus_t status) {
  const CublasApi& a = api();
  return a.status_string ? a.status_string(status) : a.error.c_str();
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                         int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                         int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
                                         void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  return loaded_api().gemm_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, B, Btype, ldb, beta, C, Ctype,
                              ldc, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa,
                                                       cublasOperation_t transb, int m, int n, int k,
                                                       const void* alpha, const void* A, cudaDataType Atype, int lda,
                                                       long long int strideA, const void* B, cudaDataType Btype,
                                                       int ldb, long long int strideB, const void* beta, void* C,
                                                       cudaDataType Ctype, int ldc, long long int strideC,
                                                       int batchCount, cublasComputeType_t computeType,
                                                       cublasGemmAlgo_t algo) {
  return loaded_api().gemm_strided_batched_ex(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype,
                                              ldb, strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType,
                                              algo);
}

}  // extern "C"
