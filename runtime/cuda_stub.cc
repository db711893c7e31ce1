// The cuda backend and GPU drivers in a build without CUDA: the queries report no device, the rest
// throws DeviceError, so callers link unconditionally and decide at run time.
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/cuda_run.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/profiler.h"

namespace pipelab::runtime {

namespace {

constexpr const char* kNoCuda = "pipelab was built without CUDA (PIPELAB_CUDA=OFF or no nvcc at configure time)";

[[noreturn]] void no_cuda() { throw DeviceError(kNoCuda); }

}  // namespace

std::optional<std::string> cuda_unavailable() { return std::string(kNoCuda); }
int cuda_devices() { return 0; }
CudaDeviceInfo cuda_device_info(int) { no_cuda(); }

struct CudaBackend::Impl {};
CudaBackend::CudaBackend(const ModelConfig& model, const PipelineShape& shape, int rank, const CudaRankConfig&)
    : model_(model), states_("cuda", shape, rank) {
  no_cuda();
}
CudaBackend::~CudaBackend() = default;
BufferPool& CudaBackend::pool() { no_cuda(); }
std::size_t CudaBackend::activation_bytes() const { no_cuda(); }
void CudaBackend::begin_iteration() { no_cuda(); }
void CudaBackend::load_input(int, Buffer&) { no_cuda(); }
void CudaBackend::forward(int, int, Buffer&) { no_cuda(); }
double CudaBackend::loss(int, int, Buffer&) { no_cuda(); }
void CudaBackend::backward_input(int, int, Buffer&) { no_cuda(); }
void CudaBackend::backward_weight(int, int) { no_cuda(); }
void CudaBackend::backward(int, int, Buffer&) { no_cuda(); }
void CudaBackend::synchronize() { no_cuda(); }
DeviceClock* CudaBackend::clock() { no_cuda(); }
DeviceClock::Token CudaBackend::begin_action(const Action&) { no_cuda(); }
DeviceClock::Token CudaBackend::end_action(const Action&) { no_cuda(); }
double CudaBackend::finish_iteration() { no_cuda(); }
void CudaBackend::zero_grads() { no_cuda(); }
std::vector<kernels::BlockGrads> CudaBackend::gradients(int) const { no_cuda(); }
std::int64_t CudaBackend::static_bytes() const { no_cuda(); }
void CudaBackend::discard_state() { no_cuda(); }
const std::string& CudaBackend::placement() const { no_cuda(); }
int CudaBackend::sms() const { no_cuda(); }
const CudaRankDevice& CudaBackend::rank_device() const { no_cuda(); }

RunResult run_cuda_inprocess(const Schedule&, const ModelConfig&, const CudaRunConfig&, const RunOptions&, CudaRunInfo*) {
  no_cuda();
}
RunResult run_cuda_distributed(const Schedule&, const ModelConfig&, const CudaRunConfig&, const RunOptions&, MpiSession&,
                               CudaRunInfo*) {
  no_cuda();
}

std::string nccl_loopback_check(int, std::size_t) { no_cuda(); }
std::string cupti_summary() { no_cuda(); }
MeasuredProfile measure_cuda_profile(const ProfileOptions&, const CudaProfileOptions&) { no_cuda(); }

}  // namespace pipelab::runtime
