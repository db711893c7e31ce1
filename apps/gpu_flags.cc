// --math, --device, --no-sm-partition.
#include "gpu_flags.h"

#include "pipelab/base/error.h"

namespace pipelab::app {

void add_gpu_flags(CLI::App* cmd, GpuFlags& f) {
  cmd->add_option("--math", f.math, "GPU GEMM math of the mock block: fp32, tf32 or bf16 (fp32 storage, fp32 accumulation)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--device", f.device, "First GPU to use")->capture_default_str()->check(CLI::Range(0, 1023));
  cmd->add_flag("--no-sm-partition", f.no_sm_partition,
                "Single-GPU mode: ranks share every SM (default: a green-context SM group per rank when the driver allows)");
}

void require_cuda_backend_for_gpu_flags(CLI::App* cmd, const std::string& backend) {
  if (backend == "cuda") return;
  for (const char* flag : {"--math", "--device", "--no-sm-partition", "--single-gpu", "--ranks-per-gpu", "--cupti"}) {
    const CLI::Option* opt = cmd->get_option_no_throw(flag);
    if (opt != nullptr && opt->count() > 0) {
      throw InputError(std::string(flag) + " applies to --backend cuda; this run uses --backend " + backend);
    }
  }
}

}  // namespace pipelab::app
