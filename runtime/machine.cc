// Host queries and settings; see machine.h.
#include "pipelab/runtime/machine.h"

#include <cstdlib>

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>

namespace pipelab::runtime {

namespace {

// The CPUs the process may use, taken before main() runs: pinning a thread later narrows that
// thread's mask (and the masks of threads it creates), not the set ranks may be spread over.
cpu_set_t snapshot_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0 || CPU_COUNT(&set) == 0) CPU_SET(0, &set);
  return set;
}

const cpu_set_t& process_cpus() {
  static const cpu_set_t set = snapshot_affinity();
  return set;
}

[[maybe_unused]] const bool g_taken_at_startup = (process_cpus(), true);

}  // namespace

int hardware_cores() { return CPU_COUNT(&process_cpus()); }

int online_cores() {
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : hardware_cores();
}

bool pin_current_thread(int index) {
  if (index < 0) return false;
  const cpu_set_t& allowed = process_cpus();
  int seen = 0;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    if (seen++ == index) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
    }
  }
  return false;
}

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) {
        std::string v = line.substr(colon + 1);
        const auto first = v.find_first_not_of(" \t");
        return first == std::string::npos ? "unknown" : v.substr(first);
      }
    }
  }
  return "unknown";
}

void configure_allocator() {
  // Serve every allocation from the heap and never trim it: after warm-up, the per-microbatch
  // tensors of the kernels reuse memory that is already mapped.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // the largest value glibc accepts on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 64 << 20);
}

int launcher_world_size() {
  for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_STEP_NUM_TASKS"}) {
    if (const char* v = std::getenv(var)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  }
  return 1;
}

}  // namespace pipelab::runtime
