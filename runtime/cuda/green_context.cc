// GreenPartition: cuDeviceGetDevResource -> cuDevSmResourceSplitByCount -> cuGreenCtxCreate. The
// driver functions are looked up through the runtime (cudaGetDriverEntryPointByVersion) rather
// than linked, so binaries load on machines without a driver (CI) and fail here, with a reason.
#include "green_context.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "pipelab/base/error.h"

namespace pipelab::runtime::cuda {

namespace {

/// The driver entry point `name` with the signature of `F`; throws DeviceError when the driver
/// lacks it (green contexts need a CUDA 12.4 driver).
template <class F>
F* driver_function(const char* name) {
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found{};
  const cudaError_t err = cudaGetDriverEntryPointByVersion(name, &fn, CUDART_VERSION, cudaEnableDefault, &found);
  if (err != cudaSuccess || found != cudaDriverEntryPointSuccess || fn == nullptr) {
    cudaGetLastError();
    throw DeviceError(std::string("green context: the driver has no ") + name + " (needs a CUDA 12.4 or later driver)");
  }
  return reinterpret_cast<F*>(fn);
}

#define PIPELAB_DRIVER(name) driver_function<decltype(name)>(#name)

void check_driver(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  const char* name = nullptr;
  const char* text = nullptr;
  PIPELAB_DRIVER(cuGetErrorName)(rc, &name);
  PIPELAB_DRIVER(cuGetErrorString)(rc, &text);
  throw DeviceError(std::string("green context: ") + what + " failed: " + (name ? name : "?") + " (" + (text ? text : "?") + ")");
}

}  // namespace

int sm_count(int device) {
  int n = 0;
  PIPELAB_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device));
  return n;
}

GreenPartition::GreenPartition(int device, int ranks, int rank) : device_(device) {
  DeviceGuard guard(device);
  PIPELAB_CUDA_CHECK(cudaFree(nullptr));  // make sure the primary context exists (driver initialized)
  CUdevice dev = 0;
  check_driver(PIPELAB_DRIVER(cuDeviceGet)(&dev, device), "cuDeviceGet");
  CUdevResource all{};
  check_driver(PIPELAB_DRIVER(cuDeviceGetDevResource)(dev, &all, CU_DEV_RESOURCE_TYPE_SM), "cuDeviceGetDevResource");
  const int granularity =
      static_cast<int>(std::max({all.sm.minSmPartitionSize, all.sm.smCoscheduledAlignment, 1u}));
  plan_ = plan_sm_partition(static_cast<int>(all.sm.smCount), ranks, granularity);
  if (!plan_.partitioned) throw DeviceError("green context: " + plan_.note);
  std::vector<CUdevResource> groups(static_cast<std::size_t>(ranks));
  unsigned int made = static_cast<unsigned int>(ranks);
  CUdevResource rest{};
  check_driver(PIPELAB_DRIVER(cuDevSmResourceSplitByCount)(groups.data(), &made, &all, &rest, 0, static_cast<unsigned int>(plan_.sms_per_rank)),
               "cuDevSmResourceSplitByCount");
  if (made < static_cast<unsigned int>(ranks)) {
    throw DeviceError("green context: the driver made " + std::to_string(made) + " SM groups of " +
                      std::to_string(plan_.sms_per_rank) + ", " + std::to_string(ranks) + " ranks need one each");
  }
  CUdevResource& mine = groups[static_cast<std::size_t>(rank)];
  plan_.sms_per_rank = static_cast<int>(mine.sm.smCount);
  CUdevResourceDesc desc = nullptr;
  check_driver(PIPELAB_DRIVER(cuDevResourceGenerateDesc)(&desc, &mine, 1), "cuDevResourceGenerateDesc");
  check_driver(PIPELAB_DRIVER(cuGreenCtxCreate)(&context_, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM), "cuGreenCtxCreate");
}

GreenPartition::~GreenPartition() {
  if (context_ != nullptr) {
    try {
      const CUresult rc = PIPELAB_DRIVER(cuGreenCtxDestroy)(context_);
      if (rc != CUDA_SUCCESS) std::fprintf(stderr, "pipelab: cuGreenCtxDestroy failed (%d)\n", static_cast<int>(rc));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pipelab: %s\n", e.what());
    }
  }
}

Stream GreenPartition::make_stream() const {
  CUstream s = nullptr;
  check_driver(PIPELAB_DRIVER(cuGreenCtxStreamCreate)(&s, context_, CU_STREAM_NON_BLOCKING, 0), "cuGreenCtxStreamCreate");
  return Stream::adopt(device_, s);
}

}  // namespace pipelab::runtime::cuda
