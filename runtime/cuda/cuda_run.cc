// The GPU drivers: in-process over an InprocWorld with a device transport per rank, and one
// process per GPU over MPI with NCCL.
#include "pipelab/runtime/cuda_run.h"

#include <cstdlib>
#include <mutex>

#include "copy_transport.h"
#include "cupti_trace.h"
#include "nccl_transport.h"
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/errors.h"
#include "rank_device.h"

namespace pipelab::runtime {

namespace {

void fill_info(CudaRunInfo* info, const CudaRunPlan& plan, int first_device) {
  if (info == nullptr) return;
  const CudaDeviceInfo dev = cuda_device_info(first_device);
  info->device = dev.name;
  info->device_sms = dev.sms;
  info->single_gpu = plan.single_gpu;
  info->transport = plan.transport == CudaTransportKind::Nccl ? "nccl " + cuda::nccl_version() : "cuda-copy";
  info->placement.assign(plan.device_of_rank.size(), "");
}

int local_rank(int rank) {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  return rank;
}

}  // namespace

RunResult run_cuda_inprocess(const Schedule& lowered, const ModelConfig& model, const CudaRunConfig& config,
                             const RunOptions& options, CudaRunInfo* info) {
  if (auto why = cuda_unavailable()) throw DeviceError(*why);
  model.validate();
  const int P = lowered.shape.ranks;
  const CudaRunPlan plan = plan_cuda_run(P, cuda_devices(), config);
  fill_info(info, plan, config.first_device);
  std::mutex info_mutex;
  const bool nccl = plan.transport == CudaTransportKind::Nccl;
  // Made before the ranks start: NCCL's in-process communicators are created for all ranks at once.
  std::shared_ptr<cuda::NcclPairs> pairs = nccl ? cuda::NcclPairs::in_process(lowered, plan.device_of_rank) : nullptr;
  cuda::CopyWorld copies(lowered.shape);
  auto make_backend = [&](int r) -> std::unique_ptr<Backend> {
    CudaRankConfig c;
    c.device = plan.device_of_rank[static_cast<std::size_t>(r)];
    c.math = config.math;
    c.ranks_on_device = plan.single_gpu ? P : 1;
    c.index_on_device = plan.single_gpu ? r : 0;
    c.partition_sms = config.partition_sms;
    c.cupti = config.cupti;
    auto b = std::make_unique<CudaBackend>(model, lowered.shape, r, c);
    if (info != nullptr) {
      std::lock_guard lock(info_mutex);
      info->placement[static_cast<std::size_t>(r)] = b->placement();
      if (r == 0) info->sms_per_rank = b->sms();
    }
    return b;
  };
  auto wrap = [&](int r, Transport& inproc, Backend& backend) -> std::unique_ptr<Transport> {
    const CudaRankDevice& device = static_cast<CudaBackend&>(backend).rank_device();
    if (nccl) return pairs->transport(r, inproc, device);
    copies.attach(r, device);
    return copies.transport(r, inproc);
  };
  RunOptions o = options;
  o.pin_threads = false;  // host threads only enqueue work
  RunResult result = run_inprocess(lowered, make_backend, o, wrap);
  if (config.cupti) {
    // The reported (median) iteration's activity; warm-up iterations count in CUPTI's numbering.
    const int iteration = options.warmup + static_cast<int>(result.median_iteration());
    for (int r = 0; r < P; ++r) {
      std::vector<DeviceActivity> a = cuda::CuptiTrace::instance().take(r, iteration);
      result.device_activity.insert(result.device_activity.end(), a.begin(), a.end());
    }
  }
  return result;
}

std::string cupti_summary() { return cuda::CuptiTrace::instance().summary(); }

RunResult run_cuda_distributed(const Schedule& lowered, const ModelConfig& model, const CudaRunConfig& config,
                               const RunOptions& options, MpiSession& mpi, CudaRunInfo* info) {
  if (auto why = cuda_unavailable()) throw DeviceError(*why);
  model.validate();
  const int rank = mpi.rank();
  const int device = local_rank(rank) % cuda_devices();
  CudaRankConfig c;
  c.device = device;
  c.math = config.math;
  c.cupti = config.cupti;
  // Declared in this order so that they are destroyed in reverse: the transport first, then the
  // communicators it uses, the MPI control endpoint, and last the backend whose pool its buffers use.
  CudaBackend backend(model, lowered.shape, rank, c);
  const std::unique_ptr<Transport> control = mpi.transport(lowered.shape);
  std::vector<std::byte> id = rank == 0 ? cuda::NcclPairs::new_unique_id() : std::vector<std::byte>(cuda::NcclPairs::unique_id_bytes());
  mpi.broadcast(id);
  const std::shared_ptr<cuda::NcclPairs> pairs = cuda::NcclPairs::distributed(lowered, rank, device, id);
  const std::unique_ptr<Transport> transport = pairs->transport(rank, *control, backend.rank_device());
  if (info != nullptr) {
    CudaRunPlan plan;
    plan.device_of_rank.assign(static_cast<std::size_t>(lowered.shape.ranks), device);
    plan.transport = CudaTransportKind::Nccl;
    fill_info(info, plan, device);
    info->placement[static_cast<std::size_t>(rank)] = backend.placement();
    info->sms_per_rank = backend.sms();
  }
  RunResult result = run_distributed(lowered, backend, *transport, options);
  // CUPTI records the activity of this process: a multi-process run reports rank 0's.
  if (config.cupti && rank == 0) {
    result.device_activity = cuda::CuptiTrace::instance().take(0, options.warmup + static_cast<int>(result.median_iteration()));
  }
  return result;
}

}  // namespace pipelab::runtime
