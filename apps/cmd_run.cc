// `pipelab run`: executes a schedule on the mock model for real (cpu backend: in-process threads or
// MPI processes; cuda backend: one GPU per rank, all ranks on one GPU, or one process per GPU over
// MPI and NCCL), predicts the same schedule with the simulator and the profiled cost model, and
// writes both timelines with their comparison (result JSON, kind "run"; docs/runtime.md, docs/gpu.md).
#include <chrono>
#include <cmath>
#include <iostream>
#include <utility>
#include <vector>
#include <memory>

#include "commands.h"
#include "gpu_flags.h"
#include "model_flags.h"
#include "pipelab/base/error.h"
#include "pipelab/kernels/blas.h"
#include "pipelab/reports/write.h"
#include "pipelab/runtime/cuda_backend.h"
#include "pipelab/runtime/cuda_run.h"
#include "pipelab/runtime/gradients.h"
#include "pipelab/runtime/machine.h"
#include "pipelab/runtime/mpi_transport.h"
#include "pipelab/runtime/run.h"
#include "pipelab/runtime/run_support.h"
#include "pipelab/schedules/lowering.h"
#include "pipelab/schedules/metrics.h"
#include "pipelab/schedules/registry.h"
#include "pipelab/schedules/validate.h"
#include "pipelab/sim/engine.h"
#include "pipelab/sim/profiled_cost.h"
#include "run_result.h"
#include "schedule_flags.h"

namespace pipelab::app {
namespace {

// --wait: one table of names and policies; the flag accepts its names, the run looks the policy up.
const std::vector<std::pair<std::string, runtime::WaitPolicy>> kWaitPolicies{
    {"auto", runtime::WaitPolicy::Auto}, {"spin", runtime::WaitPolicy::Spin}, {"block", runtime::WaitPolicy::Block}};

runtime::WaitPolicy wait_policy(const std::string& name) {
  for (const auto& [key, policy] : kWaitPolicies) {
    if (key == name) return policy;
  }
  throw InputError("--wait " + name + " is not a wait policy");  // the flag's check keeps this out
}

struct RunCommandOptions {
  ScheduleFlags schedule{.schedule = "1f1b", .options = {.pp = 2, .vp = 0, .microbatches = 8, .group_size = 0}};
  runtime::ModelConfig model = default_mock_model();
  std::string backend = "cpu";
  std::string transport = "inproc";
  GpuFlags gpu;
  bool single_gpu = false;
  bool cupti = false;
  int iterations = 5;
  int warmup = 2;
  std::string profile;
  std::string save_profile;
  int profile_repeats = 20;
  bool check_gradients = false;
  bool check_fidelity = false;
  std::string json_out;
  std::string report_out;
  int timeout_ms = 60'000;
  bool no_pin = false;
  std::string wait = "auto";  // a name of kWaitPolicies
};

// Where the ranks ran: the host, or for a GPU run the GPU, its transport and each rank's SM share.
struct RunPlace {
  std::string device;
  std::string transport;
  nlohmann::json gpu;  // null for a CPU run
  std::int64_t memory_capacity_bytes = 0;
};

RunPlace cpu_place(const RunCommandOptions& o) {
  return {runtime::cpu_model_name(), o.transport, nullptr, runtime::physical_memory_bytes()};
}

RunPlace gpu_place(const RunCommandOptions& o, const runtime::CudaRunInfo& info) {
  return {info.device,
          info.transport,
          {{"math", o.gpu.math},
           {"single_gpu", info.single_gpu},
           {"sms_per_rank", info.sms_per_rank},
           {"device_sms", info.device_sms},
           {"placement", info.placement}},
          runtime::cuda_device_info(o.gpu.device).memory_bytes};
}

// The resolved configuration the result echoes.
nlohmann::json run_config(const RunCommandOptions& o, const PipelineShape& shape, const runtime::RunProfile& profile,
                          int cores, const RunPlace& place, const std::vector<std::string>& warnings) {
  const runtime::ModelConfig& m = o.model;
  const int P = shape.ranks;
  return {{"schedule", find_schedule(o.schedule.schedule).name},
          {"backend", o.backend},
          {"transport", place.transport},
          {"cost_model", "profiled"},
          {"stages", shape.stages},
          {"model",
           {{"name", "mock-transformer"},
            {"hidden", m.block.hidden},
            {"ffn", m.block.ffn},
            {"heads", m.block.heads},
            {"seq", m.block.seq},
            {"mbs", m.block.mbs},
            {"swiglu", m.block.swiglu},
            {"layers_per_stage", m.layers_per_stage},
            {"num_layers", shape.stages_per_chain() * m.layers_per_stage},
            {"seed", m.seed}}},
          {"parallel",
           {{"pp", P},
            {"vp", shape.stages / P},
            {"microbatches", shape.microbatches},
            {"mbs", m.block.mbs},
            {"seq_length", m.block.seq},
            {"gpus", P},
            {"stage_layers", std::vector<int>(static_cast<std::size_t>(shape.stages), m.layers_per_stage)}}},
          {"iterations", o.iterations},
          {"warmup", o.warmup},
          {"timeout_ms", o.timeout_ms},
          {"profile", profile.source},
          {"profile_layers_per_stage", profile.profile.layers_per_stage},
          {"p2p_latency_ns", profile.profile.p2p.latency_ns},
          {"p2p_bandwidth_bytes_per_s", profile.profile.p2p.bandwidth_bytes_per_s},
          {"device", place.device},
          {"gpu", place.gpu},
          {"cores", cores},
          {"pinned", o.backend == "cpu" && !o.no_pin && P <= cores},
          {"wait", o.wait},
          {"warnings", warnings}};
}

// The cuda backend's knobs for a run of P ranks.
runtime::CudaRunConfig cuda_config(const RunCommandOptions& o) {
  runtime::CudaRunConfig c;
  c.math = o.gpu.gemm_math();
  c.transport = o.transport == "inproc" ? runtime::CudaTransportKind::Auto : runtime::parse_cuda_transport(o.transport);
  c.single_gpu = o.single_gpu;
  c.partition_sms = !o.gpu.no_sm_partition;
  c.first_device = o.gpu.device;
  c.cupti = o.cupti;
  return c;
}

// Gradients equal the reference to float rounding in fp32; TF32 and BF16 GEMM inputs round to
// 10 and 7 mantissa bits (tests/gpu uses the same bounds).
double gradient_tolerance(const RunCommandOptions& o) {
  if (o.backend != "cuda") return 1e-5;
  switch (o.gpu.gemm_math()) {
    case kernels::GemmMath::Fp32: return 1e-4;
    case kernels::GemmMath::Tf32: return 1e-2;
    case kernels::GemmMath::Bf16: return 5e-2;
  }
  return 1e-4;
}

// Checks the backend/transport pairing before anything runs.
void check_backend(const RunCommandOptions& o) {
  if (o.backend == "cpu") {
    if (o.transport != "inproc" && o.transport != "mpi") {
      throw InputError("--transport " + o.transport + " is a GPU transport; the cpu backend takes inproc or mpi");
    }
    return;
  }
  if (o.transport == "mpi") throw InputError("--backend cuda moves data with --transport copy or nccl (NCCL under mpirun), not mpi");
  if (auto why = runtime::cuda_unavailable()) throw DeviceError(*why);
}

std::string off_profile_warning(std::size_t rank, double ratio, bool gpu) {
  return "rank " + std::to_string(rank) + "'s actions ran " + std::to_string(std::lround(100 * (ratio - 1.0))) +
         "% off their profiled time (median): " +
         (gpu ? "the GPU was loaded differently (other ranks or processes on it) or ran at another clock than when profiled"
              : "the machine was busier or faster than when profiled, or another process shared the rank's core");
}

int run(const RunCommandOptions& o) {
  // Step 1: the schedule, exactly as the simulator sees it (lowered with explicit SEND/RECV).
  const Schedule compute = make_schedule(o.schedule.schedule, o.schedule.options);
  require_valid(compute);
  const Schedule lowered = add_send_recv(compute);
  const PipelineShape& shape = lowered.shape;
  o.model.validate();
  const int P = shape.ranks;
  check_backend(o);
  const bool gpu = o.backend == "cuda";
  // A GPU run under mpirun (several processes) is one process per GPU over NCCL.
  const bool gpu_processes = gpu && o.transport == "nccl" && runtime::mpi_built() && runtime::launched_by_mpi();
  // Processes may each be bound to one core by the MPI launcher: count the node's cores then.
  const int cores = o.transport == "mpi" ? runtime::online_cores() : runtime::hardware_cores();
  std::vector<std::string> warnings;
  if (const std::string w = runtime::core_sharing_warning(P, cores); !gpu && !w.empty()) warnings.push_back(w);
  runtime::configure_allocator();
  kernels::set_blas_threads(1);
  const auto timeout = std::chrono::milliseconds(o.timeout_ms);
  const runtime::WaitPolicy wait = wait_policy(o.wait);

  // With MPI every process runs this; each makes its transports from the session when it needs
  // them (runtime::profile_for_run and runtime::run_cpu_distributed own them, each destroying its
  // transport before the buffer pool the transport's messages use).
  std::unique_ptr<runtime::MpiSession> mpi;
  runtime::TransportFactory make_transport;
  int rank = 0;
  if (o.transport == "mpi" || gpu_processes) {
    mpi = std::make_unique<runtime::MpiSession>();
    if (mpi->size() != P) {
      throw ConfigError("--transport mpi: the schedule has pp=" + std::to_string(P) + " ranks but " +
                        std::to_string(mpi->size()) + " MPI processes run (mpirun -np " + std::to_string(P) + ")");
    }
    rank = mpi->rank();
    if (!gpu) make_transport = [&mpi, &shape, wait] { return mpi->transport(shape, wait); };
  }
  // The cuda backend's knobs; the cpu backend has none (its --transport names are not CUDA transports).
  const runtime::CudaRunConfig cuda = gpu ? cuda_config(o) : runtime::CudaRunConfig{};
  runtime::CudaProfileOptions cuda_profile;
  std::string profile_transport = o.transport;  // the name the profile's P2P measurement carries
  if (gpu) {
    const runtime::CudaRunPlan plan = gpu_processes ? runtime::CudaRunPlan{.device_of_rank = {}, .transport = runtime::CudaTransportKind::Nccl}
                                                    : runtime::plan_cuda_run(P, runtime::cuda_devices(), cuda);
    profile_transport = plan.transport == runtime::CudaTransportKind::Nccl ? "nccl" : "cuda-copy";
    cuda_profile = {.math = cuda.math,
                    .device = cuda.first_device,
                    .ranks_on_device = plan.single_gpu ? P : 1,
                    .partition_sms = cuda.partition_sms};
  }

  // Step 2: the profile the prediction uses (given, or measured now on this machine).
  const runtime::RunProfile profile = runtime::profile_for_run({.path = o.profile,
                                                                .save_path = o.save_profile,
                                                                .model = o.model,
                                                                .ranks = P,
                                                                .transport = profile_transport,
                                                                .repeats = o.profile_repeats,
                                                                .concurrency = std::min(P, cores),
                                                                .pin = !o.no_pin,
                                                                .timeout = timeout,
                                                                .wait = wait,
                                                                .make_transport = make_transport,
                                                                .rank = rank,
                                                                .backend = o.backend,
                                                                .cuda = cuda_profile});
  warnings.insert(warnings.end(), profile.warnings.begin(), profile.warnings.end());
  if (rank == 0) {
    for (const std::string& w : warnings) std::cerr << "pipelab: warning: " << w << "\n";
  }

  // Step 3: the measured run.
  runtime::RunOptions ro;
  ro.warmup = o.warmup;
  ro.iterations = o.iterations;
  ro.executor.timeout = timeout;
  ro.pin_threads = !o.no_pin;
  ro.wait = wait;
  ro.collect_gradients = o.check_gradients;
  runtime::CudaRunInfo gpu_info;
  runtime::RunResult measured;
  if (gpu) {
    measured = gpu_processes ? runtime::run_cuda_distributed(lowered, o.model, cuda, ro, *mpi, &gpu_info)
                             : runtime::run_cuda_inprocess(lowered, o.model, cuda, ro, &gpu_info);
  } else {
    measured = mpi ? runtime::run_cpu_distributed(lowered, o.model, make_transport, ro) : runtime::run_cpu_inprocess(lowered, o.model, ro);
  }
  if (rank != 0) return 0;  // rank 0 holds every rank's timeline
  const RunPlace place = gpu ? gpu_place(o, gpu_info) : cpu_place(o);

  // Step 4: the prediction of the same lowered schedule from the profile.
  const sim::ProfiledCost cost(profile.profile, shape, o.model.layers_per_stage);
  const runtime::StageActivationBytes act = runtime::mock_stage_activation(o.model);
  sim::SimOptions so;
  so.activations.assign(static_cast<std::size_t>(shape.stages), sim::StageActivation{act.bytes, act.freed_by_input_grad});
  const sim::SimResult predicted = sim::simulate(lowered, cost, so);

  // Step 5: the comparison, the result, the gradient check.
  const FidelityReport fidelity = compare_timelines(predicted.timeline, measured.iterations[measured.median_iteration()]);
  for (const std::size_t r : ranks_off_profile(fidelity)) {
    warnings.push_back(off_profile_warning(r, fidelity.compute_time_ratio[r], gpu));
    std::cerr << "pipelab: warning: " << warnings.back() << "\n";
  }
  std::optional<runtime::GradientCheck> gradients;
  if (o.check_gradients) {
    kernels::set_blas_threads(runtime::hardware_cores());  // the reference is not timed: use every core
    gradients = runtime::compare_gradients(runtime::part_gradients(shape, measured.stage_gradients),
                                           runtime::reference_gradients(o.model, shape.stages_per_chain(), shape.microbatches),
                                           gradient_tolerance(o));
  }
  const reports::ReportInput result =
      run_result({.config = run_config(o, shape, profile, cores, place, warnings),
                  .measured = measured,
                  .predicted = predicted,
                  .fidelity = fidelity,
                  .tokens_per_iteration = static_cast<std::int64_t>(shape.microbatches) * o.model.block.tokens(),
                  .memory_capacity_bytes = place.memory_capacity_bytes,
                  .gradients = gradients});

  print_run(std::cout, result);
  const bool fidelity_failed = o.check_fidelity && !within_fidelity(fidelity);
  if (o.check_fidelity) {
    std::cout << "# fidelity: " << (fidelity_failed ? "outside " : "within ") << reports::fidelity_thresholds_text()
              << ": " << (fidelity_failed ? "FAILED" : "OK") << "\n";
  }
  if (!o.json_out.empty()) reports::write_result_file(o.json_out, result);
  if (!o.report_out.empty()) {
    reports::write_report({result}, o.report_out, "");
    std::cout << "# report: " << o.report_out << "\n";
  }
  return (gradients && !gradients->passed) || fidelity_failed ? 1 : 0;
}

}  // namespace

void add_run_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("run", "Execute a schedule on the mock model, predict it from a profile, compare");
  auto o = std::make_shared<RunCommandOptions>();
  add_schedule_flags(cmd, o->schedule);
  add_model_flags(cmd, o->model);
  cmd->add_option("--backend", o->backend, "cpu (OpenBLAS, a core per rank) or cuda (cuBLAS, see docs/gpu.md)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--transport", o->transport,
                  "cpu: inproc (a thread per rank) or mpi (mpirun -np PP pipelab run ...); cuda: inproc (= auto: NCCL with a "
                  "GPU per rank, else device copies), copy, or nccl (under mpirun: a process per GPU)")
      ->check(CLI::IsMember({"inproc", "mpi", "copy", "nccl"}))
      ->capture_default_str();
  add_gpu_flags(cmd, o->gpu);
  cmd->add_flag("--single-gpu", o->single_gpu, "cuda: put every rank on one GPU even when there are more");
  cmd->add_flag("--cupti", o->cupti,
                "cuda: record every kernel and copy of each action (CUPTI) into the result; the Chrome trace shows them under "
                "the actions");
  cmd->add_option("--iterations", o->iterations, "Measured iterations (the median one is reported)")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--warmup", o->warmup, "Iterations run first and discarded")->capture_default_str()->check(CLI::Range(0, 100000));
  cmd->add_option("--profile", o->profile, "Profile JSON from `pipelab profile` (default: profile first)");
  cmd->add_option("--save-profile", o->save_profile, "Also write the profile measured before the run here");
  cmd->add_option("--profile-repeats", o->profile_repeats, "Repeats when profiling first")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_flag("--check-gradients", o->check_gradients, "Compare the gradients with the single-device reference");
  cmd->add_flag("--check-fidelity", o->check_fidelity,
                "Exit 1 when the prediction is outside the fidelity thresholds (" + reports::fidelity_thresholds_text() + ")");
  cmd->add_option("--json", o->json_out, "Write the result JSON (kind run) here");
  cmd->add_option("--report", o->report_out, "Write a report here (.html, .md, .csv)");
  cmd->add_option("--timeout-ms", o->timeout_ms, "Watchdog: longest wait for one message or barrier")
      ->capture_default_str()
      ->check(CLI::Range(1, 86'400'000));
  cmd->add_flag("--no-pin", o->no_pin, "Do not pin rank threads/processes to cores");
  cmd->add_option("--wait", o->wait, "How ranks wait for data: auto, spin, block")
      ->check(CLI::IsMember(kWaitPolicies))
      ->capture_default_str();
  cmd->callback([o, cmd, &exit_code] {
    require_cuda_backend_for_gpu_flags(cmd, o->backend);
    exit_code = run(*o);
  });
}

}  // namespace pipelab::app
