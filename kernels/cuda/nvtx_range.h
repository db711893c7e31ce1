// NVTX ranges (header-only NVTX3): what Nsight Systems shows above the kernels, so a profile of a
// run lines up with pipelab's timeline — the runtime opens one per action (`PP:2F0`), the kernels
// nest one per block pass and kernel group inside it. Costs a few ns when no tool is attached.
#pragma once

#include <nvtx3/nvToolsExt.h>

namespace pipelab::kernels::cuda {

/// A range on the calling thread for the lifetime of the object.
class NvtxRange {
 public:
  explicit NvtxRange(const char* name) { nvtxRangePushA(name); }
  ~NvtxRange() { nvtxRangePop(); }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;
};

}  // namespace pipelab::kernels::cuda
