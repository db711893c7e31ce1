// Drivers of GPU runs: every rank as a thread of this process (one GPU per rank, or all ranks on
// one GPU: single-GPU mode), or one process per GPU bootstrapped through MPI (several nodes), each
// running the shared executor on CudaBackends. docs/gpu.md shows the commands.
#pragma once

#include <string>
#include <vector>

#include "pipelab/kernels/device_block.h"
#include "pipelab/runtime/mpi_transport.h"
#include "pipelab/runtime/run.h"

namespace pipelab::runtime {

/// How messages move between the ranks of a GPU run.
enum class CudaTransportKind {
  Auto,  // NCCL when every rank has its own GPU, device copies otherwise
  Copy,  // device-to-device (peer) copies ordered by events, in one process
  Nccl,  // ncclSend/ncclRecv on per-pair communicators (one GPU per rank)
};
std::string_view cuda_transport_name(CudaTransportKind kind);
CudaTransportKind parse_cuda_transport(std::string_view name);  // "auto" | "copy" | "nccl"

struct CudaRunConfig {
  kernels::GemmMath math = kernels::GemmMath::Bf16;
  CudaTransportKind transport = CudaTransportKind::Auto;
  bool single_gpu = false;     // all ranks on first_device even when more GPUs are present
  bool partition_sms = true;   // single-GPU mode: a green-context SM group per rank when possible
  int first_device = 0;
  bool cupti = false;          // RunResult::device_activity: the median iteration's kernels and copies
};

/// Where the ranks of an in-process GPU run go: one GPU per rank (from first_device) when there
/// are enough and single_gpu is off, else every rank on first_device; and the transport that
/// follows. Pure: tested on the CPU. Throws ConfigError for NCCL on a shared GPU or no device.
struct CudaRunPlan {
  std::vector<int> device_of_rank;
  CudaTransportKind transport = CudaTransportKind::Copy;
  bool single_gpu = false;
};
CudaRunPlan plan_cuda_run(int ranks, int devices, const CudaRunConfig& config);

/// What a GPU run ran on, for the result's configuration and the terminal.
struct CudaRunInfo {
  std::string device;                  // "NVIDIA H100 80GB HBM3" (the first rank's)
  std::string transport;               // "cuda-copy" | "nccl 2.28.3"
  bool single_gpu = false;
  std::vector<std::string> placement;  // per rank, CudaBackend::placement()
  int sms_per_rank = 0;                // the SMs of rank 0's compute
  int device_sms = 0;                  // all SMs of its GPU
};

/// Runs the ranks of `lowered` as threads of this process on CudaBackends; `info` (if given) says
/// where they ran. Throws DeviceError without a device.
RunResult run_cuda_inprocess(const Schedule& lowered, const ModelConfig& model, const CudaRunConfig& config,
                             const RunOptions& options, CudaRunInfo* info = nullptr);

/// This process's rank of a multi-process GPU run (`mpirun -np P pipelab run --backend cuda
/// --transport nccl`): GPU = node-local rank (OMPI_COMM_WORLD_LOCAL_RANK, SLURM_LOCALID, else the
/// rank) modulo the node's GPUs, NCCL between ranks bootstrapped through MPI. Rank 0 returns the
/// result, as run_distributed.
RunResult run_cuda_distributed(const Schedule& lowered, const ModelConfig& model, const CudaRunConfig& config,
                               const RunOptions& options, MpiSession& mpi, CudaRunInfo* info = nullptr);

/// What CUPTI holds now ("N kernel/copy records, M correlations, K actions"): for diagnosing a
/// --cupti run that recorded nothing.
std::string cupti_summary();

/// NCCL on one GPU: sends `bytes` of a pattern to itself through a one-rank communicator (a grouped
/// ncclSend/ncclRecv) and checks them; throws DeviceError on a NCCL error or a wrong byte. Returns
/// the NCCL version ("2.28.3"). A check that needs no second GPU (tests/gpu, scripts/gpu-check.sh).
std::string nccl_loopback_check(int device, std::size_t bytes);

}  // namespace pipelab::runtime
