// CudaBackend: DeviceStages on streams of the rank's device (or of its green-context SM group),
// buffers guarded by fences, actions timed by CudaClock markers, the loss accumulated on the device
// and read once per iteration.
#include "pipelab/runtime/cuda_backend.h"

#include <nvtx3/nvToolsExt.h>

#include <optional>
#include <string>

#include "cuda_clock.h"
#include "cupti_trace.h"
#include "device_memory.h"
#include "green_context.h"
#include "pipelab/kernels/data.h"
#include "pipelab/runtime/errors.h"
#include "rank_device.h"
#include "streams.h"

namespace pipelab::runtime {

using cuda::CudaClock;
using cuda::CudaMemory;
using cuda::DeviceGuard;
using cuda::Event;
using cuda::GreenPartition;
using cuda::Stream;
using cuda::fence_after;
using cuda::wait_for;

int cuda_devices() { return kernels::cuda_device_count(); }

std::optional<std::string> cuda_unavailable() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();
    return std::string("no CUDA device available (driver: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err) + ")";
  }
  if (count == 0) return std::string("no CUDA device available (driver: 0 devices)");
  return std::nullopt;
}

CudaDeviceInfo cuda_device_info(int device) {
  cudaDeviceProp p{};
  PIPELAB_CUDA_CHECK(cudaGetDeviceProperties(&p, device));
  return CudaDeviceInfo{p.name, p.multiProcessorCount, static_cast<std::int64_t>(p.totalGlobalMem), p.major, p.minor};
}

struct CudaBackend::Impl {
  int rank;
  CudaRankConfig config;
  PipelineShape shape;
  std::optional<GreenPartition> partition;  // before the streams made from it, so destroyed after them
  Stream compute, compute2, send, recv;
  std::string placement;
  int sms = 0;
  CudaClock clock;
  Event unit_start, unit_b_done;
  bool overlapping = false;  // inside an F&B unit: the backward half goes to compute2
  std::vector<kernels::DeviceStage> stages;       // parallel to MicrobatchStates::stages()
  std::vector<kernels::DeviceStageSaved> saved;  // per MicrobatchStates::index
  std::vector<kernels::DeviceStageStash> stash;
  std::vector<kernels::DeviceBuffer> inputs;     // per microbatch (first stages only)
  std::vector<kernels::DeviceBuffer> targets;    // per microbatch (last stages only)
  kernels::DeviceBuffer loss;                    // one double (as two floats) per iteration
  std::int64_t param_bytes = 0;
  BufferPool pool;
  CudaRankDevice exposed;

  Impl(const PipelineShape& s, int r, const CudaRankConfig& c)
      : rank(r),
        config(c),
        shape(s),
        clock(c.device, make_streams(c), c.cupti ? r : -1),
        unit_start(c.device, false),
        unit_b_done(c.device, false),
        pool(std::make_shared<CudaMemory>(c.device)) {
    DeviceGuard guard(c.device);
    exposed = CudaRankDevice{c.device, send.get(), recv.get(), &clock, &pool};
  }

  // Streams of the rank's SM group when it shares the device and the driver can split it; plain
  // device streams otherwise. Returns the compute stream (the clock's epoch stream).
  cudaStream_t make_streams(const CudaRankConfig& c) {
    const CudaDeviceInfo info = cuda_device_info(c.device);
    placement = "device " + std::to_string(c.device) + " (" + info.name + "), ";
    sms = info.sms;
    std::string shared_note;
    if (c.ranks_on_device > 1 && c.partition_sms) {
      try {
        partition.emplace(c.device, c.ranks_on_device, c.index_on_device);
        compute = partition->make_stream();
        compute2 = partition->make_stream();
        // The events and fences of this backend are made in the device's primary context: check
        // that the group's streams take them before relying on it.
        const Event probe(c.device, true);
        probe.record(compute.get());
        probe.wait_on(compute2.get());
        compute2.synchronize();
        sms = partition->plan().sms_per_rank;
        placement += std::to_string(sms) + " of " + std::to_string(info.sms) + " SMs in a green context";
      } catch (const std::exception& e) {
        compute = Stream();
        compute2 = Stream();
        partition.reset();
        shared_note = e.what();
      }
    }
    if (!partition) {
      compute = Stream(c.device);
      compute2 = Stream(c.device);
      placement += "all " + std::to_string(info.sms) + " SMs";
      if (c.ranks_on_device > 1) {
        placement += ", shared with " + std::to_string(c.ranks_on_device - 1) + " other rank" +
                     (c.ranks_on_device > 2 ? "s" : "") + (shared_note.empty() ? " (partitioning off)" : " (" + shared_note + ")");
      }
    }
    send = Stream(c.device);
    recv = Stream(c.device);
    return compute.get();
  }

  cudaStream_t backward_stream() const { return overlapping ? compute2.get() : compute.get(); }
  double* loss_ptr() { return reinterpret_cast<double*>(loss.data()); }
};

namespace {

MicrobatchStates checked_states(const ModelConfig& model, const PipelineShape& shape, int rank, const CudaRankConfig& c) {
  model.validate();
  if (rank < 0 || rank >= shape.ranks) {
    throw InputError("cuda backend: rank " + std::to_string(rank) + " out of range for " + std::to_string(shape.ranks) + " ranks");
  }
  if (auto why = cuda_unavailable()) throw DeviceError(*why);
  if (c.device < 0 || c.device >= cuda_devices()) {
    throw InputError("cuda backend: device " + std::to_string(c.device) + " does not exist (" + std::to_string(cuda_devices()) +
                     " CUDA devices)");
  }
  return MicrobatchStates("cuda", shape, rank);
}

void check_buffer(const Buffer& b, std::size_t bytes, const char* what) {
  if (!b || b.bytes() != bytes) {
    throw ExecutionError(std::string("cuda backend: ") + what + ": expected an activation buffer of " + std::to_string(bytes) +
                         " bytes, got " + std::to_string(b.bytes()));
  }
}

float* device_floats(Buffer& b) { return static_cast<float*>(b.data()); }

kernels::DeviceBuffer upload(int device, const std::vector<float>& host) {
  kernels::DeviceBuffer d(device, host.size());
  d.upload(host);
  return d;
}

}  // namespace

CudaBackend::CudaBackend(const ModelConfig& model, const PipelineShape& shape, int rank, const CudaRankConfig& config)
    : model_(model), states_(checked_states(model, shape, rank, config)) {
  if (config.cupti) cuda::CuptiTrace::instance().enable();
  impl_ = std::make_unique<Impl>(shape, rank, config);
  Impl& m = *impl_;
  DeviceGuard guard(config.device);
  bool needs_inputs = false, needs_targets = false;
  for (int s : states_.stages()) {
    const int first = shape.part_of_stage(s) * model.layers_per_stage;
    std::vector<kernels::BlockParams> params;
    for (int l = 0; l < model.layers_per_stage; ++l) {
      params.push_back(kernels::init_params<float>(model.block, kernels::layer_seed(model.seed, first + l)));
      m.param_bytes += params.back().size() * static_cast<std::int64_t>(sizeof(float));
    }
    m.stages.emplace_back(model.block, config.device, params, config.math);
    needs_inputs |= shape.first_in_chain(s);
    needs_targets |= shape.last_in_chain(s);
  }
  m.saved.resize(states_.size());
  m.stash.resize(states_.size());
  for (int mb = 0; mb < shape.microbatches; ++mb) {
    m.inputs.push_back(needs_inputs ? upload(config.device, kernels::synthetic_input<float>(model.block, mb, model.seed))
                                    : kernels::DeviceBuffer());
    m.targets.push_back(needs_targets ? upload(config.device, kernels::synthetic_target<float>(model.block, mb, model.seed))
                                      : kernels::DeviceBuffer());
  }
  m.loss = kernels::DeviceBuffer(config.device, 2);  // room for one double
  m.pool.reserve(activation_bytes(), std::min(shape.microbatches, 4) * static_cast<int>(m.stages.size()));
}

CudaBackend::~CudaBackend() {
  if (!impl_) return;
  try {
    discard_state();
    synchronize();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipelab: cuda backend of rank %d: %s\n", impl_->rank, e.what());
  }
}

BufferPool& CudaBackend::pool() { return impl_->pool; }
std::size_t CudaBackend::activation_bytes() const { return static_cast<std::size_t>(model_.activation_bytes()); }
const std::string& CudaBackend::placement() const { return impl_->placement; }
int CudaBackend::sms() const { return impl_->sms; }
const CudaRankDevice& CudaBackend::rank_device() const { return impl_->exposed; }
DeviceClock* CudaBackend::clock() { return &impl_->clock; }

void CudaBackend::begin_iteration() {
  DeviceGuard guard(impl_->config.device);
  PIPELAB_CUDA_CHECK(cudaMemsetAsync(impl_->loss.data(), 0, sizeof(double), impl_->compute.get()));
}

void CudaBackend::load_input(int mb, Buffer& act) {
  Impl& m = *impl_;
  check_buffer(act, activation_bytes(), "load_input");
  if (mb < 0 || mb >= m.shape.microbatches || m.inputs[static_cast<std::size_t>(mb)].size() == 0) {
    throw ExecutionError("cuda backend: rank " + std::to_string(m.rank) + " has no input of microbatch " + std::to_string(mb));
  }
  DeviceGuard guard(m.config.device);
  const cudaStream_t s = m.compute.get();
  wait_for(act, s);
  PIPELAB_CUDA_CHECK(cudaMemcpyAsync(act.data(), m.inputs[static_cast<std::size_t>(mb)].data(), act.bytes(),
                                     cudaMemcpyDeviceToDevice, s));
  fence_after(act, s);
}

void CudaBackend::forward(int stage, int mb, Buffer& act) {
  states_.require(Op::F, stage, mb);
  check_buffer(act, activation_bytes(), "F");
  Impl& m = *impl_;
  const std::size_t i = states_.index(stage, mb);
  const cudaStream_t s = m.compute.get();
  wait_for(act, s);
  m.stages[states_.local(stage, "F")].forward(device_floats(act), device_floats(act), m.saved[i], s);
  fence_after(act, s);
  states_.record(Op::F, stage, mb, m.saved[i].bytes());
}

double CudaBackend::loss(int stage, int mb, Buffer& act) {
  states_.local(stage, "loss");
  check_buffer(act, activation_bytes(), "loss");
  Impl& m = *impl_;
  if (mb < 0 || mb >= m.shape.microbatches || m.targets[static_cast<std::size_t>(mb)].size() == 0) {
    throw ExecutionError("cuda backend: rank " + std::to_string(m.rank) + " has no target of microbatch " + std::to_string(mb));
  }
  DeviceGuard guard(m.config.device);
  const cudaStream_t s = m.compute.get();
  wait_for(act, s);
  kernels::device_mse_loss_in_place(device_floats(act), m.targets[static_cast<std::size_t>(mb)].data(),
                                    model_.block.activation_elems(), 1.0 / static_cast<double>(m.shape.microbatches),
                                    m.loss_ptr(), s);
  fence_after(act, s);
  return 0;  // the loss arrives with finish_iteration()
}

void CudaBackend::backward_input(int stage, int mb, Buffer& grad) {
  states_.require(Op::I, stage, mb);
  check_buffer(grad, activation_bytes(), "I");
  Impl& m = *impl_;
  const std::size_t i = states_.index(stage, mb);
  const cudaStream_t s = m.backward_stream();
  wait_for(grad, s);
  m.stages[states_.local(stage, "I")].backward_input(std::move(m.saved[i]), device_floats(grad), device_floats(grad), m.stash[i], s);
  fence_after(grad, s);
  states_.record(Op::I, stage, mb, m.stash[i].bytes());
}

void CudaBackend::backward_weight(int stage, int mb) {
  states_.require(Op::W, stage, mb);
  Impl& m = *impl_;
  const std::size_t i = states_.index(stage, mb);
  m.stages[states_.local(stage, "W")].backward_weight(std::move(m.stash[i]), m.backward_stream());
  states_.record(Op::W, stage, mb);
}

void CudaBackend::backward(int stage, int mb, Buffer& grad) {
  backward_input(stage, mb, grad);
  backward_weight(stage, mb);
}

DeviceClock::Token CudaBackend::begin_action(const Action& unit) {
  Impl& m = *impl_;
  DeviceGuard guard(m.config.device);
  nvtxRangePushA(("PP:" + to_string(unit)).c_str());
  if (m.config.cupti) cuda::CuptiTrace::instance().push_action(m.rank, unit);
  const DeviceClock::Token t = m.clock.mark(m.compute.get());
  if (unit.op == Op::OverlapFB) {
    // The backward half starts with the unit, on the second stream.
    m.unit_start.record(m.compute.get());
    m.unit_start.wait_on(m.compute2.get());
    m.overlapping = true;
  }
  return t;
}

DeviceClock::Token CudaBackend::end_action(const Action& unit) {
  Impl& m = *impl_;
  DeviceGuard guard(m.config.device);
  if (unit.op == Op::OverlapFB) {
    // The unit ends when both halves have.
    m.unit_b_done.record(m.compute2.get());
    m.unit_b_done.wait_on(m.compute.get());
    m.overlapping = false;
  }
  const DeviceClock::Token t = m.clock.mark(m.compute.get());
  if (m.config.cupti) cuda::CuptiTrace::instance().pop_action();
  nvtxRangePop();
  return t;
}

void CudaBackend::synchronize() {
  Impl& m = *impl_;
  DeviceGuard guard(m.config.device);
  m.compute.synchronize();
  m.compute2.synchronize();
  m.send.synchronize();
  m.recv.synchronize();
}

double CudaBackend::finish_iteration() {
  synchronize();
  double loss = 0;
  PIPELAB_CUDA_CHECK(cudaMemcpy(&loss, impl_->loss.data(), sizeof(double), cudaMemcpyDeviceToHost));
  return loss;
}

void CudaBackend::zero_grads() {
  for (auto& s : impl_->stages) s.zero_grads(impl_->compute.get());
}

std::vector<kernels::BlockGrads> CudaBackend::gradients(int stage) const {
  return impl_->stages[states_.local(stage, "gradients")].download_grads(impl_->compute.get());
}

std::int64_t CudaBackend::static_bytes() const { return 2 * impl_->param_bytes; }

void CudaBackend::discard_state() {
  for (auto& s : impl_->saved) s = {};
  for (auto& s : impl_->stash) s = {};
  states_.discard();
  impl_->overlapping = false;
}

}  // namespace pipelab::runtime
