// CPU math of the mock transformer block: RMSNorm, QKV projection, causal multi-head softmax
// attention, output projection, GELU or SwiGLU MLP, residuals. F, I and W are separate passes.
// Equations and the F/I/W split are documented in docs/kernels.md.
#include "pipelab/kernels/block.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "cpu_ops.h"
#include "pipelab/base/error.h"

namespace pipelab::kernels {

using detail::gemm;

namespace {

template <class Real>
using Vec = std::vector<Real>;

template <class Real>
std::int64_t bytes_of(std::initializer_list<const Vec<Real>*> tensors) {
  std::int64_t n = 0;
  for (const Vec<Real>* t : tensors) n += static_cast<std::int64_t>(t->size());
  return n * static_cast<std::int64_t>(sizeof(Real));
}

// ---------------------------------------------------------------------------------------------
// Checks

template <class Real>
void check_params(const BasicBlockParams<Real>& p, const char* what) {
  const BlockShape& s = p.shape;
  s.validate();
  const std::int64_t h = s.hidden;
  const std::int64_t f = s.ffn;
  auto expect = [&](const Vec<Real>& v, std::int64_t n, const char* name) {
    if (static_cast<std::int64_t>(v.size()) != n) {
      throw InputError(std::string(what) + "." + name + " has " + std::to_string(v.size()) +
                       " elements, expected " + std::to_string(n) +
                       " (was it made by init_params/zero_params for this shape?)");
    }
  };
  expect(p.norm1_gain, h, "norm1_gain");
  expect(p.w_qkv, h * 3 * h, "w_qkv");
  expect(p.w_out, h * h, "w_out");
  expect(p.norm2_gain, h, "norm2_gain");
  expect(p.w_up, h * f, "w_up");
  expect(p.w_gate, s.swiglu ? h * f : 0, "w_gate");
  expect(p.w_down, f * h, "w_down");
}

template <class Real>
bool partially_overlap(std::span<const Real> a, std::span<const Real> b) {
  const Real* a0 = a.data();
  const Real* b0 = b.data();
  if (a0 == b0 && a.size() == b.size()) return false;
  return a0 < b0 + b.size() && b0 < a0 + a.size();
}

// ---------------------------------------------------------------------------------------------
// RMSNorm: xhat = x * rstd, rstd = 1/sqrt(mean(x^2) + eps), out = xhat * gain.

template <class Real>
void rmsnorm_forward(const Real* x, const Real* gain, std::int64_t rows, int cols, Real* xhat,
                     Real* rstd, Real* out) {
  for (std::int64_t t = 0; t < rows; ++t) {
    const Real* xr = x + t * cols;
    double sum_sq = 0;
    for (int c = 0; c < cols; ++c) sum_sq += static_cast<double>(xr[c]) * xr[c];
    const Real r = static_cast<Real>(1.0 / std::sqrt(sum_sq / cols + kRmsNormEps));
    rstd[t] = r;
    for (int c = 0; c < cols; ++c) {
      const Real xh = xr[c] * r;
      xhat[t * cols + c] = xh;
      out[t * cols + c] = xh * gain[c];
    }
  }
}

// dx += d RMSNorm / dx applied to dn (the gradient of the norm output):
// dxhat = dn * gain;  dx = rstd * (dxhat - xhat * mean(dxhat * xhat)).
template <class Real>
void rmsnorm_backward_add(const Real* dn, const Real* xhat, const Real* rstd, const Real* gain,
                          std::int64_t rows, int cols, Real* dx) {
  for (std::int64_t t = 0; t < rows; ++t) {
    const Real* dnr = dn + t * cols;
    const Real* xhr = xhat + t * cols;
    double dot = 0;
    for (int c = 0; c < cols; ++c) dot += static_cast<double>(dnr[c]) * gain[c] * xhr[c];
    const Real mean = static_cast<Real>(dot / cols);
    const Real r = rstd[t];
    for (int c = 0; c < cols; ++c) dx[t * cols + c] += r * (dnr[c] * gain[c] - xhr[c] * mean);
  }
}

// ---------------------------------------------------------------------------------------------
// Activations

template <class Real>
struct Gelu {  // tanh approximation
  static constexpr Real kC = static_cast<Real>(0.7978845608028654);  // sqrt(2/pi)
  static constexpr Real kA = static_cast<Real>(0.044715);
  static Real value(Real x) {
    const Real u = kC * (x + kA * x * x * x);
    return Real(0.5) * x * (Real(1) + std::tanh(u));
  }
  static Real grad(Real x) {
    const Real u = kC * (x + kA * x * x * x);
    const Real th = std::tanh(u);
    return Real(0.5) * (Real(1) + th) +
           Real(0.5) * x * (Real(1) - th * th) * kC * (Real(1) + Real(3) * kA * x * x);
  }
};

template <class Real>
struct Silu {
  static Real sigmoid(Real x) { return Real(1) / (Real(1) + std::exp(-x)); }
  static Real value(Real x) { return x * sigmoid(x); }
  static Real grad(Real x) {
    const Real s = sigmoid(x);
    return s * (Real(1) + x * (Real(1) - s));
  }
};

// ---------------------------------------------------------------------------------------------
// Causal multi-head attention over qkv (T, 3H): per (sequence b, head h),
// S = scale * Q K^T (seq, seq), P = causal_softmax(S), O = P V (seq, head_dim).

template <class Real>
void attention_forward(const BlockShape& s, const Real* qkv, Real* probs, Real* attn) {
  const int h = s.hidden;
  const int d = s.head_dim();
  const int n = s.seq;
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(d)));
  for (int b = 0; b < s.mbs; ++b) {
    for (int head = 0; head < s.heads; ++head) {
      const Real* q = qkv + std::int64_t{b} * n * 3 * h + std::int64_t{head} * d;  // (seq, d) ld 3H
      const Real* k = q + h;
      const Real* v = q + 2 * h;
      Real* p = probs + (std::int64_t{b} * s.heads + head) * n * n;  // (seq, seq)
      gemm(false, true, n, n, d, scale, q, 3 * h, k, 3 * h, Real(0), p, n);
      for (int t = 0; t < n; ++t) {
        Real* row = p + std::int64_t{t} * n;
        Real max = row[0];
        for (int j = 1; j <= t; ++j) max = std::max(max, row[j]);
        Real sum = 0;
        for (int j = 0; j <= t; ++j) {
          row[j] = std::exp(row[j] - max);
          sum += row[j];
        }
        const Real inv = Real(1) / sum;
        for (int j = 0; j <= t; ++j) row[j] *= inv;
        for (int j = t + 1; j < n; ++j) row[j] = Real(0);  // causal mask
      }
      Real* o = attn + std::int64_t{b} * n * h + std::int64_t{head} * d;  // (seq, d) ld H
      gemm(false, false, n, d, n, Real(1), p, n, v, 3 * h, Real(0), o, h);
    }
  }
}

// dqkv (T, 3H) from dattn (T, H): dP = dO V^T, dV = P^T dO, dS = P * (dP - rowsum(P * dP)),
// dQ = scale dS K, dK = scale dS^T Q. Masked entries have P = 0, hence dS = 0.
template <class Real>
void attention_backward(const BlockShape& s, const Real* qkv, const Real* probs, const Real* dattn,
                        Real* dqkv) {
  const int h = s.hidden;
  const int d = s.head_dim();
  const int n = s.seq;
  const Real scale = static_cast<Real>(1.0 / std::sqrt(static_cast<double>(d)));
  Vec<Real> ds(static_cast<std::size_t>(n) * n);  // (seq, seq) dP, then dS in place
  for (int b = 0; b < s.mbs; ++b) {
    for (int head = 0; head < s.heads; ++head) {
      const std::int64_t qkv_off = std::int64_t{b} * n * 3 * h + std::int64_t{head} * d;
      const Real* q = qkv + qkv_off;
      const Real* k = q + h;
      const Real* v = q + 2 * h;
      Real* dq = dqkv + qkv_off;
      Real* dk = dq + h;
      Real* dv = dq + 2 * h;
      const Real* p = probs + (std::int64_t{b} * s.heads + head) * n * n;
      const Real* dout = dattn + std::int64_t{b} * n * h + std::int64_t{head} * d;  // ld H
      gemm(false, true, n, n, d, Real(1), dout, h, v, 3 * h, Real(0), ds.data(), n);
      gemm(true, false, n, d, n, Real(1), p, n, dout, h, Real(0), dv, 3 * h);
      for (int t = 0; t < n; ++t) {
        const Real* pr = p + std::int64_t{t} * n;
        Real* dr = ds.data() + std::int64_t{t} * n;
        Real dot = 0;
        for (int j = 0; j <= t; ++j) dot += pr[j] * dr[j];
        for (int j = 0; j <= t; ++j) dr[j] = pr[j] * (dr[j] - dot);
        for (int j = t + 1; j < n; ++j) dr[j] = Real(0);
      }
      gemm(false, false, n, d, n, scale, ds.data(), n, k, 3 * h, Real(0), dq, 3 * h);
      gemm(true, false, n, d, n, scale, ds.data(), n, q, 3 * h, Real(0), dk, 3 * h);
    }
  }
}

// grad[c] += sum_t a[t, c] * b[t, c]
template <class Real>
void accumulate_gain_grad(const Vec<Real>& a, const Vec<Real>& b, std::int64_t rows, int cols,
                          Vec<Real>& grad) {
  for (int c = 0; c < cols; ++c) {
    double acc = 0;
    for (std::int64_t t = 0; t < rows; ++t) {
      acc += static_cast<double>(a[t * cols + c]) * b[t * cols + c];
    }
    grad[c] += static_cast<Real>(acc);
  }
}

// Sizes every pass derives from the shape: tokens, hidden, ffn and the element counts of a
// (tokens, hidden) and a (tokens, ffn) tensor.
struct Dims {
  std::int64_t t;
  int tokens, h, f;
  std::size_t th, tf;
};

Dims dims_of(const BlockShape& s) {
  const std::int64_t t = s.tokens();
  return {t, static_cast<int>(t), s.hidden, s.ffn, static_cast<std::size_t>(t) * s.hidden, static_cast<std::size_t>(t) * s.ffn};
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Params, saved state, stash

template <class Real>
std::vector<NamedTensor<Real>> BasicBlockParams<Real>::tensors() {
  std::vector<NamedTensor<Real>> out;
  auto add = [&](std::string_view name, Vec<Real>& v) {
    if (!v.empty()) out.push_back({name, std::span<Real>(v)});
  };
  add("norm1_gain", norm1_gain);
  add("w_qkv", w_qkv);
  add("w_out", w_out);
  add("norm2_gain", norm2_gain);
  add("w_up", w_up);
  add("w_gate", w_gate);
  add("w_down", w_down);
  return out;
}

template <class Real>
std::vector<NamedTensor<const Real>> BasicBlockParams<Real>::tensors() const {
  std::vector<NamedTensor<const Real>> out;
  for (const NamedTensor<Real>& t : const_cast<BasicBlockParams*>(this)->tensors()) {
    out.push_back({t.name, std::span<const Real>(t.data)});
  }
  return out;
}

template <class Real>
std::int64_t BasicBlockParams<Real>::size() const {
  std::int64_t n = 0;
  for (const auto& t : tensors()) n += static_cast<std::int64_t>(t.data.size());
  return n;
}

template <class Real>
std::int64_t BasicBlockSaved<Real>::bytes() const {
  return bytes_of<Real>({&xhat1, &rstd1, &n1, &qkv, &probs, &attn, &yhat2, &rstd2, &n2, &mlp_pre,
                         &mlp_up, &mlp_act});
}

template <class Real>
std::int64_t BasicWeightGradStash<Real>::bytes() const {
  return bytes_of<Real>(
      {&xhat1, &dn1, &n1, &dqkv, &attn, &dy, &yhat2, &dn2, &n2, &dup, &dgate, &mlp_act, &dz});
}

template <class Real>
BasicBlockParams<Real> zero_params(const BlockShape& shape) {
  shape.validate();
  const std::size_t h = shape.hidden;
  const std::size_t f = shape.ffn;
  BasicBlockParams<Real> p;
  p.shape = shape;
  p.norm1_gain.assign(h, Real(0));
  p.w_qkv.assign(h * 3 * h, Real(0));
  p.w_out.assign(h * h, Real(0));
  p.norm2_gain.assign(h, Real(0));
  p.w_up.assign(h * f, Real(0));
  if (shape.swiglu) p.w_gate.assign(h * f, Real(0));
  p.w_down.assign(f * h, Real(0));
  return p;
}

template <class Real>
BasicBlockParams<Real> init_params(const BlockShape& shape, std::uint64_t seed) {
  BasicBlockParams<Real> p = zero_params<Real>(shape);
  // Uniform on [-b, b] has variance b^2/3; b = sqrt(3/fan_in) gives variance 1/fan_in.
  const double in_hidden = std::sqrt(3.0 / shape.hidden);
  const double in_ffn = std::sqrt(3.0 / shape.ffn);
  std::fill(p.norm1_gain.begin(), p.norm1_gain.end(), Real(1));
  std::fill(p.norm2_gain.begin(), p.norm2_gain.end(), Real(1));
  detail::fill_uniform(p.w_qkv, seed, 1, in_hidden);
  detail::fill_uniform(p.w_out, seed, 2, in_hidden);
  detail::fill_uniform(p.w_up, seed, 3, in_hidden);
  if (shape.swiglu) detail::fill_uniform(p.w_gate, seed, 4, in_hidden);
  detail::fill_uniform(p.w_down, seed, 5, in_ffn);
  return p;
}

std::uint64_t layer_seed(std::uint64_t seed, int layer) {
  return detail::mix_seed(seed, 0x10000 + static_cast<std::uint64_t>(layer));
}

// ---------------------------------------------------------------------------------------------
// F

template <class Real>
void forward(const BasicBlockParams<Real>& params, ConstSpan<Real> x, MutSpan<Real> out,
             BasicBlockSaved<Real>& saved) {
  check_params(params, "params");
  const BlockShape& s = params.shape;
  detail::check_size("forward: x", x.size(), s.activation_elems(), "mbs*seq*hidden");
  detail::check_size("forward: out", out.size(), s.activation_elems(), "mbs*seq*hidden");
  if (partially_overlap<Real>(x, out)) {
    throw InputError("forward: x and out overlap partially (they may be the same buffer)");
  }
  const auto [t, tokens, h, f, th, tf] = dims_of(s);

  saved = BasicBlockSaved<Real>{};
  saved.shape = s;
  saved.xhat1.resize(th);
  saved.rstd1.resize(t);
  saved.n1.resize(th);
  saved.qkv.resize(3 * th);
  saved.probs.resize(static_cast<std::size_t>(s.mbs) * s.heads * s.seq * s.seq);
  saved.attn.resize(th);
  saved.yhat2.resize(th);
  saved.rstd2.resize(t);
  saved.n2.resize(th);
  saved.mlp_pre.resize(tf);
  if (s.swiglu) saved.mlp_up.resize(tf);
  saved.mlp_act.resize(tf);

  // Step 1: attention half, y = x + Attn(RMSNorm1(x)) Wo (y accumulates in out).
  rmsnorm_forward(x.data(), params.norm1_gain.data(), t, h, saved.xhat1.data(),
                  saved.rstd1.data(), saved.n1.data());
  gemm(false, false, tokens, 3 * h, h, Real(1), saved.n1.data(), h, params.w_qkv.data(), 3 * h,
       Real(0), saved.qkv.data(), 3 * h);
  attention_forward(s, saved.qkv.data(), saved.probs.data(), saved.attn.data());
  if (out.data() != x.data()) std::copy(x.begin(), x.end(), out.begin());
  gemm(false, false, tokens, h, h, Real(1), saved.attn.data(), h, params.w_out.data(), h, Real(1),
       out.data(), h);

  // Step 2: MLP half, z = y + MLP(RMSNorm2(y)).
  rmsnorm_forward(out.data(), params.norm2_gain.data(), t, h, saved.yhat2.data(),
                  saved.rstd2.data(), saved.n2.data());
  if (s.swiglu) {
    gemm(false, false, tokens, f, h, Real(1), saved.n2.data(), h, params.w_gate.data(), f, Real(0),
         saved.mlp_pre.data(), f);
    gemm(false, false, tokens, f, h, Real(1), saved.n2.data(), h, params.w_up.data(), f, Real(0),
         saved.mlp_up.data(), f);
    for (std::size_t i = 0; i < tf; ++i) {
      saved.mlp_act[i] = Silu<Real>::value(saved.mlp_pre[i]) * saved.mlp_up[i];
    }
  } else {
    gemm(false, false, tokens, f, h, Real(1), saved.n2.data(), h, params.w_up.data(), f, Real(0),
         saved.mlp_pre.data(), f);
    for (std::size_t i = 0; i < tf; ++i) saved.mlp_act[i] = Gelu<Real>::value(saved.mlp_pre[i]);
  }
  gemm(false, false, tokens, h, f, Real(1), saved.mlp_act.data(), f, params.w_down.data(), h,
       Real(1), out.data(), h);
}

// ---------------------------------------------------------------------------------------------
// I

template <class Real>
void backward_input(const BasicBlockParams<Real>& params, BasicBlockSaved<Real>&& saved,
                    ConstSpan<Real> dout, MutSpan<Real> dx, BasicWeightGradStash<Real>& stash) {
  check_params(params, "params");
  const BlockShape& s = params.shape;
  if (!(saved.shape == s) || saved.qkv.empty()) {
    throw InputError("backward_input: saved state is empty or from another shape (was forward run, "
                     "and was it consumed already?)");
  }
  detail::check_size("backward_input: dout", dout.size(), s.activation_elems(), "mbs*seq*hidden");
  detail::check_size("backward_input: dx", dx.size(), s.activation_elems(), "mbs*seq*hidden");
  if (partially_overlap<Real>(dout, dx)) {
    throw InputError("backward_input: dout and dx overlap partially (they may be the same buffer)");
  }
  const auto [t, tokens, h, f, th, tf] = dims_of(s);

  stash = BasicWeightGradStash<Real>{};
  stash.shape = s;
  stash.dz.assign(dout.begin(), dout.end());  // dout is not read again: dx may alias it

  // Step 1: MLP. dact = dz Wdown^T, through the activation, dn2 = dup Wup^T (+ dgate Wgate^T).
  Vec<Real> dact(tf);  // (T, ffn)
  gemm(false, true, tokens, f, h, Real(1), stash.dz.data(), h, params.w_down.data(), h, Real(0),
       dact.data(), f);
  stash.dup.resize(tf);
  if (s.swiglu) {
    stash.dgate.resize(tf);
    for (std::size_t i = 0; i < tf; ++i) {
      const Real pre = saved.mlp_pre[i];
      stash.dup[i] = dact[i] * Silu<Real>::value(pre);
      stash.dgate[i] = dact[i] * saved.mlp_up[i] * Silu<Real>::grad(pre);
    }
  } else {
    for (std::size_t i = 0; i < tf; ++i) stash.dup[i] = dact[i] * Gelu<Real>::grad(saved.mlp_pre[i]);
  }
  dact = Vec<Real>{};
  stash.dn2.resize(th);
  gemm(false, true, tokens, h, f, Real(1), stash.dup.data(), f, params.w_up.data(), f, Real(0),
       stash.dn2.data(), h);
  if (s.swiglu) {
    gemm(false, true, tokens, h, f, Real(1), stash.dgate.data(), f, params.w_gate.data(), f,
         Real(1), stash.dn2.data(), h);
  }

  // Step 2: dy = dz + RMSNorm2'(dn2).
  stash.dy = stash.dz;
  rmsnorm_backward_add(stash.dn2.data(), saved.yhat2.data(), saved.rstd2.data(),
                       params.norm2_gain.data(), t, h, stash.dy.data());

  // Step 3: attention. dattn = dy Wo^T, dqkv through softmax attention, dn1 = dqkv Wqkv^T.
  Vec<Real> dattn(th);  // (T, hidden)
  gemm(false, true, tokens, h, h, Real(1), stash.dy.data(), h, params.w_out.data(), h, Real(0),
       dattn.data(), h);
  stash.dqkv.resize(3 * th);
  attention_backward(s, saved.qkv.data(), saved.probs.data(), dattn.data(), stash.dqkv.data());
  dattn = Vec<Real>{};
  stash.dn1.resize(th);
  gemm(false, true, tokens, h, 3 * h, Real(1), stash.dqkv.data(), 3 * h, params.w_qkv.data(),
       3 * h, Real(0), stash.dn1.data(), h);

  // Step 4: dx = dy + RMSNorm1'(dn1).
  std::copy(stash.dy.begin(), stash.dy.end(), dx.begin());
  rmsnorm_backward_add(stash.dn1.data(), saved.xhat1.data(), saved.rstd1.data(),
                       params.norm1_gain.data(), t, h, dx.data());

  // Step 5: hand W its GEMM inputs; free the rest of the forward state.
  stash.xhat1 = std::move(saved.xhat1);
  stash.n1 = std::move(saved.n1);
  stash.attn = std::move(saved.attn);
  stash.yhat2 = std::move(saved.yhat2);
  stash.n2 = std::move(saved.n2);
  stash.mlp_act = std::move(saved.mlp_act);
  saved = BasicBlockSaved<Real>{};
}

// ---------------------------------------------------------------------------------------------
// W

template <class Real>
void backward_weight(BasicWeightGradStash<Real>&& stash, BasicBlockParams<Real>& grads) {
  check_params(grads, "grads");
  const BlockShape& s = grads.shape;
  if (!(stash.shape == s) || stash.dqkv.empty()) {
    throw InputError("backward_weight: stash is empty or from another shape (was backward_input "
                     "run, and was the stash consumed already?)");
  }
  const auto [t, tokens, h, f, th, tf] = dims_of(s);

  accumulate_gain_grad(stash.xhat1, stash.dn1, t, h, grads.norm1_gain);
  gemm(true, false, h, 3 * h, tokens, Real(1), stash.n1.data(), h, stash.dqkv.data(), 3 * h,
       Real(1), grads.w_qkv.data(), 3 * h);
  gemm(true, false, h, h, tokens, Real(1), stash.attn.data(), h, stash.dy.data(), h, Real(1),
       grads.w_out.data(), h);
  accumulate_gain_grad(stash.yhat2, stash.dn2, t, h, grads.norm2_gain);
  gemm(true, false, h, f, tokens, Real(1), stash.n2.data(), h, stash.dup.data(), f, Real(1),
       grads.w_up.data(), f);
  if (s.swiglu) {
    gemm(true, false, h, f, tokens, Real(1), stash.n2.data(), h, stash.dgate.data(), f, Real(1),
         grads.w_gate.data(), f);
  }
  gemm(true, false, f, h, tokens, Real(1), stash.mlp_act.data(), f, stash.dz.data(), h, Real(1),
       grads.w_down.data(), h);
  stash = BasicWeightGradStash<Real>{};
}

template <class Real>
void backward(const BasicBlockParams<Real>& params, BasicBlockSaved<Real>&& saved,
              ConstSpan<Real> dout, MutSpan<Real> dx, BasicBlockParams<Real>& grads) {
  BasicWeightGradStash<Real> stash;
  backward_input(params, std::move(saved), dout, dx, stash);
  backward_weight(std::move(stash), grads);
}

// ---------------------------------------------------------------------------------------------
// Instantiations

#define PIPELAB_INSTANTIATE_BLOCK(Real)                                                          \
  template struct BasicBlockParams<Real>;                                                        \
  template struct BasicBlockSaved<Real>;                                                         \
  template struct BasicWeightGradStash<Real>;                                                    \
  template BasicBlockParams<Real> init_params<Real>(const BlockShape&, std::uint64_t);           \
  template BasicBlockParams<Real> zero_params<Real>(const BlockShape&);                           \
  template void forward<Real>(const BasicBlockParams<Real>&, ConstSpan<Real>, MutSpan<Real>,     \
                              BasicBlockSaved<Real>&);                                           \
  template void backward_input<Real>(const BasicBlockParams<Real>&, BasicBlockSaved<Real>&&,     \
                                     ConstSpan<Real>, MutSpan<Real>,                             \
                                     BasicWeightGradStash<Real>&);                               \
  template void backward_weight<Real>(BasicWeightGradStash<Real>&&, BasicBlockParams<Real>&);    \
  template void backward<Real>(const BasicBlockParams<Real>&, BasicBlockSaved<Real>&&,           \
                               ConstSpan<Real>, MutSpan<Real>, BasicBlockParams<Real>&);

PIPELAB_INSTANTIATE_BLOCK(float)
PIPELAB_INSTANTIATE_BLOCK(double)

#undef PIPELAB_INSTANTIATE_BLOCK

}  // namespace pipelab::kernels
