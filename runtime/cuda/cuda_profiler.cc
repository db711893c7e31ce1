// measure_cuda_profile: op times of the mock model read off device-timed runs of tiny pipelines
// on one rank, so a profile measures exactly what the executor and the cuda backend do in a run.
#include <algorithm>
#include <exception>
#include <map>
#include <thread>

#include "pipelab/base/error.h"
#include "pipelab/kernels/shape.h"
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/profiler.h"
#include "pipelab/runtime/run.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::runtime {

namespace {

std::int64_t median(std::vector<std::int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Durations of the compute events of one pipeline's measured iterations, by (op, stage); an F&B
// unit counts under its forward half's stage.
using Durations = std::map<std::pair<Op, int>, std::vector<std::int64_t>>;

Durations run_pipeline(const std::string& schedule, const ModelConfig& model, const ProfileOptions& o,
                       const CudaProfileOptions& c, int microbatches, int index_on_device, std::string* placement) {
  ScheduleOptions so;
  so.pp = 1;
  so.vp = 2;
  so.microbatches = microbatches;
  const Schedule s = add_send_recv(make_schedule(schedule, so));
  RunOptions ro;
  ro.warmup = o.warmup;
  ro.iterations = o.repeats;
  ro.pin_threads = false;
  CudaRankConfig rc;
  rc.device = c.device;
  rc.math = c.math;
  rc.ranks_on_device = c.ranks_on_device;
  rc.index_on_device = index_on_device;
  rc.partition_sms = c.partition_sms;
  const RunResult r = run_inprocess(s, [&](int rank) {
    auto b = std::make_unique<CudaBackend>(model, s.shape, rank, rc);
    if (placement != nullptr) *placement = b->placement();
    return b;
  }, ro);
  Durations out;
  for (const Timeline& t : r.iterations) {
    for (const TimelineEvent& e : t.ranks.at(0)) {
      if (e.stream != Stream::Compute) continue;
      const int stage = e.action.forward_half().stage;
      out[{e.action.op, stage}].push_back(e.end_ns - e.start_ns);
    }
  }
  return out;
}

// The pipeline on every rank of a shared device at once, each on its own SM group, as the ranks of
// a single-GPU run load the GPU together (its memory bandwidth and L2 are shared); the durations of
// all copies pooled. One rank: one pipeline.
Durations run_pipeline_on_every_rank(const std::string& schedule, const ModelConfig& model, const ProfileOptions& o,
                                     const CudaProfileOptions& c, int microbatches, std::string* placement) {
  const int copies = std::max(c.ranks_on_device, 1);
  std::vector<Durations> found(static_cast<std::size_t>(copies));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(copies));
  std::vector<std::thread> threads;
  for (int i = 0; i < copies; ++i) {
    threads.emplace_back([&, i] {
      try {
        found[static_cast<std::size_t>(i)] = run_pipeline(schedule, model, o, c, microbatches, i, i == 0 ? placement : nullptr);
      } catch (...) {
        errors[static_cast<std::size_t>(i)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  Durations all;
  for (Durations& d : found) {
    for (auto& [key, v] : d) all[key].insert(all[key].end(), v.begin(), v.end());
  }
  return all;
}

// One stage size (1 layer, or layers_per_stage): F (inner stage), loss (last minus inner F), I,
// W, B and F&B (units whose forward half is the inner stage 0).
OpTimes measure_ops(const ModelConfig& model, const ProfileOptions& o, const CudaProfileOptions& c, std::int64_t* loss_ns,
                    std::string* placement) {
  const int m = 8;
  Durations fb = run_pipeline_on_every_rank("interleaved-1f1b", model, o, c, m, placement);
  Durations iw = run_pipeline_on_every_rank("zb-h1", model, o, c, m, nullptr);
  Durations overlap = run_pipeline_on_every_rank("dualpipev", model, o, c, m, nullptr);
  OpTimes t;
  t.f_ns = median(fb[{Op::F, 0}]);
  std::vector<std::int64_t> b = fb[{Op::B, 0}];
  b.insert(b.end(), fb[{Op::B, 1}].begin(), fb[{Op::B, 1}].end());
  t.b_ns = median(b);
  std::vector<std::int64_t> i = iw[{Op::I, 0}], w = iw[{Op::W, 0}];
  i.insert(i.end(), iw[{Op::I, 1}].begin(), iw[{Op::I, 1}].end());
  w.insert(w.end(), iw[{Op::W, 1}].begin(), iw[{Op::W, 1}].end());
  t.i_ns = median(i);
  t.w_ns = median(w);
  t.fb_ns = median(overlap[{Op::OverlapFB, 0}]);
  *loss_ns = std::max<std::int64_t>(0, median(fb[{Op::F, 1}]) - t.f_ns);
  return t;
}

}  // namespace

MeasuredProfile measure_cuda_profile(const ProfileOptions& o, const CudaProfileOptions& c) {
  o.model.validate();
  if (o.repeats < 1) throw InputError("profile: repeats=" + std::to_string(o.repeats) + " must be >= 1");
  if (o.warmup < 0) throw InputError("profile: warmup=" + std::to_string(o.warmup) + " must be >= 0");
  if (auto why = cuda_unavailable()) throw DeviceError(*why);
  MeasuredProfile p = profile_header(o, "cuda", c.ranks_on_device);

  ModelConfig one = o.model;
  one.layers_per_stage = 1;
  std::string placement;
  std::int64_t loss = 0;
  p.per_layer = measure_ops(one, o, c, &loss, &placement);
  p.loss_ns = loss;
  if (o.on_progress) o.on_progress("per-layer ops");
  if (o.model.layers_per_stage > 1) {
    p.per_stage = measure_ops(o.model, o, c, &p.loss_ns, nullptr);
    if (o.on_progress) o.on_progress("per-stage ops");
  } else {
    p.per_stage = p.per_layer;
  }
  p.device = placement + ", " + std::string(kernels::gemm_math_name(c.math)) + " GEMMs";  // placement names the GPU
  const kernels::OpFlops f = kernels::block_flops(o.model.block);
  p.flops_f = static_cast<double>(f.forward);
  p.flops_i = static_cast<double>(f.backward_input);
  p.flops_w = static_cast<double>(f.backward_weight);
  p.activation_bytes = o.model.activation_bytes();

  // P2P of single-GPU mode: a device-to-device copy of each size. device_copy_bandwidth counts the
  // bytes read and written, so a copy of n bytes takes 2n / bandwidth.
  p.p2p.transport = "cuda-copy";
  for (const std::int64_t bytes : p2p_sizes(o.model.activation_bytes())) {
    const double bw = kernels::device_copy_bandwidth(c.device, static_cast<std::size_t>(std::max<std::int64_t>(bytes, 4)), o.repeats);
    p.p2p.samples.push_back({bytes, static_cast<std::int64_t>(2.0 * static_cast<double>(bytes) / bw * 1e9 + 0.5)});
  }
  fit_p2p_line(p.p2p);
  if (o.on_progress) o.on_progress("device copies");
  return p;
}

}  // namespace pipelab::runtime
