// Device entry points of a build without CUDA: the queries report no device, everything else
// throws DeviceError, so callers link unconditionally and decide at run time.
#include <string>

#include "pipelab/base/error.h"
#include "pipelab/kernels/device_block.h"

namespace pipelab::kernels {

namespace {

[[noreturn]] void no_cuda(const char* what) {
  throw DeviceError(std::string(what) + ": pipelab was built without CUDA (PIPELAB_CUDA=OFF or "
                    "no nvcc at configure time)");
}

}  // namespace

bool cuda_built() { return false; }
int cuda_device_count() { return 0; }

DeviceBuffer::DeviceBuffer(int, std::size_t) { no_cuda("DeviceBuffer"); }
DeviceBuffer::~DeviceBuffer() = default;
DeviceBuffer::DeviceBuffer(DeviceBuffer&&) noexcept = default;
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&&) noexcept = default;
void DeviceBuffer::upload(std::span<const float>) { no_cuda("DeviceBuffer::upload"); }
void DeviceBuffer::download(std::span<float>) const { no_cuda("DeviceBuffer::download"); }

struct DeviceStageSaved::Impl {};
struct DeviceStageStash::Impl {};
DeviceStageSaved::DeviceStageSaved() = default;
DeviceStageSaved::~DeviceStageSaved() = default;
DeviceStageSaved::DeviceStageSaved(DeviceStageSaved&&) noexcept = default;
DeviceStageSaved& DeviceStageSaved::operator=(DeviceStageSaved&&) noexcept = default;
std::int64_t DeviceStageSaved::bytes() const { return 0; }
DeviceStageStash::DeviceStageStash() = default;
DeviceStageStash::~DeviceStageStash() = default;
DeviceStageStash::DeviceStageStash(DeviceStageStash&&) noexcept = default;
DeviceStageStash& DeviceStageStash::operator=(DeviceStageStash&&) noexcept = default;
std::int64_t DeviceStageStash::bytes() const { return 0; }

struct DeviceStage::Impl {};
DeviceStage::DeviceStage(const BlockShape&, int, std::span<const BlockParams>, GemmMath) {
  no_cuda("DeviceStage");
}
DeviceStage::~DeviceStage() = default;
DeviceStage::DeviceStage(DeviceStage&&) noexcept = default;
DeviceStage& DeviceStage::operator=(DeviceStage&&) noexcept = default;
const BlockShape& DeviceStage::shape() const { no_cuda("DeviceStage::shape"); }
int DeviceStage::device() const { no_cuda("DeviceStage::device"); }
int DeviceStage::num_layers() const { no_cuda("DeviceStage::num_layers"); }
void DeviceStage::forward(const float*, float*, DeviceStageSaved&, void*) {
  no_cuda("DeviceStage::forward");
}
void DeviceStage::backward_input(DeviceStageSaved&&, const float*, float*, DeviceStageStash&,
                                 void*) {
  no_cuda("DeviceStage::backward_input");
}
void DeviceStage::backward_weight(DeviceStageStash&&, void*) {
  no_cuda("DeviceStage::backward_weight");
}
void DeviceStage::backward(DeviceStageSaved&&, const float*, float*, void*) {
  no_cuda("DeviceStage::backward");
}
void DeviceStage::zero_grads(void*) { no_cuda("DeviceStage::zero_grads"); }
std::vector<BlockGrads> DeviceStage::download_grads(void*) const {
  no_cuda("DeviceStage::download_grads");
}

void device_mse_loss_in_place(float*, const float*, std::int64_t, double, double*, void*) {
  no_cuda("device_mse_loss_in_place");
}
double device_gemm_ns(int, int, int, int, GemmMath, int, bool) { no_cuda("device_gemm_ns"); }
double device_copy_bandwidth(int, std::size_t, int) { no_cuda("device_copy_bandwidth"); }

}  // namespace pipelab::kernels
