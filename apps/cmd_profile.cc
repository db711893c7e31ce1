// `pipelab profile`: measures the mock model's per-layer and per-stage F, I, W, B and F&B times
// (median of repeats after warm-up) and the P2P latency/bandwidth of a transport, and writes the
// profile JSON the simulator's profiled cost model reads (docs/runtime.md).
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "pipelab/base/error.h"
#include "pipelab/profiles/measured_profile.h"
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/mpi_transport.h"
#include "pipelab/runtime/profiler.h"
#include "commands.h"
#include "gpu_flags.h"
#include "model_flags.h"

namespace pipelab::app {

namespace {

struct ProfileCommandOptions {
  runtime::ModelConfig model = default_mock_model();
  std::string backend = "cpu";
  std::string transport = "inproc";
  int repeats = 20;
  int concurrency = 2;
  int warmup = 3;
  GpuFlags gpu;
  int ranks_per_gpu = 1;
  std::string out;
};

void print_profile(std::ostream& os, const MeasuredProfile& p) {
  os << "# pipelab profile: backend " << p.backend << " (" << p.device << "), hidden=" << p.hidden << " ffn=" << p.ffn
     << " heads=" << p.heads << " seq=" << p.seq << " mbs=" << p.mbs << (p.swiglu ? " swiglu" : " gelu")
     << ", median of " << p.repeats << " after " << p.warmup << " warm-up"
     << (p.backend == "cpu" ? " on " + std::to_string(p.concurrency) + " core(s) at once" : "") << "\n";
  os << "#        " << std::setw(12) << "F" << std::setw(12) << "I" << std::setw(12) << "W" << std::setw(12) << "B"
     << std::setw(12) << "F&B" << "\n";
  os << "#        " << std::setw(12) << "(us)" << std::setw(12) << "(us)" << std::setw(12) << "(us)" << std::setw(12) << "(us)"
     << std::setw(12) << "(us)" << "\n";
  auto row = [&](const std::string& label, const OpTimes& t) {
    os << std::left << std::setw(9) << label << std::right << std::fixed << std::setprecision(1);
    for (std::int64_t v : {t.f_ns, t.i_ns, t.w_ns, t.b_ns, t.fb_ns}) os << std::setw(12) << static_cast<double>(v) / 1e3;
    os << "\n";
  };
  row("layer", p.per_layer);
  row("stage(" + std::to_string(p.layers_per_stage) + ")", p.per_stage);
  os << "loss " << static_cast<double>(p.loss_ns) / 1e3 << " us; activation " << p.activation_bytes << " bytes\n";
  if (!p.p2p.transport.empty()) {
    os << "p2p (" << p.p2p.transport << "): latency " << static_cast<double>(p.p2p.latency_ns) / 1e3 << " us, bandwidth "
       << std::setprecision(2) << p.p2p.bandwidth_bytes_per_s / 1e9 << " GB/s" << (p.p2p.bandwidth_bytes_per_s == 0 ? " (size-independent)" : "")
       << "\n";
  }
}

}  // namespace

void add_profile_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("profile", "Measure per-layer op times and P2P cost of a backend into a profile JSON");
  auto o = std::make_shared<ProfileCommandOptions>();
  add_model_flags(cmd, o->model);
  cmd->add_option("--backend", o->backend, "Backend to measure: cpu, or cuda (the GPU; docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  add_gpu_flags(cmd, o->gpu);
  cmd->add_option("--ranks-per-gpu", o->ranks_per_gpu,
                  "cuda: ranks that will share the GPU in the runs this profile predicts (single-GPU mode): ops are "
                  "measured on one rank's SM group")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--transport", o->transport, "P2P transport to measure: inproc, or mpi (under mpirun -np 2)")
      ->check(CLI::IsMember({"inproc", "mpi"}))
      ->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Timed repetitions per op (the median is kept)")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", o->warmup, "Untimed repetitions first (and at least 0.3 s)")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_option("--concurrency", o->concurrency, "Cores measuring at once, as the ranks of a run keep them busy (capped at the cores)")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--out", o->out, "Write the profile JSON here")->required();
  cmd->callback([o, cmd, &exit_code] {
    o->model.validate();
    require_cuda_backend_for_gpu_flags(cmd, o->backend);
    runtime::configure_allocator();
    runtime::ProfileOptions compute;
    compute.model = o->model;
    compute.repeats = o->repeats;
    compute.warmup = o->warmup;
    compute.core = 0;
    compute.concurrency = o->concurrency;
    runtime::P2PProfileOptions p2p;
    p2p.repeats = std::max(20, o->repeats);
    MeasuredProfile p;
    if (o->backend == "cuda") {
      if (o->transport == "mpi") throw InputError("profile --backend cuda measures device copies; --transport mpi is for the cpu backend");
      if (auto why = runtime::cuda_unavailable()) throw DeviceError(*why);
      p = runtime::measure_cuda_profile(compute, {.math = o->gpu.gemm_math(),
                                                  .device = o->gpu.device,
                                                  .ranks_on_device = o->ranks_per_gpu,
                                                  .partition_sms = !o->gpu.no_sm_partition});
    } else if (o->transport == "mpi") {
      runtime::MpiSession mpi;
      if (mpi.size() < 2) throw InputError("profile --transport mpi: start it with mpirun -np 2 (or more)");
      const PipelineShape shape = make_shape(mpi.size(), mpi.size(), 1, Placement::Loop);
      p2p.transport = [&mpi, &shape] { return mpi.transport(shape); };
      // Every process measures at the same time on its own core (the load of a run); rank 0's
      // numbers are kept.
      p = runtime::measure_profile(compute, p2p);
      if (mpi.rank() != 0) {
        exit_code = 0;
        return;
      }
    } else {
      p = runtime::measure_profile(compute, p2p);
    }
    save_measured_profile(p, o->out);
    print_profile(std::cout, p);
    std::cout << "wrote " << o->out << "\n";
    exit_code = 0;
  });
}

}  // namespace pipelab::app
