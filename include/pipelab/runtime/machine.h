// The host the runtime measures on: usable cores, thread pinning, allocator settings.
#pragma once

#include <string>

namespace pipelab::runtime {

/// CPUs this process may run on (its affinity mask when it started, so pinning threads later does not
/// shrink it); at least 1.
int hardware_cores();

/// CPUs online on this machine (for processes an MPI launcher bound to one core each, the node's
/// cores, which hardware_cores() would not show); at least 1.
int online_cores();

/// Pins the calling thread to the `index`-th CPU of the process's start-up affinity mask. False if
/// there is no such CPU or the OS refuses.
bool pin_current_thread(int index);

/// Processes an MPI launcher (mpirun, srun) started for this job, read from its environment
/// (Open MPI OMPI_COMM_WORLD_SIZE, MPICH/Hydra PMI_SIZE, srun SLURM_STEP_NUM_TASKS); 1 otherwise.
int launcher_world_size();
/// launcher_world_size() > 1.
inline bool launched_by_mpi() { return launcher_world_size() > 1; }

/// "AMD EPYC ..." from /proc/cpuinfo, or "unknown".
std::string cpu_model_name();

/// Process-wide: keep freed memory in the allocator instead of returning it to the OS, so
/// per-microbatch state allocated in the timed loop does not page-fault after warm-up.
void configure_allocator();

}  // namespace pipelab::runtime
