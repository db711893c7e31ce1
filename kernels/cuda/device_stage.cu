// DeviceStage: the mock block stack on one GPU. Same passes and the same saved/stash contents as
// kernels/block.cc (docs/kernels.md), on cuBLAS GEMMs and the kernels of device_ops.cu.
#include <array>
#include <optional>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "cuda_check.h"
#include "device_memory.cuh"
#include "device_ops.cuh"
#include "nvtx_range.h"
#include "pipelab/base/error.h"
#include "pipelab/kernels/device_block.h"

namespace pipelab::kernels {

namespace cuda::detail {

/// Marks every array of a saved/stash block as used on `s`.
template <std::size_t N>
void mark_used_on(const std::array<DevArray*, N>& arrays, cudaStream_t s) {
  for (DevArray* a : arrays) a->used_on(s);
}

template <std::size_t N>
std::int64_t total_bytes(const std::array<const DevArray*, N>& arrays) {
  std::int64_t n = 0;
  for (const DevArray* a : arrays) n += a->bytes();
  return n;
}

struct SavedBlock {
  DevArray xhat1, rstd1, n1, qkv, probs, attn, yhat2, rstd2, n2, pre, up, act;
  std::array<DevArray*, 12> arrays() {
    return {&xhat1, &rstd1, &n1, &qkv, &probs, &attn, &yhat2, &rstd2, &n2, &pre, &up, &act};
  }
  std::array<const DevArray*, 12> arrays() const {
    return {&xhat1, &rstd1, &n1, &qkv, &probs, &attn, &yhat2, &rstd2, &n2, &pre, &up, &act};
  }
  std::int64_t bytes() const { return total_bytes(arrays()); }
};

struct StashBlock {
  DevArray xhat1, dn1, n1, dqkv, attn, dy, yhat2, dn2, n2, dup, dgate, act, dz;
  std::array<DevArray*, 13> arrays() {
    return {&xhat1, &dn1, &n1, &dqkv, &attn, &dy, &yhat2, &dn2, &n2, &dup, &dgate, &act, &dz};
  }
  std::array<const DevArray*, 13> arrays() const {
    return {&xhat1, &dn1, &n1, &dqkv, &attn, &dy, &yhat2, &dn2, &n2, &dup, &dgate, &act, &dz};
  }
  std::int64_t bytes() const { return total_bytes(arrays()); }
  void release(cudaStream_t s) {
    for (DevArray* a : arrays()) a->release(s);
  }
};

/// One block's weights (or gradient accumulators) on the device.
struct DevParams {
  DeviceBuffer norm1_gain, w_qkv, w_out, norm2_gain, w_up, w_gate, w_down;
  static constexpr std::size_t kCount = 7;

  /// The seven buffers, in the order of host_tensors() (w_gate is empty for GELU).
  std::array<DeviceBuffer*, kCount> buffers() {
    return {&norm1_gain, &w_qkv, &w_out, &norm2_gain, &w_up, &w_gate, &w_down};
  }
  std::array<const DeviceBuffer*, kCount> buffers() const {
    return {&norm1_gain, &w_qkv, &w_out, &norm2_gain, &w_up, &w_gate, &w_down};
  }
  /// A host block's tensors in buffers() order (const or not, as `host` is).
  template <class Params>
  static auto host_tensors(Params& host) {
    return std::array{&host.norm1_gain, &host.w_qkv, &host.w_out, &host.norm2_gain,
                      &host.w_up,       &host.w_gate, &host.w_down};
  }
  /// (device buffer, host tensor) pairs, for uploading `host`; nothing is copied.
  std::array<std::pair<DeviceBuffer*, const std::vector<float>*>, kCount> zip(
      const BlockParams& host) {
    const auto dev = buffers();
    const auto src = host_tensors(host);
    std::array<std::pair<DeviceBuffer*, const std::vector<float>*>, kCount> out;
    for (std::size_t k = 0; k < kCount; ++k) out[k] = {dev[k], src[k]};
    return out;
  }
};

}  // namespace cuda::detail

using cuda::detail::DevArray;
using cuda::DeviceGuard;
using cuda::detail::DevParams;
using cuda::detail::SavedBlock;
using cuda::detail::StashBlock;

// ---------------------------------------------------------------------------------------------
// Queries

bool cuda_built() { return true; }

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error state
    return 0;
  }
  return count;
}

// ---------------------------------------------------------------------------------------------
// DeviceBuffer

DeviceBuffer::DeviceBuffer(int device, std::size_t elems) : size_(elems), device_(device) {
  DeviceGuard guard(device);
  if (elems > 0) {
    PIPELAB_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), elems * sizeof(float)));
    PIPELAB_CUDA_CHECK(cudaMemset(data_, 0, elems * sizeof(float)));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) {
    cuda::NoThrowDeviceGuard guard(device_);
    if (guard.ok()) PIPELAB_CUDA_LOG(cudaFree(data_));  // leaked (and logged) otherwise
  }
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)),
      size_(std::exchange(o.size_, 0)),
      device_(std::exchange(o.device_, -1)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    DeviceBuffer old(std::move(*this));  // frees what this held (its destructor), then take o's
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
    device_ = std::exchange(o.device_, -1);
  }
  return *this;
}

void DeviceBuffer::upload(std::span<const float> host) {
  if (host.size() != size_) {
    throw InputError("DeviceBuffer::upload: host has " + std::to_string(host.size()) +
                     " elements, buffer has " + std::to_string(size_));
  }
  if (size_ == 0) return;
  DeviceGuard guard(device_);
  PIPELAB_CUDA_CHECK(cudaMemcpy(data_, host.data(), size_ * sizeof(float), cudaMemcpyHostToDevice));
}

void DeviceBuffer::download(std::span<float> host) const {
  if (host.size() != size_) {
    throw InputError("DeviceBuffer::download: host has " + std::to_string(host.size()) +
                     " elements, buffer has " + std::to_string(size_));
  }
  if (size_ == 0) return;
  DeviceGuard guard(device_);
  PIPELAB_CUDA_CHECK(cudaMemcpy(host.data(), data_, size_ * sizeof(float), cudaMemcpyDeviceToHost));
}

// ---------------------------------------------------------------------------------------------
// Saved / stash handles

struct DeviceStageSaved::Impl {
  std::vector<SavedBlock> blocks;
};
struct DeviceStageStash::Impl {
  std::vector<StashBlock> blocks;
};

DeviceStageSaved::DeviceStageSaved() : impl_(std::make_unique<Impl>()) {}
DeviceStageSaved::~DeviceStageSaved() = default;
DeviceStageSaved::DeviceStageSaved(DeviceStageSaved&&) noexcept = default;
DeviceStageSaved& DeviceStageSaved::operator=(DeviceStageSaved&&) noexcept = default;
std::int64_t DeviceStageSaved::bytes() const {
  std::int64_t n = 0;
  if (impl_) {
    for (const auto& b : impl_->blocks) n += b.bytes();
  }
  return n;
}

DeviceStageStash::DeviceStageStash() : impl_(std::make_unique<Impl>()) {}
DeviceStageStash::~DeviceStageStash() = default;
DeviceStageStash::DeviceStageStash(DeviceStageStash&&) noexcept = default;
DeviceStageStash& DeviceStageStash::operator=(DeviceStageStash&&) noexcept = default;
std::int64_t DeviceStageStash::bytes() const {
  std::int64_t n = 0;
  if (impl_) {
    for (const auto& b : impl_->blocks) n += b.bytes();
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// DeviceStage

struct DeviceStage::Impl {
  BlockShape shape;
  int device = 0;
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cublasHandle_t handle = nullptr;
  std::vector<DevParams> params;
  std::vector<DevParams> grads;

  ~Impl() {
    if (handle != nullptr) {
      cuda::NoThrowDeviceGuard guard(device);
      if (guard.ok()) PIPELAB_CUBLAS_LOG(cublasDestroy(handle));
    }
  }

  int t() const { return static_cast<int>(shape.tokens()); }
  std::size_t th() const { return static_cast<std::size_t>(shape.tokens()) * shape.hidden; }
  std::size_t tf() const { return static_cast<std::size_t>(shape.tokens()) * shape.ffn; }
  float scale() const { return 1.0f / std::sqrt(static_cast<float>(shape.head_dim())); }

  // Row-major C = alpha op(A) op(B) + beta C, no batching.
  void mm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) const {
    cuda::gemm(handle, compute, ta, tb, m, n, k, 1.f, a, lda, 0, b, ldb, 0, beta, c, ldc, 0);
  }

  void attention_forward(const float* qkv, float* probs, float* attn, cudaStream_t s) const {
    const int h = shape.hidden, d = shape.head_dim(), n = shape.seq, heads = shape.heads;
    const std::int64_t nn = std::int64_t{n} * n;
    for (int b = 0; b < shape.mbs; ++b) {
      const float* q = qkv + std::int64_t{b} * n * 3 * h;
      float* p = probs + std::int64_t{b} * heads * nn;
      // S_h = scale Q_h K_h^T for all heads: head h starts d columns after head h-1.
      cuda::gemm(handle, compute, false, true, n, n, d, scale(), q, 3 * h, d, q + h, 3 * h, d, 0.f,
                 p, n, nn, heads);
    }
    cuda::causal_softmax_forward(probs, std::int64_t{shape.mbs} * heads * n, n, s);
    for (int b = 0; b < shape.mbs; ++b) {
      const float* v = qkv + std::int64_t{b} * n * 3 * h + 2 * h;
      const float* p = probs + std::int64_t{b} * heads * nn;
      float* o = attn + std::int64_t{b} * n * h;
      cuda::gemm(handle, compute, false, false, n, d, n, 1.f, p, n, nn, v, 3 * h, d, 0.f, o, h, d,
                 heads);
    }
  }

  void attention_backward(const float* qkv, const float* probs, const float* dattn, float* dqkv,
                          cudaStream_t s) const {
    const int h = shape.hidden, d = shape.head_dim(), n = shape.seq, heads = shape.heads;
    const std::int64_t nn = std::int64_t{n} * n;
    DevArray ds = DevArray::alloc(static_cast<std::size_t>(shape.mbs) * heads * nn, s);
    for (int b = 0; b < shape.mbs; ++b) {
      const float* v = qkv + std::int64_t{b} * n * 3 * h + 2 * h;
      const float* p = probs + std::int64_t{b} * heads * nn;
      const float* dout = dattn + std::int64_t{b} * n * h;
      float* dsb = ds.get() + std::int64_t{b} * heads * nn;
      float* dv = dqkv + std::int64_t{b} * n * 3 * h + 2 * h;
      cuda::gemm(handle, compute, false, true, n, n, d, 1.f, dout, h, d, v, 3 * h, d, 0.f, dsb, n,
                 nn, heads);  // dP = dO V^T
      cuda::gemm(handle, compute, true, false, n, d, n, 1.f, p, n, nn, dout, h, d, 0.f, dv, 3 * h,
                 d, heads);  // dV = P^T dO
    }
    cuda::causal_softmax_backward(probs, ds.get(), std::int64_t{shape.mbs} * heads * n, n, s);
    for (int b = 0; b < shape.mbs; ++b) {
      const float* q = qkv + std::int64_t{b} * n * 3 * h;
      const float* dsb = ds.get() + std::int64_t{b} * heads * nn;
      float* dq = dqkv + std::int64_t{b} * n * 3 * h;
      cuda::gemm(handle, compute, false, false, n, d, n, scale(), dsb, n, nn, q + h, 3 * h, d, 0.f,
                 dq, 3 * h, d, heads);  // dQ = scale dS K
      cuda::gemm(handle, compute, true, false, n, d, n, scale(), dsb, n, nn, q, 3 * h, d, 0.f,
                 dq + h, 3 * h, d, heads);  // dK = scale dS^T Q
    }
    ds.release(s);
  }

  void forward_block(const DevParams& p, float* x_out, SavedBlock& sv, cudaStream_t s) const {
    const int t = this->t(), h = shape.hidden, f = shape.ffn;
    sv.xhat1 = DevArray::alloc(th(), s);
    sv.rstd1 = DevArray::alloc(t, s);
    sv.n1 = DevArray::alloc(th(), s);
    sv.qkv = DevArray::alloc(3 * th(), s);
    sv.probs = DevArray::alloc(static_cast<std::size_t>(shape.mbs) * shape.heads * shape.seq *
                                   shape.seq, s);
    sv.attn = DevArray::alloc(th(), s);
    sv.yhat2 = DevArray::alloc(th(), s);
    sv.rstd2 = DevArray::alloc(t, s);
    sv.n2 = DevArray::alloc(th(), s);
    sv.pre = DevArray::alloc(tf(), s);
    if (shape.swiglu) sv.up = DevArray::alloc(tf(), s);
    sv.act = DevArray::alloc(tf(), s);
    const float eps = static_cast<float>(kRmsNormEps);

    // Step 1: y = x + Attn(RMSNorm1(x)) Wo, in place in x_out.
    std::optional<cuda::NvtxRange> range(std::in_place, "attention.F");
    cuda::rmsnorm_forward(x_out, p.norm1_gain.data(), t, h, eps, sv.xhat1.get(), sv.rstd1.get(),
                          sv.n1.get(), s);
    mm(false, false, t, 3 * h, h, sv.n1.get(), h, p.w_qkv.data(), 3 * h, 0.f, sv.qkv.get(), 3 * h);
    attention_forward(sv.qkv.get(), sv.probs.get(), sv.attn.get(), s);
    mm(false, false, t, h, h, sv.attn.get(), h, p.w_out.data(), h, 1.f, x_out, h);

    // Step 2: z = y + MLP(RMSNorm2(y)).
    range.emplace("mlp.F");
    cuda::rmsnorm_forward(x_out, p.norm2_gain.data(), t, h, eps, sv.yhat2.get(), sv.rstd2.get(),
                          sv.n2.get(), s);
    if (shape.swiglu) {
      mm(false, false, t, f, h, sv.n2.get(), h, p.w_gate.data(), f, 0.f, sv.pre.get(), f);
      mm(false, false, t, f, h, sv.n2.get(), h, p.w_up.data(), f, 0.f, sv.up.get(), f);
      cuda::swiglu_forward(sv.pre.get(), sv.up.get(), sv.act.get(), tf(), s);
    } else {
      mm(false, false, t, f, h, sv.n2.get(), h, p.w_up.data(), f, 0.f, sv.pre.get(), f);
      cuda::gelu_forward(sv.pre.get(), sv.act.get(), tf(), s);
    }
    mm(false, false, t, h, f, sv.act.get(), f, p.w_down.data(), h, 1.f, x_out, h);
  }

  void backward_input_block(const DevParams& p, SavedBlock& sv, float* dz_dx, StashBlock& st,
                            cudaStream_t s) const {
    const int t = this->t(), h = shape.hidden, f = shape.ffn;
    mark_used_on(sv.arrays(), s);  // read on this pass's stream; the moves below carry it to the stash
    st.dz = DevArray::alloc(th(), s);
    PIPELAB_CUDA_CHECK(cudaMemcpyAsync(st.dz.get(), dz_dx, th() * sizeof(float),
                                       cudaMemcpyDeviceToDevice, s));

    // Step 1: MLP.
    std::optional<cuda::NvtxRange> range(std::in_place, "mlp.I");
    DevArray dact = DevArray::alloc(tf(), s);
    mm(false, true, t, f, h, st.dz.get(), h, p.w_down.data(), h, 0.f, dact.get(), f);
    st.dup = DevArray::alloc(tf(), s);
    if (shape.swiglu) {
      st.dgate = DevArray::alloc(tf(), s);
      cuda::swiglu_backward(dact.get(), sv.pre.get(), sv.up.get(), st.dup.get(), st.dgate.get(),
                            tf(), s);
    } else {
      cuda::gelu_backward(dact.get(), sv.pre.get(), st.dup.get(), tf(), s);
    }
    dact.release(s);
    st.dn2 = DevArray::alloc(th(), s);
    mm(false, true, t, h, f, st.dup.get(), f, p.w_up.data(), f, 0.f, st.dn2.get(), h);
    if (shape.swiglu) {
      mm(false, true, t, h, f, st.dgate.get(), f, p.w_gate.data(), f, 1.f, st.dn2.get(), h);
    }

    // Step 2: dy = dz + RMSNorm2'(dn2).
    st.dy = DevArray::alloc(th(), s);
    PIPELAB_CUDA_CHECK(cudaMemcpyAsync(st.dy.get(), st.dz.get(), th() * sizeof(float),
                                       cudaMemcpyDeviceToDevice, s));
    cuda::rmsnorm_backward_add(st.dn2.get(), sv.yhat2.get(), sv.rstd2.get(), p.norm2_gain.data(),
                               t, h, st.dy.get(), s);

    // Step 3: attention.
    range.emplace("attention.I");
    DevArray dattn = DevArray::alloc(th(), s);
    mm(false, true, t, h, h, st.dy.get(), h, p.w_out.data(), h, 0.f, dattn.get(), h);
    st.dqkv = DevArray::alloc(3 * th(), s);
    attention_backward(sv.qkv.get(), sv.probs.get(), dattn.get(), st.dqkv.get(), s);
    dattn.release(s);
    st.dn1 = DevArray::alloc(th(), s);
    mm(false, true, t, h, 3 * h, st.dqkv.get(), 3 * h, p.w_qkv.data(), 3 * h, 0.f, st.dn1.get(),
       h);

    // Step 4: dx = dy + RMSNorm1'(dn1).
    PIPELAB_CUDA_CHECK(cudaMemcpyAsync(dz_dx, st.dy.get(), th() * sizeof(float),
                                       cudaMemcpyDeviceToDevice, s));
    cuda::rmsnorm_backward_add(st.dn1.get(), sv.xhat1.get(), sv.rstd1.get(), p.norm1_gain.data(),
                               t, h, dz_dx, s);

    // Step 5: W's inputs move to the stash; the rest is freed stream-ordered.
    st.xhat1 = std::move(sv.xhat1);
    st.n1 = std::move(sv.n1);
    st.attn = std::move(sv.attn);
    st.yhat2 = std::move(sv.yhat2);
    st.n2 = std::move(sv.n2);
    st.act = std::move(sv.act);
    for (DevArray* a : {&sv.rstd1, &sv.qkv, &sv.probs, &sv.rstd2, &sv.pre, &sv.up}) a->release(s);
  }

  void backward_weight_block(StashBlock& st, DevParams& g, cudaStream_t s) const {
    const int t = this->t(), h = shape.hidden, f = shape.ffn;
    mark_used_on(st.arrays(), s);
    const cuda::NvtxRange range("weights.W");
    cuda::column_dot_add(st.xhat1.get(), st.dn1.get(), t, h, g.norm1_gain.data(), s);
    mm(true, false, h, 3 * h, t, st.n1.get(), h, st.dqkv.get(), 3 * h, 1.f, g.w_qkv.data(), 3 * h);
    mm(true, false, h, h, t, st.attn.get(), h, st.dy.get(), h, 1.f, g.w_out.data(), h);
    cuda::column_dot_add(st.yhat2.get(), st.dn2.get(), t, h, g.norm2_gain.data(), s);
    mm(true, false, h, f, t, st.n2.get(), h, st.dup.get(), f, 1.f, g.w_up.data(), f);
    if (shape.swiglu) {
      mm(true, false, h, f, t, st.n2.get(), h, st.dgate.get(), f, 1.f, g.w_gate.data(), f);
    }
    mm(true, false, f, h, t, st.act.get(), f, st.dz.get(), h, 1.f, g.w_down.data(), h);
    st.release(s);
  }

  cudaStream_t begin(void* stream) const {
    const auto s = static_cast<cudaStream_t>(stream);
    PIPELAB_CUBLAS_CHECK(cublasSetStream(handle, s));
    return s;
  }
};

namespace {

cublasComputeType_t compute_type(GemmMath math) {
  switch (math) {
    case GemmMath::Fp32: return CUBLAS_COMPUTE_32F;
    case GemmMath::Tf32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case GemmMath::Bf16: return CUBLAS_COMPUTE_32F_FAST_16BF;
  }
  return CUBLAS_COMPUTE_32F;
}

}  // namespace

DeviceStage::DeviceStage(const BlockShape& shape, int device, std::span<const BlockParams> params,
                         GemmMath math)
    : impl_(std::make_unique<Impl>()) {
  shape.validate();
  if (params.empty()) throw InputError("DeviceStage: params must hold at least one layer");
  const int devices = cuda_device_count();
  if (device < 0 || device >= devices) {
    throw DeviceError("DeviceStage: device=" + std::to_string(device) + " but " +
                      std::to_string(devices) + " CUDA device(s) are available");
  }
  impl_->shape = shape;
  impl_->device = device;
  impl_->compute = compute_type(math);
  DeviceGuard guard(device);
  PIPELAB_CUBLAS_CHECK(cublasCreate(&impl_->handle));
  for (std::size_t l = 0; l < params.size(); ++l) {
    if (!(params[l].shape == shape)) {
      throw InputError("DeviceStage: params[" + std::to_string(l) + "] has another shape");
    }
    DevParams dev;
    DevParams grad;
    const auto grad_buffers = grad.buffers();
    const auto uploads = dev.zip(params[l]);
    for (std::size_t k = 0; k < DevParams::kCount; ++k) {
      const auto& [buffer, host] = uploads[k];
      *buffer = DeviceBuffer(device, host->size());
      buffer->upload(*host);
      *grad_buffers[k] = DeviceBuffer(device, host->size());  // zeroed
    }
    impl_->params.push_back(std::move(dev));
    impl_->grads.push_back(std::move(grad));
  }
}

DeviceStage::~DeviceStage() = default;
DeviceStage::DeviceStage(DeviceStage&&) noexcept = default;
DeviceStage& DeviceStage::operator=(DeviceStage&&) noexcept = default;

const BlockShape& DeviceStage::shape() const { return impl_->shape; }
int DeviceStage::device() const { return impl_->device; }
int DeviceStage::num_layers() const { return static_cast<int>(impl_->params.size()); }

void DeviceStage::forward(const float* x, float* out, DeviceStageSaved& saved, void* stream) {
  Impl& m = *impl_;
  DeviceGuard guard(m.device);
  const cudaStream_t s = m.begin(stream);
  if (!saved.impl_) saved.impl_ = std::make_unique<DeviceStageSaved::Impl>();
  saved.impl_->blocks.clear();
  saved.impl_->blocks.resize(m.params.size());
  if (out != x) {
    PIPELAB_CUDA_CHECK(
        cudaMemcpyAsync(out, x, m.th() * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }
  for (std::size_t l = 0; l < m.params.size(); ++l) {
    m.forward_block(m.params[l], out, saved.impl_->blocks[l], s);
  }
}

void DeviceStage::backward_input(DeviceStageSaved&& saved, const float* dout, float* dx,
                                 DeviceStageStash& stash, void* stream) {
  Impl& m = *impl_;
  if (!saved.impl_ || saved.impl_->blocks.size() != m.params.size() ||
      saved.impl_->blocks.front().qkv.get() == nullptr) {
    throw InputError("DeviceStage::backward_input: saved state is empty or consumed (was forward "
                     "run?)");
  }
  DeviceGuard guard(m.device);
  const cudaStream_t s = m.begin(stream);
  if (!stash.impl_) stash.impl_ = std::make_unique<DeviceStageStash::Impl>();
  stash.impl_->blocks.clear();
  stash.impl_->blocks.resize(m.params.size());
  if (dx != dout) {
    PIPELAB_CUDA_CHECK(
        cudaMemcpyAsync(dx, dout, m.th() * sizeof(float), cudaMemcpyDeviceToDevice, s));
  }
  for (std::size_t i = m.params.size(); i-- > 0;) {
    m.backward_input_block(m.params[i], saved.impl_->blocks[i], dx, stash.impl_->blocks[i], s);
  }
  saved.impl_->blocks.clear();
}

void DeviceStage::backward_weight(DeviceStageStash&& stash, void* stream) {
  Impl& m = *impl_;
  if (!stash.impl_ || stash.impl_->blocks.size() != m.grads.size() ||
      stash.impl_->blocks.front().dqkv.get() == nullptr) {
    throw InputError("DeviceStage::backward_weight: stash is empty or consumed (was "
                     "backward_input run?)");
  }
  DeviceGuard guard(m.device);
  const cudaStream_t s = m.begin(stream);
  for (std::size_t i = m.grads.size(); i-- > 0;) {
    m.backward_weight_block(stash.impl_->blocks[i], m.grads[i], s);
  }
  stash.impl_->blocks.clear();
}

void DeviceStage::backward(DeviceStageSaved&& saved, const float* dout, float* dx, void* stream) {
  DeviceStageStash stash;
  backward_input(std::move(saved), dout, dx, stash, stream);
  backward_weight(std::move(stash), stream);
}

void DeviceStage::zero_grads(void* stream) {
  Impl& m = *impl_;
  DeviceGuard guard(m.device);
  const auto s = static_cast<cudaStream_t>(stream);
  for (DevParams& g : m.grads) {
    for (DeviceBuffer* b : g.buffers()) {
      if (b->size() > 0) {
        PIPELAB_CUDA_CHECK(cudaMemsetAsync(b->data(), 0, b->size() * sizeof(float), s));
      }
    }
  }
}

std::vector<BlockGrads> DeviceStage::download_grads(void* stream) const {
  const Impl& m = *impl_;
  DeviceGuard guard(m.device);
  const auto s = static_cast<cudaStream_t>(stream);
  std::vector<BlockGrads> out;
  for (const DevParams& g : m.grads) {
    BlockGrads host = zero_params<float>(m.shape);
    const auto devs = g.buffers();
    const auto vecs = DevParams::host_tensors(host);
    for (std::size_t k = 0; k < DevParams::kCount; ++k) {
      const DeviceBuffer* dev = devs[k];
      std::vector<float>* vec = vecs[k];
      if (dev->size() == 0) continue;
      PIPELAB_CUDA_CHECK(cudaMemcpyAsync(vec->data(), dev->data(), dev->size() * sizeof(float),
                                         cudaMemcpyDeviceToHost, s));
    }
    out.push_back(std::move(host));
  }
  PIPELAB_CUDA_CHECK(cudaStreamSynchronize(s));
  return out;
}

}  // namespace pipelab::kernels
