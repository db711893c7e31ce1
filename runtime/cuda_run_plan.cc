// plan_cuda_run and the transport names: host-only, built with or without CUDA.
#include <array>
#include <utility>

#include "pipelab/base/error.h"
#include "pipelab/runtime/cuda_run.h"

namespace pipelab::runtime {

namespace {

constexpr std::array<std::pair<CudaTransportKind, std::string_view>, 3> kTransportNames{{
    {CudaTransportKind::Auto, "auto"},
    {CudaTransportKind::Copy, "copy"},
    {CudaTransportKind::Nccl, "nccl"},
}};

}  // namespace

std::string_view cuda_transport_name(CudaTransportKind kind) {
  for (const auto& [k, name] : kTransportNames) {
    if (k == kind) return name;
  }
  return "?";
}

CudaTransportKind parse_cuda_transport(std::string_view name) {
  for (const auto& [k, n] : kTransportNames) {
    if (n == name) return k;
  }
  throw InputError("GPU transport '" + std::string(name) + "' is not one of auto, copy, nccl");
}

CudaRunPlan plan_cuda_run(int ranks, int devices, const CudaRunConfig& config) {
  if (ranks < 1) throw InputError("plan_cuda_run: ranks=" + std::to_string(ranks) + " must be >= 1");
  if (config.first_device < 0 || config.first_device >= devices) {
    throw ConfigError("GPU run: device " + std::to_string(config.first_device) + " does not exist (" + std::to_string(devices) +
                      " CUDA devices)");
  }
  CudaRunPlan plan;
  const int available = devices - config.first_device;
  plan.single_gpu = config.single_gpu || available < ranks;
  for (int r = 0; r < ranks; ++r) plan.device_of_rank.push_back(config.first_device + (plan.single_gpu ? 0 : r));
  plan.transport = config.transport;
  if (plan.transport == CudaTransportKind::Auto) {
    plan.transport = plan.single_gpu || ranks == 1 ? CudaTransportKind::Copy : CudaTransportKind::Nccl;
  }
  if (plan.transport == CudaTransportKind::Nccl && plan.single_gpu && ranks > 1) {
    throw ConfigError("GPU run: --transport nccl needs one GPU per rank (" + std::to_string(ranks) + " ranks, " +
                      std::to_string(available) + " GPUs from device " + std::to_string(config.first_device) +
                      "); single-GPU mode uses --transport copy");
  }
  return plan;
}

}  // namespace pipelab::runtime
