// Profiling: op times of the mock model (median after warm-up) and point-to-point ping-pong.
#include "pipelab/runtime/profiler.h"

#include <algorithm>
#include <string>
#include <utility>
#include <thread>

#include "pipelab/base/error.h"
#include "pipelab/kernels/blas.h"
#include "pipelab/kernels/data.h"
#include "pipelab/kernels/stage.h"
#include "pipelab/runtime/errors.h"
#include "pipelab/runtime/inproc_transport.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/rank_threads.h"
#include "pipelab/runtime/run_support.h"

namespace pipelab::runtime {
namespace {

std::int64_t elapsed_ns(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

std::int64_t median(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Samples {
  std::vector<std::int64_t> f, i, w, b, fb, loss;
};

// One stage of `layers` blocks, driven like the executor drives it: in place on one activation
// buffer, the loss gradient as the backward's input.
Samples measure_stage(const ModelConfig& m, int layers, int repeats, int warmup, std::chrono::milliseconds min_warmup) {
  kernels::StageModel stage(m.block, 0, layers, m.seed);
  const std::vector<float> x0 = kernels::synthetic_input<float>(m.block, 0, m.seed);
  const std::vector<float> x1 = kernels::synthetic_input<float>(m.block, 1, m.seed);
  const std::vector<float> target = kernels::synthetic_target<float>(m.block, 0, m.seed);
  const double scale = 0.125;  // a typical 1/microbatches: keeps gradients in the range of a run
  std::vector<float> a(x0.size()), g(x0.size()), a1(x0.size());

  auto loss_grad = [&](std::vector<float>& out) { kernels::mse_loss_in_place(out, target, scale); };

  Samples s;
  auto round = [&](bool keep) {
    // F, loss, I, W of one microbatch.
    std::copy(x0.begin(), x0.end(), a.begin());
    kernels::StageSaved saved;
    kernels::StageStash stash;
    auto t0 = Clock::now();
    stage.forward(a, a, saved);
    auto t1 = Clock::now();
    loss_grad(a);
    auto t2 = Clock::now();
    stage.backward_input(std::move(saved), a, a, stash);
    auto t3 = Clock::now();
    stage.backward_weight(std::move(stash));
    auto t4 = Clock::now();
    if (keep) {
      s.f.push_back(elapsed_ns(t0, t1));
      s.loss.push_back(elapsed_ns(t1, t2));
      s.i.push_back(elapsed_ns(t2, t3));
      s.w.push_back(elapsed_ns(t3, t4));
    }
    // B as one pass.
    std::copy(x0.begin(), x0.end(), a.begin());
    kernels::StageSaved saved_b;
    stage.forward(a, a, saved_b);
    loss_grad(a);
    t0 = Clock::now();
    stage.backward(std::move(saved_b), a, a);
    t1 = Clock::now();
    if (keep) s.b.push_back(elapsed_ns(t0, t1));
    // F&B: F of microbatch 1 then B of microbatch 0, as one unit.
    std::copy(x0.begin(), x0.end(), g.begin());
    kernels::StageSaved saved0, saved1;
    stage.forward(g, g, saved0);
    loss_grad(g);
    std::copy(x1.begin(), x1.end(), a1.begin());
    t0 = Clock::now();
    stage.forward(a1, a1, saved1);
    stage.backward(std::move(saved0), g, g);
    t1 = Clock::now();
    if (keep) s.fb.push_back(elapsed_ns(t0, t1));
    loss_grad(a1);
    stage.backward(std::move(saved1), a1, a1);
  };
  // Warm up by count and by time: caches, the allocator and the core's clock settle first.
  const auto warm_until = Clock::now() + min_warmup;
  for (int n = 0; n < warmup || (n < warmup + 1000 && Clock::now() < warm_until); ++n) round(false);
  for (int rep = 0; rep < repeats; ++rep) round(true);
  return s;
}

OpTimes medians(const Samples& s) {
  return OpTimes{median(s.f), median(s.i), median(s.w), median(s.b), median(s.fb)};
}

}  // namespace

MeasuredProfile profile_header(const ProfileOptions& o, std::string backend, int concurrency) {
  MeasuredProfile p;
  p.backend = std::move(backend);
  p.threads_per_rank = 1;
  p.concurrency = concurrency;
  p.hidden = o.model.block.hidden;
  p.ffn = o.model.block.ffn;
  p.heads = o.model.block.heads;
  p.seq = o.model.block.seq;
  p.mbs = o.model.block.mbs;
  p.swiglu = o.model.block.swiglu;
  p.layers_per_stage = o.model.layers_per_stage;
  p.repeats = o.repeats;
  p.warmup = o.warmup;
  return p;
}

MeasuredProfile measure_compute(const ProfileOptions& o) {
  o.model.validate();
  if (o.repeats < 1) throw InputError("profile: repeats=" + std::to_string(o.repeats) + " must be >= 1");
  if (o.warmup < 0) throw InputError("profile: warmup=" + std::to_string(o.warmup) + " must be >= 0");
  if (o.concurrency < 1) throw InputError("profile: concurrency=" + std::to_string(o.concurrency) + " must be >= 1");
  kernels::set_blas_threads(1);
  const int threads = std::min(o.concurrency, hardware_cores());
  require_host_memory(cpu_profile_memory_bytes(o.model, threads), "profile");

  MeasuredProfile p = profile_header(o, "cpu", threads);
  p.device = cpu_model_name();

  // Every measuring thread runs the same sequence at the same time (as the ranks of a run keep
  // every core busy); the samples of all threads are pooled before taking medians.
  const int L = o.model.layers_per_stage;
  std::vector<Samples> layer(static_cast<std::size_t>(threads)), stage(static_cast<std::size_t>(threads));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(threads));
  auto work = [&](int t) {
    try {
      if (threads > 1 || o.core >= 0) pin_current_thread(threads > 1 ? t : o.core);
      layer[static_cast<std::size_t>(t)] = measure_stage(o.model, 1, o.repeats, o.warmup, o.min_warmup);
      if (t == 0 && o.on_progress) o.on_progress("per-layer ops");
      if (L > 1) {
        stage[static_cast<std::size_t>(t)] = measure_stage(o.model, L, o.repeats, o.warmup, o.min_warmup);
        if (t == 0 && o.on_progress) o.on_progress("per-stage ops");
      }
    } catch (...) {
      errors[static_cast<std::size_t>(t)] = std::current_exception();
    }
  };
  if (threads == 1) {
    work(0);
  } else {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(work, t);
    for (auto& th : pool) th.join();
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  auto pooled = [](const std::vector<Samples>& all) {
    Samples out;
    for (const Samples& s : all) {
      for (auto [dst, src] : {std::pair{&out.f, &s.f}, {&out.i, &s.i}, {&out.w, &s.w}, {&out.b, &s.b}, {&out.fb, &s.fb},
                              {&out.loss, &s.loss}}) {
        dst->insert(dst->end(), src->begin(), src->end());
      }
    }
    return out;
  };
  const Samples l = pooled(layer);
  p.per_layer = medians(l);
  p.loss_ns = median(l.loss);
  if (L == 1) {
    p.per_stage = p.per_layer;
  } else {
    const Samples st = pooled(stage);
    p.per_stage = medians(st);
    p.loss_ns = median(st.loss);
  }
  const kernels::OpFlops f = kernels::block_flops(o.model.block);
  p.flops_f = static_cast<double>(f.forward);
  p.flops_i = static_cast<double>(f.backward_input);
  p.flops_w = static_cast<double>(f.backward_weight);
  p.activation_bytes = o.model.activation_bytes();
  return p;
}

void fit_p2p_line(P2PProfile& p) {
  // Least-squares line time = latency + bytes / bandwidth through the samples.
  const double k = static_cast<double>(p.samples.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const P2PSample& s : p.samples) {
    const double x = static_cast<double>(s.bytes), y = static_cast<double>(s.ns);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  const double den = k * sxx - sx * sx;
  const double slope = den > 0 ? (k * sxy - sx * sy) / den : 0.0;  // ns per byte
  // A slope flatter than the fastest bandwidth a profile may state is noise on a size-independent
  // hand-over (an in-process copy on a busy machine), not a link: latency only.
  if (slope >= 1e9 / kMaxP2PBandwidth) {
    p.bandwidth_bytes_per_s = std::max(kMinP2PBandwidth, 1e9 / slope);
    p.latency_ns = std::max<std::int64_t>(0, static_cast<std::int64_t>((sy - slope * sx) / k + 0.5));
  } else {
    // Time does not grow with size (a hand-over): latency only.
    p.bandwidth_bytes_per_s = 0;
    std::vector<std::int64_t> ns;
    for (const P2PSample& s : p.samples) ns.push_back(s.ns);
    p.latency_ns = median(ns);
  }
}

std::vector<std::int64_t> p2p_sizes(std::int64_t activation_bytes) {
  std::vector<std::int64_t> sizes = {8};
  if (activation_bytes > 8) sizes.push_back(activation_bytes);
  if (activation_bytes > 2) sizes.push_back(4 * activation_bytes);
  return sizes;
}

P2PProfile measure_p2p(Transport& t, BufferPool& pool, std::span<const std::int64_t> sizes, int repeats,
                       std::chrono::nanoseconds timeout) {
  if (t.size() < 2) throw InputError("measure_p2p: needs at least 2 ranks");
  if (repeats < 1) throw InputError("measure_p2p: repeats must be >= 1");
  P2PProfile out;
  out.transport = std::string(t.name());
  const int rank = t.rank();
  // Keys of a 2-stage pipeline: forward 0 -> 1 (stage 1, mb 0), backward 1 -> 0 (stage 0, mb 0).
  const MessageKey ping{Direction::Forward, 1, 0};
  const MessageKey pong{Direction::Backward, 0, 0};
  const int warmup = std::max(2, repeats / 4);
  for (const std::int64_t bytes : sizes) {
    if (bytes < 1) throw InputError("measure_p2p: message sizes must be >= 1 byte");
    const auto n = static_cast<std::size_t>(bytes);
    std::vector<std::int64_t> round_trips;
    const Clock::time_point epoch = t.barrier(timeout);
    auto now = [&] { return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - epoch).count(); };
    for (int rep = 0; rep < warmup + repeats && rank < 2; ++rep) {
      if (rank == 0) {
        Buffer b = pool.acquire(n);
        t.irecv(1, pong, n, pool);
        const auto t0 = Clock::now();
        t.isend(1, ping, std::move(b), now());
        std::optional<Received> r = t.wait_recv(pong, timeout);
        const auto t1 = Clock::now();
        if (!r) throw WatchdogTimeout("measure_p2p: rank 0 got no reply from rank 1");
        t.flush_sends(timeout);
        if (rep >= warmup) round_trips.push_back(elapsed_ns(t0, t1));
      } else {
        t.irecv(0, ping, n, pool);
        std::optional<Received> r = t.wait_recv(ping, timeout);
        if (!r) throw WatchdogTimeout("measure_p2p: rank 1 got no message from rank 0");
        t.isend(0, pong, std::move(r->buffer), now());
        t.flush_sends(timeout);
      }
    }
    out.samples.push_back({bytes, median(round_trips) / 2});
  }
  t.barrier(timeout);
  fit_p2p_line(out);
  return out;
}

P2PProfile measure_inproc_p2p(std::span<const std::int64_t> sizes, int repeats, WaitPolicy wait, std::chrono::nanoseconds timeout) {
  // Pools before the world: buffers in flight live in the world's mailboxes.
  BufferPool pool0(std::make_shared<HostMemory>()), pool1(std::make_shared<HostMemory>());
  const PipelineShape shape = make_shape(2, 2, 1, Placement::Loop);
  InprocWorld world(shape, wait);
  const bool pin = hardware_cores() >= 2;
  P2PProfile result;
  // Messages left in the world's mailboxes (after a failure) return to the pools when it is destroyed.
  run_on_rank_threads(world, pin, [&](int r) {
    P2PProfile p = measure_p2p(world.transport(r), r == 0 ? pool0 : pool1, sizes, repeats, timeout);
    if (r == 0) result = std::move(p);
  });
  return result;
}

MeasuredProfile measure_profile(const ProfileOptions& compute, const P2PProfileOptions& p2p) {
  const std::vector<std::int64_t> sizes = p2p_sizes(compute.model.activation_bytes());
  if (!p2p.transport) {
    MeasuredProfile p = measure_compute(compute);
    if (p2p.enabled) p.p2p = measure_inproc_p2p(sizes, p2p.repeats, p2p.wait, p2p.timeout);
    return p;
  }
  // The pool before the transport, so it outlives it: after a failure the transport may keep the
  // buffer of a send it could not take back until it is destroyed.
  BufferPool pool(std::make_shared<HostMemory>());
  const std::unique_ptr<Transport> t = p2p.transport();
  if (!t) throw InputError("measure_profile: the transport factory made no transport");
  ProfileOptions o = compute;
  o.concurrency = 1;
  o.core = o.core >= 0 && t->size() <= online_cores() ? t->rank() : -1;
  const auto compute_wait = std::chrono::hours(1);  // the others may measure slower; a failure is told at once
  try {
    t->barrier(compute_wait);
    MeasuredProfile p = measure_compute(o);
    t->barrier(compute_wait);
    if (p2p.enabled) p.p2p = measure_p2p(*t, pool, sizes, p2p.repeats, p2p.timeout);
    return p;
  } catch (const PeerAborted&) {
    t->cancel_all();
    throw;
  } catch (const std::exception& e) {
    t->abort(e.what());
    t->cancel_all();
    throw;
  }
}

}  // namespace pipelab::runtime
